"""Runtime tests of API.md sections 3 and 4: creating tensors, their attributes, and reading them back,
against NumPy on PoCL through the in-process backend."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import ALL, assert_close, data, ids

import zyx_dist as zd

# ---- zd.tensor / zd.asarray ------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ALL + [np.float64, np.int8, np.int16, np.uint16, np.uint32, np.uint64],
                         ids=ids(ALL + [np.float64, np.int8, np.int16, np.uint16, np.uint32, np.uint64]))
def test_tensor_from_numpy_keeps_dtype(dtype):
    a = data((3, 4), dtype)
    t = zd.tensor(a)
    assert t.dtype == zd.dtype(dtype) and t.shape == (3, 4)
    assert_close(t, a, dtype)
    # a computed copy too (goes through a kernel, not just the upload)
    assert_close(t.astype(dtype) + zd.zeros((3, 4), dtype=dtype), a, dtype)


@pytest.mark.parametrize("fn", [zd.tensor, zd.asarray], ids=["tensor", "asarray"])
@pytest.mark.parametrize("value,dtype,shape", [
    ([1, 2], zd.int32, (2,)),
    ([1.0], zd.float32, (1,)),
    ([[1, 2, 3], [4, 5, 6]], zd.int32, (2, 3)),
    ([[1.5, 2], [3, 4]], zd.float32, (2, 2)),
    ([True, False, True], zd.bool, (3,)),
    (7, zd.int32, ()),
    (2.5, zd.float32, ()),
    (True, zd.bool, ()),
    ([2**40, 1], zd.int64, (2,)),
    ([], zd.float32, (0,)),
])
def test_tensor_from_python_data(fn, value, dtype, shape):
    t = fn(value)
    assert t.dtype is dtype and t.shape == shape
    assert_close(t, np.array(value, dtype=np.dtype(dtype.dtype)).reshape(shape), dtype)


def test_tensor_float64_array_stays_float64():
    a = np.linspace(0, 1, 7)
    t = zd.tensor(a)
    assert t.dtype is zd.float64
    assert_close(t * 2, a * 2, zd.float64)


@pytest.mark.parametrize("dtype", [zd.float16, zd.int64, zd.uint8, zd.bool, np.float32, "int32"])
def test_tensor_with_dtype_argument(dtype):
    t = zd.tensor([[0, 1, 2], [3, 0, 5]], dtype=dtype)
    assert t.dtype is zd.dtype(dtype)
    assert_close(t, np.array([[0, 1, 2], [3, 0, 5]]).astype(zd.dtype(dtype).dtype), dtype)


def test_tensor_from_tensor():
    a = data((4, 3), np.float32)
    x = zd.tensor(a)
    y = zd.tensor(x)
    assert_close(y, a, zd.float32)
    z = zd.asarray(x + 1, dtype=zd.int32)
    assert_close(z, (a + 1).astype(np.int32), zd.int32)
    assert_close(zd.tensor(x.realize()), a, zd.float32)


def test_tensor_copies_its_input():
    a = np.arange(6, dtype=np.float32)
    t = zd.tensor(a)
    a[0] = 100  # mutating the source after the call must not change the tensor
    assert t.numpy()[0] == 0
    out = t.numpy()
    out[1] = 100  # nor mutating what numpy() returned
    assert t.numpy()[1] == 1
    t.realize()
    out = t.numpy()
    out[2] = 100
    assert t.numpy()[2] == 2


# ---- filled tensors ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("shape", [3, (2, 3), (), (0, 4), (1, 1, 5)], ids=str)
def test_zeros_ones_full(shape):
    ns = shape if isinstance(shape, tuple) else (shape,)
    assert_close(zd.zeros(shape), np.zeros(ns), zd.float32)
    assert_close(zd.ones(shape), np.ones(ns), zd.float32)
    assert_close(zd.full(shape, 2.5), np.full(ns, 2.5), zd.float32)
    assert_close(zd.full(shape, 3), np.full(ns, 3), zd.int32)
    assert_close(zd.full(shape, True), np.full(ns, True), zd.bool)
    assert_close(zd.zeros(shape, dtype=zd.int64), np.zeros(ns), zd.int64)
    assert_close(zd.ones(shape, dtype=zd.uint8), np.ones(ns), zd.uint8)
    assert_close(zd.full(shape, 7, dtype=zd.float16), np.full(ns, 7), zd.float16)
    assert_close(zd.ones(shape, zd.bool), np.ones(ns, bool), zd.bool)


@pytest.mark.parametrize("dtype", ALL, ids=ids(ALL))
def test_like_functions(dtype):
    x = zd.tensor(data((2, 5), dtype))
    assert_close(zd.zeros_like(x), np.zeros((2, 5)), dtype)
    assert_close(zd.ones_like(x), np.ones((2, 5)), dtype)
    assert_close(zd.full_like(x, 1), np.full((2, 5), 1), dtype)
    assert_close(zd.zeros_like(x, dtype=zd.float32), np.zeros((2, 5)), zd.float32)


def test_full_like_float_value():
    x = zd.ones((3,), dtype=zd.float32)
    assert_close(zd.full_like(x, -0.25), np.full(3, -0.25), zd.float32)


def test_full_int_range_edges():
    """Python ints at an integer dtype's bounds fill exactly (one past raises OverflowError:
    tests/runtime/test_bad_input.py); a bool dtype and a 0-d tensor value are cast, as NumPy's."""
    assert_close(zd.full(2, 255, dtype=zd.uint8), np.full(2, 255, np.uint8), zd.uint8)
    assert_close(zd.full_like(zd.ones(3, dtype=zd.int8), -128), np.full(3, -128, np.int8), zd.int8)
    assert_close(zd.full(2, 300, dtype=zd.bool), np.full(2, 300, bool), zd.bool)
    assert_close(zd.full(2, zd.tensor(300), dtype=zd.uint8), np.full(2, np.array(300), np.uint8), zd.uint8)
    assert_close(zd.tensor([255, 0], dtype=zd.uint8), np.array([255, 0], np.uint8), zd.uint8)
    with pytest.raises(OverflowError, match="300 out of bounds for uint8"):
        np.full(2, 300, np.uint8)  # the NumPy 2 behaviour the rows there follow


