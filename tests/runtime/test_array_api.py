"""Runtime tests of the array API standard's functions (API.md section 10) against NumPy on PoCL: the
paths the public suite (tests/array_api) does not reach with its small arrays: the bitonic sort of long
rows (and its kernel count: one kernel per network stage), multi-level scans, searchsorted, the new
elementwise functions at their special values, the dtype helpers and the namespace itself."""

from __future__ import annotations

import math

import numpy as np
import pytest

import zyx_dist as zd
from zyx_dist.frontend import sorting


def _rng(seed=0):
    return np.random.default_rng(seed)


@pytest.mark.parametrize("n,descending", [(7, False), (64, True), (256, False), (300, True)])
def test_sort_and_stable_argsort_match_numpy(n, descending):
    """Rank sort up to SMALL_SORT (256) elements, the bitonic network above (300: padded to 512)."""
    a = _rng(n).integers(-5, 5, size=(3, n)).astype(np.float32)  # many ties: stability matters
    a[0, :3] = np.nan
    a[1, 1] = -0.0
    x = zd.tensor(a)
    got_v, got_i = zd.sort(x, descending=descending).numpy(), zd.argsort(x, descending=descending).numpy()
    if descending:  # stable descending: equal keys keep their order; NaN last, as ascending
        want_i = np.argsort(np.where(np.isnan(a), np.inf, -a), axis=-1, kind="stable")
    else:
        want_i = np.argsort(a, axis=-1, kind="stable")
    np.testing.assert_array_equal(got_i, want_i)
    np.testing.assert_array_equal(got_v, np.take_along_axis(a, want_i, -1))
    assert got_i.dtype == np.int64


def test_sort_other_axes_and_dtypes():
    a = _rng(1).integers(0, 1000, size=(5, 40, 3))
    for dt in (np.int32, np.uint8, np.int64, np.float16):
        x = zd.tensor(a.astype(dt))
        np.testing.assert_array_equal(zd.sort(x, axis=1).numpy(), np.sort(a.astype(dt), axis=1))
        np.testing.assert_array_equal(zd.argsort(x, axis=0).numpy(), np.argsort(a.astype(dt), axis=0, kind="stable"))
    b = _rng(2).random(40) < 0.5
    np.testing.assert_array_equal(zd.argsort(zd.tensor(b)).numpy(), np.argsort(b, kind="stable"))


def test_bitonic_sort_is_one_kernel_per_stage():
    n = 300  # above SMALL_SORT: the network over 512, 9 * 10 / 2 = 45 stages (the shape of the test above)
    assert n > sorting.SMALL_SORT
    a = _rng(3).random((3, n)).astype(np.float32)
    x = zd.tensor(a).realize()
    zd.reset_stats()
    out = zd.sort(x, descending=True).realize()
    assert zd.stats()["kernels_launched"] == 45
    np.testing.assert_array_equal(out.numpy(), -np.sort(-a, axis=-1))


def test_rank_sort_is_two_kernels():
    x = zd.tensor(_rng(4).random((8, 50)).astype(np.float32)).realize()
    zd.reset_stats()
    zd.sort(x).realize()
    assert zd.stats()["kernels_launched"] == 2


@pytest.mark.parametrize("n", [1, 64, 65, 5000])
def test_cumulative_sum_levels(n):
    a = _rng(n).integers(-3, 4, size=(2, n)).astype(np.int32)
    got = zd.cumulative_sum(zd.tensor(a), axis=1)
    np.testing.assert_array_equal(got.numpy(), np.cumsum(a, axis=1))
    assert got.dtype == zd.int64
    f = _rng(n).random(n).astype(np.float32)
    np.testing.assert_allclose(zd.cumulative_sum(zd.tensor(f)).numpy(), np.cumsum(f.astype(np.float64)), rtol=1e-5)
    inc = zd.cumulative_sum(zd.tensor(f), include_initial=True).numpy()
    assert inc.shape == (n + 1,) and inc[0] == 0


def test_cumulative_prod_and_cumsum():
    a = np.array([[1, 2, 3], [4, 5, 6]], np.float32)
    np.testing.assert_allclose(zd.cumulative_prod(zd.tensor(a), axis=1).numpy(), np.cumprod(a, axis=1))
    np.testing.assert_allclose(zd.cumsum(zd.tensor(a)).numpy(), np.cumsum(a))
    # the method, as NumPy's a.cumsum(axis)
    np.testing.assert_allclose(zd.tensor(a).cumsum(1).numpy(), a.cumsum(1))
    np.testing.assert_allclose(zd.tensor(a).cumsum().numpy(), a.cumsum())


