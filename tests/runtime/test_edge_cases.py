"""Edge cases of API.md sections 2-5 and 8 on the OpenCL CPU device, against NumPy: negative constants in
generated C, float64 attention (left unfused), half-type means over long axes, the dtype of lists of typed
values, scalar conversions of tensors of other than one element, and creation from 0-d values."""

from __future__ import annotations

import operator

import ml_dtypes
import numpy as np
import pytest

import zyx_dist as zd

pytestmark = pytest.mark.usefixtures("tuning_off")


@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.int64, np.float16, np.float32, np.float64])
def test_negative_constants_compile_wherever_an_operator_precedes_them(dtype):
    # a negative literal after a negation or a subtraction once read as `--7` ("expression is not assignable")
    c = np.full(3, -3, dtype)
    x = zd.full((3,), -3, dtype=zd.dtype(np.dtype(dtype)))
    b = np.array([2, -2, 5], dtype)
    got = [(-x).numpy(), zd.abs(x).numpy(), (zd.tensor(b) - x).numpy(), (x // zd.tensor(b)).numpy()]
    want = [-c, np.abs(c), b - c, c // b]
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)


def test_a_python_negative_int_floor_divided_by_a_tensor():
    b = np.array([2, -2, 3], np.int32)
    np.testing.assert_array_equal((-7 // zd.tensor(b)).numpy(), np.int32(-7) // b)
    np.testing.assert_array_equal((zd.tensor(b) - -2.5).numpy(), b.astype(np.float32) + 2.5)


def test_float64_attention_is_exact_and_differentiable():
    rng = np.random.default_rng(0)
    q, k, v = (rng.standard_normal((2, 3, 8, 4)) for _ in range(3))
    Q, K, V = (zd.tensor(a) for a in (q, k, v))
    o = zd.softmax(Q @ K.mT * 0.5, axis=-1) @ V
    s = q @ k.swapaxes(-1, -2) * 0.5
    p = np.exp(s - s.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    (g,) = zd.grad((o * o).sum(), [V])  # (before o is read: a read makes o a constant to the gradient)
    assert o.dtype == zd.float64
    np.testing.assert_allclose(o.numpy(), p @ v, rtol=1e-12, atol=1e-12)  # (fused in float32 it was 2e-7 off)
    np.testing.assert_allclose(g.numpy(), p.swapaxes(-1, -2) @ (2 * (p @ v)), rtol=1e-10)


@pytest.mark.parametrize("fn", ["mean", "var", "std"])
def test_half_means_count_past_the_half_range(fn):
    a = np.random.default_rng(1).standard_normal(70000).astype(np.float16) + np.float16(3)
    got = getattr(zd, fn)(zd.tensor(a))
    assert got.dtype == zd.float16
    want = getattr(np, fn)(a.astype(np.float32))
    np.testing.assert_allclose(float(got.numpy()), want, rtol=2e-3)
    b = np.random.default_rng(2).standard_normal((3, 1023)).astype(ml_dtypes.bfloat16) + 4  # 1023: 1024 in bfloat16
    got = getattr(zd, fn)(zd.tensor(b), axis=1)
    want = getattr(np, fn)(b.astype(np.float32), axis=1).astype(ml_dtypes.bfloat16).astype(np.float32)
    np.testing.assert_allclose(got.numpy().astype(np.float32), want, rtol=1e-2)


def test_layer_norm_of_a_long_float16_row():
    x = np.random.default_rng(2).standard_normal(70000).astype(np.float16)
    y = zd.layer_norm(zd.tensor(x)).numpy()
    xf = x.astype(np.float32)
    assert y.dtype == np.float16
    np.testing.assert_allclose(y.astype(np.float32), (xf - xf.mean()) / np.sqrt(xf.var() + 1e-5), atol=1e-2)


def test_lists_of_typed_values_keep_their_dtype():
    f64 = [zd.tensor(np.array([1.5])), zd.tensor(np.array([1.0000001]))]
    t = zd.tensor(f64)
    assert t.dtype == zd.float64 and t.shape == (2, 1)
    np.testing.assert_array_equal(t.numpy(), [[1.5], [1.0000001]])
    assert zd.tensor([np.int8(1), np.int8(2)]).dtype == zd.int8
    assert zd.tensor([[np.int8(1)], [np.int16(2)]]).dtype == zd.int16  # promoted as NumPy does
    assert zd.tensor([np.float16(1)]).dtype == zd.float16
    assert zd.tensor([1.0, np.float64(2)]).dtype == zd.float32  # a Python value among them: the default dtypes
    assert zd.tensor([1, 2]).dtype == zd.int32


@pytest.mark.parametrize("convert", [float, int, bool, complex, operator.index, lambda x: x.item()])
@pytest.mark.parametrize("shape", [(3,), (0,), (2, 2)])
def test_scalar_conversions_of_other_than_one_element(convert, shape):
    x = zd.ones(shape, dtype=zd.int32)
    with pytest.raises(TypeError, match=r"size 1|truth value") as raised:  # NumPy 2's float() and int()
        convert(x)
    assert isinstance(raised.value, ValueError) and isinstance(raised.value, zd.ShapeError)  # item()'s, as NumPy's
    assert str(shape) in str(raised.value) or "size 1" in str(raised.value)


def test_the_truth_value_of_an_empty_tensor_says_it_is_empty():
    with pytest.raises(ValueError, match="empty"):
        bool(zd.zeros(0))
    assert bool(zd.ones((1, 1))) and float(zd.ones(1)) == 1.0 and operator.index(zd.tensor(3)) == 3


def test_full_keeps_the_dtype_of_a_typed_fill_value():
    assert zd.full(2, zd.tensor(np.array(3, np.int8))).dtype == zd.int8
    assert zd.full(2, np.float16(1.5)).dtype == zd.float16
    assert zd.full(2, 3).dtype == zd.int32
    np.testing.assert_array_equal(zd.full(2, zd.tensor(np.array(3, np.int8)), dtype=zd.float32).numpy(), [3.0, 3.0])


def test_arange_takes_zero_d_arrays_and_tensors():
    np.testing.assert_array_equal(zd.arange(zd.tensor(3)).numpy(), np.arange(3))
    np.testing.assert_array_equal(zd.arange(np.array(1.0), 3).numpy(), np.arange(1.0, 3, dtype=np.float32))


def test_pad_refuses_a_fill_value_its_integer_dtype_cannot_hold():
    x = zd.tensor(np.array([[1, 2]], np.int8))
    with pytest.raises(OverflowError, match="300"):
        zd.pad(x, 1, value=300)
    np.testing.assert_array_equal(zd.pad(x, 1, value=-3).numpy(), np.pad([[1, 2]], 1, constant_values=-3))


def test_an_integer_tensor_to_a_negative_power_is_refused_as_numpy_refuses_it():
    x = zd.tensor(np.array([1, 2], np.int8))
    with pytest.raises(ValueError, match="negative integer powers") as raised:
        x ** -1
    assert isinstance(raised.value, zd.DTypeError)


def test_a_realized_empty_tensor_names_its_device():
    t = zd.zeros((0, 3))
    assert t.device is None
    t.realize()
    assert t.device == zd.tensor([1.0]).realize().device


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_signed_integer_overflow_wraps_as_numpy(dtype):
    """Signed overflow is undefined in C, and compilers assumed it away (`(x + x) > 0` held for x = 2**30); the
    kernels compute signed sums, products, negations and left shifts in the unsigned twin, which wraps."""
    info = np.iinfo(dtype)
    a = np.array([info.max // 2 + 3, info.min + 1, -468161101, 5, info.min], dtype)
    x = zd.tensor(a)
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal((x * x).numpy(), a * a)
        np.testing.assert_array_equal(((x + x) > 0).numpy(), (a + a) > 0)
        np.testing.assert_array_equal((x - 7).numpy(), a - dtype(7))
        np.testing.assert_array_equal((-x).numpy(), -a)
        np.testing.assert_array_equal((x << 3).numpy(), a << dtype(3))
        np.testing.assert_array_equal(zd.sum(x, dtype=zd.dtype(np.dtype(dtype))).numpy(), a.sum(dtype=dtype))
        np.testing.assert_array_equal(zd.prod(x, dtype=zd.dtype(np.dtype(dtype))).numpy(), a.prod(dtype=dtype))


def test_conditional_reads_in_a_loop_of_a_small_launch():
    """Intel's OpenCL CPU compiler took work-item 0's side of `(gid <= 0) ? in[r] : 0` inside a reduction loop for
    work-item 1 too (kernels whose output is smaller than the work-group): a matmul of a zero-padded operand and a
    stack of two fused matmuls."""
    w = np.ones((255, 1), np.float32)
    xa = np.ones((1, 255), np.float32)
    got = zd.matmul(zd.tensor(xa), zd.pad(zd.tensor(w), ((0, 0), (0, 1)))).numpy()
    np.testing.assert_array_equal(got, xa @ np.pad(w, ((0, 0), (0, 1))))
    v, m = np.ones(1000, np.float32), np.ones((1000, 1), np.float32)
    y = zd.relu(zd.matmul(zd.tensor(v), zd.tensor(m)) + 0.5)
    np.testing.assert_array_equal(zd.stack([y, y], -1).numpy(), np.stack([np.maximum(v @ m + 0.5, 0)] * 2, -1))


@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.int64, np.uint8, np.uint32])
def test_bitwise_not_around_and_inside_max_and_min(dtype):
    """Intel's OpenCL CPU compiler rewrote `~` of an integer max reduction (and `~` inside one) wrongly:
    ~max([-10, -17, 19, 3]) gave 19."""
    a = np.array([10, 17, 19, 3, 0, 100], dtype)
    if np.issubdtype(dtype, np.signedinteger):
        a = a * np.array([-1, -1, 1, 1, 1, -1], dtype)
    x = zd.tensor(a)
    np.testing.assert_array_equal((~zd.max(x)).numpy(), ~a.max())
    np.testing.assert_array_equal((~zd.min(x)).numpy(), ~a.min())
    np.testing.assert_array_equal(zd.max(~x, axis=0).numpy(), (~a).max(axis=0))
    np.testing.assert_array_equal(zd.min(~x).numpy(), (~a).min())
    np.testing.assert_array_equal((~x).numpy(), ~a)
