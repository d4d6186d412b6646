"""Worker tests on a real OpenCL device (PoCL on the CPU, `opencl:0`) with hand-written kernels,
checked against NumPy."""

from __future__ import annotations

import numpy as np
import pytest

from zyx_dist.errors import DeviceError
from zyx_dist.protocol import Alloc, Compile, CopyIn, CopyOut, Done, Failed, Free, Launch, Reload, Spill, Sync
from zyx_dist.runtime import Worker

AXPB = "__kernel void axpb(__global const float* a, __global float* b){ int i=get_global_id(0); b[i]=a[i]*2.0f+1.0f; }"
INC = "__kernel void inc(__global float* a){ int i=get_global_id(0); a[i]=a[i]+1.0f; }"
ADD = """__kernel void add(__global const float* a, __global const float* b, __global float* c){
    int i = get_global_id(0);
    c[i] = a[i] + b[i];
}"""


@pytest.fixture
def worker():
    w = Worker("opencl:0")
    yield w
    w.close()


def ok(res) -> list:
    bad = [r for r in res.results if isinstance(r, Failed)]
    assert not bad, bad[0].message
    return [r.value for r in res.results]


def test_alloc_copy_compile_launch_copyout(worker):
    x = np.random.default_rng(0).standard_normal(1000).astype(np.float32)
    res = worker.run(
        [
            Alloc(1, x.nbytes),
            Alloc(2, x.nbytes),
            CopyIn(1, x),
            Compile(7, AXPB, "axpb"),
            Launch(7, (1, 2), (1000,), None, reads=(1,), writes=(2,)),
            CopyOut(2, "float32", (10, 100)),
        ]
    )
    values = ok(res)
    assert [r.index for r in res.results] == list(range(6))
    out = values[-1]
    assert out.dtype == np.float32 and out.shape == (10, 100)
    np.testing.assert_allclose(out.ravel(), x * 2 + 1, rtol=1e-6)
    assert res.bytes_in_use == 2 * x.nbytes == worker.stats()["bytes_in_use"]
    assert res.incarnation == worker.incarnation and len(res.incarnation) == 32
    assert res.kernel_seconds == ()  # profiling is off by default


def test_chain_of_dependent_launches(worker):
    # Big enough that an unordered out-of-order queue would visibly overlap the launches.
    n, steps = 1 << 20, 16
    x = np.arange(n, dtype=np.float32) % 97
    batch = [
        Alloc(1, x.nbytes),
        Alloc(2, x.nbytes),
        Alloc(3, x.nbytes),
        CopyIn(1, x),
        Compile(0, AXPB, "axpb"),
        Compile(1, INC, "inc"),
        Compile(2, ADD, "add"),
    ]
    for s in range(steps):  # ping-pong 1 -> 2 -> 1, with in-place increments between
        src, dst = (1, 2) if s % 2 == 0 else (2, 1)
        batch.append(Launch(0, (src, dst), (n,), None, reads=(src,), writes=(dst,)))
        batch.append(Launch(1, (dst,), (n,), None, reads=(dst,), writes=(dst,)))
    batch.append(Launch(2, (1, 2, 3), (n,), (256,), reads=(1, 2), writes=(3,)))
    batch.append(CopyOut(3, "float32", (n,)))
    out = ok(worker.run(batch))[-1]
    a, b = x.astype(np.float64), None
    for s in range(steps):
        if s % 2 == 0:
            b = a * 2 + 2
        else:
            a = b * 2 + 2
    np.testing.assert_allclose(out, (a + b).astype(np.float32), rtol=1e-6)


def test_compile_error_reports_log_and_frees_still_run(worker):
    x = np.ones(64, np.float32)
    res = worker.run(
        [
            Alloc(1, 256),
            Alloc(2, 256),
            CopyIn(1, x),
            Compile(3, "__kernel void bad(__global float* a){ a[0] = undeclared_thing; }", "bad"),
            Launch(3, (1,), (64,), None, reads=(), writes=(1,)),
            CopyOut(1, "float32", (64,)),
            Alloc(4, 256),
            Free(1),
            Free(2),
            Free(4),  # its Alloc never ran: nothing to free, no second error
        ]
    )
    kinds = [(r.index, type(r).__name__) for r in res.results]
    assert kinds == [(0, "Done"), (1, "Done"), (2, "Done"), (3, "Failed"), (7, "Done"), (8, "Done"), (9, "Done")]
    f = res.results[3]
    assert f.error == "CompileError"
    assert "undeclared_thing" in f.data["log"] and "undeclared_thing" in f.data["source"]
    assert "1| __kernel void bad" in f.message and "Traceback" in f.traceback
    assert res.bytes_in_use == 0 and worker.stats() == {**worker.stats(), "bytes_in_use": 0, "buffers": 0}


