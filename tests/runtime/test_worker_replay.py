"""Batch templates on a Worker (runtime/replay.py), on a real OpenCL device (PoCL on the CPU, `opencl:0`)
with hand-written kernels, checked against NumPy: a DefineTemplate keeps a batch whose buffer fields are
slots, a Replay runs it with its slots bound to buffer ids, exactly as the same batch written out would run;
a failure inside a replay is one Failed for the Replay after which the template's frees still ran; a replay
of an unknown template, or with the wrong number of buffers, fails clearly; reset forgets templates."""

from __future__ import annotations

import numpy as np
import pytest

from zyx_dist.protocol import (
    Alloc,
    Compile,
    CopyIn,
    CopyOut,
    DefineTemplate,
    Done,
    DropTemplate,
    Failed,
    Free,
    Launch,
    Replay,
    Sync,
    TransferRef,
)
from zyx_dist.runtime import Worker

AXPB = "__kernel void axpb(__global const float* a, __global float* b){ int i=get_global_id(0); b[i]=a[i]*2.0f+1.0f; }"
ADD = """__kernel void add(__global const float* a, __global const float* b, __global float* c){
    int i = get_global_id(0);
    c[i] = a[i] + b[i];
}"""
N = 1000

# slots: 0 the input, 1 an intermediate (allocated and freed inside), 2 the result
TEMPLATE = (Alloc(1, N * 4), Alloc(2, N * 4),
            Launch(1, (0, 1), (N,), None, reads=(0,), writes=(1,)),
            Launch(2, (1, 0, 2), (N,), None, reads=(1, 0), writes=(2,)),
            Free(1), Sync())


@pytest.fixture
def worker():
    w = Worker("opencl:0", profile=True)
    yield w
    w.close()


def ok(res) -> list:
    bad = [r for r in res.results if isinstance(r, Failed)]
    assert not bad, bad[0].message
    return [r.value for r in res.results]


def setup(worker, x):
    ok(worker.run([Compile(1, AXPB, "axpb"), Compile(2, ADD, "add"), Alloc(10, x.nbytes), CopyIn(10, x),
                   DefineTemplate(5, TEMPLATE)]))


def test_replay_runs_the_template_with_its_slots_bound():
    w = Worker("opencl:0", profile=True)
    try:
        x = np.random.default_rng(0).standard_normal(N).astype(np.float32)
        setup(w, x)
        before = w.stats()["bytes_in_use"]
        for i in range(4):
            res = w.run([Replay(5, (10, 100 + 2 * i, 101 + 2 * i)), CopyOut(101 + 2 * i, "float32", (N,))])
            values = ok(res)
            assert len(res.results) == 2 and values[0] == ()  # one result for the whole replay: no exports
            np.testing.assert_allclose(values[1], (x * 2 + 1) + x, rtol=1e-6)
            assert len(res.kernel_seconds) == 2 and res.graphs == ()  # OpenCL: no CUDA graphs
            assert 100 + 2 * i not in w._bufs  # the intermediate was freed inside the replay
        assert w.stats()["bytes_in_use"] == before + 4 * x.nbytes  # the four results are live
    finally:
        w.close()


def test_failure_inside_a_replay_still_runs_its_frees(worker):
    x = np.ones(N, np.float32)
    setup(worker, x)
    before = worker.stats()["bytes_in_use"]
    # slot 2 bound to a buffer that exists already: the second Alloc fails; the Free of slot 1 still runs
    ok(worker.run([Alloc(30, 16)]))
    res = worker.run([Replay(5, (10, 20, 30)), Free(30)])
    assert isinstance(res.results[0], Failed) and "already allocated" in res.results[0].message
    assert isinstance(res.results[1], Done)  # a Free after the failure runs, as in any batch
    assert 20 not in worker._bufs and worker.stats()["bytes_in_use"] == before


def test_bad_replays_fail_clearly(worker):
    x = np.ones(N, np.float32)
    setup(worker, x)
    res = worker.run([Replay(6, (10, 11, 12))])
    assert isinstance(res.results[0], Failed) and "no batch template 6" in res.results[0].message
    res = worker.run([Replay(5, (10, 11))])
    assert isinstance(res.results[0], Failed) and "3 slots" in res.results[0].message
    res = worker.run([DefineTemplate(7, (Launch(99, (0,), (N,), None, reads=(0,), writes=()),))])
    assert isinstance(res.results[0], Failed) and "program 99" in res.results[0].message
    ok(worker.run([DropTemplate(5)]))
    res = worker.run([Replay(5, (10, 11, 12))])
    assert isinstance(res.results[0], Failed)
    ok(worker.run([DefineTemplate(5, TEMPLATE)]))
    worker.reset()
    res = worker.run([Replay(5, (10, 11, 12))])
    assert isinstance(res.results[0], Failed)  # a reset worker has no templates left


def test_replay_imports_and_exports_transfers(worker):
    x = np.arange(N, dtype=np.float32)
    ok(worker.run([Compile(1, AXPB, "axpb"), Alloc(10, x.nbytes), CopyIn(10, x),
                   DefineTemplate(8, (Alloc(1, N * 4), CopyIn(1, TransferRef(77)),
                                      Launch(1, (1, 0), (N,), None, reads=(1,), writes=(0,)),
                                      CopyOut(0, "uint8", (N * 4,), export=78), Free(1), Sync()))]))
    incoming = (np.arange(N, dtype=np.float32) * 3).view(np.uint8)
    res = worker.run([Replay(8, (10, 11), imports=(incoming,), exports=(78,))])
    (exported,) = ok(res)[0]
    np.testing.assert_allclose(exported.view(np.float32), np.arange(N) * 3 * 2 + 1, rtol=1e-6)
    res = worker.run([Replay(8, (10, 12), imports=(None,), exports=(78,))])  # the transfer's source failed
    assert isinstance(res.results[0], Failed) and "no data" in res.results[0].message
    assert 12 not in worker._bufs
