"""Summary of Nsight Compute's source view of one kernel (a script, not a test; runs anywhere): reads the CSV that
`ncu -i REP --page source --csv --print-source sass` writes (one row per SASS instruction, its warp stall samples
by reason) and prints the samples per reason over the kernel, then the TOP instructions with the most samples:
index, share, instruction, and its two largest reasons. How the CSV is made: DEVELOPERS.md item 22, or
`NCU=1 bash benchmarks/h200/attention_ab.sh` on the GPU machine.

    python benchmarks/h200/ncu_source_summary.py attention-source.csv [TOP]
"""

from __future__ import annotations

import csv
import sys


def number(text: str) -> float:
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return 0.0


def main() -> None:
    path, top = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 45
    with open(path, newline="") as f:
        rows = [r for r in csv.reader(f) if r]
    at = next(i for i, r in enumerate(rows) if "Source" in r)  # (ncu may print lines before the header)
    header, body = rows[at], rows[at + 1:]
    source = header.index("Source")
    total = next(i for i, h in enumerate(header) if h.startswith("Warp Stall Sampling (All"))
    reasons = [(i, h) for i, h in enumerate(header) if h.startswith(("stall_", "smsp__pcsamp_warps"))]
    samples = [number(r[total]) for r in body]
    whole = sum(samples) or 1.0
    print(f"total samples {whole:.0f} instructions {len(body)}")
    for i, h in reasons:
        n = sum(number(r[i]) for r in body)
        if n:
            print(f"{h:32s} {n:6.0f} {100 * n / whole:5.1f}%")
    for k in sorted(range(len(body)), key=lambda k: -samples[k])[:top]:
        r = body[k]
        largest = sorted(((number(r[i]), h.removeprefix("stall_")) for i, h in reasons), reverse=True)[:2]
        print(f"{k:5d} {100 * samples[k] / whole:5.1f}% {r[source].strip():56s} {[(int(n), h) for n, h in largest]}")


if __name__ == "__main__":
    main()