# ---- ranges --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("args,dtype", [
    ((5,), zd.int32),
    ((2, 9), zd.int32),
    ((1, 10, 3), zd.int32),
    ((10, 0, -3), zd.int32),
    ((-5, 5, 2), zd.int32),
    ((0, 1, 0.1), zd.float32),
    ((-1.0, 1.0, 0.25), zd.float32),
    ((3.0, -2.0, -0.5), zd.float32),
    ((0, 0), zd.int32),
    ((5, 1), zd.int32),
    ((0, 2**33, 2**31), zd.int64),
])
def test_arange(args, dtype):
    t = zd.arange(*args)
    assert t.dtype is dtype
    assert_close(t, np.arange(*args), dtype)


def test_arange_dtype_and_keywords():
    assert_close(zd.arange(6, dtype=zd.float32), np.arange(6), zd.float32)
    assert_close(zd.arange(1, 4, dtype=zd.uint8), np.arange(1, 4), zd.uint8)
    assert_close(zd.arange(0, 10, step=4), np.arange(0, 10, 4), zd.int32)
    assert_close(zd.arange(4, dtype=zd.float16), np.arange(4), zd.float16)


@pytest.mark.parametrize("a,b,n", [(0, 1, 5), (-1, 1, 11), (2, -2, 4), (3, 3, 1), (0, 1, 0), (0, 10, 1)])
def test_linspace(a, b, n):
    t = zd.linspace(a, b, n)
    assert t.dtype is zd.float32
    assert_close(t, np.linspace(a, b, n), zd.float32)


@pytest.mark.parametrize("args,kw", [((3,), {}), ((2, 4), {}), ((4, 2), {}), ((3,), {"dtype": zd.int32}),
                                     ((1,), {}), ((3,), {"dtype": zd.bool})], ids=str)
def test_eye(args, kw):
    t = zd.eye(*args, **kw)
    dtype = kw.get("dtype", zd.float32)
    assert_close(t, np.eye(*args), dtype)


def test_eye_takes_a_dtype_third_as_api_md_writes_it():
    """API.md section 3: `zd.eye(n, m=None, dtype=zd.float32)`; an int third is NumPy's k."""
    t = zd.eye(2, 3, zd.int32)
    assert t.dtype is zd.int32
    assert_close(t, np.eye(2, 3), zd.int32)
    assert_close(zd.eye(3, 3, 1), np.eye(3, 3, 1), zd.float32)
    assert_close(zd.eye(3, None, np.float16), np.eye(3), zd.float16)


