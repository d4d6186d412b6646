"""The renderer's text tests (tests/unit/test_render.py) once more, with every program they render built by
OpenCL (PoCL through pyopencl), so the text they check is also valid OpenCL C; and two kernels of movement
ops run on PoCL against NumPy (a bug reproduction: C's truncating division of a negative index operand).
"""

from __future__ import annotations

import inspect
import os
import sys

import numpy as np
import pytest
from helpers import one

from zyx_dist import dtypes as dt
from zyx_dist.codegen.render import Program, render_kernel
from zyx_dist.fuse.kernelize import Kernel
from zyx_dist.graph import ir as g

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "unit"))
import test_render as unit

# every unit test that renders through `build`, collected here again so that `build` below builds its programs
for _name, _test in vars(unit).items():
    if _name.startswith("test_") and "build" in inspect.signature(_test).parameters:
        globals()[_name] = _test

f32 = dt.float32


@pytest.fixture(scope="module")
def cl_ctx():
    cl = pytest.importorskip("pyopencl")
    try:
        devices = [d for p in cl.get_platforms() for d in p.get_devices()]
    except cl.Error as e:  # no ICD at all
        pytest.skip(f"no OpenCL platform: {e}")
    if not devices:
        pytest.skip("no OpenCL device")
    dev = next((d for d in devices if "pthread" in d.name.lower() or "cpu" in d.name.lower()), devices[0])
    return cl, cl.Context([dev])


@pytest.fixture
def build(cl_ctx):
    """Render each kernel and build the source with OpenCL, returning the Program."""
    cl, ctx = cl_ctx

    def _build(k: Kernel, gpu: bool | None = None) -> Program:
        prog = render_kernel(k, gpu=gpu)
        if prog.uses_fp64 and "cl_khr_fp64" not in ctx.devices[0].extensions:
            return prog
        try:
            cl.Program(ctx, prog.source).build()
        except cl.RuntimeError as e:  # pragma: no cover - the message is the point
            pytest.fail(f"generated source does not build:\n{prog.source}\n{e}")
        return prog

    return _build


def test_the_unit_render_tests_are_collected_here():
    assert sum(1 for name in globals() if name.startswith("test_") and name in vars(unit)) >= 25


def run(cl_ctx, k: Kernel) -> list[np.ndarray]:
    """Build and run a kernel whose inputs are host leaves; the outputs as arrays."""
    cl, ctx = cl_ctx
    p = render_kernel(k)
    queue = cl.CommandQueue(ctx)
    mf = cl.mem_flags
    ins = [cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=np.ascontiguousarray(x.host)) for x in k.inputs]
    outs = [np.zeros(o.shape, o.dtype.np_dtype) for o in k.outputs]
    bufs = [cl.Buffer(ctx, mf.WRITE_ONLY, o.nbytes) for o in outs]
    getattr(cl.Program(ctx, p.source).build(), p.name)(queue, p.gws, p.lws, *ins, *bufs)
    for o, b in zip(outs, bufs):
        cl.enqueue_copy(queue, o, b)
    queue.finish()
    return outs


def test_run_transpose_and_pad(cl_ctx):
    xh = np.arange(12, dtype=np.float32).reshape(3, 4)
    x = g.leaf(xh, f32)
    (out,) = run(cl_ctx, one(g.pad(g.permute(x, (1, 0)), ((1, 0), (0, 2)), -1.0)))
    np.testing.assert_array_equal(out, np.pad(xh.T, ((1, 0), (0, 2)), constant_values=-1.0))


def test_run_flip_of_reshaped_transpose(cl_ctx):
    xh = np.arange(12, dtype=np.float32).reshape(3, 4)
    x = g.leaf(xh, f32)
    (out,) = run(cl_ctx, one(g.flip(g.reshape(g.permute(x, (1, 0)), (12,)), (0,))))
    np.testing.assert_array_equal(out, xh.T.reshape(-1)[::-1])
