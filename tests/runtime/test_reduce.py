"""Runtime tests of the reductions of API.md section 5 (sum, prod, max, min, mean, var, std, argmax,
argmin, any, all, logsumexp) with axis None/int/negative/tuple and keepdims, against NumPy on PoCL.

Decided result dtypes: sum/prod of bool and signed ints give int64, of unsigned ints uint64; mean/var/std
of ints give float32; argmax/argmin give int64.
"""

from __future__ import annotations

import numpy as np
import pytest
from helpers import ALL, NUMERIC, assert_close, data, ids

import zyx_dist as zd

SHAPE = (3, 4, 5)


def acc_dtype(dtype) -> np.dtype:
    dt = np.dtype(dtype)
    if dt.kind == "b" or dt.kind == "i":
        return np.dtype(np.int64)
    return np.dtype(np.uint64) if dt.kind == "u" else dt


def mean_dtype(dtype) -> np.dtype:
    dt = np.dtype(dtype)
    return dt if dt.kind == "f" else np.dtype(np.float32)


def _src(dtype, kind="any"):
    if np.dtype(dtype) == np.float16 and kind == "any":
        kind = "pos"  # keep float16 sums away from cancellation
    return data(SHAPE, dtype, kind)


@pytest.mark.parametrize("axis,keepdims", [(None, False), (0, False), (-1, True), ((0, 2), False), ((-1, -2), True)],
                         ids=str)
@pytest.mark.parametrize("dtype", ALL, ids=ids(ALL))
def test_sum(dtype, axis, keepdims):
    a = _src(dtype)
    got = zd.sum(zd.tensor(a), axis=axis, keepdims=keepdims)
    assert_close(got, np.sum(a.astype(np.float64) if a.dtype.kind == "f" else a, axis=axis, keepdims=keepdims),
                 acc_dtype(dtype), loose=4)


@pytest.mark.parametrize("axis", [None, 1, (0, -1)], ids=str)
@pytest.mark.parametrize("dtype", ALL, ids=ids(ALL))
def test_prod(dtype, axis):
    dt = np.dtype(dtype)
    if dt.kind == "f":
        a = np.random.default_rng(1).uniform(0.6, 1.5, SHAPE).astype(dtype)
    else:
        a = np.random.default_rng(1).integers(0 if dt.kind in "ub" else -2, 3, SHAPE).astype(dtype)
        a[a == 0] = 1
        a.flat[7] = 0 if dt.kind != "b" else a.flat[7]
    x = zd.tensor(a)
    expected = np.prod(a.astype(np.float64) if dt.kind == "f" else a, axis=axis)
    assert_close(zd.prod(x, axis=axis), expected, acc_dtype(dtype), loose=8)
    if axis is None:
        assert_close(x.prod(axis, keepdims=True), np.prod(a.astype(np.float64) if dt.kind == "f" else a, axis=axis,
                                                          keepdims=True), acc_dtype(dtype), loose=8)


@pytest.mark.parametrize("axis", [None, -1, (0, 2)], ids=str)
@pytest.mark.parametrize("dtype", ALL, ids=ids(ALL))
def test_max_min(dtype, axis):
    a = data(SHAPE, dtype)
    x = zd.tensor(a)
    assert_close(zd.max(x, axis=axis), np.max(a, axis=axis), dtype)
    assert_close(x.min(axis, True), np.min(a, axis=axis, keepdims=True), dtype)


@pytest.mark.parametrize("axis", [None, -1, (0, 2)], ids=str)
@pytest.mark.parametrize("dtype", NUMERIC + [np.bool_], ids=ids(NUMERIC + [np.bool_]))
def test_mean(dtype, axis):
    a = _src(dtype)
    x = zd.tensor(a)
    expected = np.mean(a.astype(np.float64), axis=axis)
    assert_close(zd.mean(x, axis=axis), expected, mean_dtype(dtype), loose=4)
    if axis == (0, 2):
        assert_close(x.mean(axis, keepdims=True), np.mean(a.astype(np.float64), axis=axis, keepdims=True),
                     mean_dtype(dtype), loose=4)