# ---- random -------------------------------------------------------------------------------------------------


def test_rand_range_shape_dtype():
    r = zd.rand(40, 50, seed=1)
    assert r.shape == (40, 50) and r.dtype is zd.float32
    v = r.numpy()
    assert v.min() >= 0 and v.max() < 1
    assert 0.4 < v.mean() < 0.6 and v.std() > 0.2  # actually uniform, not constant
    assert zd.rand((3, 2), seed=1).shape == (3, 2)
    assert zd.rand(7).shape == (7,)


def test_randn_stats():
    v = zd.randn(100, 100, seed=2).numpy()
    assert v.shape == (100, 100) and v.dtype == np.float32
    assert abs(v.mean()) < 0.05 and 0.95 < v.std() < 1.05
    assert (v < 0).any() and (v > 1.5).any()


def test_uniform_range():
    v = zd.uniform((2000,), low=-3.0, high=-1.0, seed=3).numpy()
    assert v.dtype == np.float32 and v.shape == (2000,)
    assert v.min() >= -3.0 and v.max() < -1.0 and v.max() - v.min() > 1.8
    w = zd.uniform(5, seed=3).numpy()
    assert w.shape == (5,) and (w >= 0).all() and (w < 1).all()


@pytest.mark.parametrize("dtype", [zd.bfloat16, zd.float16, zd.float32], ids=ids([zd.bfloat16, zd.float16, zd.float32]))
@pytest.mark.parametrize("low,high", [(-2.0, 2.0), (0.0, 1.2), (1.0, 1.001)], ids=str)
def test_uniform_half_open_after_rounding(dtype, low, high):
    """[low, high) in the dtype: a float64 sample just below high rounds up to high in bfloat16/float16 (seed
    1 gives 2.0 seven times in 4000 bfloat16 draws); 1.2 itself rounds up in all three, so samples below it
    could round above it; (1, 1.001) is narrower than bfloat16's step there."""
    v = zd.uniform(100_000, low=low, high=high, seed=1, dtype=dtype).numpy()
    assert v.dtype == np.dtype(dtype)
    assert v.astype(np.float64).max() < high and v.astype(np.float64).min() >= np.float64(dtype.np_dtype.type(low))
    assert len(np.unique(v)) > 1 or high - low < 0.01


@pytest.mark.parametrize("make", [lambda s: zd.rand(3, 4, seed=s), lambda s: zd.randn(3, 4, seed=s),
                                  lambda s: zd.uniform((3, 4), -2.0, 2.0, seed=s)], ids=["rand", "randn", "uniform"])
def test_random_seed_reproducible(make):
    a, b, c = make(11).numpy(), make(11).numpy(), make(12).numpy()
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)


def test_manual_seed():
    zd.manual_seed(123)
    a = zd.rand(6).numpy()
    b = zd.randn(6).numpy()
    c = zd.rand(6).numpy()
    assert not np.array_equal(a, c)  # the generator advances
    zd.manual_seed(123)
    np.testing.assert_array_equal(zd.rand(6).numpy(), a)
    np.testing.assert_array_equal(zd.randn(6).numpy(), b)
    np.testing.assert_array_equal(zd.rand(6).numpy(), c)
    zd.manual_seed(124)
    assert not np.array_equal(zd.rand(6).numpy(), a)


def test_random_used_in_compute():
    r = zd.rand(4, 5, seed=5)
    v = r.numpy()
    assert_close(r * 2 - 1, v * 2 - 1, zd.float32)
    assert_close(r.sum(1), v.sum(1), zd.float32)


# ---- device= ------------------------------------------------------------------------------------------------


def test_creation_device_keyword():
    for t in (zd.tensor([1, 2, 3], device="opencl:0"), zd.zeros(3, device="opencl:0"),
              zd.ones((2,), device="opencl:0"), zd.arange(3, device="opencl:0"),
              zd.rand(3, seed=0, device="opencl:0"), zd.full(3, 2, device="opencl:0")):
        assert t.realize().device == "opencl:0"
        assert t.shape == (3,) or t.shape == (2,)
    assert_close(zd.tensor([1, 2, 3], device="opencl:0") + 1, np.array([2, 3, 4]), zd.int32)


