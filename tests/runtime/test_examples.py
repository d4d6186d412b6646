"""Every script in examples/ runs as a user would run it (a subprocess, `python examples/<name>.py`) on OpenCL
CPU workers, finishes within its timeout and prints what it promises; `zyx-dist explain` works on the
example written for it."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"

# example -> (extra environment, timeout seconds, lines its output must contain (regexes))
CASES = {
    "quickstart.py": ({}, 120, [r"Plan: \d+ kernels", r"max abs error vs NumPy: [0-9.e-]+"]),
    # which branch runs where is HEFT's choice from measured times (pins place leaves, not kernels): only
    # that both devices compute some branch is fixed
    "multi_device.py": ({}, 120, [r"branch \d on opencl:0", r"branch \d on opencl:1", r"transfers [1-9]",
                                  r"multi_device: ok"]),
    "attention.py": ({}, 120, [r"in \d+ kernels", r"attention: ok"]),
    "explain.py": ({}, 120, [r"Plan: \d+ kernels", r"__kernel (__attribute__.*)?void", r"explain: ok"]),
    # without RAY_ADDRESS it starts a local Ray instance (2 workers as actors) and stops it at the end
    "ray_job.py": ({"ZYX_DIST_DEVICES": "opencl-cpu:2"}, 180, [r"device opencl:1", r"transfers [1-9]",
                                                                r"checksum -?[0-9.]+", r"ray_job: ok"]),
    # training: the batch sharded over 2 workers (data parallel) for the MLP, one device for the GPT
    "train_mlp.py": ({"ZYX_DIST_CONFIG": "configs/no-tune.yaml"}, 180, [r"test accuracy 0\.9\d\d",
                                                                      r"on 2 device\(s\)", r"train_mlp: ok"]),
    "train_gpt.py": ({"ZYX_DIST_CONFIG": "configs/no-tune.yaml"}, 180, [r"loss fell from [0-9.]+ to [0-9.]+",
                                                                      r"zd\.jit replayed [1-9][0-9] of 60 steps",
                                                                      r"train_gpt: ok"]),
}
ARGS = {"train_mlp.py": ["--devices", "2"]}


@pytest.fixture(autouse=True)
def once(request):
    if "tests/cluster/" in request.node.nodeid:  # tests/cluster collects tests/runtime again, through Ray
        pytest.skip("the examples run as subprocesses with their own runtime: once (tests/runtime) is enough")


def _env(extra: dict) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RAY_ADDRESS", "ZYX_DIST_"))}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env.update(extra)
    return env


def run(args: list[str], extra: dict, timeout: float) -> subprocess.CompletedProcess:
    return subprocess.run(args, cwd=ROOT, env=_env(extra), capture_output=True, text=True, timeout=timeout,
                          check=False)


def test_every_example_is_covered_and_short():
    scripts = {p.name for p in EXAMPLES.glob("*.py")}
    assert scripts == set(CASES), f"examples without a smoke test (or tests without an example): {scripts ^ set(CASES)}"
    for name in scripts:
        lines = (EXAMPLES / name).read_text().count("\n")
        assert lines <= 90, f"{name} has {lines} lines; examples stay short (~80)"


@pytest.mark.parametrize("name", sorted(CASES))
def test_example_runs(name):
    extra, timeout, expected = CASES[name]
    res = run([sys.executable, str(EXAMPLES / name), *ARGS.get(name, [])], extra, timeout)
    out = res.stdout + res.stderr
    assert res.returncode == 0, f"{name} exited with {res.returncode}:\n{out[-4000:]}"
    for pattern in expected:
        assert re.search(pattern, res.stdout), f"{name}: no {pattern!r} in its output:\n{res.stdout[-4000:]}"


def test_zyx_dist_explain_of_the_explain_example():
    res = run([sys.executable, "-m", "zyx_dist.tools.cli", "explain", "examples/explain.py"], {}, 120)
    assert res.returncode == 0, res.stdout + res.stderr
    assert re.search(r"Plan: \d+ kernels", res.stdout)
    assert "explain: ok" not in res.stdout  # build() only: the script's __main__ part did not run