def test_allocation_above_limit_is_out_of_memory():
    with Worker("opencl:0", memory_limit=1 << 20) as w:
        res = w.run([Alloc(1, 600_000), Alloc(2, 600_000), Free(1), Free(2)])
        assert isinstance(res.results[0], Done)
        f = res.results[1]
        assert isinstance(f, Failed) and f.error == "OutOfMemoryError"
        assert f.data["device"] == "opencl:0" and f.data["requested"] == 600_000
        assert 0 < f.data["free"] < 600_000 and "600000" in f.message
        assert [type(r).__name__ for r in res.results] == ["Done", "Failed", "Done", "Done"]
        assert res.bytes_in_use == 0 and w.stats()["buffers"] == 0
        assert w.info()["memory_bytes"] == 1 << 20


def test_no_configured_limit_is_90_percent_of_the_free_memory():
    """API.md section 9: `memory_limit: null` is 90% of free memory; a CPU device's memory is the host's, so its
    free memory is the host's available memory, not the device's total."""
    from zyx_dist.runtime.opencl import host_available_bytes

    before = host_available_bytes()
    with Worker("opencl:0") as w:
        limit, total = w.info()["memory_bytes"], w.backend.memory_bytes
        after = host_available_bytes()
    if before is None:
        pytest.skip("no /proc/meminfo here")
    assert limit <= int(0.9 * min(total, max(before, after))) and limit >= int(0.9 * min(total, min(before, after))) * 0.9


BOOL_NOT = "__kernel void bnot(__global const uchar* a, __global uchar* b){ int i=get_global_id(0); b[i]=!a[i]; }"
HALF_SQ = """__kernel void hsq(__global const half* a, __global half* b){
    int i = get_global_id(0);
    float v = vload_half(i, a);
    vstore_half(v * v, i, b);
}"""


def test_bool_and_half_round_trip(worker):
    bools = np.array([True, False, False, True, True], dtype=np.bool_)
    halves = np.array([0.5, -2.0, 3.0, np.inf, np.nan, 65504.0], dtype=np.float16)
    res = worker.run(
        [
            Alloc(1, 5),
            Alloc(2, 5),
            Alloc(3, 12),
            Alloc(4, 12),
            CopyIn(1, bools),
            CopyIn(3, halves),
            Compile(0, BOOL_NOT, "bnot"),
            Compile(1, HALF_SQ, "hsq"),
            Launch(0, (1, 2), (5,), None, reads=(1,), writes=(2,)),
            Launch(1, (3, 4), (6,), None, reads=(3,), writes=(4,)),
            CopyOut(1, "bool", (5,)),
            CopyOut(2, "bool", (5,)),
            CopyOut(3, "float16", (6,)),
            CopyOut(4, "float16", (2, 3)),
        ]
    )
    b_in, b_out, h_in, h_out = ok(res)[-4:]
    assert res.bytes_in_use == 5 + 5 + 12 + 12  # bool is one byte, half two
    assert b_in.dtype == np.bool_ and (b_in == bools).all() and (b_out == ~bools).all()
    assert h_in.dtype == np.float16 and np.array_equal(h_in, halves, equal_nan=True)
    with np.errstate(over="ignore"):
        expect = (halves.astype(np.float32) ** 2).astype(np.float16).reshape(2, 3)
    np.testing.assert_array_equal(h_out, expect)  # includes inf from overflow and NaN


def test_zero_byte_buffer(worker):
    empty = np.zeros((0, 3), np.float32)
    res = worker.run(
        [
            Alloc(1, 0),
            CopyIn(1, empty),
            Compile(0, INC, "inc"),
            Launch(0, (1,), (0,), None, reads=(1,), writes=(1,)),
            CopyOut(1, "float32", (0, 3)),
        ]
    )
    out = ok(res)[-1]
    assert out.shape == (0, 3) and res.bytes_in_use == 0
    assert worker.stats()["buffers"] == 1 and worker.stats()["bytes_reserved"] > 0
    assert worker.run([Free(1)]).bytes_in_use == 0


# Reads its input only after some busy work, so an unordered copy into the same memory would win the race.
SLOW_AXPB = """__kernel void slow(__global const float* a, __global float* b){
    int i = get_global_id(0);
    float acc = 0.0f;
    for (int k = 0; k < 300; k++) acc = acc * 0.5f + 1.0f;
    b[i] = a[i] * 2.0f + acc - 1.0f;
}"""


