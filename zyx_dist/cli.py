"""Driver side: the `zyx-dist` command. `zyx-dist info` starts the runtime in this process (no Ray)
and prints the devices it found as a table; zyx_dist errors print one line and exit with status 2."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

PROG = "zyx-dist"
COLUMNS = ("name", "backend", "device", "memory", "compute units", "fp16", "fp64")


def _size(nbytes) -> str:
    if not isinstance(nbytes, (int, float)) or nbytes <= 0:
        return "-"
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if nbytes < 1024 or unit == "TiB":
            return f"{nbytes:.0f} {unit}" if unit == "B" else f"{nbytes:.1f} {unit}"
        nbytes /= 1024
    return "-"


def _attr(obj, *names, default=None):
    for name in names:
        value = getattr(obj, name, None)
        if value is not None:
            return value
    return default


def _flag(value) -> str:
    return "-" if value is None else ("yes" if value else "no")


def _row(d) -> tuple[str, ...]:
    total = _attr(d, "memory_bytes")
    free = _attr(d, "free_bytes")
    memory = _size(total)
    if memory != "-" and isinstance(free, (int, float)) and free > 0:
        memory = f"{_size(free)} free / {memory}"
    return (
        str(d.name),
        str(_attr(d, "backend", default="-")),
        str(_attr(d, "device", "device_name", "model", "description", default="-")),
        memory,
        str(_attr(d, "compute_units", default="-")),
        _flag(_attr(d, "fp16", "has_fp16", "supports_fp16")),
        _flag(_attr(d, "fp64", "has_fp64", "supports_fp64")),
    )


def format_table(rows: Sequence[Sequence[str]], header: Sequence[str] = COLUMNS) -> str:
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    lines = ["  ".join(str(c).ljust(w) for c, w in zip(r, widths)).rstrip() for r in [header, *rows]]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def _info(args: argparse.Namespace) -> int:
    import zyx_dist as zd
    from zyx_dist.config import parse_devices_string

    devices = parse_devices_string(args.devices, "--devices") if args.devices else None
    if isinstance(devices, tuple):
        devices = list(devices)
    elif devices == "auto":
        devices = None
    zd.init(args.config, ray=False, devices=devices)
    try:
        rows = [_row(d) for d in zd.devices()]
    finally:
        zd.shutdown()
    print(format_table(rows))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=PROG, description="zyx_dist: lazy tensors as fused kernels on many devices.")
    parser.add_argument("--config", metavar="PATH", help="YAML config file (default: $ZYX_DIST_CONFIG or built-in)")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    info = sub.add_parser("info", help="list the devices zyx_dist finds (runs in this process, no Ray)")
    info.add_argument(
        "--devices", metavar="SPEC", help="'auto', a comma list such as 'opencl:0,opencl:1', or 'opencl-cpu:N'"
    )
    info.set_defaults(func=_info)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    from zyx_dist.errors import ZyxError

    try:
        return args.func(args)
    except ZyxError as e:
        print(f"{PROG}: error: {' '.join(str(e).split())}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
