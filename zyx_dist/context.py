"""Driver side: the one link from the pure front end to the running runtime. The front end (tensors, ops)
must not import the engine, yet reading a tensor needs a session; the engine registers a provider here
when the package is imported, and the front end asks `session()` for it (which starts the default
runtime on first use, API.md section 1's implicit init). Takes nothing else; holds no other state.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol


class Runtime(Protocol):
    """What the front end needs of a session."""

    def realize(self, nodes: list) -> None: ...
    def read(self, node: Any) -> Any: ...
    def resolve_device(self, name: str | None) -> str | None: ...
    def export(self, node: Any) -> Any: ...  # a zero-copy array view of a realized node, or None
    def export_device(self, node: Any) -> tuple[int, int] | None: ...
    def adopt(self, obj: Any, device: str | None) -> Any: ...  # a realized leaf over obj's memory, or None

    device_names: list[str]
    default_device: str


_provider: Callable[..., Runtime] | None = None


def register(provider: Callable[..., Runtime]) -> None:
    """Called once by the engine: `provider(nodes)` gives the current session, starting it if needed (unless
    `nodes`, those about to be read or realized, hold data of a session shut down: then it raises)."""
    global _provider
    _provider = provider


def session(nodes: tuple | list = ()) -> Runtime:
    if _provider is None:
        raise RuntimeError("zyx_dist's engine is not loaded: import zyx_dist, not only zyx_dist.frontend")
    return _provider(nodes)
