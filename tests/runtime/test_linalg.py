"""Runtime tests of linear algebra and NN helpers (API.md section 5: matmul/@, dot, tensordot, einsum,
softmax, log_softmax, layer_norm) and of chains that mix movement and compute, against NumPy on PoCL."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import assert_close, data

import zyx_dist as zd


@pytest.mark.parametrize("sa,sb", [((3, 4), (4, 5)), ((1, 7), (7, 1)), ((2, 3, 4), (4, 5)), ((3, 4), (2, 4, 5)),
                                   ((2, 1, 3, 4), (5, 4, 6)), ((4,), (4, 3)), ((3, 4), (4,)), ((4,), (4,)),
                                   ((2, 3, 4), (4,)), ((4,), (2, 4, 3)), ((0, 4), (4, 3)), ((3, 0), (0, 2)),
                                   ((33, 65), (65, 17))], ids=str)
def test_matmul_shapes(sa, sb):
    a, b = data(sa, np.float32, seed=1), data(sb, np.float32, seed=2)
    want = a.astype(np.float64) @ b.astype(np.float64)
    assert_close(zd.tensor(a) @ zd.tensor(b), want, zd.float32, loose=10)
    assert_close(zd.matmul(a, zd.tensor(b)), want, zd.float32, loose=10)


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.uint8, np.float16, np.bool_], ids=str)
def test_matmul_dtypes(dtype):
    a, b = data((3, 5), dtype, seed=1), data((5, 4), dtype, seed=2)
    if np.dtype(dtype) == np.uint8:
        a, b = a % 4, b % 4  # no wrap-around in the products and sums
    want = np.matmul(a, b)
    assert_close(zd.tensor(a) @ zd.tensor(b), want, want.dtype, loose=4)
    assert_close(zd.tensor(a).matmul(zd.tensor(b)), want, want.dtype, loose=4)


def test_matmul_views_and_mixed_dtypes():
    a, b = data((5, 3), np.float32, seed=1), data((4, 5), np.float32, seed=2)
    x, y = zd.tensor(a), zd.tensor(b)
    assert_close(x.T @ y.T, a.T @ b.T, zd.float32, loose=4)
    assert_close(x[::-1, :2].T @ y.T[:, ::2], a[::-1, :2].T @ b.T[:, ::2], zd.float32, loose=4)
    i = data((3, 2), np.int32)
    want = a @ i
    assert_close(x @ zd.tensor(i), want, want.dtype, loose=4)


def test_dot_and_tensordot():
    v, w = data((6,), np.float32, seed=1), data((6,), np.float32, seed=2)
    m, n = data((3, 6), np.float32, seed=3), data((6, 2), np.float32, seed=4)
    assert_close(zd.dot(zd.tensor(v), zd.tensor(w)), np.dot(v, w), zd.float32, loose=4)
    assert_close(zd.dot(zd.tensor(m), zd.tensor(n)), np.dot(m, n), zd.float32, loose=4)
    assert_close(zd.tensor(m).dot(zd.tensor(v)), np.dot(m, v), zd.float32, loose=4)
    a, b = data((2, 3, 4), np.float32, seed=5), data((3, 4, 5), np.float32, seed=6)
    assert_close(zd.tensordot(zd.tensor(a), zd.tensor(b), 2), np.tensordot(a, b, 2), zd.float32, loose=4)
    assert_close(zd.tensordot(zd.tensor(a), zd.tensor(b.transpose(1, 0, 2)), axes=([1, 2], [1, 0])),
                 np.tensordot(a, b.transpose(1, 0, 2), axes=([1, 2], [1, 0])), zd.float32, loose=4)
    c = data((4, 2), np.float32, seed=7)
    assert_close(zd.tensordot(zd.tensor(a), zd.tensor(c), axes=1), np.tensordot(a, c, axes=1), zd.float32, loose=4)
    assert_close(zd.tensordot(zd.tensor(v), zd.tensor(w), axes=0), np.tensordot(v, w, axes=0), zd.float32)
    assert_close(zd.tensordot(zd.tensor(a), zd.tensor(c.T), axes=([2], [1])),
                 np.tensordot(a, c.T, axes=([2], [1])), zd.float32, loose=4)


def test_einsum_optional():
    a, b = data((2, 3), np.float32, seed=1), data((3, 4), np.float32, seed=2)
    assert_close(zd.einsum("ij,jk->ik", zd.tensor(a), zd.tensor(b)), np.einsum("ij,jk->ik", a, b), zd.float32,
                 loose=4)
    assert_close(zd.einsum("ij->ji", zd.tensor(a)), a.T, zd.float32)


EINSUMS = [  # (subscripts, operand shapes): ellipses, diagonals, implicit outputs, size-1 axes broadcast
    ("ii->i", [(3, 3)]), ("ii", [(3, 3)]), ("bii->bi", [(2, 3, 3)]), ("...ii->...i", [(2, 3, 3)]),
    ("iij->j", [(3, 3, 4)]), ("...ij,jk->...ik", [(2, 4, 3, 5), (5, 6)]), ("...ij,...jk", [(1, 3, 5), (2, 5, 6)]),
    ("ij...,j->i...", [(3, 5, 2, 4), (5,)]), ("...i,...i->...", [(2, 4, 3), (4, 3)]), ("ij,ij->ij", [(1, 3), (3, 3)]),
    ("...", [(2, 3)]), ("i,j", [(3,), (4,)]), ("ijk->", [(2, 3, 4)]), ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
]


@pytest.mark.parametrize("spec,shapes", EINSUMS, ids=[e[0] for e in EINSUMS])
def test_einsum_as_numpy(spec, shapes):
    ops = [data(s, np.float32, seed=i) for i, s in enumerate(shapes)]
    xs = [zd.tensor(o) for o in ops]
    assert_close(zd.einsum(spec, *xs), np.einsum(spec, *ops), zd.float32, loose=4)
    if "ii" in spec:  # a diagonal's gradient: g on the diagonal, 0 elsewhere
        (g,) = zd.grad(zd.einsum(spec, xs[0]).sum(), [xs[0]])
        assert_close(g, np.broadcast_to(np.eye(3, dtype=np.float32)[..., None] if spec == "iij->j" else
                                        np.eye(3, dtype=np.float32), shapes[0]), zd.float32)


def test_einsum_errors():
    x = zd.ones((3, 3))
    for spec, text in (("ij,jk", "2 operands"), ("i.j", "bad subscripts"), ("ii->ii", "output"),
                       ("ijk", "do not match"), ("...ijkl", "more axes")):
        with pytest.raises(zd.ShapeError, match=text):
            zd.einsum(spec, x)
    with pytest.raises(zd.ShapeError, match="sizes 3 and 4"):
        zd.einsum("ii", zd.ones((3, 4)))


def np_softmax(a, axis):
    a = a.astype(np.float64)
    e = np.exp(a - a.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def np_log_softmax(a, axis):
    a = a.astype(np.float64)
    m = a.max(axis=axis, keepdims=True)
    return a - m - np.log(np.exp(a - m).sum(axis=axis, keepdims=True))


@pytest.mark.parametrize("axis", [-1, 0, 1], ids=str)
@pytest.mark.parametrize("dtype", [np.float32, np.float16], ids=["float32", "float16"])
def test_softmax_log_softmax(axis, dtype):
    a = data((4, 6, 3), dtype)
    x = zd.tensor(a)
    s = zd.softmax(x, axis=axis)
    assert_close(s, np_softmax(a, axis), dtype, loose=4)
    assert_close(x.softmax(axis), np_softmax(a, axis), dtype, loose=4)
    assert_close(zd.log_softmax(x, axis=axis), np_log_softmax(a, axis), dtype, loose=4)
    assert_close(x.log_softmax(axis), np_log_softmax(a, axis), dtype, loose=4)


def test_softmax_default_axis_stable_and_int():
    a = np.array([[1000.0, 1001.0, 1002.0], [-1000.0, -1000.0, -999.0]], np.float32)
    x = zd.tensor(a)
    assert_close(zd.softmax(x), np_softmax(a, -1), zd.float32, loose=4)
    assert_close(zd.log_softmax(x), np_log_softmax(a, -1), zd.float32, loose=4)
    i = np.arange(6, dtype=np.int32).reshape(2, 3)
    assert_close(zd.softmax(zd.tensor(i)), np_softmax(i, -1), zd.float32, loose=4)


@pytest.mark.parametrize("axis,eps", [(-1, 1e-5), (1, 1e-5), ((1, 2), 1e-3), (-1, 0.5)], ids=str)
def test_layer_norm(axis, eps):
    a = data((3, 4, 5), np.float32) * 3 + 1
    x = zd.tensor(a)
    a64 = a.astype(np.float64)
    mu = a64.mean(axis=axis, keepdims=True)
    var = a64.var(axis=axis, keepdims=True)
    want = (a64 - mu) / np.sqrt(var + eps)
    assert_close(zd.layer_norm(x, axis=axis, eps=eps), want, zd.float32, loose=10)
    if axis == -1:
        assert_close(x.layer_norm(eps=eps), want, zd.float32, loose=10)
        assert_close(zd.layer_norm(x), (a64 - mu) / np.sqrt(var + 1e-5), zd.float32, loose=10)


# ---- chains of movement and compute -------------------------------------------------------------------------------


def test_chain_transpose_slice_matmul():
    a, b = data((6, 5), np.float32, seed=1), data((5, 3), np.float32, seed=2)
    x, y = zd.tensor(a), zd.tensor(b)
    assert_close((x.T + 1)[::2, 1:] @ y, (a.T + 1)[::2, 1:] @ b, zd.float32, loose=4)


def test_chain_reshape_sum_flip():
    a = data((8, 6), np.float32)
    x = zd.tensor(a)
    assert_close(x.reshape(4, -1).sum(0)[::-1], a.reshape(4, -1).sum(0)[::-1], zd.float32, loose=4)
    assert_close((x * 2).reshape(2, 4, 6).permute(2, 0, 1).max(-1).flip(0),
                 np.flip((a * 2).reshape(2, 4, 6).transpose(2, 0, 1).max(-1), 0), zd.float32)


def test_chain_mlp():
    a = data((8, 5), np.float32, seed=1)
    w1, b1 = data((5, 7), np.float32, seed=2), data((7,), np.float32, seed=3)
    w2 = data((7, 3), np.float32, seed=4)
    h = np.maximum(a @ w1 + b1, 0)
    want = np_log_softmax(h @ w2, -1)
    x = zd.tensor(a)
    got = zd.log_softmax(zd.relu(x @ zd.tensor(w1) + zd.tensor(b1)) @ zd.tensor(w2))
    assert_close(got, want, zd.float32, loose=10)
    assert_close(got.argmax(1), want.argmax(1), zd.int64)


def test_chain_reduce_then_broadcast_then_index():
    a = data((5, 6), np.float32)
    x = zd.tensor(a)
    c = x - x.mean(1, keepdims=True)
    want = a - a.mean(1, keepdims=True)
    assert_close((c / c.std(1, keepdims=True))[1:4, ::-2], (want / want.std(1, keepdims=True))[1:4, ::-2],
                 zd.float32, loose=10)
    assert_close(zd.concat([c, x.sum(0, keepdims=True)])[[0, -1]], np.concatenate([want, a.sum(0, keepdims=True)])
                 [[0, -1]], zd.float32, loose=4)


def test_realized_tensor_used_again():
    a = data((4, 5), np.float32)
    x = zd.tensor(a)
    y = (x * 3 - 1).realize()
    assert_close(y, a * 3 - 1, zd.float32)
    for _ in range(2):
        assert_close(y + y, (a * 3 - 1) * 2, zd.float32)
        assert_close(y.sum(0), (a * 3 - 1).sum(0), zd.float32, loose=4)
        assert_close(y.T @ y, (a * 3 - 1).T @ (a * 3 - 1), zd.float32, loose=10)
    z = y.exp()
    z.realize()
    assert_close(z, np.exp(a * 3 - 1), zd.float32, loose=4)
    assert_close(y, a * 3 - 1, zd.float32)  # still readable after being used


def test_zd_realize_several():
    a = data((4, 5), np.float32)
    x = zd.tensor(a)
    c = x @ x.T
    p, q, r = c + 1, c * 2, c.sum(0)
    out = zd.realize(p, q, r)
    assert tuple(out) == (p, q, r)
    names = [d.name for d in zd.devices()]  # with several workers the scheduler may place r elsewhere
    assert all(t.device in names for t in (p, q, r)) and (len(names) > 1 or p.device == q.device == r.device)
    cw = a @ a.T
    assert_close(p, cw + 1, zd.float32, loose=4)
    assert_close(q, cw * 2, zd.float32, loose=4)
    assert_close(r, cw.sum(0), zd.float32, loose=4)
    zd.realize()  # nothing to do
    zd.realize(p)  # already realized
    assert_close(p, cw + 1, zd.float32, loose=4)