def test_searchsorted_sides_sorter_and_nan():
    base = np.array([1.0, 2.0, 2.0, 3.0, np.nan], np.float32)
    q = np.array([[0.0, 2.0, 2.5], [3.0, 9.0, np.nan]], np.float32)
    for side in ("left", "right"):
        got = zd.searchsorted(zd.tensor(base), zd.tensor(q), side=side)
        np.testing.assert_array_equal(got.numpy(), np.searchsorted(base, q, side=side))
        assert got.dtype == zd.int64
    perm = np.array([3, 0, 2, 1])
    unsorted = np.array([1.0, 2.0, 2.0, 3.0], np.float32)[np.argsort(perm)]
    srt = np.argsort(unsorted, kind="stable")
    np.testing.assert_array_equal(zd.searchsorted(zd.tensor(unsorted), zd.tensor(q[0]), sorter=zd.tensor(srt)).numpy(),
                                  np.searchsorted(unsorted, q[0], sorter=srt))
    with pytest.raises(ValueError):
        zd.searchsorted(zd.tensor(base), zd.tensor(q), side="middle")


def test_searchsorted_sorter_and_take_indices_are_checked_at_the_call():
    """A sorter of the wrong length searched a shorter (or longer) x1 and gave a wrong answer silently;
    NumPy raises ValueError "sorter.size must equal a.size" (ShapeError is a ValueError). Non-integer
    sorters and take indices are a dtype error (NumPy's TypeError), not an indexing one."""
    a = zd.tensor(np.array([3.0, 1.0, 2.0], np.float32))
    q = zd.tensor(np.array([2.5], np.float32))
    for bad in (zd.tensor([1, 2]), [1, 2, 0, 1], np.array([[1, 2, 0]])):
        with pytest.raises(zd.ShapeError, match=r"sorter.*3 elements|x1 of 3") as info:
            zd.searchsorted(a, q, sorter=bad)
        assert isinstance(info.value, ValueError)
    with pytest.raises(zd.ShapeError, match="2 elements.*3 elements"):
        zd.searchsorted(a, q, sorter=zd.tensor([1, 2]))
    for bad, name in ((zd.tensor(np.array([1.0, 2.0, 0.0], np.float32)), "float32"), (np.array([1.0, 2.0, 0.0]), "float64")):
        with pytest.raises(zd.DTypeError, match=name) as info:
            zd.searchsorted(a, q, sorter=bad)
        assert isinstance(info.value, TypeError)
        with pytest.raises(zd.DTypeError, match=name):
            zd.take(a, bad)
    srt = [1, 2, 0]  # a list sorter still works
    np.testing.assert_array_equal(zd.searchsorted(a, q, sorter=srt).numpy(), np.searchsorted([3.0, 1.0, 2.0], [2.5], sorter=srt))
    np.testing.assert_array_equal(zd.take(a, []).numpy(), np.take([3.0, 1.0, 2.0], []))


def test_new_elementwise_functions_against_numpy():
    a = np.array([-0.9, -0.5, -0.0, 0.0, 0.25, 0.75, 2.0, np.inf, -np.inf, np.nan], np.float32)
    x = zd.tensor(a)
    with np.errstate(all="ignore"):
        for name, ref in (("asin", np.arcsin), ("acos", np.arccos), ("atan", np.arctan), ("sinh", np.sinh),
                          ("cosh", np.cosh), ("asinh", np.arcsinh), ("acosh", np.arccosh), ("atanh", np.arctanh),
                          ("log1p", np.log1p), ("expm1", np.expm1), ("log10", np.log10), ("trunc", np.trunc),
                          ("signbit", np.signbit), ("isfinite", np.isfinite)):
            np.testing.assert_allclose(getattr(zd, name)(x).numpy(), ref(a), rtol=2e-6, atol=1e-7, err_msg=name)
        b = a[::-1].copy()
        for name, ref in (("atan2", np.arctan2), ("hypot", np.hypot), ("copysign", np.copysign),
                          ("logaddexp", np.logaddexp), ("nextafter", np.nextafter)):
            np.testing.assert_allclose(getattr(zd, name)(x, zd.tensor(b)).numpy(), ref(a, b), rtol=2e-6, atol=1e-7,
                                       err_msg=name)
    assert zd.signbit(zd.tensor(-0.0)).item() is True


