"""Driver side: `zyx-dist bench`. Takes benchmark configs (`configs/*.yaml`, schema in configs/README.md);
runs their workloads (`zyx_dist.bench`) with the baselines beside them in this process, and gives a
results JSON (rows with the median and spread of the timed rounds, the commit, package versions, devices
and drivers: `tools/records.py`), a Markdown table, a PNG plot and, with `--compare`, the change of each
median against an earlier results file (exit status 1 on a regression beyond the noise-aware limit)."""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from . import records
from .cli_common import OURS, PROG, CLIError, _start, format_table, markdown_table


def _load_bench_config(path: str):
    from ..config import load_config

    cfg = load_config(path)
    if cfg.benchmark is None:
        raise CLIError(f"{path}: no benchmark: section (a bench config lists benchmark.workloads; see "
                       "configs/README.md)")
    return cfg


def _config_name(path: str) -> str:
    return Path(path).stem


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
    from ..config import BENCHMARK_BASELINES

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
    env = records.environment()
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
                hardware = records.session_devices()
                system = f"{OURS}/{_config_name(path)}"
                for wname, n, dt in cases:
                    case = bench.make_case(wname, n, dt)
                    bar.begin(f"{case.label} {system}")
                    timing = bench.run_case(case, b_cfg.warmup, b_cfg.repeats, b_cfg.check)
                    if timing.error is not None:
                        bar.note(f"warning: {case.label} on {system} differs from NumPy (relative error "
                                 f"{timing.error:.3g})")
                    row = _result(env, system, case, timing.rounds, hardware)
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
                                rounds = b.time(case, b_cfg.warmup, b_cfg.repeats)
                                rows.append(_result(env, b.system(), case, rounds, b.devices()))
                            except Exception as e:  # noqa: BLE001 -- a baseline that cannot run a case is skipped
                                bar.note(f"note: {bname} skipped {case.label}: {type(e).__name__}: {e}")
                        bar.step()
            finally:
                zd.shutdown()
    finally:
        bar.close()
    return rows


def _result(env: dict, system: str, case, rounds: Sequence[float], hardware: Sequence[dict]) -> dict:
    """A results.json row: the rate at the median round (`value`, `ms`) and at the best (`best_value`), the
    rounds' spread, the devices (`devices`: names, `hardware`: model and driver) and the run's environment."""
    stats = records.summary(rounds)
    r = records.row(env, system, case.workload.name, records.rate_of(case.work, stats["median_ms"]), case.unit,
                    rounds, hardware, size=case.size, dtype=case.dtype, ms=stats["median_ms"],
                    best_value=round(records.rate_of(case.work, stats["min_ms"]), 4),
                    devices=[d["name"] for d in hardware])
    order = ("date", "machine", "system", "workload", "size", "dtype", "value", "unit", "ms", "best_value")
    return {k: r[k] for k in order} | {k: v for k, v in r.items() if k not in order}


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
            line.append("-" if r is None else f"{r['value']:.3f} ({r['ms']:.3f} ms{_spread(r)})"
                        + ("" if r.get("ok", True) else " WRONG"))
        if "numpy" in systems:
            base = by_sys.get("numpy")
            for s in ours:
                r = by_sys.get(s)
                line.append(f"{r['value'] / base['value']:.2f}x" if r and base and base["value"] else "-")
        table.append(line)
    first = rows[0] if rows else {"date": "-", "machine": "-"}
    commit = first.get("commit") or "unknown commit"
    rounds = sorted({r["rounds"] for r in rows if "rounds" in r})
    title = (f"# zyx-dist bench: {first['machine']}, {first['date']}, {commit}\n\nHigher is better (GB/s or "
             f"GFLOP/s at the median of {'/'.join(map(str, rounds)) or '?'} timed rounds; in brackets the median "
             "round and the IQR of the rounds as a percentage of it).\n")
    return title + "\n" + markdown_table(table, header) + "\n"


