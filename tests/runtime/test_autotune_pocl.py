"""The kernel options and the autotuner on PoCL: every candidate the tuner may pick computes what NumPy
computes (run straight on a Worker, each kernel with the candidate forced), trials run on scratch buffers
outside `kernels_launched`, the winner goes to disk under `autotune.cache_dir` and a second process
launches it without timing anything, and a damaged cache file only costs a new search."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from helpers import option_graphs, run_kernels

import zyx_dist as zd
from zyx_dist.codegen import autotune, options
from zyx_dist.codegen.render import facts
from zyx_dist.fuse.kernelize import kernelize
from zyx_dist.runtime.worker import Worker

ROOT = Path(__file__).resolve().parents[2]


def test_every_candidate_computes_what_numpy_does():
    rng = np.random.default_rng(0)
    worker = Worker("opencl:cpu")
    try:
        covered: set[str] = set()  # the options some candidate sets away from their defaults
        for label, build, expected in option_graphs(rng):
            t = build()
            seen: set = set()
            for k in kernelize([t.node]):
                for dialect in ("opencl", "cuda", "cuda_sm90a"):  # CUDA-only options (stages, wgmma) render on OpenCL too
                    for gpu in (False, True):
                        for o in options.candidates(facts(k, dialect, gpu)):
                            seen.add(o)
            assert seen, label
            covered |= {f.name for f in dataclasses.fields(options.KernelOpts) for o in seen
                        if getattr(o, f.name) != getattr(options.KernelOpts(), f.name)}
            for opts in sorted(seen, key=lambda o: o.tag()):  # every kernel of the graph with these options
                got = run_kernels(worker, t, lambda k, o=opts: o)
                np.testing.assert_allclose(got, expected, rtol=2e-5, atol=2e-5, err_msg=f"{label} {opts.tag()}")
    finally:
        worker.close()
    assert covered == {f.name for f in dataclasses.fields(options.KernelOpts)}, covered


@pytest.fixture
def tuned(tmp_path, monkeypatch):
    monkeypatch.setattr(autotune, "MIN_SECONDS", 0.0)  # time every kernel with a choice, however short
    zd.shutdown()
    s = zd.init({"autotune": {"budget": 4, "cache_dir": str(tmp_path)}, "debug": 32}, ray=False)
    yield s, tmp_path
    zd.shutdown()
    zd.init(ray=False)


def _work(n: int = 65539):
    x = zd.tensor(np.linspace(-3, 3, n, dtype=np.float32)).realize()
    return x, zd.relu(x * 2 + 1) * zd.sigmoid(x)


def test_trials_run_on_scratch_outside_the_user_count(tuned, caplog):
    s, _ = tuned
    x, y = _work()
    zd.reset_stats()
    before = zd.stats()["bytes_in_use"]["opencl:0"]
    X = x.numpy()
    np.testing.assert_allclose(y.numpy(), np.maximum(X * 2 + 1, 0) / (1 + np.exp(-X)), rtol=1e-6)
    st = zd.stats()
    assert st["kernels_launched"] == 1  # the trials do not count
    assert 1 < s.tuner.trials <= 4  # the budget
    np.testing.assert_array_equal(x.numpy(), X)  # inputs untouched
    del y
    assert zd.stats()["bytes_in_use"]["opencl:0"] == before  # scratch buffers freed
    search = [r.getMessage() for r in caplog.records if r.name == "zyx_dist.autotune"]  # debug: 32
    assert sum(m.startswith("zyx_dist: autotune k_") for m in search) == s.tuner.trials
    assert any("autotune winner" in m for m in search)


def test_the_winner_is_on_disk_and_a_second_process_uses_it_at_once(tuned):
    s, cache = tuned
    _work()[1].realize()
    files = list(cache.glob("autotune-*.json"))
    assert len(files) == 1
    data = json.loads(files[0].read_text())
    key = next(iter(s.targets))
    assert data["device"] == key and len(data["kernels"]) == 1
    info = s.infos["opencl:0"]  # keyed by device model and driver version
    assert key.split("|") == [info["backend"], info["device_name"], info["vendor"], info["driver_version"]]
    assert info["driver_version"]
    (_, entry), = data["kernels"].items()
    winner = options.KernelOpts(**entry["opts"])
    code = f"""
import numpy as np, zyx_dist as zd
s = zd.init({{"autotune": {{"cache_dir": {str(cache)!r}}}}}, ray=False)
x = zd.tensor(np.linspace(-3, 3, 65539, dtype=np.float32)).realize()
y = (zd.relu(x * 2 + 1) * zd.sigmoid(x)).realize()
print(s.tuner.trials, [p.opts.tag() for ps in s.programs.values() for p in [ps] if p.opts is not None])
"""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300, check=True)
    trials, tags = out.stdout.split(" ", 1)
    assert trials == "0" and winner.tag() in tags


def test_damaged_or_foreign_cache_files_only_cost_a_new_search(tuned):
    s, _ = tuned
    target = next(iter(s.targets.values()))
    path = s.tuner._file(target)
    for text in ("{not json", json.dumps({"device": "someone else", "kernels": {}}),
                 json.dumps({"device": target.key, "kernels": {"x": {"opts": {"lws": "os.system"}}}})):
        path.write_text(text)
        s.tuner.disk.clear()
        s.tuner.chosen.clear()
        s.programs.clear()
        s.plans.entries.clear()
        trials = s.tuner.trials
        _, y = _work(65539 + len(text))
        y.realize()
        assert s.tuner.trials > trials
    assert json.loads(path.read_text())["device"] == target.key


def test_disabled_tuner_times_nothing(tmp_path, monkeypatch):
    monkeypatch.setattr(autotune, "MIN_SECONDS", 0.0)
    zd.shutdown()
    try:
        s = zd.init({"autotune": {"enabled": False, "cache_dir": str(tmp_path)}}, ray=False)
        _work()[1].realize()
        assert s.tuner.trials == 0 and not list(tmp_path.glob("autotune-*"))
    finally:
        zd.shutdown()
        zd.init(ray=False)
