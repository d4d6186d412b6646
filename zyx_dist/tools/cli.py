"""Driver side: the `zyx-dist` command.

    zyx-dist info [--config PATH] [--devices SPEC] [--ray [--address ADDR]]
    zyx-dist bench CONFIG... [--out DIR] [--baseline numpy,cupy,torch] [--compare OLD.json] [--threshold PCT]
                   [--noise K]
    zyx-dist explain SCRIPT_OR_CONFIG [--config PATH] [--devices SPEC] [--ray]
    zyx-dist trace CONFIG [--out trace.json]

`info` starts the runtime (in this process unless `--ray`) and prints the devices as a table. `bench` runs the
`benchmark:` section of configs (schema in configs/README.md) beside baselines and writes results.json,
results.md and results.png. `explain` prints the plan of a config's workloads, or of the tensors a script's
`build()` returns, without running them. `trace` runs each workload of a config once inside `zd.trace`.
A bad config or option prints one line `zyx-dist: error: ...` and exits with status 2; `bench --compare`
exits with status 1 when the median of one of our workloads fell by more than max(--threshold %, --noise x
the relative IQR of its rounds in either run).
"""

from __future__ import annotations

import argparse
import json
import os
import runpy
import sys
import time
from collections.abc import Sequence

from . import records
from .cli_bench import _bench, _load_bench_config, compare_results, results_markdown, run_benchmarks  # noqa: F401
from .cli_common import OURS, PROG, CLIError, _flag, _num, _size, _start, format_table  # noqa: F401

COLUMNS = ("name", "backend", "device", "node", "memory", "free", "peak GFLOP/s", "peak GB/s", "CUs", "fp16", "fp64")


# ---------------------------------------------------------------------------------------------- formatting


def _attr(obj, *names, default=None):
    for name in names:
        value = getattr(obj, name, None)
        if value is not None:
            return value
    return default


def _node(node) -> str:
    node = str(node or "-")
    return node if len(node) <= 14 else node[:12] + ".."


def _row(d) -> tuple[str, ...]:
    return (
        str(d.name),
        str(_attr(d, "backend", default="-")),
        str(_attr(d, "device_name", "device", "model", default="-")),
        _node(_attr(d, "node")),
        _size(_attr(d, "memory_bytes")),
        _size(_attr(d, "free_bytes")),
        _num(_attr(d, "peak_gflops"), "{:.0f}"),
        _num(_attr(d, "peak_gbps")),
        str(_attr(d, "compute_units", default="-")),
        _flag(_attr(d, "fp16", "has_fp16")),
        _flag(_attr(d, "fp64", "has_fp64")),
    )


# ---------------------------------------------------------------------------------------------- sessions


def _devices_option(text: str | None):
    if not text:
        return None
    from ..config import parse_devices_string

    devices = parse_devices_string(text, "--devices")
    if devices == "auto":
        return None
    return list(devices) if isinstance(devices, tuple) else devices


# ---------------------------------------------------------------------------------------------- info


OPENCL_COLUMNS = ("opencl", "device", "platform", "type", "status")


def _opencl_rows() -> list[tuple[str, ...]]:
    """Every OpenCL device of this machine with its self-test outcome (also those a session left out)."""
    from ..runtime.discover import opencl_devices

    try:
        found = opencl_devices()
    except Exception as e:  # noqa: BLE001 -- only informational: no pyopencl, no loader
        return [("-", "-", "-", "-", f"cannot list OpenCL devices: {e}")]
    return [(f"opencl:{d['index']}", d["name"], d["platform"], d["type"],
             "works" if d["usable"] else f"left out: {d['problem']}") for d in found]


def _print_opencl_table(always: bool) -> None:
    """This machine's OpenCL devices and their self-tests: when asked, or when one of them was left out."""
    local = _opencl_rows()
    if local and (always or any(not r[-1].startswith("works") for r in local)):
        print("\nOpenCL devices on this machine (each self-tested when listed; a device left out says why):")
        print(format_table(local, OPENCL_COLUMNS))


def _info(args: argparse.Namespace) -> int:
    import zyx_dist as zd

    if args.address and not args.ray:
        raise CLIError("--address joins a Ray cluster: give --ray with it")
    try:
        session = _start(getattr(args, "config", None), ray=args.ray, address=args.address,
                         devices=_devices_option(args.devices))
    except zd.DeviceError:  # no working device: the table of this machine's devices says why, then the error
        _print_opencl_table(True)
        raise
    try:
        rows = [_row(d) for d in zd.devices()]
        address = session.backend.address() if args.ray else None
    finally:
        zd.shutdown()
    print(format_table(rows, COLUMNS))
    _print_opencl_table(args.opencl)
    print(f"runtime: Ray at {address} (workers are actors zyx_dist/worker/<device>)" if address
          else "runtime: in-process workers (use --ray to start or join Ray)")
    return 0


# ---------------------------------------------------------------------------------------------- bench


