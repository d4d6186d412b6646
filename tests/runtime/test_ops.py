"""Runtime tests of the elementwise ops of API.md section 5 (unary, binary, operators and reflected
operators with scalars, promotion, `where`, `clip`, casts, NaN/inf), against NumPy on PoCL.

Decided semantics checked here where they differ from NumPy: Python scalars are weak; true division of
integers/bools and float-only math (exp, log, sqrt, sin, ...) on integers give float32.
"""

from __future__ import annotations

import operator

import numpy as np
import pytest
from helpers import ALL, INTS, NUMERIC, assert_close, data, ids

import zyx_dist as zd

SHAPE = (5, 7)


def float_result(dtype) -> np.dtype:
    """float-only math: floats keep their dtype, integers and bools compute in float32."""
    dt = np.dtype(dtype)
    return dt if dt.kind == "f" else np.dtype(np.float32)


def np_in_float(fn, a):
    """The NumPy reference for float-only math: computed in float64 from the input values."""
    with np.errstate(all="ignore"):
        return fn(a.astype(np.float64))


def rsqrt(a):
    return 1 / np.sqrt(a)


def sigmoid(a):
    return 1 / (1 + np.exp(-a))


# name -> (zd function, NumPy reference, data kind, accuracy slack)
FLOAT_UNARY = {
    "exp": (zd.exp, np.exp, "any", 4),
    "exp2": (zd.exp2, np.exp2, "any", 4),
    "log": (zd.log, np.log, "pos", 4),
    "log2": (zd.log2, np.log2, "pos", 4),
    "sqrt": (zd.sqrt, np.sqrt, "pos", 2),
    "rsqrt": (zd.rsqrt, rsqrt, "pos", 4),
    "reciprocal": (zd.reciprocal, np.reciprocal, "nonzero", 2),
    "sin": (zd.sin, np.sin, "any", 4),
    "cos": (zd.cos, np.cos, "any", 4),
    "tan": (zd.tan, np.tan, "unit", 4),
    "tanh": (zd.tanh, np.tanh, "any", 4),
    "sigmoid": (zd.sigmoid, sigmoid, "any", 4),
}


UNARY_DTYPES = [np.float32, np.float16, np.int32]


@pytest.mark.parametrize("dtype", UNARY_DTYPES, ids=ids(UNARY_DTYPES))
@pytest.mark.parametrize("name", list(FLOAT_UNARY))
def test_float_unary(name, dtype):
    fn, ref, kind, slack = FLOAT_UNARY[name]
    if np.dtype(dtype).kind == "u" and kind == "unit":
        kind = "small"
    a = data(SHAPE, dtype, kind)
    if np.dtype(dtype).kind in "iu" and name == "tan":
        a = (a % 2).astype(dtype)  # stay away from the poles
    out = float_result(dtype)
    assert_close(fn(zd.tensor(a)), np_in_float(ref, a), out, loose=slack)


@pytest.mark.parametrize("name", ["exp", "log", "sqrt", "sin", "tanh", "sigmoid"])
def test_float_unary_bool_input(name):
    _, ref, _, slack = FLOAT_UNARY[name]
    fn = getattr(zd, name)
    a = np.array([True, False, True, True])
    if name in ("log",):
        a = np.ones(4, bool)
    assert_close(fn(zd.tensor(a)), np_in_float(ref, a), zd.float32, loose=slack)


def test_float_unary_methods():
    a = data(SHAPE, np.float32, "pos")
    x = zd.tensor(a)
    for name in ("exp", "exp2", "log", "log2", "sqrt", "rsqrt", "reciprocal", "sin", "cos", "tan", "tanh", "sigmoid"):
        _, ref, _, slack = FLOAT_UNARY[name]
        assert_close(getattr(x, name)(), np_in_float(ref, a), zd.float32, loose=slack)


# name -> (zd function, NumPy reference, dtypes, data kind)
SAME_DTYPE_UNARY = {
    "abs": (zd.abs, np.abs, ALL, "any"),
    "negative": (zd.negative, np.negative, NUMERIC, "any"),
    "positive": (zd.positive, np.positive, NUMERIC, "any"),
    "square": (zd.square, np.square, NUMERIC, "any"),
    "relu": (zd.relu, lambda a: np.maximum(a, 0).astype(a.dtype), NUMERIC, "any"),
    "floor": (zd.floor, np.floor, NUMERIC, "any"),
    "ceil": (zd.ceil, np.ceil, NUMERIC, "any"),
    "round": (zd.round, np.round, NUMERIC, "small"),
    "sign": (zd.sign, np.sign, NUMERIC, "small"),
}