# ---- attributes ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("shape,dtype", [((), zd.float32), ((5,), zd.int64), ((2, 3, 4), zd.float16),
                                         ((0, 3), zd.uint8), ((3, 1), zd.bool)], ids=str)
def test_attributes(shape, dtype):
    z = zd.zeros(shape, dtype=dtype)
    x = zd.maximum(z, z)
    size = int(np.prod(shape))
    assert x.shape == shape and isinstance(x.shape, tuple)
    assert x.dtype is dtype
    assert x.ndim == len(shape)
    assert x.size == size
    assert x.nbytes == size * np.dtype(dtype.dtype).itemsize
    if shape:
        assert len(x) == shape[0]
    else:
        with pytest.raises(TypeError):
            len(x)


def test_dtype_objects():
    assert np.dtype(zd.float32) == np.float32
    assert zd.float32.dtype == np.dtype(np.float32)
    for name in ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float16",
                 "float32", "float64"):
        d = getattr(zd, name)
        assert zd.dtype(np.dtype(name)) is d
        assert np.dtype(d) == np.dtype(name)
    assert zd.dtype(np.float32) is zd.float32


def test_device_none_before_realize_and_repr_does_not_realize():
    x = zd.tensor(np.ones((2, 3), np.float32)) * 3
    assert x.device is None
    zd.reset_stats()
    r = repr(x)
    assert "(2, 3)" in r and "float32" in r
    assert x.device is None
    assert zd.stats()["kernels_launched"] == 0
    assert x.realize() is x
    assert x.device == "opencl:0"
    assert "opencl:0" in repr(x)
    leaf = zd.tensor([1.0, 2.0])
    assert leaf.device is None
    leaf.numpy()  # reading a host leaf may or may not upload; realize must place it
    assert leaf.realize().device == "opencl:0"


# ---- reading back ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ALL, ids=ids(ALL))
def test_numpy_and_array_protocol(dtype):
    a = data((3, 4), dtype)
    x = zd.tensor(a)
    y = zd.maximum(x, x)  # computed
    for t in (x, y):
        out = t.numpy()
        assert isinstance(out, np.ndarray) and out.dtype == a.dtype
        np.testing.assert_array_equal(out, a)
        arr = np.asarray(t)
        assert isinstance(arr, np.ndarray) and arr.dtype == a.dtype
        np.testing.assert_array_equal(arr, a)
        assert t.tolist() == a.tolist()
    assert np.asarray(y, dtype=np.float64).dtype == np.float64


@pytest.mark.parametrize("value,dtype", [(2.5, zd.float32), (-3, zd.int32), (True, zd.bool), (7, zd.uint8),
                                         (1.5, zd.float16), (-(2**40), zd.int64)])
def test_scalar_reading(value, dtype):
    for shape in ((), (1,), (1, 1)):
        x = zd.full(shape, value, dtype=dtype) + zd.zeros(shape, dtype=dtype)
        item = x.item()
        assert item == value and type(item) is type(value)
        assert float(x) == float(value)
        assert int(x) == int(value)
        assert bool(x) == bool(value)
    assert zd.tensor(value, dtype=dtype).tolist() == value


def test_bool_of_comparison_and_zero():
    x = zd.tensor([3.0])
    assert bool(x > 2) is True
    assert bool(x < 2) is False
    assert not zd.zeros(())


@pytest.mark.parametrize("conv", [lambda t: t.item(), float, int, bool], ids=["item", "float", "int", "bool"])
@pytest.mark.parametrize("shape", [(2,), (2, 3), (0,)], ids=str)
def test_scalar_reading_needs_size_one(conv, shape):
    x = zd.ones(shape)
    with pytest.raises((ValueError, TypeError)):
        conv(x)


def test_tolist_nested_and_scalar():
    assert (zd.arange(6).reshape(2, 3) * 2).tolist() == [[0, 2, 4], [6, 8, 10]]
    assert zd.tensor(3.5).tolist() == 3.5
    assert (zd.tensor([1.0, 2.0]) > 1.5).tolist() == [False, True]


def test_iteration_gives_rows():
    a = data((3, 2), np.float32)
    rows = list(zd.tensor(a))
    assert len(rows) == 3
    for r, ar in zip(rows, a):
        assert_close(r, ar, zd.float32)