# ---------------------------------------------------------------------------------------------- explain


def _tensors(value) -> list:
    import zyx_dist as zd

    if isinstance(value, zd.Tensor):
        return [value]
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, (list, tuple)) and value and all(isinstance(v, zd.Tensor) for v in value):
        return list(value)
    raise CLIError(f"build() returned {type(value).__name__}; it must return a zd.Tensor or a list of them")


def _explain_script(path: str) -> None:
    import zyx_dist as zd

    old_argv, old_path = sys.argv, list(sys.path)
    sys.argv = [path]
    sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
    try:
        ns = runpy.run_path(path, run_name="__zyx_dist_explain__")
    except SyntaxError as e:
        raise CLIError(f"{path}: line {e.lineno}: {e.msg}") from None
    except zd.ZyxError as e:
        if "already called" in str(e):
            raise CLIError(f"{path} calls zd.init() as it is loaded; explain starts the session itself (from "
                           "--config and --devices): call zd.init only under `if __name__ == '__main__':`") from None
        raise
    finally:
        sys.argv, sys.path[:] = old_argv, old_path
    build = ns.get("build")
    if not callable(build):
        raise CLIError(f"{path}: defines no build() function (explain runs a script's build() and prints the "
                       "plan of the tensors it returns; see `zyx-dist explain --help`)")
    print(zd.explain(*_tensors(build())))


def _explain(args: argparse.Namespace) -> int:
    import zyx_dist as zd

    from . import bench

    target = args.target
    if not os.path.isfile(target):
        raise CLIError(f"{target!r} is not a file (give a Python script that defines build(), or a YAML config)")
    is_script = target.endswith(".py")
    cfg = None if is_script else _load_bench_config(target)
    if is_script:
        _start(getattr(args, "config", None), ray=args.ray, devices=_devices_option(args.devices))
    else:
        _start(cfg, ray=args.ray or cfg.benchmark.ray, devices=_devices_option(args.devices))
    try:
        if is_script:
            _explain_script(target)
        else:
            for w in cfg.benchmark.workloads:
                for n in w.sizes:
                    for dt in w.dtypes:
                        case = bench.make_case(w.name, n, dt)
                        print(f"== {case.label}: {case.workload.doc}")
                        print(zd.explain(*case.build()))
                        print()
    finally:
        zd.shutdown()
    return 0


# ---------------------------------------------------------------------------------------------- trace


def _trace(args: argparse.Namespace) -> int:
    import zyx_dist as zd

    from . import bench

    cfg = _load_bench_config(args.config_file)
    b = cfg.benchmark
    out_dir = os.path.dirname(os.path.abspath(args.out))
    if os.path.isdir(args.out) or not os.path.isdir(out_dir):  # (fail now, not after the run)
        raise CLIError(f"--out {args.out}: not a file in an existing directory")
    _start(cfg, ray=args.ray or b.ray)
    try:
        cases = [bench.make_case(w.name, n, dt) for w in b.workloads for n in w.sizes for dt in w.dtypes]
        inputs = []
        for case in cases:  # inputs uploaded and kernels compiled before the traced run
            tensors = {k: zd.tensor(v) for k, v in case.inputs.items()}
            zd.realize(*tensors.values())
            for _ in range(b.warmup):
                zd.realize(*case.build(tensors))
            inputs.append(tensors)
        t = time.perf_counter()
        with zd.trace(args.out):
            for case, tensors in zip(cases, inputs):
                zd.realize(*case.build(tensors))
        seconds = time.perf_counter() - t
        devices = [d.name for d in zd.devices()]
    finally:
        zd.shutdown()
    with open(args.out, encoding="utf-8") as f:
        events = json.load(f)["traceEvents"]
    kinds: dict[str, int] = {}
    for e in events:
        cat = e.get("cat")
        if cat and e["ph"] in ("X", "i"):
            kinds[cat] = kinds.get(cat, 0) + 1
    summary = ", ".join(f"{n} {k}" for k, n in sorted(kinds.items()))
    print(f"traced {len(cases)} workload runs in {seconds * 1e3:.1f} ms on {', '.join(devices)}: {summary} events")
    print(f"wrote {args.out}; open it at https://ui.perfetto.dev (or chrome://tracing)")
    return 0


# ---------------------------------------------------------------------------------------------- parser


def _add_session_options(p: argparse.ArgumentParser, config: bool = True) -> None:
    if config:
        p.add_argument("--config", metavar="PATH", default=argparse.SUPPRESS,
                       help="YAML config file (default: $ZYX_DIST_CONFIG or built-in defaults)")
    p.add_argument("--devices", metavar="SPEC",
                   help="'auto', a comma list such as 'opencl:0,opencl:1', or 'opencl-cpu:N'")
    p.add_argument("--ray", action="store_true",
                   help="run the workers as Ray actors: join --address / RAY_ADDRESS / ray.address, else start a "
                        "local Ray instance (default: workers in this process)")