@pytest.mark.parametrize("name,dtype", [(n, d) for n, v in SAME_DTYPE_UNARY.items() for d in v[2]],
                         ids=[f"{n}-{np.dtype(d).name}" for n, v in SAME_DTYPE_UNARY.items() for d in v[2]])
def test_same_dtype_unary(name, dtype):
    fn, ref, _, kind = SAME_DTYPE_UNARY[name]
    a = data(SHAPE, dtype, kind)
    with np.errstate(all="ignore"):
        expected = ref(a)
    assert_close(fn(zd.tensor(a)), expected, dtype)


def test_operator_unary():
    a = data(SHAPE, np.float32)
    x = zd.tensor(a)
    assert_close(-x, -a, zd.float32)
    assert_close(+x, a, zd.float32)
    assert_close(abs(x), np.abs(a), zd.float32)
    for m in ("abs", "negative", "positive", "square", "relu", "floor", "ceil", "round", "sign"):
        assert_close(getattr(x, m)(), getattr(zd, m)(x).numpy(), zd.float32)
    i = data(SHAPE, np.int32)
    assert_close(~zd.tensor(i), ~i, zd.int32)
    u = data(SHAPE, np.uint8)
    assert_close(~zd.tensor(u), ~u, zd.uint8)


def test_round_half_to_even():
    a = np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 3.5, 0.49, -0.51, 2.6], np.float32)
    assert_close(zd.round(zd.tensor(a)), np.round(a), zd.float32, rtol=0, atol=0)


@pytest.mark.parametrize("dtype", ALL, ids=ids(ALL))
def test_logical_not(dtype):
    a = data(SHAPE, dtype, "small")
    assert_close(zd.logical_not(zd.tensor(a)), np.logical_not(a), zd.bool)
    assert_close(zd.tensor(a).logical_not(), np.logical_not(a), zd.bool)
    if dtype is np.bool_:
        assert_close(~zd.tensor(a), ~a, zd.bool)


@pytest.mark.parametrize("dtype", NUMERIC, ids=ids(NUMERIC))
def test_isnan_isinf(dtype):
    a = data(SHAPE, dtype)
    if np.dtype(dtype).kind == "f":
        a.flat[[0, 5, 9]] = np.nan
        a.flat[[3, 11]] = np.inf
        a.flat[[4]] = -np.inf
    x = zd.tensor(a)
    assert_close(zd.isnan(x), np.isnan(a), zd.bool)
    assert_close(zd.isinf(x), np.isinf(a), zd.bool)
    assert_close(x.isnan(), np.isnan(a), zd.bool)
    assert_close(x.isinf(), np.isinf(a), zd.bool)


# ---- shapes and views ------------------------------------------------------------------------------------------

SHAPES = [(), (1,), (1023,), (2, 3, 4, 5), (1, 3, 1), (0, 3), (3, 0), (4, 1, 1, 2)]


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("dtype", [np.float32, np.int32], ids=ids([np.float32, np.int32]))
def test_unary_shapes(shape, dtype):
    a = data(shape, dtype)
    x = zd.tensor(a)
    assert_close(zd.exp(x), np_in_float(np.exp, a), float_result(dtype), loose=4)
    assert_close(-zd.abs(x) * 2, -np.abs(a) * 2, dtype)


# view name -> (zd view, NumPy view) of a (6, 8) base
VIEWS = {
    "transposed": (lambda x: x.T, lambda a: a.T),
    "permuted3d": (lambda x: x.reshape(2, 3, 8).permute(2, 0, 1), lambda a: a.reshape(2, 3, 8).transpose(2, 0, 1)),
    "step-sliced": (lambda x: x[1::2, ::3], lambda a: a[1::2, ::3]),
    "neg-step": (lambda x: x[::-2, 5:0:-1], lambda a: a[::-2, 5:0:-1]),
    "flipped": (lambda x: zd.flip(x, 1), lambda a: np.flip(a, 1)),
    "expanded": (lambda x: x[:, :1].expand(6, 5), lambda a: np.broadcast_to(a[:, :1], (6, 5))),
    "padded": (lambda x: zd.pad(x, ((1, 2), (0, 3))), lambda a: np.pad(a, ((1, 2), (0, 3)))),
    "reshaped-T": (lambda x: x.T.reshape(4, 12), lambda a: a.T.reshape(4, 12)),
}


