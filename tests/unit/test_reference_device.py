"""The NumPy reference device (zyx_dist/runtime/reference.py) and what it makes testable without OpenCL.

- A `Worker("reference:0")` runs protocol batches whose Compile commands carry the kernel's op list
  (`codegen.kernel_ops`), and its results equal NumPy's and the test interpreter's (tests/reference.py) on the
  option graphs of the autotuner tests, integer edge cases and float16 rounding; a program without an op list,
  or with a malformed one, is a CompileError that says why.
- The op list is plain data (it crosses a process boundary).
- The whole engine runs on reference devices: random programs of the fuzzer against NumPy, the same bits on
  one worker and on two with round-robin placement (transfers), spills under a memory limit and the
  OutOfMemoryError beyond it, and a process where pyopencl cannot be imported at all.
"""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from fuzzgraph import check_against_numpy, detached_session, program_from_seed, programs, result_bits
from helpers import option_graphs, run_kernels
from hypothesis import HealthCheck, given, settings
from reference import evaluate

import zyx_dist as zd
from zyx_dist.codegen.kernel_ops import kernel_ops
from zyx_dist.codegen.render import render_kernel
from zyx_dist.fuse.kernelize import kernelize
from zyx_dist.graph import ir as g
from zyx_dist.protocol import Compile, Done, Failed, KernelOps
from zyx_dist.runtime.device import Device
from zyx_dist.runtime.worker import Worker

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def worker():
    w = Worker("reference:0")
    yield w
    w.close()


def test_the_reference_device_is_a_device(worker):
    assert isinstance(worker.backend, Device) and worker.backend.kind == "reference"
    info = worker.info()
    assert info["name"] == "reference:0" and info["backend"] == "reference" and info["memory_bytes"] > 0


def test_option_graphs_match_numpy_and_the_test_interpreter(worker):
    for label, build, expected in option_graphs(np.random.default_rng(0)):
        t = build()
        got = run_kernels(worker, t.node, with_ops=True)
        np.testing.assert_allclose(got, expected, rtol=2e-5, atol=2e-5, err_msg=label)
        np.testing.assert_allclose(got, evaluate(t.node), rtol=2e-5, atol=2e-5, err_msg=label)


