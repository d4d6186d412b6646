"""Driver side: the `zyx-dist` command.

    zyx-dist info [--config PATH] [--devices SPEC] [--ray [--address ADDR]]
    zyx-dist bench CONFIG... [--out DIR] [--baseline numpy,cupy,torch] [--compare OLD.json] [--threshold PCT]
    zyx-dist explain SCRIPT_OR_CONFIG [--config PATH] [--devices SPEC] [--ray]
    zyx-dist trace CONFIG [--out trace.json]

`info` starts the runtime (in this process unless `--ray`) and prints the devices as a table. `bench` runs the
`benchmark:` section of configs (schema in configs/README.md) beside baselines and writes results.json,
results.md and results.png. `explain` prints the plan of a config's workloads, or of the tensors a script's
`build()` returns, without running them. `trace` runs each workload of a config once inside `zd.trace`.
A bad config or option prints one line `zyx-dist: error: ...` and exits with status 2; `bench --compare`
exits with status 1 when a workload got slower than the threshold.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import runpy
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

PROG = "zyx-dist"
COLUMNS = ("name", "backend", "device", "node", "memory", "free", "peak GFLOP/s", "peak GB/s", "CUs", "fp16", "fp64")
OURS = "zyx_dist"  # results rows of our runs have system "zyx_dist/<config name>"


class CLIError(Exception):
    """A one-line error for the user (exit status 2)."""


# ---------------------------------------------------------------------------------------------- formatting


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


def _num(value, fmt: str = "{:.1f}") -> str:
    return fmt.format(value) if isinstance(value, (int, float)) and value > 0 else "-"


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


def format_table(rows: Sequence[Sequence[str]], header: Sequence[str] = COLUMNS) -> str:
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    lines = ["  ".join(str(c).ljust(w) for c, w in zip(r, widths)).rstrip() for r in [header, *rows]]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def markdown_table(rows: Sequence[Sequence[Any]], header: Sequence[str]) -> str:
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    out += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(out)


# ---------------------------------------------------------------------------------------------- sessions


def _devices_option(text: str | None):
    if not text:
        return None
    from .config import parse_devices_string

    devices = parse_devices_string(text, "--devices")
    if devices == "auto":
        return None
    return list(devices) if isinstance(devices, tuple) else devices


def _start(config, *, ray: bool = False, address: str | None = None, devices=None):
    """zd.init for a CLI command: in this process unless `ray` (then join `address`, the config's ray.address or
    RAY_ADDRESS, else start a local Ray instance)."""
    import zyx_dist as zd

    return zd.init(config, ray=ray, address=address, devices=devices)


def _ray_address() -> str | None:
    try:
        import ray

        if ray.is_initialized():
            return ray.get_runtime_context().gcs_address
    except Exception:  # noqa: BLE001 -- only informational
        return None
    return None


def _load_bench_config(path: str):
    from .config import load_config

    cfg = load_config(path)
    if cfg.benchmark is None:
        raise CLIError(f"{path}: no benchmark: section (a bench config lists benchmark.workloads; see "
                       "configs/README.md)")
    return cfg


def _config_name(path: str) -> str:
    return Path(path).stem


# ---------------------------------------------------------------------------------------------- info


def _info(args: argparse.Namespace) -> int:
    import zyx_dist as zd

    _start(getattr(args, "config", None), ray=args.ray, address=args.address, devices=_devices_option(args.devices))
    try:
        rows = [_row(d) for d in zd.devices()]
        address = _ray_address() if args.ray else None
    finally:
        zd.shutdown()
    print(format_table(rows))
    print(f"runtime: Ray at {address} (workers are actors zyx_dist/worker/<device>)" if address
          else "runtime: in-process workers (use --ray to start or join Ray)")
    return 0


# ---------------------------------------------------------------------------------------------- bench


class _Progress:
    """tqdm when it is installed, else a printed counter (on stderr)."""

    def __init__(self, total: int, enabled: bool = True):
        self.total, self.n, self.enabled = total, 0, enabled
        self.bar = None
        if enabled:
            try:
                from tqdm import tqdm

                self.bar = tqdm(total=total, unit="run", file=sys.stderr, dynamic_ncols=True)
            except ImportError:
                self.bar = None

    def begin(self, label: str) -> None:
        """Show what runs next."""
        if not self.enabled:
            return
        if self.bar is not None:
            self.bar.set_description(label[:48])
        else:
            print(f"[{self.n + 1}/{self.total}] {label}", file=sys.stderr, flush=True)

    def step(self) -> None:
        self.n += 1
        if self.bar is not None:
            self.bar.update(1)

    def note(self, text: str) -> None:
        if self.bar is not None:
            self.bar.write(text, file=sys.stderr)
        else:
            print(text, file=sys.stderr, flush=True)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def _baselines(option: str | None, default: Sequence[str]) -> list[str]:
    from .config import BENCHMARK_BASELINES

    if option is None:
        return list(default)
    names = [n.strip() for n in option.split(",") if n.strip()]
    if names in ([], ["none"]):
        return []
    for n in names:
        if n not in BENCHMARK_BASELINES:
            raise CLIError(f"--baseline: {n!r} is not one of {', '.join(BENCHMARK_BASELINES)} (or 'none')")
    return list(dict.fromkeys(names))


def run_benchmarks(paths: Sequence[str], baseline_option: str | None = None, progress: bool = True,
                   ray: bool = False) -> list[dict]:
    """Run every config's workloads (ours, then the baselines beside them); the rows of results.json."""
    import zyx_dist as zd

    from . import bench

    configs = [(p, _load_bench_config(p)) for p in paths]  # every config is checked before anything runs
    plans = []
    for path, cfg in configs:
        names = _baselines(baseline_option, cfg.benchmark.baselines)
        cases = [(w.name, n, dt) for w in cfg.benchmark.workloads for n in w.sizes for dt in w.dtypes]
        plans.append((path, cfg, names, cases))
    usable: dict[str, bench.Baseline | None] = {}
    bar = _Progress(sum(len(c) * (1 + len(b)) for _, _, b, c in plans), progress)
    day = datetime.date.today().isoformat()
    machine = platform.node() or platform.machine() or "unknown"
    rows: list[dict] = []
    done_baselines: set[tuple] = set()
    try:
        for path, cfg, names, cases in plans:
            for name in names:
                if name not in usable:
                    b = bench.BASELINES[name]()
                    why = b.available()
                    usable[name] = None if why else b
                    if why:
                        bar.note(f"note: baseline {name} skipped: {why}")
            b_cfg = cfg.benchmark
            _start(cfg, ray=ray or b_cfg.ray)
            try:
                devs = zd.devices()
                system = f"{OURS}/{_config_name(path)}"
                for wname, n, dt in cases:
                    case = bench.make_case(wname, n, dt)
                    bar.begin(f"{case.label} {system}")
                    timing = bench.run_case(case, b_cfg.warmup, b_cfg.repeats, b_cfg.check)
                    if timing.error is not None:
                        bar.note(f"warning: {case.label} on {system} differs from NumPy (relative error "
                                 f"{timing.error:.3g})")
                    row = _result(day, machine, system, case, timing.seconds)
                    row["devices"] = [d.name for d in devs]
                    if timing.error is not None:
                        row["ok"] = False
                    rows.append(row)
                    bar.step()
                    for bname in names:
                        b = usable.get(bname)
                        key = (bname, wname, n, dt)
                        bar.begin(f"{case.label} {bname}")
                        if b is not None and key not in done_baselines:
                            done_baselines.add(key)
                            try:
                                secs = b.time(case, b_cfg.warmup, b_cfg.repeats)
                                rows.append(_result(day, machine, b.system(), case, secs))
                            except Exception as e:  # noqa: BLE001 -- a baseline that cannot run a case is skipped
                                bar.note(f"note: {bname} skipped {case.label}: {type(e).__name__}: {e}")
                        bar.step()
            finally:
                zd.shutdown()
    finally:
        bar.close()
    return rows