def test_freed_memory_reused_in_order(worker):
    n = 1 << 20
    x = np.full(n, 3.0, np.float32)
    y = np.full(n, 100.0, np.float32)
    ok(worker.run([Alloc(1, x.nbytes), Alloc(2, x.nbytes), Compile(0, SLOW_AXPB, "slow")]))
    first = worker._bufs[1].handle
    before = worker.stats()["bytes_reserved"]
    # Buffer 1 is freed while the launch reading it may still run; buffer 3 gets its memory and is
    # overwritten right away: the copy must wait for that launch.
    res = worker.run(
        [
            CopyIn(1, x),
            Launch(0, (1, 2), (n,), None, reads=(1,), writes=(2,)),
            Free(1),
            Alloc(3, x.nbytes),
            CopyIn(3, y),
            CopyOut(2, "float32", (n,)),
            CopyOut(3, "float32", (n,)),
        ]
    )
    out2, out3 = ok(res)[-2:]
    assert worker._bufs[3].handle is first  # the pool handed back the same device buffer
    assert worker.stats()["bytes_reserved"] == before  # and allocated nothing new
    assert (out2 == 7.0).all() and (out3 == 100.0).all()
    res = worker.run(
        [Launch(0, (3, 2), (n,), None, reads=(3,), writes=(2,)), CopyOut(2, "float32", (n,)), Free(2), Free(3), Sync()]
    )
    assert (ok(res)[1] == 201.0).all() and res.bytes_in_use == 0


def test_profiling_reports_kernel_times():
    with Worker("opencl:0", profile=True) as w:
        res = w.run(
            [
                Alloc(1, 4096),
                Compile(0, INC, "inc"),
                Launch(0, (1,), (1024,), None, reads=(1,), writes=(1,)),
                Launch(0, (1,), (1024,), None, reads=(1,), writes=(1,)),
            ]
        )
        ok(res)
        assert len(res.kernel_seconds) == 2 and all(0 < s < 10 for s in res.kernel_seconds)


def test_spill_reload_keeps_data_and_frees_device_memory(worker):
    a = np.arange(1024, dtype=np.float32)
    res = worker.run([Alloc(1, a.nbytes), CopyIn(1, a), Compile(1, INC, "inc"),
                      Launch(1, (1,), (1024,), None, reads=(1,), writes=(1,)), Spill(1)])
    assert all(isinstance(r, Done) for r in res.results) and res.bytes_in_use == 0
    assert worker.stats()["spilled_bytes"] == a.nbytes
    out = worker.run([CopyOut(1, "float32", (1024,))]).results[0].value  # read straight from host memory
    np.testing.assert_array_equal(out, a + 1)
    res = worker.run([Reload(1), Launch(1, (1,), (1024,), None, reads=(1,), writes=(1,)),
                      CopyOut(1, "float32", (1024,))])
    assert res.bytes_in_use == a.nbytes
    np.testing.assert_array_equal(res.results[-1].value, a + 2)
    worker.run([Spill(1), Free(1)])
    assert worker.stats()["spilled_bytes"] == 0 and worker.stats()["bytes_in_use"] == 0


def test_unknown_program_buffer(worker):
    res = worker.run([Launch(5, (1,), (4,), None, reads=(), writes=(1,))])
    assert res.results[0].error == "KeyError" and "program 5" in res.results[0].message
    res = worker.run([CopyOut(9, "float32", (1,))])
    assert res.results[0].error == "KeyError" and "buffer 9" in res.results[0].message
    res = worker.run([Alloc(1, 16), CopyOut(1, "float32", (5,))])  # 20 bytes from a 16-byte buffer
    assert res.results[1].error == "ValueError"


def test_device_names():
    with pytest.raises(DeviceError, match="cuda:0"):
        Worker("cuda:0")
    with pytest.raises(DeviceError, match="opencl:0"):  # lists the available devices
        Worker("opencl:99")


def test_info_and_incarnation(worker):
    info = worker.info()
    assert info["name"] == "opencl:0" and info["backend"] == "opencl"
    assert info["memory_bytes"] > 0 and info["compute_units"] > 0 and info["max_work_group_size"] > 0
    assert isinstance(info["fp16"], bool) and isinstance(info["fp64"], bool)
    ok(worker.run([Alloc(1, 1 << 16)]))
    assert worker.info()["free_bytes"] == info["free_bytes"] - (1 << 16)
    with Worker("opencl:0") as other:
        assert other.incarnation != worker.incarnation
    assert worker.run([]).incarnation == worker.incarnation
