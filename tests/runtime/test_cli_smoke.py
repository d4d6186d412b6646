"""The real `zyx-dist` command on this machine's OpenCL CPU device, as CI runs it: the whole cpu-smoke
benchmark in a subprocess, well under a minute, every workload right."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_real_command_runs_the_cpu_smoke_config(tmp_path):
    """What CI runs: the whole cpu-smoke benchmark, as a subprocess, well under a minute."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ZYX_DIST_", "RAY_ADDRESS"))}
    t = time.monotonic()
    res = subprocess.run([sys.executable, "-m", "zyx_dist.tools.cli", "bench", "configs/cpu-smoke.yaml", "--out",
                          str(tmp_path)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60, check=False)
    assert res.returncode == 0, res.stdout + res.stderr
    assert time.monotonic() - t < 60
    rows = json.loads((tmp_path / "results.json").read_text())
    ours = {r["workload"] for r in rows if r["system"] == "zyx_dist/cpu-smoke"}
    assert ours == {"ew_chain", "softmax", "layernorm", "sum", "matmul", "mlp", "attention", "branches"}
    assert "WRONG" not in (tmp_path / "results.md").read_text()
    assert (tmp_path / "results.png").stat().st_size > 1000