def test_shifts_match_numpy_for_any_count():
    a = np.array([1, -8, 127, -128, 5], np.int8)
    s = np.array([0, 1, 7, 8, 100], np.int8)
    np.testing.assert_array_equal(zd.bitwise_left_shift(zd.tensor(a), zd.tensor(s)).numpy(), np.left_shift(a, s))
    np.testing.assert_array_equal(zd.bitwise_right_shift(zd.tensor(a), zd.tensor(s)).numpy(), np.right_shift(a, s))
    u = np.array([1, 200, 255], np.uint8)
    np.testing.assert_array_equal((zd.tensor(u) << 3).numpy(), u << 3)
    np.testing.assert_array_equal((zd.tensor(u) >> 9).numpy(), u >> 9)
    with pytest.raises(zd.DTypeError):
        zd.bitwise_left_shift(zd.tensor([1.0]), 1)


def test_clip_keeps_dtype_and_accepts_both_spellings():
    x = zd.tensor(np.arange(10, dtype=np.int8))
    got = zd.clip(x, 2.5, 7.5)
    assert got.dtype == zd.int8
    np.testing.assert_array_equal(got.numpy(), np.clip(np.arange(10), 3, 7))
    np.testing.assert_array_equal(zd.clip(x, lo=1, hi=300).numpy(), np.clip(np.arange(10), 1, 127))
    np.testing.assert_array_equal(x.clip(max=4).numpy(), np.minimum(np.arange(10), 4))
    # a bool tensor with a float bound: the integers it admits, as with an int bound (was NumPy's ValueError)
    b = zd.tensor(np.array([True, False]))
    assert zd.clip(b, 0.5).dtype == zd.bool
    np.testing.assert_array_equal(zd.clip(b, 0.5).numpy(), zd.clip(b, 1).numpy())
    np.testing.assert_array_equal(zd.clip(b, max=0.5).numpy(), [False, False])


def test_manipulation_functions():
    a = np.arange(24).reshape(2, 3, 4).astype(np.float32)
    x = zd.tensor(a)
    np.testing.assert_array_equal(zd.moveaxis(x, 0, -1).numpy(), np.moveaxis(a, 0, -1))
    np.testing.assert_array_equal(zd.moveaxis(x, (0, 1), (2, 0)).numpy(), np.moveaxis(a, (0, 1), (2, 0)))
    np.testing.assert_array_equal(zd.roll(x, 5).numpy(), np.roll(a, 5))
    np.testing.assert_array_equal(zd.roll(x, (1, -2), axis=(2, 1)).numpy(), np.roll(a, (1, -2), axis=(2, 1)))
    np.testing.assert_array_equal(zd.take(x, zd.tensor([3, 0, -1]), axis=2).numpy(), np.take(a, [3, 0, -1], axis=2))
    assert [t.shape for t in zd.unstack(x, axis=1)] == [(2, 4)] * 3
    np.testing.assert_array_equal(zd.tril(x, k=1).numpy(), np.tril(a, 1))
    np.testing.assert_array_equal(zd.triu(x, k=-1).numpy(), np.triu(a, -1))
    gx, gy = zd.meshgrid(zd.arange(3), zd.arange(4))
    nx, ny = np.meshgrid(np.arange(3), np.arange(4))
    np.testing.assert_array_equal(gx.numpy(), nx)
    np.testing.assert_array_equal(gy.numpy(), ny)
    b1, b2 = zd.broadcast_arrays(zd.ones((3, 1)), zd.ones((1, 4)))
    assert b1.shape == b2.shape == (3, 4)
    np.testing.assert_array_equal(zd.repeat(zd.tensor([1, 2, 3]), zd.tensor([2, 0, 1])).numpy(), [1, 1, 3])
    np.testing.assert_array_equal(zd.repeat(zd.tensor([1, 2]), np.array([1, 2])).numpy(), [1, 2, 2])
    np.testing.assert_array_equal(zd.concat([x, x], axis=None).numpy(), np.concatenate([a.ravel(), a.ravel()]))
    np.testing.assert_array_equal(zd.diff(x, axis=1, n=2).numpy(), np.diff(a, axis=1, n=2))
    np.testing.assert_array_equal(zd.count_nonzero(x - 3, axis=2).numpy(), np.count_nonzero(a - 3, axis=2))


def test_data_dependent_functions():
    a = np.array([[0, 3, 0], [2, 0, 2]], np.int32)
    got = zd.nonzero(zd.tensor(a) * 1)
    for g, w in zip(got, np.nonzero(a)):
        np.testing.assert_array_equal(g.numpy(), w)
    u = zd.unique_all(zd.tensor(np.array([3.0, 1.0, np.nan, 3.0, np.nan], np.float32)))
    assert u.values.shape == (4,)  # each NaN is its own value
    np.testing.assert_array_equal(u.counts.numpy(), [1, 2, 1, 1])
    np.testing.assert_array_equal(zd.unique_values(zd.tensor([2, 1, 2])).numpy(), [1, 2])


