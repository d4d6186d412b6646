"""Driver side: what the `zyx-dist` subcommands share: the one-line user error, plain-text and Markdown
tables, sizes and flags, and starting a session. Takes rows of values or options; gives strings or a
running session."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

PROG = "zyx-dist"
OURS = "zyx_dist"  # results rows of our runs have system "zyx_dist/<config name>"


class CLIError(Exception):
    """A one-line error for the user (exit status 2)."""


def _size(nbytes) -> str:
    if not isinstance(nbytes, (int, float)) or nbytes <= 0:
        return "-"
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if nbytes < 1024 or unit == "TiB":
            return f"{nbytes:.0f} {unit}" if unit == "B" else f"{nbytes:.1f} {unit}"
        nbytes /= 1024
    return "-"


def _flag(value) -> str:
    return "-" if value is None else ("yes" if value else "no")


def _num(value, fmt: str = "{:.1f}") -> str:
    return fmt.format(value) if isinstance(value, (int, float)) and value > 0 else "-"


def format_table(rows: Sequence[Sequence[str]], header: Sequence[str]) -> str:
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    lines = ["  ".join(str(c).ljust(w) for c, w in zip(r, widths)).rstrip() for r in [header, *rows]]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def markdown_table(rows: Sequence[Sequence[Any]], header: Sequence[str]) -> str:
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    out += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(out)


def _start(config, *, ray: bool = False, address: str | None = None, devices=None):
    """zd.init for a CLI command: in this process unless `ray` (then join `address`, the config's ray.address or
    RAY_ADDRESS, else start a local Ray instance)."""
    import zyx_dist as zd

    return zd.init(config, ray=ray, address=address, devices=devices)