def _result(day: str, machine: str, system: str, case, seconds: float) -> dict:
    from .bench import rate

    return {"date": day, "machine": machine, "system": system, "workload": case.workload.name, "size": case.size,
            "dtype": case.dtype, "value": round(rate(case, seconds), 4), "unit": case.unit,
            "ms": round(seconds * 1e3, 4)}


def _case_key(r: dict) -> tuple:
    return (r["workload"], r["size"], r["dtype"])


def results_markdown(rows: Sequence[dict]) -> str:
    """One line per (workload, size, dtype); one column per system, and ours / numpy where both ran."""
    systems = list(dict.fromkeys(r["system"] for r in rows))
    ours = [s for s in systems if s.startswith(OURS)]
    header = ["workload", "size", "dtype", "unit", *systems]
    if "numpy" in systems:
        header += [f"{s} / numpy" for s in ours]
    cases: dict[tuple, dict[str, dict]] = {}
    for r in rows:
        cases.setdefault(_case_key(r), {})[r["system"]] = r
    table = []
    for key, by_sys in cases.items():
        unit = next(iter(by_sys.values()))["unit"]
        line: list[Any] = [*key, unit]
        for s in systems:
            r = by_sys.get(s)
            line.append("-" if r is None else f"{r['value']:.3f} ({r['ms']:.3f} ms)" + ("" if r.get("ok", True)
                                                                                         else " WRONG"))
        if "numpy" in systems:
            base = by_sys.get("numpy")
            for s in ours:
                r = by_sys.get(s)
                line.append(f"{r['value'] / base['value']:.2f}x" if r and base and base["value"] else "-")
        table.append(line)
    first = rows[0] if rows else {"date": "-", "machine": "-"}
    title = f"# zyx-dist bench: {first['machine']}, {first['date']}\n\nHigher is better (GB/s or GFLOP/s; best run).\n"
    return title + "\n" + markdown_table(table, header) + "\n"