@pytest.mark.parametrize("view", list(VIEWS))
@pytest.mark.parametrize("dtype", [np.float32, np.uint8], ids=ids([np.float32, np.uint8]))
def test_ops_on_views(view, dtype):
    zv, nv = VIEWS[view]
    a = data((6, 8), dtype)
    b = data((6, 8), dtype, seed=1)
    x, y = zd.tensor(a), zd.tensor(b)
    assert_close(zv(x) * 3 + zv(y), nv(a) * 3 + nv(b), dtype)
    if dtype is np.float32:
        assert_close(zv(x), nv(a), dtype)
        assert_close(zd.sqrt(zd.abs(zv(x))), np_in_float(lambda v: np.sqrt(np.abs(v)), nv(a)), float_result(dtype))
        # views of a realized (computed) tensor
        c = (x + y).realize()
        assert_close(zv(c) - 1, nv(a + b) - 1, dtype)


# ---- binary ops ------------------------------------------------------------------------------------------------


def _pair(dtype, kind_a="any", kind_b="any", shape=SHAPE):
    return data(shape, dtype, kind_a, seed=1), data(shape, dtype, kind_b, seed=2)


# name -> (zd function, NumPy reference, dtypes, kind of a, kind of b)
ARITH = {
    "add": (zd.add, np.add, ALL, "any", "any"),
    "subtract": (zd.subtract, np.subtract, NUMERIC, "any", "any"),
    "multiply": (zd.multiply, np.multiply, ALL, "any", "any"),
    "maximum": (zd.maximum, np.maximum, ALL, "small", "small"),
    "minimum": (zd.minimum, np.minimum, ALL, "small", "small"),
    "floor_divide": (zd.floor_divide, np.floor_divide, NUMERIC, "any", "nonzero"),
    "remainder": (zd.remainder, np.remainder, NUMERIC, "any", "nonzero"),
}


@pytest.mark.parametrize("name,dtype", [(n, d) for n, v in ARITH.items() for d in v[2]],
                         ids=[f"{n}-{np.dtype(d).name}" for n, v in ARITH.items() for d in v[2]])
def test_arith(name, dtype):
    fn, ref, _, ka, kb = ARITH[name]
    a, b = _pair(dtype, ka, kb)
    with np.errstate(all="ignore"):
        expected = ref(a, b)
    assert_close(fn(zd.tensor(a), zd.tensor(b)), expected, dtype, loose=2)


@pytest.mark.parametrize("dtype", [np.bool_], ids=["bool"])
def test_floor_divide_remainder_bool_gives_int8(dtype):
    a = np.array([True, False, True, False])
    b = np.ones(4, bool)
    assert_close(zd.floor_divide(zd.tensor(a), zd.tensor(b)), np.floor_divide(a, b), zd.int8)
    assert_close(zd.remainder(zd.tensor(a), zd.tensor(b)), np.remainder(a, b), zd.int8)


