"""How well `zyx-dist bench --compare` separates noise from regressions on this machine (a script, not a test).

    for i in 1 2 3; do zyx-dist bench configs/cpu-smoke.yaml --out runs/$i -q; done
    python benchmarks/compare_noise.py runs/1/results.json runs/2/results.json runs/3/results.json

Takes results.json files of the same code run several times. Every ordered pair of runs is compared case by
case (our rows only), as `--compare` would: how many identical-code comparisons each rule calls a regression
(false alarms), and how many it catches when the newer run is made f times slower (every round scaled), for
the old rule (best of N, 10%) and for the median rule with the noise limit (tools/records.py: --threshold 10,
--noise 2 by default). Also the run-to-run change of the medians and the relative IQRs of the rows.
"""

from __future__ import annotations

import argparse
import copy
import itertools
import json
import statistics

from zyx_dist.tools import records


def _ours(path: str) -> dict:
    with open(path, encoding="utf-8") as f:
        rows = json.load(f)
    return {(r["system"], r["workload"], r["size"], r["dtype"]): r for r in rows
            if r["system"].startswith("zyx_dist") and "median_ms" in r}


def _slower(r: dict, f: float) -> dict:
    r = copy.deepcopy(r)
    r["value"] /= f
    r["best_value"] /= f
    for key in ("min_ms", "median_ms", "q1_ms", "q3_ms", "max_ms", "iqr_ms"):
        r[key] *= f
    return r


def _old_rule(new: dict, old: dict, threshold: float) -> bool:
    return (old["best_value"] - new["best_value"]) / old["best_value"] * 100 > threshold


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("results", nargs="+", help="results.json of runs of the same code (two or more)")
    ap.add_argument("--threshold", type=float, default=10.0)
    ap.add_argument("--noise", type=float, default=records.NOISE_IQR)
    args = ap.parse_args()
    runs = [_ours(p) for p in args.results]
    pairs = [(runs[a], runs[b]) for a, b in itertools.permutations(range(len(runs)), 2)]
    cases = [(old[k], new[k]) for old, new in pairs for k in old if k in new]
    if not cases:
        raise SystemExit("no cases in common (our rows with medians)")
    rounds = sorted({r["rounds"] for run in runs for r in run.values()})
    print(f"{len(runs)} runs, {len(cases)} comparisons of identical code ({len(pairs)} ordered pairs), "
          f"rounds per case {rounds}")
    for f in (1.0, 1.5, 2.0, 4.0, 10.0):
        old_hits = sum(_old_rule(_slower(n, f), o, args.threshold) for o, n in cases)
        new_hits = sum(records.regression(_slower(n, f), o, args.threshold, args.noise)[2] for o, n in cases)
        what = "false regressions" if f == 1.0 else f"caught when {f:g}x slower"
        print(f"  {what:28s} best of N, {args.threshold:g}%: {old_hits:3d}/{len(cases)}   "
              f"median, max({args.threshold:g}%, {args.noise:g} IQR): {new_hits:3d}/{len(cases)}")
    moves = [abs(n["value"] - o["value"]) / o["value"] * 100 for o, n in cases]
    spreads = [100 * records.relative_iqr(r) for run in runs for r in run.values()]
    q = statistics.quantiles(spreads, n=4) if len(spreads) > 1 else [spreads[0]] * 3
    print(f"  run-to-run change of the medians: median {statistics.median(moves):.0f}%, max {max(moves):.0f}%; "
          f"relative IQR of the rows: median {statistics.median(spreads):.0f}% (quartiles {q[0]:.0f}%..{q[2]:.0f}%)")


if __name__ == "__main__":
    main()
