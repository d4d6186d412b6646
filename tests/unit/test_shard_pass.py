"""The data-parallel rewrite (graph/shard.py) and the kernels of backward graphs, on graphs only (no device):
sharded values pushed through ops give the same values (the NumPy interpreter of tests/reference.py on the
rewritten targets), per-shard nodes carry their shard's device and the kernelizer pins their kernels there,
reductions over the sharded axis become pinned partials combined in device order; and the backward of a
matmul layer kernelizes into tiled GEMMs without storing the (M, N, K) products.
"""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from reference import evaluate

import zyx_dist as zd
from zyx_dist import dtypes
from zyx_dist.codegen import gemm
from zyx_dist.frontend.tensor import Tensor
from zyx_dist.fuse.kernelize import kernelize
from zyx_dist.graph import ir, shard
from zyx_dist.graph.ir import Op, toposort

DEVS = ["d0", "d1", "d2"]


@pytest.fixture(scope="session")
def zd_session():
    """Overrides the conftest's device session: these tests never touch a device."""
    return


def sharded(a: np.ndarray, axis: int = 0) -> Tensor:
    """What x.shard(DEVS, axis) builds for host data, without a session: pinned host pieces, joined."""
    pieces = [ir.leaf(np.ascontiguousarray(p), dtypes.dtype(a.dtype), device=d)
              for p, d in zip(np.array_split(a, len(DEVS), axis=axis), DEVS)]
    root = Tensor(shard.join(shard.Sharded(axis, tuple(pieces), tuple(DEVS))))
    shard.register(root.node, axis, pieces, DEVS)
    return root


def rewrite(*ts: Tensor) -> dict[int, str]:
    return shard.distribute([t.node for t in ts])


A = np.random.default_rng(0).standard_normal((7, 4, 3))
W = np.random.default_rng(1).standard_normal((3, 5))

CASES = {
    "elementwise": (lambda x: (x * 2 + 1).tanh(), lambda a: np.tanh(a * 2 + 1)),
    "matmul": (lambda x: x @ zd.tensor(W), lambda a: a @ W),
    "bias-broadcast": (lambda x: x + zd.tensor(W[:, 0]), lambda a: a + W[:, 0]),
    "reduce-other-axis": (lambda x: x.sum(axis=(1, 2)), lambda a: a.sum(axis=(1, 2))),
    "reduce-sharded-axis": (lambda x: x.sum(axis=0), lambda a: a.sum(axis=0)),
    "max-sharded-axis": (lambda x: x.max(axis=(0, 2)), lambda a: a.max(axis=(0, 2))),
    "mean-all": (lambda x: x.mean(), lambda a: a.mean()),
    "reshape-merge": (lambda x: x.reshape(28, 3), lambda a: a.reshape(28, 3)),
    "reshape-split-boundaries": (lambda x: x.reshape(3, 28) + 0, lambda a: a.reshape(3, 28)),
    "permute": (lambda x: x.permute(1, 2, 0) * 3, lambda a: a.transpose(1, 2, 0) * 3),
    "flip-sharded-axis": (lambda x: zd.flip(x, 0) - 1, lambda a: np.flip(a, 0) - 1),
    "crop-sharded-axis": (lambda x: x[2:6] * 2, lambda a: a[2:6] * 2),
    "pad-other-axis": (lambda x: zd.pad(x, ((0, 0), (1, 0), (0, 2))) * 1, lambda a: np.pad(a, ((0, 0), (1, 0), (0, 2)))),
    "softmax": (lambda x: zd.softmax(x, axis=2), lambda a: np.exp(a) / np.exp(a).sum(axis=2, keepdims=True)),
    "any-sharded-axis": (lambda x: (x > 1).any(axis=0), lambda a: (a > 1).any(axis=0)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_rewritten_graph_gives_the_same_values(name):
    f, ref = CASES[name]
    t = f(sharded(A))
    rewrite(t)
    np.testing.assert_allclose(evaluate(t.node), ref(A), rtol=1e-12, atol=1e-12)


def test_per_shard_nodes_and_kernels_go_to_their_devices():
    x = sharded(A)
    w = zd.tensor(W)
    loss = ((x @ w).relu() ** 2).sum()
    (gw,) = zd.grad(loss, [w])
    affinity = rewrite(loss, gw)
    assert set(affinity.values()) == set(DEVS)
    kernels = kernelize([loss.node, gw.node], affinity=affinity)
    by_dev = {d: [k for k in kernels if k.device == d] for d in DEVS}
    assert len({len(v) for v in by_dev.values()}) == 1 and by_dev["d0"], [(k.device, k.shape) for k in kernels]
    # the partial sums of the loss and of the weight gradient are pinned per shard, combined in device order
    pinned = [n for n in toposort([loss.node, gw.node]) if n.device in DEVS and n.op is Op.RESHAPE and n.srcs
              and n.srcs[0].op is Op.REDUCE]
    assert len(pinned) == 2 * len(DEVS)
    h = np.maximum(A @ W, 0)
    np.testing.assert_allclose(evaluate(loss.node), (h ** 2).sum(), rtol=1e-12)
    np.testing.assert_allclose(evaluate(gw.node), np.einsum("bij,bik->jk", A, 2 * h), rtol=1e-11)


def test_a_second_rewrite_keeps_the_shards_devices():
    """explain() rewrites the targets; the realize that follows sees per-shard nodes, not shards."""
    w = zd.tensor(W)
    loss = ((sharded(A) @ w).tanh()).sum()
    (gw,) = zd.grad(loss, [w])
    first = kernelize([loss.node, gw.node], affinity=rewrite(loss, gw))
    second = kernelize([loss.node, gw.node], affinity=rewrite(loss, gw))
    assert [k.device for k in first] == [k.device for k in second]
    assert {k.device for k in second} >= set(DEVS)


def test_nothing_sharded_leaves_the_graph_alone():
    t = zd.tensor(A) * 2
    before = (t.node.op, t.node.srcs)
    assert rewrite(t) == {}
    assert (t.node.op, t.node.srcs) == before


def test_different_shardings_fall_back_to_the_joined_values():
    x, y = sharded(A), sharded(A, axis=1)
    t = x + y
    rewrite(t)
    np.testing.assert_allclose(evaluate(t.node), 2 * A)


def test_backward_of_a_layer_is_gemms_and_stores_no_product():
    m, k, n = 64, 32, 16
    x = zd.tensor(np.ones((m, k), np.float32))
    w = zd.tensor(np.ones((k, n), np.float32))
    loss = ((x @ w).relu() ** 2).mean()
    gx, gw = zd.grad(loss, [x, w])
    kernels = kernelize([loss.node, gx.node, gw.node])
    assert all(o.size < m * n * k for kk in kernels for o in kk.outputs), [kk.shape for kk in kernels]
    assert sum(gemm.match(kk) is not None for kk in kernels) == 3
    # dW is summed in w's layout (graph/autograd.py): the GEMM's own output is w's gradient, no permute to write
    # through
    spec = next(gemm.match(kk) for kk in kernels if kk.outputs[0] is gw.node or gw.node in kk.outputs)
    assert not spec.outs and [d for d in spec.reduce.shape if d > 1] == [k, n]
