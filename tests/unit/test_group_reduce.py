"""In-group reductions (one work-group per output, a tree in local memory): the cost model picks them on
GPUs for long reduce loops into few outputs; their OpenCL text is checked here, the CUDA text with nvcc
where it is installed. (They run against NumPy on PoCL in tests/runtime/test_group_reduce_pocl.py.)"""

import shutil
import subprocess

import numpy as np
import pytest

import zyx_dist as zd
from zyx_dist.codegen.options import KernelOpts
from zyx_dist.codegen.render import CUDA, OPENCL, render_kernel
from zyx_dist.fuse.kernelize import kernelize


def test_gpu_choice_for_a_long_reduce_into_few_outputs_is_an_in_group_reduction():
    k = kernelize([zd.Tensor(zd.tensor(np.ones((64, 1000), np.float32)).node).sum(1).node])[0]
    src = render_kernel(k, OPENCL, gpu=True).source
    assert "__local" in src and "barrier(CLK_LOCAL_MEM_FENCE)" in src and "if (lid == 0)" in src
    assert "__local" not in render_kernel(k, OPENCL, gpu=False).source


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")
def test_cuda_group_reduction_compiles(tmp_path):
    x = zd.tensor(np.ones((8, 4096), np.float32)).node
    k = kernelize([zd.Tensor(x).max(1).node])[0]
    src = render_kernel(k, CUDA).source
    assert "__shared__" in src and "__syncthreads();" in src
    assert "__local" not in render_kernel(k, OPENCL).source  # PoCL keeps its work-item loops
    f = tmp_path / "k.cu"
    f.write_text(src)
    subprocess.run(["nvcc", "--ptx", "-arch=sm_90", "-x", "cu", str(f), "-o", str(tmp_path / "k.ptx")], check=True)


@pytest.mark.parametrize("op", ["max", "min", "sum"])
@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_cuda_warp_shuffles_are_reached_by_every_lane(op, dtype):
    """A full-mask __shfl_xor_sync must run in all 32 lanes. max/min combine through a ternary that names its
    operand twice; a shuffle written inside it ran only in the lanes taking that side, and the rest waited
    forever (the GPT training step hung on the H200 in a row max). So each shuffle is a statement of its own."""
    x = zd.tensor(np.ones((64, 128), dtype)).node
    k = kernelize([getattr(zd.Tensor(x), op)(1).node])[0]
    for group in (32, 128, 256):
        src = render_kernel(k, CUDA, KernelOpts(group=group)).source
        lines = [ln for ln in src.splitlines() if "__shfl_xor_sync" in ln]
        assert lines, src
        for ln in lines:
            assert ln.count("__shfl_xor_sync") == 1, ln
            before = ln.partition("__shfl_xor_sync")[0]
            assert before.rstrip().endswith("_sh =") and "?" not in before, ln


def test_gpu_choice_for_many_rows_along_memory_is_a_warp_per_row():
    """A row reduce of a row-major tensor with many rows: a work-item per row would read one element of 32 rows per
    load, so a GPU's first choice is a warp per row, and for short rows (up to 128) in CUDA 8 lanes of a warp per
    row, 32 rows per work-group; a column sum (neighbouring outputs, neighbouring addresses) and a sum over a
    transposed view keep their choice (not a warp each); CPUs are not changed."""
    from zyx_dist.codegen import options
    from zyx_dist.codegen.render import facts

    x = zd.tensor(np.ones((256, 512, 64), np.float32))

    def first(t, dialect="cuda", gpu=None):
        (k,) = kernelize([t.node])
        return options.candidates(facts(k, dialect, gpu))[0]

    long = zd.tensor(np.ones((65536, 160), np.float32))  # rows of 160: a warp each first
    assert first(long.sum(axis=-1)).group == 32 and first(zd.exp(long).max(axis=-1)).group == 32
    assert first(x.sum(axis=-1)).group == 8 and first(zd.exp(x).max(axis=-1)).group == 8  # rows of 64
    assert first(x.sum(axis=-1), "opencl", True).group == 32  # lane groups: CUDA's shuffles only
    assert first(x.sum(axis=0)).group not in (8, 32)  # columns: neighbours read neighbours
    assert first(zd.permute_dims(x, (2, 0, 1)).sum(axis=-1)).group not in (8, 32)  # summed 64 elements apart
    assert first(x.sum(axis=-1), "opencl", False).group == 0  # CPUs read whole rows from cache
    for t in (x, long):
        src = render_kernel(kernelize([t.sum(axis=-1).node])[0], CUDA, first(t.sum(axis=-1))).source
        assert "__shfl_xor_sync" in src