def test_dtype_helpers_and_namespace():
    assert zd.__array_api_version__ == "2023.12"
    x = zd.ones((2, 2))
    assert x.__array_namespace__() is zd
    with pytest.raises(ValueError):
        x.__array_namespace__(api_version="2099.12")
    assert zd.zeros((), dtype=None).dtype == zd.float32
    assert zd.ones(3, dtype=None).dtype == zd.float32
    assert zd.astype(zd.ones(3, dtype=zd.int8), None).dtype == zd.float32  # (NumPy: its default float, float64)
    assert zd.full((2,), 3).dtype == zd.int32
    assert zd.isdtype(zd.int8, "signed integer") and not zd.isdtype(zd.uint8, "signed integer")
    assert zd.isdtype(zd.float16, ("integral", "real floating"))
    assert zd.isdtype(zd.float32, zd.float32) and not zd.isdtype(zd.float32, zd.float64)
    assert zd.result_type(zd.int8, zd.uint8) == zd.int16
    assert zd.result_type(x, zd.float64) == zd.float64
    assert zd.result_type(zd.int8, 1) == zd.int8
    assert zd.can_cast(zd.int8, zd.int32) and not zd.can_cast(zd.int32, zd.int8)
    assert zd.finfo(zd.float32).eps == float(np.finfo(np.float32).eps)
    assert zd.finfo(x).bits == 32
    assert zd.iinfo(zd.int16).max == 32767
    with pytest.raises(zd.DTypeError):
        zd.finfo(zd.int32)
    info = zd.__array_namespace_info__()
    assert info.default_dtypes() == {"real floating": zd.float32, "complex floating": None, "integral": zd.int32,
                                     "indexing": zd.int64}
    assert info.default_device() in info.devices()
    assert set(info.dtypes(kind="unsigned integer")) == {"uint8", "uint16", "uint32", "uint64"}
    assert zd.e == math.e and zd.newaxis is None and math.isnan(zd.nan)
    assert x.mT.shape == (2, 2) and x.to_device(x.device).shape == (2, 2)
    assert [1, 2, 3][zd.tensor(1)] == 2  # __index__
    y = x
    y += 1  # in-place operators rebind: tensors are immutable
    assert float(y[0, 0]) == 2.0 and float(x[0, 0]) == 1.0


def test_linalg_namespace():
    a = _rng(5).random((3, 4, 4)).astype(np.float32) + np.eye(4, dtype=np.float32) * 4
    x = zd.tensor(a)
    np.testing.assert_allclose(zd.linalg.matmul(x, x).numpy(), a @ a, rtol=1e-5)
    np.testing.assert_allclose(zd.linalg.vector_norm(x, axis=-1).numpy(), np.linalg.norm(a, axis=-1), rtol=1e-5)
    np.testing.assert_allclose(zd.linalg.vector_norm(x, ord=1).numpy(), np.abs(a).sum(), rtol=1e-5)
    for o in ("fro", 1, -1, np.inf, 2, "nuc"):
        np.testing.assert_allclose(zd.linalg.matrix_norm(x, ord=o).numpy(), np.linalg.norm(a, ord=o, axis=(-2, -1)),
                                   rtol=1e-4, err_msg=str(o))
    np.testing.assert_allclose(zd.vecdot(x, x).numpy(), (a * a).sum(-1), rtol=1e-5)
    np.testing.assert_allclose(zd.linalg.trace(x, offset=1).numpy(), np.trace(a, 1, -2, -1), rtol=1e-5)
    np.testing.assert_array_equal(zd.linalg.diagonal(x, offset=-1).numpy(), np.diagonal(a, -1, -2, -1))
    np.testing.assert_allclose(zd.linalg.inv(x).numpy(), np.linalg.inv(a), rtol=1e-4)
    np.testing.assert_allclose(zd.linalg.det(x).numpy(), np.linalg.det(a), rtol=1e-4)
    b = a[0, :, 0]
    np.testing.assert_allclose(zd.linalg.solve(x, zd.tensor(b)).numpy(), np.linalg.solve(a, b[:, None])[..., 0],
                               rtol=1e-4)
    np.testing.assert_allclose(zd.linalg.matrix_power(x, 3).numpy(), np.linalg.matrix_power(a, 3), rtol=1e-4)
    np.testing.assert_allclose(zd.linalg.cross(zd.tensor(a[..., :3]), zd.tensor(a[..., 1:])).numpy(),
                               np.cross(a[..., :3], a[..., 1:]), rtol=1e-5)
    np.testing.assert_allclose(zd.linalg.outer(zd.arange(3), zd.arange(4)).numpy(), np.outer(np.arange(3), np.arange(4)))
