"""bfloat16 against NumPy/ml_dtypes on PoCL: the dtype itself (`np.dtype(zd.bfloat16)` is ml_dtypes'),
bit-exact rounding to nearest even on every store (ties, NaN, infinities, overflow, subnormals),
elementwise ops and reductions computed in float32 and rounded once, casts both ways, promotion, and
matmuls (float32 accumulation, one rounding of the result)."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import zyx_dist as zd

BF = np.dtype(ml_dtypes.bfloat16)
RNG = np.random.default_rng(3)


def bits(a: np.ndarray) -> np.ndarray:
    return np.asarray(a).view(np.uint16)


def same(t: zd.Tensor, expected: np.ndarray) -> None:
    got = t.numpy()
    assert t.dtype is zd.bfloat16 and got.dtype == BF
    exp = np.asarray(expected).astype(BF)
    nan = np.isnan(exp.astype(np.float32))
    assert np.array_equal(np.isnan(got.astype(np.float32)), nan)
    assert np.array_equal(bits(got)[~nan], bits(exp)[~nan]), (got[~nan][:8], exp[~nan][:8])


def test_dtype_is_ml_dtypes_bfloat16():
    assert np.dtype(zd.bfloat16) == BF and zd.dtype(BF) is zd.bfloat16 and zd.dtype("bfloat16") is zd.bfloat16
    assert zd.bfloat16.is_float and zd.bfloat16.itemsize == 2
    x = zd.tensor(np.arange(6, dtype=np.float32).astype(BF))
    assert x.dtype is zd.bfloat16 and x.nbytes == 12


def test_cast_rounds_to_nearest_even_bit_exactly():
    special = np.array([np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, 3.4028235e38, -3.4028235e38, 1e-40, -1e-45,
                        1 + 2**-8, 1 + 3 * 2**-8, 1 - 2**-9, 255.5, 256.5, 3.3961776e38], np.float32)
    x = np.concatenate([special, RNG.standard_normal(5000).astype(np.float32) * 1e3])
    same(zd.tensor(x).astype(zd.bfloat16), x.astype(BF))
    d = x.astype(np.float64)
    same(zd.tensor(d).astype(zd.bfloat16), d.astype(BF))
    i = RNG.integers(-100000, 100000, 3000).astype(np.int32)
    same(zd.tensor(i).astype(zd.bfloat16), i.astype(BF))


def test_cast_from_bfloat16_is_exact():
    b = (RNG.standard_normal(3000) * 50).astype(BF)
    np.testing.assert_array_equal(zd.tensor(b).astype(zd.float32).numpy(), b.astype(np.float32))
    np.testing.assert_array_equal(zd.tensor(b).astype(zd.int32).numpy(), b.astype(np.float32).astype(np.int32))
    np.testing.assert_array_equal(zd.tensor(b).astype(zd.float16).numpy(), b.astype(np.float32).astype(np.float16))


@pytest.mark.parametrize("name,f", [("affine", lambda x, y: x * 3 + y), ("div", lambda x, y: x / (y * y + 1)),
                                    ("exp", lambda x, y: np.exp(x * 0.125) if isinstance(x, np.ndarray) else
                                     zd.exp(x * 0.125)),
                                    ("max", lambda x, y: np.maximum(x, y) if isinstance(x, np.ndarray) else
                                     zd.maximum(x, y))])
def test_elementwise_computes_in_float32_and_rounds_once(name, f):
    a, b = (RNG.standard_normal((64, 33)) * 4).astype(BF), (RNG.standard_normal((64, 33)) * 4).astype(BF)
    got = f(zd.tensor(a), zd.tensor(b)).numpy().astype(np.float32)
    exp = f(a.astype(np.float32), b.astype(np.float32)).astype(BF).astype(np.float32)
    # float32 math in the kernel may differ from NumPy's in the last float32 bit, which can flip a rounding
    np.testing.assert_allclose(got, exp, rtol=2 ** -7, atol=1e-6)
    assert np.mean(got == exp) > 0.98


def test_reductions_accumulate_in_float32():
    x = (RNG.standard_normal((16, 4096)) + 1).astype(BF)
    xf = x.astype(np.float32)
    s = zd.tensor(x).sum(axis=1)
    assert s.dtype is zd.bfloat16
    np.testing.assert_allclose(s.numpy().astype(np.float32), xf.sum(1), rtol=2 ** -7)
    sm = zd.softmax(zd.tensor(x), axis=-1)
    e = np.exp(xf - xf.max(1, keepdims=True))
    np.testing.assert_allclose(sm.numpy().astype(np.float32), e / e.sum(1, keepdims=True), rtol=2 ** -7, atol=1e-7)
    ln = zd.layer_norm(zd.tensor(x))
    ref = (xf - xf.mean(1, keepdims=True)) / np.sqrt(xf.var(1, keepdims=True) + 1e-5)
    np.testing.assert_allclose(ln.numpy().astype(np.float32), ref, rtol=2 ** -6, atol=2e-2)


def test_promotion():
    b = zd.tensor(np.ones(3, BF))
    assert (b + b).dtype is zd.bfloat16
    assert (b + zd.tensor(np.ones(3, np.float16))).dtype is zd.float32
    assert (b + zd.tensor(np.ones(3, np.float32))).dtype is zd.float32
    assert (b + zd.tensor(np.ones(3, np.int8))).dtype is zd.bfloat16
    assert (b + zd.tensor(np.ones(3, np.int16))).dtype is zd.float32
    assert (b + zd.tensor(np.ones(3, np.int32))).dtype is zd.float64
    assert (b + 1.5).dtype is zd.bfloat16 and (b * 2).dtype is zd.bfloat16
    assert zd.ones(3, dtype=zd.bfloat16).dtype is zd.bfloat16


@pytest.mark.parametrize("shape_a,shape_b", [((40, 64), (64, 50)), ((2, 3, 33, 16), (2, 3, 16, 20)),
                                             ((3, 20, 24), (24, 40))])
def test_matmul_accumulates_in_float32(shape_a, shape_b):
    a, b = RNG.standard_normal(shape_a).astype(BF), RNG.standard_normal(shape_b).astype(BF)
    y = zd.tensor(a) @ zd.tensor(b)
    assert y.dtype is zd.bfloat16
    ref = (a.astype(np.float32) @ b.astype(np.float32)).astype(BF).astype(np.float32)
    got = y.numpy().astype(np.float32)
    np.testing.assert_allclose(got, ref, rtol=2 ** -7, atol=1e-5)
