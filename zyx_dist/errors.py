"""Shared by the driver and the workers: the error classes of API.md section 8. Each subclasses
`ZyxError` and the built-in exception a Python user would catch for that kind of failure, so
`except ValueError` still works for a bad shape."""

from __future__ import annotations


class ZyxError(Exception):
    """Base class of every error zyx_dist raises on purpose."""


class ShapeError(ZyxError, ValueError):
    """Shapes that do not broadcast, a bad reshape, an axis out of range: raised at the call."""


class DTypeError(ZyxError, TypeError):
    """A dtype an op does not support (at the call), or one the device lacks (at realize)."""


class DeviceError(ZyxError, RuntimeError):
    """Unknown device name, no device available, or a backend that failed to start."""


class OutOfMemoryError(ZyxError, MemoryError):
    """Data does not fit on a device even after spilling."""

    def __init__(self, message: str, device: str = "", requested: int = 0, free: int = 0):
        super().__init__(message)
        self.device, self.requested, self.free = device, requested, free


class CompileError(ZyxError, RuntimeError):
    """A generated kernel failed to build; carries the numbered source and the compiler log."""

    def __init__(self, message: str, source: str = "", log: str = ""):
        super().__init__(message)
        self.source, self.log = source, log


class WorkerLostError(ZyxError, RuntimeError):
    """A worker died and the data it held could not be recomputed."""


class ConfigError(ZyxError, ValueError):
    """An invalid config file or value; the message names the key and what is allowed."""


def numbered(source: str) -> str:
    """The source with 1-based line numbers, as CompileError messages show it."""
    return "\n".join(f"{i:4d}| {line}" for i, line in enumerate(source.splitlines(), 1))
