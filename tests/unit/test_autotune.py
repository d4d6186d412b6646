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

import zyx_dist as zd
from zyx_dist import autotune
from zyx_dist.codegen import options
from zyx_dist.codegen.render import facts, render_kernel
from zyx_dist.kernelize import kernelize
from zyx_dist.protocol import Alloc, Compile, CopyIn, CopyOut, Free, Launch
from zyx_dist.runtime.worker import Worker

ROOT = Path(__file__).resolve().parents[2]


def _graphs(rng):
    X = rng.standard_normal((48, 300)).astype(np.float32)
    # big enough for every loop-free candidate (the largest work-groups of 2 float4 per work-item), and not a
    # multiple of 4: the vector form's scalar tail
    v = rng.standard_normal((1 << 19) + 3).astype(np.float32)
    A, B = rng.standard_normal((70, 40)).astype(np.float32), rng.standard_normal((40, 52)).astype(np.float32)
    i = rng.integers(-50, 50, (33, 17)).astype(np.int32)
    e = np.exp(X - X.max(1, keepdims=True))
    mu = X.mean(1, keepdims=True)
    return [
        ("ew_tail", lambda: zd.relu(zd.tensor(v) * 2 + 1) * zd.sigmoid(zd.tensor(v)),
         np.maximum(v * 2 + 1, 0) / (1 + np.exp(-v))),
        ("broadcast", lambda: zd.tensor(X) * zd.tensor(X[0]) + 1, X * X[0] + 1),
        ("row_softmax", lambda: zd.softmax(zd.tensor(X), axis=1), e / e.sum(1, keepdims=True)),
        ("layer_norm", lambda: (zd.tensor(X) - zd.tensor(X).mean(1, keepdims=True))
         / zd.sqrt(((zd.tensor(X) - zd.tensor(X).mean(1, keepdims=True)) ** 2).mean(1, keepdims=True) + 1e-5),
         (X - mu) / np.sqrt(((X - mu) ** 2).mean(1, keepdims=True) + 1e-5)),
        ("row_sum", lambda: zd.tensor(X).sum(1), X.sum(1)),
        ("total", lambda: zd.tensor(X).max(), X.max()),
        ("matmul_epilogue", lambda: zd.relu(zd.tensor(A) @ zd.tensor(B) + 1), np.maximum(A @ B + 1, 0)),
        ("int", lambda: (zd.tensor(i) * 3) % 7 - zd.tensor(i).sum(0), (i * 3) % 7 - i.sum(0)),
    ]


def _run(worker: Worker, t, pick) -> np.ndarray:
    """Run the graph of `t` kernel by kernel on `worker`, each kernel rendered with `pick(kernel)`."""
    kernels = kernelize([t.node])
    ids, cmds = iter(range(1, 10**6)), []  # fresh ids: every run frees what it made
    bufs: dict[int, int] = {}
    for k in kernels:
        for x in k.inputs:
            if x.id not in bufs:
                bufs[x.id] = next(ids)
                cmds += [Alloc(bufs[x.id], max(x.size * x.dtype.itemsize, 1)), CopyIn(bufs[x.id], x.host)]
        for o in k.outputs:
            bufs[o.id] = next(ids)
            cmds.append(Alloc(bufs[o.id], max(o.size * o.dtype.itemsize, 1)))
        p = render_kernel(k, "opencl", pick(k))
        pid = next(ids)
        args = tuple(bufs[x.id] for x in k.inputs + k.outputs)
        cmds += [Compile(pid, p.source, p.name), Launch(pid, args, p.gws, p.lws, args[: len(k.inputs)],
                                                       args[len(k.inputs):])]
    cmds.append(CopyOut(bufs[t.node.id], t.dtype.name, t.shape))
    cmds += [Free(b) for b in bufs.values()]
    res = worker.run(cmds)
    assert all(type(r).__name__ == "Done" for r in res.results), [r for r in res.results if type(r).__name__ != "Done"]
    return res.results[-1 - len(bufs)].value


def test_every_candidate_computes_what_numpy_does():
    rng = np.random.default_rng(0)
    worker = Worker("opencl:cpu")
    try:
        covered: set[str] = set()  # the options some candidate sets away from their defaults
        for label, build, expected in _graphs(rng):
            t = build()
            seen: set = set()
            for k in kernelize([t.node]):
                for gpu in (False, True):
                    for o in options.candidates(facts(k, "opencl", gpu)):
                        seen.add(o)
            assert seen, label
            covered |= {f.name for f in dataclasses.fields(options.KernelOpts) for o in seen
                        if getattr(o, f.name) != getattr(options.KernelOpts(), f.name)}
            for opts in sorted(seen, key=lambda o: o.tag()):  # every kernel of the graph with these options
                got = _run(worker, t, lambda k, o=opts: o)
                np.testing.assert_allclose(got, expected, rtol=2e-5, atol=2e-5, err_msg=f"{label} {opts.tag()}")
    finally:
        worker.close()
    assert covered == {f.name for f in dataclasses.fields(options.KernelOpts)}, covered


def test_row_kernels_read_each_row_in_one_work_group():
    X = np.zeros((8, 300), np.float32)
    k, = kernelize([zd.softmax(zd.tensor(X), axis=1).node])
    src = render_kernel(k, "opencl").source
    assert "get_group_id(0)" in src and src.count("barrier(CLK_LOCAL_MEM_FENCE)") >= 2
    p = render_kernel(k, "cuda")
    assert p.gws == (8 * p.lws[0],)


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


def test_trials_run_on_scratch_outside_the_user_count(tuned, capsys):
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
    out = capsys.readouterr().out
    assert out.count("zyx_dist: autotune k_") == s.tuner.trials and "autotune winner" in out


def test_the_winner_is_on_disk_and_a_second_process_uses_it_at_once(tuned):
    s, cache = tuned
    _work()[1].realize()
    files = list(cache.glob("autotune-*.json"))
    assert len(files) == 1
    data = json.loads(files[0].read_text())
    key = next(iter(s.targets))
    assert data["device"] == key and "|" in key and len(data["kernels"]) == 1
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


def test_options_of_another_model_are_never_shared():
    """Programs are named by kernel and options, and rendered per device model (the session's variants)."""
    X = np.zeros((4, 8), np.float32)
    k, = kernelize([(zd.tensor(X) + 1).node])
    a = render_kernel(k, "opencl", options.KernelOpts(lws=64))
    b = render_kernel(k, "opencl", options.KernelOpts(lws=128))
    assert a.name != b.name and a.lws != b.lws
    assert dataclasses.replace(options.KernelOpts(), lws=64).tag() in a.opts.tag()