def test_floor_divide_remainder_signs():
    a = np.array([7, -7, 7, -7, 0, 9, -1], np.int32)
    b = np.array([2, 2, -2, -2, 3, -4, 5], np.int32)
    x, y = zd.tensor(a), zd.tensor(b)
    assert_close(x // y, a // b, zd.int32)
    assert_close(x % y, a % b, zd.int32)
    af, bf = a.astype(np.float32) + 0.5, b.astype(np.float32)
    assert_close(zd.tensor(af) // zd.tensor(bf), af // bf, zd.float32)
    assert_close(zd.tensor(af) % zd.tensor(bf), af % bf, zd.float32)


def test_integer_division_by_zero_is_zero():
    a = np.array([5, -3, 0], np.int32)
    z = zd.zeros(3, dtype=zd.int32)
    with np.errstate(all="ignore"):
        assert_close(zd.tensor(a) // z, a // np.zeros(3, np.int32), zd.int32)


@pytest.mark.parametrize("dtype", ALL, ids=ids(ALL))
def test_divide_is_true_division(dtype):
    a = data(SHAPE, dtype, seed=1)
    b = data(SHAPE, dtype, "nonzero", seed=2)
    if np.dtype(dtype).kind == "b":
        b = np.ones(SHAPE, bool)
    out = float_result(dtype)
    expected = a.astype(np.float64) / b.astype(np.float64)
    assert_close(zd.divide(zd.tensor(a), zd.tensor(b)), expected, out, loose=2)
    assert_close(zd.tensor(a) / zd.tensor(b), expected, out, loose=2)


@pytest.mark.parametrize("dtype", NUMERIC + [np.bool_], ids=ids(NUMERIC + [np.bool_]))
def test_pow(dtype):
    dt = np.dtype(dtype)
    if dt.kind == "f":
        a = data(SHAPE, dtype, "pos", seed=1)
        b = data(SHAPE, dtype, "unit", seed=2) * 3
    else:
        a = data(SHAPE, dtype, "small", seed=1)
        b = np.random.default_rng(2).integers(0, 4, SHAPE).astype(dtype)
    expected = np.power(a, b)
    assert_close(zd.pow(zd.tensor(a), zd.tensor(b)), expected, expected.dtype, loose=4)
    assert_close(zd.tensor(a) ** zd.tensor(b), expected, expected.dtype, loose=4)


COMPARE = {"equal": np.equal, "not_equal": np.not_equal, "less": np.less, "less_equal": np.less_equal,
           "greater": np.greater, "greater_equal": np.greater_equal}


CMP_DTYPES = [np.float32, np.int32, np.uint8, np.bool_]


@pytest.mark.parametrize("dtype", CMP_DTYPES, ids=ids(CMP_DTYPES))
@pytest.mark.parametrize("name", list(COMPARE))
def test_comparisons(name, dtype):
    a, b = _pair(dtype, "small", "small")
    assert_close(getattr(zd, name)(zd.tensor(a), zd.tensor(b)), COMPARE[name](a, b), zd.bool)


def test_comparison_operators_are_elementwise():
    a, b = _pair(np.float32, "small", "small")
    x, y = zd.tensor(a), zd.tensor(b)
    for got, want in ((x == y, a == b), (x != y, a != b), (x < y, a < b), (x <= y, a <= b), (x > y, a > b),
                      (x >= y, a >= b)):
        assert isinstance(got, zd.Tensor)
        assert_close(got, want, zd.bool)


@pytest.mark.parametrize("other", [None, "a", object()], ids=["None", "str", "object"])
def test_eq_ne_with_a_non_operand_is_elementwise(other):
    """API.md 5: == is never a Python bool. NumPy 2: `a == None` is all False, `a != None` all True."""
    a = data((2, 3), np.float32)
    x = zd.tensor(a)
    for got, want in ((x == other, a == other), (x != other, a != other), (other == x, other == a),
                      (other != x, other != a)):
        assert isinstance(got, zd.Tensor) and got.shape == (2, 3)
        assert_close(got, want, zd.bool)
    assert_close(zd.zeros((), dtype=zd.int32) == None, np.array(False), zd.bool)
    with pytest.raises(zd.DTypeError):  # the function still takes operands only
        zd.equal(x, None)


LOGICAL = {"logical_and": np.logical_and, "logical_or": np.logical_or, "logical_xor": np.logical_xor}


@pytest.mark.parametrize("dtype", ALL, ids=ids(ALL))
@pytest.mark.parametrize("name", list(LOGICAL))
def test_logical(name, dtype):
    a, b = _pair(dtype, "small", "small")
    assert_close(getattr(zd, name)(zd.tensor(a), zd.tensor(b)), LOGICAL[name](a, b), zd.bool)


BITWISE = {"bitwise_and": (np.bitwise_and, "__and__"), "bitwise_or": (np.bitwise_or, "__or__"),
           "bitwise_xor": (np.bitwise_xor, "__xor__")}


@pytest.mark.parametrize("dtype", INTS + [np.bool_], ids=ids(INTS + [np.bool_]))
@pytest.mark.parametrize("name", list(BITWISE))
def test_bitwise(name, dtype):
    ref, op = BITWISE[name]
    a, b = _pair(dtype)
    x, y = zd.tensor(a), zd.tensor(b)
    assert_close(getattr(zd, name)(x, y), ref(a, b), dtype)
    assert_close(getattr(x, op)(y), ref(a, b), dtype)


def test_bool_add_multiply_are_or_and():
    a, b = _pair(np.bool_)
    assert_close(zd.tensor(a) + zd.tensor(b), a + b, zd.bool)
    assert_close(zd.tensor(a) * zd.tensor(b), a * b, zd.bool)


# ---- broadcasting -----------------------------------------------------------------------------------------------

PAIRS = [((3, 1), (1, 4)), ((5,), (2, 5)), ((2, 5), (5,)), ((), (3, 2)), ((4, 1, 3), (2, 1)), ((1,), (0, 3)),
         ((2, 1, 1, 3), (1, 4, 5, 1)), ((1023,), (1, 1023)), ((3, 0), (1, 1))]


@pytest.mark.parametrize("sa,sb", PAIRS, ids=str)
def test_broadcasting(sa, sb):
    a = data(sa, np.float32, seed=1)
    b = data(sb, np.float32, "nonzero", seed=2)
    x, y = zd.tensor(a), zd.tensor(b)
    assert_close(x * y - y, a * b - b, zd.float32)
    assert_close(x < y, a < b, zd.bool)
    ai, bi = data(sa, np.int32, seed=1), data(sb, np.int32, "nonzero", seed=2)
    assert_close(zd.tensor(ai) // zd.tensor(bi), ai // bi, zd.int32)


# ---- operators with scalars, arrays and lists; weak scalars ------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.int32, np.uint8], ids=ids([np.int32, np.uint8]))
def test_operators_with_int_scalars(dtype):
    a = data(SHAPE, dtype, "pos")
    x = zd.tensor(a)
    s = np.dtype(dtype).type
    dt = zd.dtype(dtype)
    cases = [
        (x + 2, a + s(2)), (2 + x, s(2) + a), (x - 1, a - s(1)), (13 - x, s(13) - a), (x * 3, a * s(3)),
        (3 * x, s(3) * a), (x // 2, a // s(2)), (17 // x, s(17) // a), (x % 3, a % s(3)), (17 % x, s(17) % a),
        (x ** 2, a ** s(2)), (zd.maximum(x, 3), np.maximum(a, s(3))), (zd.minimum(2, x), np.minimum(s(2), a)),
    ]
    if np.dtype(dtype).kind in "iu":
        cases += [(x & 6, a & s(6)), (6 & x, s(6) & a), (x | 4, a | s(4)), (4 | x, s(4) | a), (x ^ 5, a ^ s(5)),
                  (5 ^ x, s(5) ^ a), (2 ** (x % 5), s(2) ** (a % s(5)))]
    for got, want in cases:
        assert_close(got, want, dt, loose=4)
    for got, want in ((x == 3, a == 3), (3 == x, a == 3), (x != 3, a != 3), (x < 3, a < 3), (3 < x, 3 < a),
                      (x <= 3, a <= 3), (x > 3, a > 3), (x >= 3, a >= 3), (3 >= x, 3 >= a)):
        assert_close(got, want, zd.bool)


@pytest.mark.parametrize("dtype", [np.float32, np.float16], ids=ids([np.float32, np.float16]))
def test_operators_with_float_scalars(dtype):
    a = data(SHAPE, dtype, "pos")
    x = zd.tensor(a)
    f = np.dtype(dtype).type
    for got, want in ((x + 1.5, a + f(1.5)), (1.5 + x, f(1.5) + a), (x - 0.5, a - f(0.5)), (0.5 - x, f(0.5) - a),
                      (x * 2.5, a * f(2.5)), (2.5 * x, f(2.5) * a), (x / 4.0, a / f(4.0)), (3.0 / x, f(3.0) / a),
                      (x ** 0.5, a ** f(0.5)), (2.0 ** x, f(2.0) ** a), (x // 0.75, a // f(0.75)),
                      (x % 0.75, a % f(0.75))):
        assert_close(got, want, dtype, loose=4)


def test_weak_scalar_promotion():
    i32 = zd.tensor(np.array([1, 2, 3], np.int32))
    assert (i32 + 1).dtype is zd.int32
    assert (1 + i32).dtype is zd.int32
    assert_close(i32 + 1.5, np.array([2.5, 3.5, 4.5]), zd.float32)
    assert_close(1.5 * i32, np.array([1.5, 3, 4.5]), zd.float32)
    assert_close(i32 / 2, np.array([0.5, 1, 1.5]), zd.float32)
    assert_close(2 / i32, np.array([2, 1, 2 / 3]), zd.float32)
    assert (zd.tensor(np.array([1, 2], np.int64)) + 1.5).dtype is zd.float32
    assert (zd.tensor(np.array([1, 2], np.uint8)) + 1).dtype is zd.uint8
    assert_close(zd.tensor(np.array([250, 3], np.uint8)) + 10, np.array([4, 13], np.uint8), zd.uint8)  # wraps
    assert (zd.tensor(np.array([1, 2], np.int64)) * 2).dtype is zd.int64
    assert (zd.ones(2, zd.float16) + 1.5).dtype is zd.float16
    assert (zd.ones(2, zd.float16) * 2).dtype is zd.float16
    assert (zd.ones(2, zd.float64) + 1).dtype is zd.float64
    b = zd.tensor([True, False])
    assert (b + True).dtype is zd.bool
    assert_close(b + 1, np.array([2, 1]), zd.int32)
    assert_close(b * 1.5, np.array([1.5, 0]), zd.float32)
    assert_close(b / b.logical_not().logical_not(), np.array([1, np.nan]), zd.float32)


BEYOND = [(np.uint8, -1), (np.uint8, 256), (np.int8, -300), (np.int8, 128), (np.int32, 2**31), (np.int32, -(2**40))]


@pytest.mark.parametrize("dtype,c", BEYOND, ids=[f"{d.__name__}_{c}" for d, c in BEYOND])
def test_comparison_with_a_python_int_its_dtype_cannot_hold(dtype, c):
    """NumPy 2 compares an integer array with a Python int's true value (`uint8 > -1` is True everywhere);
    the int taken in the array's dtype would wrap and give the wrong answer."""
    info = np.iinfo(dtype)
    a = np.array([info.min, 0, 1, info.max], dtype)
    x = zd.tensor(a)
    for cmp in (operator.lt, operator.le, operator.gt, operator.ge, operator.eq, operator.ne):
        for got, want in ((cmp(x, c), cmp(a, c)), (cmp(c, x), cmp(c, a))):
            assert got.dtype is zd.bool and got.shape == a.shape
            np.testing.assert_array_equal(got.numpy(), want, err_msg=f"{dtype.__name__} {cmp.__name__} {c}")


def test_arithmetic_with_a_python_int_its_dtype_cannot_hold_raises_overflow():
    """NumPy 2 raises OverflowError ("Python integer 256 out of bounds for uint8") where a weak Python int does
    not fit the array's integer dtype; the int taken in that dtype would wrap silently."""
    u = zd.tensor(np.array([0, 1, 255], np.uint8))
    i = zd.tensor(np.array([1, 2], np.int32))
    for f in (lambda: u + 256, lambda: 300 - u, lambda: zd.maximum(u, -1), lambda: u & 256, lambda: u // 300,
              lambda: i * 2**40, lambda: i + 2**31):
        with pytest.raises(OverflowError, match="out of bounds"):
            f()
    assert_close(u + 255, np.array([255, 0, 254], np.uint8), zd.uint8)  # in range: NumPy's wrap-around
    assert_close(i - (2**31 - 1), np.array([1, 2], np.int32) - np.int32(2**31 - 1), zd.int32)


@pytest.mark.parametrize("da,db", [(np.int32, np.float32), (np.uint8, np.int32), (np.float16, np.float32),
                                   (np.bool_, np.uint8), (np.int64, np.uint8), (np.float16, np.int32),
                                   (np.uint8, np.int64), (np.bool_, np.float16), (np.int32, np.int64)], ids=str)
def test_tensor_tensor_promotion(da, db):
    a, b = data(SHAPE, da, "pos", seed=1), data(SHAPE, db, "pos", seed=2)
    want = np.result_type(a, b)
    x, y = zd.tensor(a), zd.tensor(b)
    assert_close(y * x, b * a, want)


def test_operators_with_arrays_and_lists():
    a = data((3, 4), np.float32)
    b = data((3, 4), np.float32, seed=1)
    x = zd.tensor(a)
    r = b + x  # NumPy defers to the tensor: a lazy Tensor, not an array
    assert isinstance(r, zd.Tensor)
    assert_close(r, b + a, zd.float32)
    assert_close(b * x, b * a, zd.float32)
    assert_close(b - x, b - a, zd.float32)
    assert_close(x @ b.T, a @ b.T, zd.float32)
    assert_close(b @ x.T, b @ a.T, zd.float32)
    assert_close(x + [1.0, 2.0, 3.0, 4.0], a + np.array([1, 2, 3, 4], np.float32), zd.float32)
    assert_close([[1.0], [2.0], [3.0]] * x, np.array([[1], [2], [3]], np.float32) * a, zd.float32)
    assert_close(zd.add(a, b), a + b, zd.float32)  # plain arrays through the functions
    assert_close(zd.exp(a), np.exp(a), zd.float32, loose=4)


# ---- where and clip ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ALL, ids=ids(ALL))
def test_where(dtype):
    c = data((3, 1), np.bool_, seed=3)
    a = data((1, 4), dtype, seed=1)
    b = data((3, 4), dtype, seed=2)
    assert_close(zd.where(zd.tensor(c), zd.tensor(a), zd.tensor(b)), np.where(c, a, b), dtype)


def test_where_scalars_promotion_and_nonbool_condition():
    a = data((4, 5), np.float32)
    x = zd.tensor(a)
    assert_close(zd.where(x > 0, x, 0), np.where(a > 0, a, 0), zd.float32)
    assert_close(zd.where(x > 0, 1.0, -1.0), np.where(a > 0, 1, -1), zd.float32)
    i = zd.tensor(np.array([[0, 1, 2, 0, 3]], np.int32))
    assert_close(zd.where(i, x, 7), np.where(np.array([[0, 1, 2, 0, 3]]), a, 7), zd.float32)
    ii = zd.tensor(data((4, 5), np.int32))
    assert_close(zd.where(x > 0, ii, 2), np.where(a > 0, data((4, 5), np.int32), 2), zd.int32)
    assert_close(zd.where(x > 0, ii, 0.5), np.where(a > 0, data((4, 5), np.int32), 0.5), zd.float32)
    assert_close(zd.where(x > 0, ii, x), np.where(a > 0, data((4, 5), np.int32), a), np.float64)


def test_where_never_leaks_nan():
    a = np.array([np.nan, 1.0, np.inf, -np.inf, 4.0], np.float32)
    x = zd.tensor(a)
    m = np.array([False, True, False, False, True])
    assert_close(zd.where(zd.tensor(m), x, 5.0), np.where(m, a, 5.0), zd.float32, rtol=0, atol=0)
    assert_close(zd.where(zd.tensor(~m), 5.0, x), np.where(~m, 5.0, a), zd.float32, rtol=0, atol=0)
    v = np.array([-4.0, 0.0, 9.0, -1.0], np.float32)
    y = zd.tensor(v)
    got = zd.where(y > 0, zd.sqrt(y), 0.0).numpy()
    np.testing.assert_array_equal(got, np.array([0, 0, 3, 0], np.float32))
    got = zd.where(y > 0, zd.log(y), -1.0).numpy()
    np.testing.assert_allclose(got, np.array([-1, -1, np.log(9), -1], np.float32), rtol=1e-5)


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.uint8, np.float16], ids=ids([np.float32, np.int32,
                                                                                          np.uint8, np.float16]))
def test_clip(dtype):
    a = data((4, 6), dtype)
    x = zd.tensor(a)
    s = np.dtype(dtype).type
    assert_close(zd.clip(x, 2, 6), np.clip(a, s(2), s(6)), dtype)
    assert_close(x.clip(3, None), np.maximum(a, s(3)), dtype)
    assert_close(zd.clip(x, None, 5), np.minimum(a, s(5)), dtype)
    lo = data((4, 1), dtype, seed=5)
    assert_close(zd.clip(x, zd.tensor(lo), 8), np.minimum(np.maximum(a, lo), s(8)), dtype)


# ---- casting -------------------------------------------------------------------------------------------------------

CAST_DTYPES = [np.float32, np.float16, np.int32, np.int64, np.uint8, np.bool_]


def _cast_source(src, dst) -> np.ndarray:
    """Values whose cast is defined: no negative or too large floats into unsigned/small ints."""
    s, d = np.dtype(src), np.dtype(dst)
    if s.kind == "f":
        lo = 0.0 if d.kind in "ub" else -100.0
        v = np.random.default_rng(7).uniform(lo, 250.0 if d.kind == "u" else 100.0, (4, 6))
        v.flat[:4] = [0.0, 2.7, 1.5, 0.4]  # truncation toward zero, zero stays zero
        if d.kind == "i":
            v.flat[4:6] = [-2.7, -0.5]
        return v.astype(s)
    if s.kind == "b":
        return data((4, 6), s)
    v = np.random.default_rng(7).integers(0 if s.kind == "u" else -300, 250 if s.kind == "u" else 300, (4, 6))
    v.flat[:2] = [0, 1]
    return v.astype(s)


@pytest.mark.parametrize("dst", CAST_DTYPES, ids=ids(CAST_DTYPES))
@pytest.mark.parametrize("src", CAST_DTYPES, ids=ids(CAST_DTYPES))
def test_astype_all_pairs(src, dst):
    a = _cast_source(src, dst)
    with np.errstate(all="ignore"):
        expected = a.astype(dst)
    x = zd.tensor(a)
    assert_close(x.astype(dst), expected, dst)
    if src is np.float32 or dst is np.float32:
        assert_close((x + zd.zeros_like(x)).astype(zd.dtype(dst)), expected, dst)  # a computed source


def test_cast_aliases_and_float64():
    a = data((3, 3), np.float32)
    x = zd.tensor(a)
    assert_close(x.cast(zd.int32), a.astype(np.int32), zd.int32)
    assert_close(zd.astype(x, zd.float64), a.astype(np.float64), zd.float64)
    assert_close(zd.astype(x, "float16"), a.astype(np.float16), zd.float16)
    d = zd.tensor(a.astype(np.float64)) * 3
    assert_close(d.astype(zd.float32), (a.astype(np.float64) * 3).astype(np.float32), zd.float32)
    assert_close(x.astype(np.int64), a.astype(np.int64), zd.int64)


def test_float16_values_round_trip():
    a = np.array([0.0, 1.0, -2.5, 65504.0, 6.1e-5, 0.1, np.inf, -np.inf, np.nan], np.float16)
    x = zd.tensor(a)
    np.testing.assert_array_equal(x.numpy(), a)
    np.testing.assert_array_equal((x * 1).numpy(), a)
    np.testing.assert_array_equal(x.astype(zd.float32).numpy(), a.astype(np.float32))
    big = zd.tensor(np.array([60000.0], np.float16))
    assert np.isinf((big * 2).numpy()[0])  # overflows half like NumPy


# ---- NaN and inf -------------------------------------------------------------------------------------------------


def test_maximum_minimum_propagate_nan():
    a = np.array([np.nan, 1.0, np.nan, -np.inf, 2.0], np.float32)
    b = np.array([0.0, np.nan, np.nan, 1.0, np.inf], np.float32)
    x, y = zd.tensor(a), zd.tensor(b)
    for got, want in ((zd.maximum(x, y), np.maximum(a, b)), (zd.minimum(x, y), np.minimum(a, b)),
                      (zd.maximum(y, x), np.maximum(b, a)), (zd.minimum(y, x), np.minimum(b, a)),
                      (zd.relu(x), np.maximum(a, 0)), (zd.clip(x, 0, 1), np.clip(a, 0, 1))):
        assert_close(got, want, zd.float32, rtol=0, atol=0)


def test_nan_inf_arithmetic():
    a = np.array([np.nan, np.inf, -np.inf, 0.0, 1.0, -1.0], np.float32)
    b = np.array([1.0, np.inf, np.inf, 0.0, 0.0, 0.0], np.float32)
    x, y = zd.tensor(a), zd.tensor(b)
    x2, a2 = zd.tensor(a), a.copy()
    with np.errstate(all="ignore"):
        for got, want in ((x + y, a + b), (x * y, a * b), (x / y, a / b), (x - y, a - b),
                          (zd.exp(x), np.exp(a)), (zd.log(zd.abs(x)), np.log(np.abs(a))), (zd.sqrt(x), np.sqrt(a)),
                          (zd.sign(x), np.sign(a)), (zd.abs(x), np.abs(a)), (zd.tanh(x), np.tanh(a)),
                          (zd.sigmoid(x), 1 / (1 + np.exp(-a))), (x == x2, a == a2), (x != x2, a != a2),
                          (x < y, a < b), (x > 1, a > 1)):
            assert_close(got, want, want.dtype, loose=4)
    assert_close(zd.exp(zd.tensor(np.array([100.0], np.float32))), np.array([np.inf]), zd.float32)


def test_pad_of_nan_gives_exact_zeros():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    a[0, 0] = np.nan
    x = zd.tensor(a)
    got = zd.pad(x, ((1, 1), (2, 0))).numpy()
    np.testing.assert_array_equal(got, np.pad(a, ((1, 1), (2, 0))))
    assert np.isnan(got[1, 2]) and (got[0] == 0).all() and (got[:, :2] == 0).all()
    got = (zd.pad(x * 2, 1) + 1).numpy()
    np.testing.assert_array_equal(got, np.pad(a * 2, 1) + 1)
    inf = zd.tensor(np.array([np.inf, -np.inf], np.float32))
    np.testing.assert_array_equal((zd.pad(inf, 2) * 0).numpy()[[0, 1, 4, 5]], np.zeros(4, np.float32))