def test_integer_edge_cases_follow_the_kernels():
    a = np.array([7, -7, 7, -7, 0, -(2**31), 5], np.int32)
    b = np.array([2, 2, -2, -2, 0, -1, 0], np.int32)
    x, y = zd.tensor(a), zd.tensor(b)
    np.testing.assert_array_equal((x // y).numpy(), [3, -4, -4, 3, 0, -(2**31), 0])  # divisor 0 gives 0
    np.testing.assert_array_equal((x % y).numpy(), [1, 1, -1, -1, 0, 0, 0])  # the divisor's sign
    base, exp = zd.tensor(np.array([1, -1, -1, 2, 3], np.int32)), zd.tensor(np.array([-3, -3, -2, -1, 3], np.int32))
    np.testing.assert_array_equal((base ** exp).numpy(), [1, -1, 1, 0, 27])  # C's ipow
    f = zd.tensor(np.array([0.5, 1.5, 2.5, -0.5, np.nan], np.float32))
    np.testing.assert_array_equal(zd.round(f).numpy()[:4], [0.0, 2.0, 2.0, -0.0])  # half to even
    assert np.isnan(zd.maximum(f, 0.0).numpy()[4])  # NaN propagates


def test_float16_is_computed_in_float32_and_rounded_once_on_store():
    h = np.array([1.0, 2.0 ** -11, 3.0], np.float16)
    x = zd.tensor(h)
    got = (x + 2.0 ** -11 + 2.0 ** -11).numpy()  # one kernel: the two small steps add up before the rounding
    want = (h.astype(np.float32) + np.float32(2.0 ** -11) + np.float32(2.0 ** -11)).astype(np.float16)
    assert got.dtype == np.float16 and np.array_equal(got, want)
    assert not np.array_equal(want, (h + np.float16(2.0 ** -11)) + np.float16(2.0 ** -11))  # rounded per op


def test_compile_without_or_with_a_broken_op_list_is_a_compile_error(worker):
    k = kernelize([g.unary(g.UnaryOp.EXP, g.leaf(np.ones(4, np.float32), zd.float32))])[0]
    p = render_kernel(k)
    (f,) = worker.run([Compile(1, p.source, p.name)]).results
    assert isinstance(f, Failed) and f.error == "CompileError" and "op list" in f.message
    assert "   1| " in f.message  # the numbered source, as every backend's CompileError
    ops = kernel_ops(k)
    broken = KernelOps(ops.inputs, (*ops.rows[:-1], ("unary", "no-such-op", *ops.rows[-1][2:])), ops.outputs)
    (f,) = worker.run([Compile(2, p.source + " ", p.name, broken)]).results
    assert isinstance(f, Failed) and f.error == "CompileError" and "malformed" in f.message
    (d,) = worker.run([Compile(3, p.source, p.name, ops)]).results
    assert isinstance(d, Done)


def test_the_op_list_is_plain_data():
    x = zd.tensor(np.ones((3, 4), np.float32))
    t = zd.softmax(zd.pad(x, ((1, 0), (0, 1)), 2.0).astype(zd.float16), axis=1)[::-1]
    seen: set[str] = set()
    for k in kernelize([t.node]):
        ops = kernel_ops(k)
        stack = [ops.inputs, ops.rows, ops.outputs]
        while stack:
            v = stack.pop()
            if isinstance(v, tuple):
                stack.extend(v)
            else:
                assert v is None or type(v) in (str, int, float, bool), (type(v), v)
        assert pickle.loads(pickle.dumps(ops)) == ops
        seen |= {r[0] for r in ops.rows}
    assert seen >= {"input", "pad", "cast", "reduce", "binary", "unary", "expand", "flip"}, seen


@settings(max_examples=int(os.environ.get("ZYX_DIST_FUZZ_EXAMPLES", "40")), deadline=None, print_blob=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much])
@given(programs())
def test_random_programs_match_numpy(prog):
    check_against_numpy(prog)


def test_same_bits_on_one_and_on_two_workers_with_transfers():
    progs = [program_from_seed(s, rand_inputs=True) for s in range(2000, 2012)]
    one = [result_bits(p) for p in progs]  # the unit tier's session: reference:0 and reference:1
    with detached_session():
        zd.init({"scheduler": {"policy": "round_robin"}}, ray=False, devices=["reference:0", "reference:1"])
        two = [result_bits(p) for p in progs]
        assert zd.stats()["transfers"] > 0, "round_robin moved no data: the check would not mean much"
    assert one == two


def test_spills_under_a_memory_limit_and_out_of_memory_beyond_it():
    with detached_session():
        zd.init({"memory_limit": 3 * 2**20}, ray=False, devices=["reference:0"])
        xs = [(zd.ones(2**18) * i).realize() for i in range(4)]  # 1 MiB each: the 4th spills one
        assert zd.stats()["spills"] >= 1
        assert [float(x.sum()) for x in xs] == [i * 2**18 for i in range(4)]
        with pytest.raises(zd.OutOfMemoryError) as info:
            (zd.ones(2**20) + 1).realize()  # 4 MiB: more than the limit
        assert "reference:0" in str(info.value)
        np.testing.assert_array_equal(xs[1].numpy(), np.ones(2**18, np.float32))  # the others are intact


def test_a_process_without_pyopencl_runs_on_reference_devices():
    code = """
import importlib, pkgutil, sys
sys.modules["pyopencl"] = None
import numpy as np
import zyx_dist as zd
for m in pkgutil.walk_packages(zd.__path__, "zyx_dist."):
    if not m.name.endswith((".actor", ".ray_backend")):  # ray, not OpenCL: imported elsewhere
        importlib.import_module(m.name)
with zd.init(ray=False, devices=["reference:0"]):
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    print(float((zd.tensor(a) @ zd.tensor(a.T)).sum()), float((a @ a.T).sum()))
try:
    zd.init(ray=False, devices=["opencl:0"])
except zd.DeviceError as e:
    print("DeviceError", "pyopencl" in str(e))
"""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120,
                         check=True).stdout.split("\n")
    got, want = out[0].split()
    assert float(got) == float(want) and out[1] == "DeviceError True"
