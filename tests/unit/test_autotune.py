"""The kernel options and the autotuner without a device: row kernels render as one work-group per row,
options of another device model are never shared, and a search whose worker is lost falls back to the cost
model's choice. (Candidates run against NumPy and the tuner's trials, disk cache and second process are on
PoCL: tests/runtime/test_autotune_pocl.py.)"""

from __future__ import annotations

import dataclasses

import numpy as np

import zyx_dist as zd
from zyx_dist.codegen import autotune, options
from zyx_dist.codegen.render import facts, render_kernel
from zyx_dist.fuse.kernelize import kernelize


def test_row_kernels_read_each_row_in_one_work_group():
    X = np.zeros((8, 300), np.float32)
    k, = kernelize([zd.softmax(zd.tensor(X), axis=1).node])
    src = render_kernel(k, "opencl").source
    assert "get_group_id(0)" in src and src.count("barrier(CLK_LOCAL_MEM_FENCE)") >= 2
    p = render_kernel(k, "cuda")
    assert p.gws == (8 * p.lws[0],)


def test_options_of_another_model_are_never_shared():
    """Programs are named by kernel and options, and rendered per device model (the session's variants)."""
    X = np.zeros((4, 8), np.float32)
    k, = kernelize([(zd.tensor(X) + 1).node])
    a = render_kernel(k, "opencl", options.KernelOpts(lws=64))
    b = render_kernel(k, "opencl", options.KernelOpts(lws=128))
    assert a.name != b.name and a.lws != b.lws
    assert dataclasses.replace(options.KernelOpts(), lws=64).tag() in a.opts.tag()


def test_a_search_that_fails_falls_back_to_the_cost_model_choice(tmp_path, monkeypatch):
    """A worker lost in the middle of a search (here: its run raises) costs the tuning, not the realize."""
    monkeypatch.setattr(autotune, "MIN_SECONDS", 0.0)
    k, = kernelize([(zd.tensor(np.zeros(65539, np.float32)) * 2 + 1).node])
    target = autotune.Target("opencl|test|test|1", "opencl", False, 1024, "opencl:0", 10.0, 5.0)
    tuner = autotune.Tuner(True, 4, str(tmp_path))

    def lost(batch):
        raise RuntimeError("worker lost")

    opts = tuner.program(k, target, lost, 1 << 30, iter(range(1, 100)).__next__).opts
    assert opts == options.candidates(facts(k, "opencl", False))[0]
    assert not tuner.chosen and not list(tmp_path.iterdir())


def test_a_candidate_far_slower_than_the_best_gets_one_launch(tmp_path, monkeypatch):
    """Candidates are timed by the fastest of TRIALS launches, but one whose first launch is CUTOFF times the best
    so far is not launched again; the fastest candidate wins and is remembered."""
    from zyx_dist.protocol import BatchResult, Compile, Done, Launch

    monkeypatch.setattr(autotune, "MIN_SECONDS", 0.0)
    k, = kernelize([(zd.tensor(np.zeros(1 << 20, np.float32)) * 2 + 1).node])
    cands = options.candidates(facts(k, "opencl", False))
    assert len(cands) >= 3
    names = [render_kernel(k, "opencl", o).name for o in cands[:3]]
    slow = {names[0]: 1e-3, names[1]: 1e-1, names[2]: 5e-4}  # the second is 100x the first: one launch only
    target = autotune.Target("opencl|test|test|1", "opencl", False, 1024, "opencl:0", 10.0, 5.0)
    tuner = autotune.Tuner(True, 3, str(tmp_path))
    programs: dict[int, str] = {}
    launched: dict[str, int] = {}

    def run(batch):
        seconds = []
        for cmd in batch:
            if isinstance(cmd, Compile):
                programs[cmd.prog] = cmd.name
            elif isinstance(cmd, Launch):
                name = programs[cmd.prog]
                launched[name] = launched.get(name, 0) + 1
                seconds.append(slow[name])
        return BatchResult(tuple(Done(i) for i in range(len(batch))), "inc", 0, tuple(seconds))

    prog = tuner.program(k, target, run, 1 << 30, iter(range(1, 1000)).__next__)
    assert launched == {names[0]: autotune.TRIALS, names[1]: 1, names[2]: autotune.TRIALS}
    assert prog.name == names[2] and tuner.trials == 3 and tuner.chosen
