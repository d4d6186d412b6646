"""Driver and actor side: the debug output of `ZYX_DIST_DEBUG` (API.md section 7) through the standard
`logging` module. Takes the bitmask (from the config, the environment or the driver); gives one logger per
debug area, `zyx_dist.<area>`, at level DEBUG when its bit is on. The text of every record is what the
debug output always said ("zyx_dist: ..."). Where the application configured no logging of its own (no
handler on the root logger or on the way up from the area's logger), a plain handler writes those lines to
stderr, so the bits work out of the box, also inside a Ray actor (Ray forwards an actor's stderr to the
driver); a user's own handlers, format and levels win: records then reach them instead, and a level the
user set on an area logger is left alone. `parse_debug` is the one parser of the bitmask text; the
environment's bits apply from import on (device discovery runs before any session), a session's config then
applies its own value.
"""

from __future__ import annotations

import logging
import os
import sys

from .errors import ConfigError

# area -> its ZYX_DIST_DEBUG bit (API.md section 7)
AREAS: dict[str, int] = {
    "devices": 1,  # devices and backends at init (driver), each worker as it opens its device (actor)
    "timings": 2,  # per-realize timing: plan, run (driver); compile time of each program (actor)
    "kernels": 4,  # kernels after fusion
    "ir": 8,  # each kernel's op list
    "source": 16,  # generated source
    "autotune": 32,  # the autotuner's search
    "scheduler": 64,  # placement decisions, transfers, spills
}
ROOT = "zyx_dist"
_set_by_us: set[str] = set()  # area loggers whose level apply_debug set (the others belong to the user)


def logger(area: str) -> logging.Logger:
    """The logger of a debug area: `zyx_dist.<area>`."""
    if area not in AREAS:
        raise KeyError(f"unknown debug area {area!r} (areas: {', '.join(AREAS)})")
    return logging.getLogger(f"{ROOT}.{area}")


def enabled(area: str) -> bool:
    """Whether the area's debug output is on: its bit, or DEBUG set by the user on `zyx_dist.<area>` or on
    `zyx_dist`. The root logger's level does not count, so an application at DEBUG is not flooded with
    kernel sources it never asked for."""
    lg = logging.getLogger(f"{ROOT}.{area}")
    for level in (lg.level, logging.getLogger(ROOT).level):
        if level != logging.NOTSET:
            return level <= logging.DEBUG and lg.isEnabledFor(logging.DEBUG)
    return False


def emit(area: str, text: str) -> None:
    """Log `text` to the area's logger when the area is on (callers with costly text check `enabled` first)."""
    if enabled(area):
        logging.getLogger(f"{ROOT}.{area}").debug(text)


def parse_debug(text: str, key: str = "ZYX_DIST_DEBUG") -> int:
    """The bitmask from its text: decimal, or 0x / 0o / 0b prefixed ("0x22" is 34); empty is 0. Raises
    ConfigError naming `key` for anything else or a negative value."""
    text = text.strip()
    if not text:
        return 0
    try:
        value = int(text, 0)
    except ValueError:
        try:
            value = int(text)  # leading zeros ("010"), which base 0 refuses
        except ValueError:
            raise ConfigError(f"{key}: {text[:80]!r} is not an integer (use an integer >= 0, e.g. 34 or 0x22)") \
                from None
    if value < 0:
        raise ConfigError(f"{key}: {value} is too small (use an integer >= 0)")
    every = sum(AREAS.values())
    if value & ~every:
        raise ConfigError(f"{key}: {value} sets bits no area has (the areas: "
                          f"{', '.join(f'{bit} {area}' for area, bit in AREAS.items())}; all of them: {every})")
    return value


def debug_from_env() -> int:
    """ZYX_DIST_DEBUG of this process (0 when unset)."""
    return parse_debug(os.environ.get("ZYX_DIST_DEBUG", ""))


class _StderrFallback(logging.Handler):
    """The message alone, on the current sys.stderr, unless another handler will get the record."""

    def emit(self, record: logging.LogRecord) -> None:
        if _configured_elsewhere(record.name, self):
            return
        try:
            stream = sys.stderr
            stream.write(self.format(record) + "\n")
            stream.flush()
        except Exception:  # noqa: BLE001 -- logging must never break the caller
            self.handleError(record)


def _configured_elsewhere(name: str, ours: logging.Handler) -> bool:
    """Whether a handler other than ours sits on the way from logger `name` up to the root."""
    lg: logging.Logger | None = logging.getLogger(name)
    while lg is not None:
        if any(h is not ours for h in lg.handlers):
            return True
        if not lg.propagate:
            return False
        lg = lg.parent
    return False


_fallback = _StderrFallback()
_fallback.setFormatter(logging.Formatter("%(message)s"))


def apply_debug(mask: int) -> None:
    """Switch the area loggers to the bits of `mask`: an area whose bit is on logs at DEBUG, one whose bit
    is off goes back to NOTSET (what the user's logging config says) if this function had switched it on."""
    for area, bit in AREAS.items():
        name = f"{ROOT}.{area}"
        lg = logging.getLogger(name)
        if mask & bit:
            if lg.level == logging.NOTSET or name in _set_by_us:
                lg.setLevel(logging.DEBUG)
                _set_by_us.add(name)
        elif name in _set_by_us:
            lg.setLevel(logging.NOTSET)
            _set_by_us.discard(name)
    root = logging.getLogger(ROOT)
    if _fallback not in root.handlers:  # (also where a level the user set on an area logger switched it on)
        root.addHandler(_fallback)


def _apply_environment() -> None:
    """ZYX_DIST_DEBUG switches the areas on from the start, for what runs before (or without) a session: device
    discovery, a Worker used directly, a Ray actor. A session then applies its config's value, which the
    variable overrides anyway. A bad value is reported by load_config, not here."""
    try:
        mask = debug_from_env()
    except ConfigError:
        return
    if mask:
        apply_debug(mask)


_apply_environment()
