"""Debug output of the Ray workers reaches the driver (issue 17 item 4): a driver with `debug: 3` (devices and
timings) in the config, not in the environment, starts one PoCL worker actor on a Ray instance of its own; the
worker's lines ("worker opencl:0 opened ...", "compiled k_... in ... ms"), written by the actor's logging to
its stderr, come out of the driver's stderr with Ray's "(WorkerActor pid=...)" prefix (log_to_driver)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("ray")
pytestmark = pytest.mark.own_session  # runs in a subprocess; the shared Ray session is not needed

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = """
import time
import numpy as np, zyx_dist as zd
zd.init(devices={"opencl-cpu": 1}, config={"debug": 3})
print("result", (zd.tensor(np.arange(4, dtype=np.float32)) * 3 + 1).numpy().tolist(), flush=True)
time.sleep(3)  # Ray forwards worker output asynchronously: give its log monitor time before shutting down
zd.shutdown()
"""


def test_worker_debug_lines_reach_the_driver_through_ray():
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ZYX_DIST_", "RAY_ADDRESS"))}
    env["PYTHONPATH"] = str(ROOT)
    res = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, env=env, timeout=300,
                         check=False)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "result [1.0, 4.0, 7.0, 10.0]" in res.stdout
    err = re.sub(r"\x1b\[[0-9;]*m", "", res.stderr)  # Ray colours its prefixes
    assert re.search(r"\(WorkerActor pid=\d+\) zyx_dist: worker opencl:0 opened ", err), err
    assert re.search(r"\(WorkerActor pid=\d+\) zyx_dist: opencl:0 compiled k_\w+ in [0-9.]+ ms", err), err
    assert re.search(r"^zyx_dist: realize 1 kernels in 1 steps", err, re.MULTILINE), err  # the driver's own