def _spread(r: dict) -> str:
    return f", IQR {100 * records.relative_iqr(r):.0f}%" if "iqr_ms" in r else ""


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
            by_case = {_case_key(r): r for r in sub if r["system"] == s}
            xs = [i + (j - (len(systems) - 1) / 2) * width for i in range(len(cases))]
            values = [by_case[c]["value"] if c in by_case else 0.0 for c in cases]
            # the rates at the quartile rounds: the bar spans the middle half of the rounds
            low = [max(0.0, v - v * by_case[c]["median_ms"] / by_case[c]["q3_ms"]) if c in by_case and
                   by_case[c].get("q3_ms") else 0.0 for v, c in zip(values, cases)]
            high = [max(0.0, v * by_case[c]["median_ms"] / by_case[c]["q1_ms"] - v) if c in by_case and
                    by_case[c].get("q1_ms") else 0.0 for v, c in zip(values, cases)]
            ax.bar(xs, values, width, label=s, yerr=[low, high], capsize=2)
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


def compare_results(new: Sequence[dict], old: Sequence[dict], threshold: float,
                    noise: float = records.NOISE_IQR) -> tuple[str, list[str]]:
    """A table of the change of each of our rows against the old results, and the regressions: medians that
    fell by more than `threshold` % and by more than `noise` IQRs of the noisier run (`records.regression`;
    every unit is higher-is-better; rows of older files without medians are compared on the best round)."""
    old_by = {(r["system"], *_case_key(r)): r for r in old if str(r.get("system", "")).startswith(OURS)}
    lines, regressions = [], []
    for r in new:
        if not r["system"].startswith(OURS):
            continue
        key = (r["system"], *_case_key(r))
        o = old_by.get(key)
        label = f"{r['system']} {r['workload']} n={r['size']} {r['dtype']}"
        if o is None or not o.get("value"):
            lines.append((r["system"], r["workload"], r["size"], r["dtype"], "-", f"{r['value']:.3f}", "-", "new"))
            continue
        change, limit, regressed = records.regression(r, o, threshold, noise)
        new_v = r["value"] if "median_ms" in o or r.get("best_value") is None else r["best_value"]
        verdict = f"{change:+.1f}%" + ("" if "median_ms" in o else " (best rounds: the old file has no medians)")
        if regressed:
            verdict += f" REGRESSION (worse than -{limit:.1f}%)"
            regressions.append(f"{label}: {o['value']:.3f} -> {new_v:.3f} {r['unit']} ({change:+.1f}%, limit "
                               f"-{limit:.1f}%)")
        lines.append((r["system"], r["workload"], r["size"], r["dtype"], f"{o['value']:.3f}", f"{new_v:.3f}",
                      f"-{limit:.1f}%", verdict))
    table = format_table(lines, ("system", "workload", "size", "dtype", "old", "new", "limit", "change"))
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
    if not math.isfinite(args.threshold) or args.threshold < 0:
        raise CLIError(f"--threshold: {args.threshold:g} is not a percentage >= 0")
    noise = getattr(args, "noise", records.NOISE_IQR)
    if not math.isfinite(noise) or noise < 0:
        raise CLIError(f"--noise: {noise:g} is not a multiple of the IQR >= 0")
    old = _read_results(args.compare) if args.compare else None  # fail before the long run, not after it
    out = Path(args.out)
    try:  # (likewise: a directory that cannot be made fails now)
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise CLIError(f"--out {args.out}: cannot make that directory ({e.strerror or e})") from None
    rows = run_benchmarks(args.configs, args.baseline, progress=not args.quiet, ray=args.ray)
    (out / "results.json").write_text(json.dumps(rows, indent=1) + "\n")
    md = results_markdown(rows)
    (out / "results.md").write_text(md)
    print(md)
    try:
        plot_results(rows, out / "results.png")
        print(f"wrote {out / 'results.json'}, {out / 'results.md'}, {out / 'results.png'}")
    except ImportError:
        print(f"wrote {out / 'results.json'}, {out / 'results.md'} (no plot: pip install matplotlib, or "
              "pip install -e '.[bench]' in the checkout)")
    if old is not None:
        table, regressions = compare_results(rows, old, args.threshold, noise)
        print(f"\ncompared with {args.compare} (medians; limit: max({args.threshold:g}%, {noise:g} x IQR)):\n{table}")
        if regressions:
            print(f"{PROG}: {len(regressions)} regression(s) beyond max({args.threshold:g}%, {noise:g} x IQR):",
                  file=sys.stderr)
            for line in regressions:
                print(f"  {line}", file=sys.stderr)
            return 1
    return 0