EXPLAIN_EPILOG = """\
A script must define build() returning a zd.Tensor or a list of them, and keep its own work under
`if __name__ == "__main__":` (explain imports it with another __name__, so only build() runs), e.g.

    def build():
        x = zd.randn(256, 128, seed=0)
        return [zd.softmax(x @ x.T, axis=-1)]

A config's benchmark workloads are built at their sizes and dtypes and explained one by one.
"""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=PROG, description="zyx_dist: lazy tensors as fused kernels on many devices.")
    parser.add_argument("--config", metavar="PATH", help="YAML config file (default: $ZYX_DIST_CONFIG or built-in)")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    info = sub.add_parser("info", help="list the devices and workers (backend, memory, free, peaks, node)",
                          description="Start the runtime and print its devices as a table: backend, memory, free "
                                      "memory, measured peaks, node; and the Ray address when on Ray. Every "
                                      "OpenCL device of this machine is self-tested; those left out are listed "
                                      "with the reason.")
    _add_session_options(info)
    info.add_argument("--address", metavar="ADDR", help="Ray address to join with --ray ('auto', 'host:6379')")
    info.add_argument("--opencl", action="store_true",
                      help="also list every OpenCL device of this machine with its self-test outcome")
    info.set_defaults(func=_info)

    bench = sub.add_parser("bench", help="run benchmark configs; write results.json/.md/.png",
                           description="Run the benchmark: section of each CONFIG (schema: configs/README.md) with "
                                       "baselines beside it in this process; write results.json, results.md and "
                                       "results.png to --out.")
    bench.add_argument("configs", nargs="+", metavar="CONFIG", help="YAML config(s) with a benchmark: section")
    bench.add_argument("--out", metavar="DIR", default="bench-results", help="output directory (default: %(default)s)")
    bench.add_argument("--baseline", metavar="LIST",
                       help="comma list of numpy, cupy, torch, or 'none' (default: the config's benchmark.baselines,"
                            " else numpy); ones not installed are skipped with a note")
    bench.add_argument("--compare", metavar="OLD.json",
                       help="a results.json of an earlier run: print the change of each median and exit 1 when one "
                            "of ours fell by more than max(--threshold, --noise x IQR)")
    bench.add_argument("--threshold", metavar="PCT", type=float, default=10.0,
                       help="smallest drop of a median, in percent, that --compare calls a regression "
                            "(default: %(default)g)")
    bench.add_argument("--noise", metavar="K", type=float, default=records.NOISE_IQR,
                       help="--compare also needs the new median to be slower by more than K IQRs of the "
                            "noisier run's rounds (default: %(default)g)")
    bench.add_argument("--ray", action="store_true", help="run the workers as Ray actors (as benchmark.ray: true)")
    bench.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    bench.set_defaults(func=_bench)

    explain = sub.add_parser("explain", help="print the plan of a script's build() or a config's workloads",
                             description="Print the plan (kernels, devices and why, transfers with bytes, estimated "
                                         "time) without running it.",
                             epilog=EXPLAIN_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    explain.add_argument("target", metavar="SCRIPT_OR_CONFIG", help="a .py script defining build(), or a YAML config")
    _add_session_options(explain)
    explain.set_defaults(func=_explain)

    trace = sub.add_parser("trace", help="write a Chrome/Perfetto trace of one run of a config's workloads",
                           description="Upload inputs and warm up (compile) each workload of CONFIG, then run each "
                                       "once inside zd.trace and write Chrome trace JSON (one track per device plus "
                                       "the driver) that https://ui.perfetto.dev opens.")
    trace.add_argument("config_file", metavar="CONFIG", help="YAML config with a benchmark: section")
    trace.add_argument("--out", metavar="PATH", default="trace.json", help="trace file (default: %(default)s)")
    trace.add_argument("--ray", action="store_true", help="run the workers as Ray actors (as benchmark.ray: true)")
    trace.set_defaults(func=_trace)
    return parser


def _check_config_option(args: argparse.Namespace) -> None:
    """`--config` names a file, and is given where it is read: `info`, and a script given to `explain` (a CONFIG
    given to bench, trace or explain carries its own session settings)."""
    path = getattr(args, "config", None)
    if path is None:
        return
    if not os.path.isfile(path):
        raise CLIError(f"--config {path}: no such file")
    command = getattr(args, "command", None)
    if command in ("bench", "trace") or (command == "explain" and not args.target.endswith(".py")):
        raise CLIError(f"--config is not read by `{command}` with a config file, which carries its own settings "
                       "(give them there)")


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    from ..errors import ZyxError

    try:
        _check_config_option(args)
        return args.func(args)
    except (ZyxError, CLIError) as e:
        print(f"{PROG}: error: {' '.join(str(e).split())}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `zyx-dist explain ... | head`
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


if __name__ == "__main__":
    sys.exit(main())