@pytest.mark.parametrize("axis,correction", [(None, 1), (1, 0), ((0, -1), 1)], ids=str)
@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int32], ids=ids([np.float32, np.float16, np.int32]))
def test_var_std(dtype, axis, correction):
    a = data(SHAPE, dtype)
    x = zd.tensor(a)
    a64 = a.astype(np.float64)
    slack = 20 if np.dtype(dtype) == np.float16 else 8
    assert_close(zd.var(x, axis=axis, correction=correction), np.var(a64, axis=axis, ddof=correction),
                 mean_dtype(dtype), loose=slack)
    assert_close(x.std(axis, keepdims=True, correction=correction),
                 np.std(a64, axis=axis, ddof=correction, keepdims=True), mean_dtype(dtype), loose=slack)
    if axis is None and correction == 1:
        assert_close(zd.std(x, axis=axis, correction=correction), np.std(a64, axis=axis, ddof=correction),
                     mean_dtype(dtype), loose=slack)
        assert_close(x.var(axis, True, correction), np.var(a64, axis=axis, ddof=correction, keepdims=True),
                     mean_dtype(dtype), loose=slack)


ARG_DTYPES = [np.float32, np.int32, np.uint8, np.bool_]


@pytest.mark.parametrize("axis", [None, 1, -1], ids=str)
@pytest.mark.parametrize("dtype", ARG_DTYPES, ids=ids(ARG_DTYPES))
def test_argmax_argmin_ties(dtype, axis):
    a = data(SHAPE, dtype, "small")  # many ties: the first occurrence wins
    x = zd.tensor(a)
    assert_close(zd.argmax(x, axis=axis), np.argmax(a, axis=axis), zd.int64)
    assert_close(x.argmin(axis, True), np.argmin(a, axis=axis, keepdims=True), zd.int64)


def test_argmax_argmin_nan():
    a = np.array([[1.0, np.nan, 3.0, np.nan], [0.0, 5.0, -1.0, 5.0], [np.nan, 0.0, 0.0, 1.0]], np.float32)
    x = zd.tensor(a)
    for axis in (None, 0, 1):
        assert_close(zd.argmax(x, axis=axis), np.argmax(a, axis=axis), zd.int64)
        assert_close(zd.argmin(x, axis=axis), np.argmin(a, axis=axis), zd.int64)


def test_argmax_long_axis():
    a = np.random.default_rng(3).standard_normal(1023).astype(np.float32)
    assert_close(zd.argmax(zd.tensor(a)), np.argmax(a), zd.int64)
    assert zd.argmin(zd.tensor(a)).item() == int(np.argmin(a))


@pytest.mark.parametrize("axis", [None, -1, (0, 1)], ids=str)
@pytest.mark.parametrize("dtype", ALL, ids=ids(ALL))
def test_any_all(dtype, axis):
    a = data(SHAPE, dtype, "small")
    if np.dtype(dtype).kind != "b":
        a[0] = 0  # an all-zero slice
        a[1] = 1 if np.dtype(dtype).kind != "f" else 0.5  # an all-nonzero slice
    x = zd.tensor(a)
    assert_close(zd.any(x, axis=axis), np.any(a, axis=axis), zd.bool)
    assert_close(x.all(axis, keepdims=True), np.all(a, axis=axis, keepdims=True), zd.bool)


def np_logsumexp(a, axis=None, keepdims=False):
    a = a.astype(np.float64)
    m = np.max(a, axis=axis, keepdims=True)
    m = np.where(np.isfinite(m), m, 0)
    with np.errstate(divide="ignore"):
        out = np.log(np.sum(np.exp(a - m), axis=axis, keepdims=True)) + m
    return out if keepdims else np.squeeze(out, axis=axis) if axis is not None else out.reshape(())


@pytest.mark.parametrize("axis,keepdims", [(None, False), (1, True), (-1, False), ((0, 2), True)], ids=str)
@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int32], ids=ids([np.float32, np.float16, np.int32]))
def test_logsumexp(dtype, axis, keepdims):
    a = data(SHAPE, dtype)
    assert_close(zd.logsumexp(zd.tensor(a), axis=axis, keepdims=keepdims), np_logsumexp(a, axis, keepdims),
                 mean_dtype(dtype), loose=8)


