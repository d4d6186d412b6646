"""Programs of any size on a real device (PoCL), each realized and compared with NumPy: a 10,000-op
elementwise chain, a 3,000-op chain with a row max every 10 ops, the sum of 2,000 separate tensors (more
buffers than one kernel's argument space holds), and 30 alternating permute + reshape steps whose kernel
source stays small. Through tests/cluster/test_runtime_on_ray.py the same tests run on Ray, where every
realized tensor also gets a lineage recipe of its whole history."""

from __future__ import annotations

import numpy as np
from helpers import deep_chain

import zyx_dist as zd


def test_ten_thousand_op_elementwise_chain():
    a = np.linspace(-2, 2, 4, dtype=np.float32)
    out = deep_chain(zd.tensor(a), 10_000)
    np.testing.assert_allclose(out.numpy(), deep_chain(a, 10_000), rtol=1e-4, atol=1e-5)


def test_three_thousand_op_chain_with_a_row_max_every_ten_ops():
    a = np.random.default_rng(0).standard_normal((4, 4)).astype(np.float32)
    out = deep_chain(zd.tensor(a), 3000, row_max_every=10)
    np.testing.assert_allclose(out.numpy(), deep_chain(a, 3000, row_max_every=10), rtol=1e-4, atol=1e-5)


def test_sum_of_two_thousand_tensors():
    arrays = [np.full(3, i, np.float32) + np.arange(3, dtype=np.float32) for i in range(2000)]
    total = zd.tensor(arrays[0])
    for a in arrays[1:]:
        total = total + zd.tensor(a)
    np.testing.assert_allclose(total.numpy(), np.sum(arrays, axis=0), rtol=1e-6)
    stacked = zd.stack([zd.tensor(a) for a in arrays[:300]]).sum(0)  # 300 pads and adds into one shape
    np.testing.assert_allclose(stacked.numpy(), np.sum(arrays[:300], axis=0), rtol=1e-6)


def alternating(x, steps: int):
    """steps times: reverse the axes, then reshape to the next of a few shapes of 24 elements (most of
    these reshapes are no strides over the permuted view: each needs its flat index)."""
    shapes = [(6, 4), (2, 3, 4), (3, 8), (4, 3, 2), (12, 2), (2, 12)]
    for k in range(steps):
        x = x.transpose() if isinstance(x, np.ndarray) else x.permute(*reversed(range(x.ndim)))
        x = x.reshape(shapes[k % len(shapes)])
    return x


def test_thirty_alternating_permute_reshape_steps():
    a = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    out = alternating(zd.tensor(a), 30) * 2 + 1
    want = alternating(a, 30) * 2 + 1
    plan = zd.explain(out)
    assert len(plan.kernels) == 1 and len(plan.kernels[0].source) < 4000, plan.kernels[0].source
    np.testing.assert_array_equal(out.numpy(), want)
    # strided steps: swap the two leading dims, then split the last dim in two or merge the halves back
    x, ref = zd.tensor(a), a
    for _ in range(15):
        x, ref = x.permute(1, 0, 2).reshape(3, 2, 2, 2), ref.transpose(1, 0, 2).reshape(3, 2, 2, 2)
        x, ref = x.permute(1, 0, 2, 3).reshape(2, 3, 4), ref.transpose(1, 0, 2, 3).reshape(2, 3, 4)
    assert not ref.flags.owndata  # NumPy kept a view of `a` all along: every reshape was strides
    plan = zd.explain(x + 0)
    assert len(plan.kernels[0].source) < 1000 and "ix" not in plan.kernels[0].source, plan.kernels[0].source
    np.testing.assert_array_equal((x + 0).numpy(), ref)