def plot_results(rows: Sequence[dict], path: str | os.PathLike) -> None:
    """A grouped bar chart: one panel per unit, one group per case, one bar per system (log scale)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    units = list(dict.fromkeys(r["unit"] for r in rows))
    systems = list(dict.fromkeys(r["system"] for r in rows))
    fig, axes = plt.subplots(len(units), 1, figsize=(max(6.0, 1.2 * len(rows) / max(1, len(systems)) + 3),
                                                     3.6 * len(units)), squeeze=False)
    width = 0.8 / max(1, len(systems))
    for ax, unit in zip(axes[:, 0], units):
        sub = [r for r in rows if r["unit"] == unit]
        cases = list(dict.fromkeys(_case_key(r) for r in sub))
        for j, s in enumerate(systems):
            values = {_case_key(r): r["value"] for r in sub if r["system"] == s}
            xs = [i + (j - (len(systems) - 1) / 2) * width for i in range(len(cases))]
            ax.bar(xs, [values.get(c, 0.0) for c in cases], width, label=s)
        ax.set_xticks(range(len(cases)))
        ax.set_xticklabels([f"{w}\n{n} {d}" for w, n, d in cases], fontsize=8)
        ax.set_ylabel(unit)
        if any(r["value"] > 0 for r in sub):
            ax.set_yscale("log")
        ax.legend(fontsize=8)
    axes[0, 0].set_title("zyx-dist bench (higher is better)")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def compare_results(new: Sequence[dict], old: Sequence[dict], threshold: float) -> tuple[str, list[str]]:
    """A table of the change of each of our rows against the old results, and the regressions beyond
    `threshold` percent (a lower value is a regression: every unit is higher-is-better)."""
    old_by = {(r["system"], *_case_key(r)): r for r in old if str(r.get("system", "")).startswith(OURS)}
    lines, regressions = [], []
    for r in new:
        if not r["system"].startswith(OURS):
            continue
        key = (r["system"], *_case_key(r))
        o = old_by.get(key)
        label = f"{r['system']} {r['workload']} n={r['size']} {r['dtype']}"
        if o is None or not o.get("value"):
            lines.append((r["system"], r["workload"], r["size"], r["dtype"], "-", f"{r['value']:.3f}", "new"))
            continue
        change = (r["value"] - o["value"]) / o["value"] * 100
        verdict = f"{change:+.1f}%"
        if change < -threshold:
            verdict += f" REGRESSION (> {threshold:g}%)"
            regressions.append(f"{label}: {o['value']:.3f} -> {r['value']:.3f} {r['unit']} ({change:+.1f}%)")
        lines.append((r["system"], r["workload"], r["size"], r["dtype"], f"{o['value']:.3f}", f"{r['value']:.3f}",
                      verdict))
    table = format_table(lines, ("system", "workload", "size", "dtype", "old", "new", "change"))
    return table, regressions


def _read_results(path: str) -> list[dict]:
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except OSError as e:
        raise CLIError(f"--compare: cannot read {path!r}: {e.strerror or e}") from None
    except ValueError as e:
        raise CLIError(f"--compare: {path!r} is not JSON: {e}") from None
    rows = data.get("rows") if isinstance(data, dict) else data
    if not isinstance(rows, list) or not all(isinstance(r, dict) and {"system", "workload", "size", "dtype", "value"}
                                             <= set(r) for r in rows):
        raise CLIError(f"--compare: {path!r} is not a results.json of zyx-dist bench (a list of result rows)")
    return rows


def _bench(args: argparse.Namespace) -> int:
    if args.threshold < 0:
        raise CLIError(f"--threshold: {args.threshold:g} is negative (use a percentage >= 0)")
    old = _read_results(args.compare) if args.compare else None  # fail before the long run, not after it
    rows = run_benchmarks(args.configs, args.baseline, progress=not args.quiet, ray=args.ray)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps(rows, indent=1) + "\n")
    md = results_markdown(rows)
    (out / "results.md").write_text(md)
    print(md)
    try:
        plot_results(rows, out / "results.png")
        print(f"wrote {out / 'results.json'}, {out / 'results.md'}, {out / 'results.png'}")
    except ImportError:
        print(f"wrote {out / 'results.json'}, {out / 'results.md'} (no plot: pip install matplotlib, or "
              "'zyx_dist[bench]')")
    if old is not None:
        table, regressions = compare_results(rows, old, args.threshold)
        print(f"\ncompared with {args.compare}:\n{table}")
        if regressions:
            print(f"{PROG}: {len(regressions)} regression(s) beyond {args.threshold:g}%:", file=sys.stderr)
            for line in regressions:
                print(f"  {line}", file=sys.stderr)
            return 1
    return 0


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
                                      "memory, measured peaks, node; and the Ray address when on Ray.")
    _add_session_options(info)
    info.add_argument("--address", metavar="ADDR", help="Ray address to join with --ray ('auto', 'host:6379')")
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
                       help="a results.json of an earlier run: print the change per workload and exit 1 when one of "
                            "ours got slower than --threshold")
    bench.add_argument("--threshold", metavar="PCT", type=float, default=10.0,
                       help="regression threshold in percent for --compare (default: %(default)g)")
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


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    from .errors import ZyxError

    try:
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
