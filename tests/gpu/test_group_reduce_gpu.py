"""GPU tier: in-group reductions (warp shuffles, then one exchange of the warps' partials) on CUDA against
NumPy, for every combine (sum, max, min; max/min with NaN rows: NaN wins, as NumPy) and every group size the
tuner may pick (8 and 16: lane groups inside a warp, several rows per work-group, the last one partly past the end). A shuffle that some lanes skip hangs the GPU instead of failing, so each case runs in a
subprocess with a deadline."""

from __future__ import annotations

import subprocess
import sys

import pytest
from gpu_util import cuda_devices

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(cuda_devices() == 0, reason="no CUDA GPU")]

SCRIPT = """
import sys
import numpy as np
sys.path.insert(0, "tests")
from helpers import run_kernels
import zyx_dist as zd
from zyx_dist.codegen.options import KernelOpts
from zyx_dist.runtime.worker import Worker

op, dtype = sys.argv[1], np.dtype(sys.argv[2])
rng = np.random.default_rng(5)
x = (rng.standard_normal((300, 200)) * 100).astype(dtype)
if dtype.kind == "f":
    x[7, 13] = np.nan
with Worker("cuda:0") as w:
    for group in (8, 16, 32, 64, 128, 256):  # (8, 16: lane groups, 32 and 16 rows per work-group of 256)
        got = run_kernels(w, getattr(zd.tensor(x), op)(1), lambda k, g=group: KernelOpts(group=g), "cuda")
        want = getattr(x, op)(1)
        # a sum's rounding depends on its order: bound it by the magnitudes summed, not by the (maybe tiny) sum
        atol = 1e-6 * float(np.nanmax(np.abs(x.astype(np.float64)).sum(1))) if op == "sum" and dtype.kind == "f" else 0
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=atol, err_msg=f"{op} {dtype} group={group}")
print("ok")
"""


@pytest.mark.parametrize("op", ["max", "min", "sum"])
@pytest.mark.parametrize("dtype", ["float32", "int32"])
def test_cuda_group_reduction_against_numpy(op, dtype):
    res = subprocess.run([sys.executable, "-c", SCRIPT, op, dtype], check=False, capture_output=True, text=True, timeout=120)
    assert res.returncode == 0 and res.stdout.strip().endswith("ok"), res.stdout + res.stderr


ROWS_SCRIPT = """
import sys
import ml_dtypes
import numpy as np
import zyx_dist as zd
from zyx_dist.codegen import options
from zyx_dist.codegen.render import facts
from zyx_dist.fuse.kernelize import kernelize

zd.init(ray=False, devices=["cuda:0"])
rng = np.random.default_rng(6)
for dtype in (np.float32, np.dtype(ml_dtypes.bfloat16)):
    x = rng.standard_normal((4, 96, 200, 520)).astype(dtype)  # 76800 rows of 520: a warp per row by default
    t = zd.tensor(x).realize()
    for name, y, want in (("max", t.max(axis=-1), x.astype(np.float32).max(-1)),
                          ("sum of exp", zd.exp(t - 1).sum(axis=-1), np.exp(x.astype(np.float32) - 1).sum(-1))):
        (k,) = kernelize([y.node])
        assert options.candidates(facts(k, "cuda"))[0].group == 32, name
        got = y.numpy().astype(np.float32)
        np.testing.assert_allclose(got, want, rtol=2e-2 if dtype != np.float32 else 1e-5, err_msg=f"{name} {dtype}")
zd.shutdown()
print("ok")
"""


def test_cuda_rows_along_memory_take_a_warp_each():
    """Many rows reduced along memory (the score rows of attention in training): the default is a warp per row,
    against NumPy in float32 and bfloat16."""
    res = subprocess.run([sys.executable, "-c", ROWS_SCRIPT], check=False, capture_output=True, text=True, timeout=180)
    assert res.returncode == 0 and res.stdout.strip().endswith("ok"), res.stdout + res.stderr