def test_logsumexp_stable_and_infinite():
    a = np.array([[1000.0, 1000.0, 999.0], [-1000.0, -1001.0, -1000.0], [-np.inf, -np.inf, -np.inf]], np.float32)
    got = zd.logsumexp(zd.tensor(a), axis=1)
    assert_close(got, np_logsumexp(a, 1), zd.float32, loose=4)
    assert np.isneginf(got.numpy()[2])
    assert_close(zd.tensor(a[:2]).logsumexp(), np_logsumexp(a[:2]), zd.float32, loose=4)


# ---- shapes: scalars, long axes, empty, size-1, views -----------------------------------------------------------


def test_reduce_scalar_tensor():
    x = zd.tensor(np.float32(2.5))
    for fn, want in ((zd.sum, 2.5), (zd.prod, 2.5), (zd.max, 2.5), (zd.min, 2.5), (zd.mean, 2.5), (zd.var, 0.0)):
        got = fn(x)
        assert got.shape == ()
        assert got.item() == want
    assert zd.argmax(x).item() == 0
    assert zd.any(x).item() is True
    assert zd.sum(zd.tensor(7)).dtype is zd.int64


@pytest.mark.parametrize("n", [1023, 4099])
def test_long_sums(n):
    a = np.random.default_rng(n).uniform(-1, 1, n).astype(np.float32)
    x = zd.tensor(a)
    assert_close(x.sum(), a.astype(np.float64).sum(), zd.float32, rtol=1e-4, atol=1e-4)
    assert_close(x.mean(), a.astype(np.float64).mean(), zd.float32, rtol=1e-4, atol=1e-6)
    assert_close(x.max(), a.max(), zd.float32)
    i = (a * 100).astype(np.int32)
    assert_close(zd.tensor(i).sum(), i.sum(), zd.int64)
    m = a.reshape(1, n)
    assert_close(zd.tensor(m).sum(1), m.astype(np.float64).sum(1), zd.float32, rtol=1e-4, atol=1e-4)


def test_int_sum_does_not_overflow():
    a = np.full(1000, 2**30, np.int32)
    assert zd.tensor(a).sum().item() == 1000 * 2**30
    u = np.full(300, 255, np.uint8)
    assert_close(zd.tensor(u).sum(), np.uint64(300 * 255), zd.uint64)
    b = np.ones(300, bool)
    assert zd.tensor(b).sum().item() == 300


@pytest.mark.parametrize("shape", [(0, 3), (3, 0), (1, 1, 4), (2, 1, 3)], ids=str)
def test_reduce_size0_size1(shape):
    a = data(shape, np.float32)
    x = zd.tensor(a)
    for axis in (None, -1):
        assert_close(zd.sum(x, axis=axis), np.sum(a, axis=axis), zd.float32)
        assert_close(zd.prod(x, axis=axis, keepdims=True), np.prod(a, axis=axis, keepdims=True), zd.float32)
        assert_close(zd.any(x, axis=axis), np.any(a, axis=axis), zd.bool)
        assert_close(zd.all(x, axis=axis), np.all(a, axis=axis), zd.bool)
        if all(shape[i] for i in ((0, 1) if axis is None else (axis,))):
            assert_close(zd.max(x, axis=axis), np.max(a, axis=axis), zd.float32)
            assert_close(zd.mean(x, axis=axis), np.mean(a, axis=axis), zd.float32)
    if 0 in shape:
        with np.errstate(all="ignore"):
            assert_close(zd.mean(x), np.float32(np.nan), zd.float32)


def test_max_of_empty_axis_raises():
    x = zd.zeros((0, 3))
    with pytest.raises(ValueError):
        zd.max(x, axis=0)
    with pytest.raises(ValueError):
        zd.argmax(x, axis=0)
    assert_close(zd.max(x, axis=1), np.zeros(0), zd.float32)


def test_logsumexp_of_an_empty_axis_is_minus_inf():
    """log(sum(exp(x))) over nothing is log 0 (scipy's and torch's -inf), though the max it shifts by has none."""
    x = zd.zeros((0, 3))
    assert_close(zd.logsumexp(x, axis=0), np.full(3, -np.inf, np.float32), zd.float32)
    assert_close(zd.logsumexp(x, axis=1), np.zeros(0), zd.float32)
    assert_close(zd.logsumexp(zd.zeros(0, dtype=zd.int32)), np.float32(-np.inf), zd.float32)


VIEWS = {
    "transposed": (lambda x: x.T, lambda a: a.T),
    "step-sliced": (lambda x: x[::2, 1::3], lambda a: a[::2, 1::3]),
    "flipped": (lambda x: zd.flip(x, 0), lambda a: np.flip(a, 0)),
    "expanded": (lambda x: x[:1].expand(5, 8), lambda a: np.broadcast_to(a[:1], (5, 8))),
    "padded": (lambda x: zd.pad(x, ((2, 1), (1, 1)), value=-1), lambda a: np.pad(a, ((2, 1), (1, 1)),
                                                                                  constant_values=-1)),
}


@pytest.mark.parametrize("view", list(VIEWS))
def test_reduce_views(view):
    zv, nv = VIEWS[view]
    a = data((6, 8), np.float32)
    x = zd.tensor(a)
    for axis in (None, 0):
        assert_close(zd.sum(zv(x), axis=axis), np.sum(nv(a).astype(np.float64), axis=axis), zd.float32, loose=4)
    assert_close(zd.max(zv(x), axis=1), np.max(nv(a), axis=1), zd.float32)
    assert_close(zd.argmin(zv(x), axis=0), np.argmin(nv(a), axis=0), zd.int64)
    assert_close(zd.var(zv(x), axis=0), np.var(nv(a).astype(np.float64), axis=0), zd.float32, loose=8)


def test_reduce_nan_inf():
    a = np.array([[1.0, np.nan, 2.0], [np.inf, 1.0, 0.0], [-np.inf, np.inf, 1.0]], np.float32)
    x = zd.tensor(a)
    for fn, ref in ((zd.sum, np.sum), (zd.max, np.max), (zd.min, np.min), (zd.mean, np.mean), (zd.prod, np.prod)):
        for axis in (None, 0, 1):
            with np.errstate(all="ignore"):
                want = ref(a, axis=axis)
            assert_close(fn(x, axis=axis), want, zd.float32)
    assert_close(zd.any(x, axis=1), np.any(a, axis=1), zd.bool)


def test_split_column_sums_against_numpy(monkeypatch):
    """The column split of a GPU session (graph/ir.py `_split_columns`), run here: sums and maxima over leading
    axes, rows not a multiple of the parts, half and integer types, and a bias's gradient through `zd.grad`."""
    from zyx_dist.graph import ir

    monkeypatch.setattr(ir, "SPLIT_K", True)
    rng = np.random.default_rng(12)
    a = rng.standard_normal((3, 1367, 40)).astype(np.float32)
    for axes in ((0, 1), 0):
        # (a sum's rounding depends on its order: bounded by the magnitudes summed, not by the sum)
        np.testing.assert_allclose(zd.tensor(a).sum(axis=axes).numpy(), a.sum(axis=axes), rtol=1e-5,
                                   atol=1e-6 * np.abs(a).sum(axis=axes).max())
        assert_close(zd.tensor(a).max(axis=axes), a.max(axis=axes), zd.float32)
    ints = (a * 100).astype(np.int32)
    assert_close(zd.tensor(ints).sum(axis=(0, 1)), ints.sum(axis=(0, 1)), zd.int64)
    half = zd.tensor(a).astype(zd.bfloat16)
    want = np.asarray(half.numpy(), np.float64).sum(axis=(0, 1))
    np.testing.assert_allclose(np.asarray(half.sum(axis=(0, 1)).numpy(), np.float64), want, rtol=1e-2, atol=0.05)
    b = zd.tensor(rng.standard_normal(40).astype(np.float32))
    (gb,) = zd.grad(((zd.tensor(a) + b) ** 2).sum(), [b])
    np.testing.assert_allclose(gb.numpy(), (2 * (a + b.numpy())).sum(axis=(0, 1)), rtol=1e-4)
