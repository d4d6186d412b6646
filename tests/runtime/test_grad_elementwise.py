"""Gradients of the array API standard's elementwise functions beyond API.md section 5 (frontend/elementwise_std.py:
the inverse and hyperbolic trigonometry, log1p, expm1, log10, atan2, hypot, copysign, nextafter, logaddexp),
realized on PoCL against float64 central differences of the NumPy function, in float64 and float32; plus second
derivatives against their closed forms and the kinks (the origin of hypot and atan2, copysign at 0), whose
gradients are 0 rather than NaN. The interpreter of tests/reference.py has none of these ops, so they are
checked on the device only (tests/gradcheck.py's cases are the section 5 ops).

The autotuner is off for this module: each case is a small new kernel, checked once.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

import zyx_dist as zd

pytestmark = pytest.mark.usefixtures("tuning_off")

H = 1e-6  # central difference step (float64)

# name: (zd function, NumPy function, the interval its inputs are drawn from: inside the domain, away from its ends)
UNARY: dict[str, tuple[Callable, Callable, tuple[float, float]]] = {
    "log1p": (zd.log1p, np.log1p, (-0.7, 3.0)),
    "expm1": (zd.expm1, np.expm1, (-2.0, 2.0)),
    "log10": (zd.log10, np.log10, (0.2, 5.0)),
    "asin": (zd.asin, np.arcsin, (-0.9, 0.9)),
    "acos": (zd.acos, np.arccos, (-0.9, 0.9)),
    "atan": (zd.atan, np.arctan, (-3.0, 3.0)),
    "sinh": (zd.sinh, np.sinh, (-2.0, 2.0)),
    "cosh": (zd.cosh, np.cosh, (-2.0, 2.0)),
    "asinh": (zd.asinh, np.arcsinh, (-3.0, 3.0)),
    "acosh": (zd.acosh, np.arccosh, (1.1, 4.0)),
    "atanh": (zd.atanh, np.arctanh, (-0.9, 0.9)),
}
# name: (zd function, NumPy function, the intervals of its two inputs); signs random, |values| in the interval
BINARY: dict[str, tuple[Callable, Callable, tuple[float, float], tuple[float, float]]] = {
    "atan2": (zd.atan2, np.arctan2, (0.2, 2.0), (0.2, 2.0)),
    "hypot": (zd.hypot, np.hypot, (0.2, 2.0), (0.2, 2.0)),
    "copysign": (zd.copysign, np.copysign, (0.2, 2.0), (0.2, 2.0)),
    "nextafter": (zd.nextafter, np.nextafter, (0.2, 2.0), (0.2, 2.0)),
    "logaddexp": (zd.logaddexp, np.logaddexp, (0.0, 3.0), (0.0, 3.0)),
}
TOL = {np.float64: 1e-7, np.float32: 2e-5}


def _uniform(interval: tuple[float, float], n: int, seed: int, signed: bool) -> np.ndarray:
    rng = np.random.default_rng(seed)
    v = rng.uniform(*interval, n)
    return v * rng.choice([-1.0, 1.0], n) if signed else v


def _central(f: Callable, args: list[np.ndarray], k: int) -> np.ndarray:
    """d f / d args[k], elementwise, by float64 central differences."""
    up, dn = list(args), list(args)
    up[k], dn[k] = args[k] + H, args[k] - H
    return (f(*up) - f(*dn)) / (2 * H)


def _check(f: Callable, ref: Callable, arrays: list[np.ndarray], dtype: type) -> None:
    """zd.grad of sum(w * f(xs)) in `dtype` against w times central differences of `ref` at the same (rounded)
    inputs in float64."""
    arrays = [a.astype(dtype) for a in arrays]
    xs = [zd.tensor(a) for a in arrays]
    w = np.random.default_rng(99).uniform(0.5, 1.5, arrays[0].shape).astype(dtype)
    grads = zd.grad(f(*xs), xs, grad_output=zd.tensor(w))
    wide = [a.astype(np.float64) for a in arrays]
    for k, g in enumerate(grads):
        assert g.dtype == xs[k].dtype
        want = w.astype(np.float64) * _central(ref, wide, k)
        np.testing.assert_allclose(g.numpy(), want, rtol=TOL[dtype], atol=TOL[dtype], err_msg=f"input {k}")


@pytest.mark.parametrize("dtype", [np.float64, np.float32], ids=["f64", "f32"])
@pytest.mark.parametrize("name", list(UNARY) + list(BINARY))
def test_gradient_matches_central_differences_of_numpy(name, dtype):
    if name in UNARY:
        f, ref, interval = UNARY[name]
        _check(f, ref, [_uniform(interval, 12, 1, signed=False)], dtype)
    else:
        f, ref, ia, ib = BINARY[name]
        signed = name != "logaddexp"
        _check(f, ref, [_uniform(ia, 12, 2, signed), _uniform(ib, 12, 3, signed)], dtype)


def test_logaddexp_gradient_is_the_softmax_of_its_operands_ties_and_far_apart_included():
    a = np.array([0.3, -1.0, 2.0, 40.0, -40.0, 0.0])
    b = np.array([0.3, -1.0, 2.5, -40.0, 40.0, 1e-3])
    x, y = zd.tensor(a), zd.tensor(b)
    gx, gy = zd.grad(zd.logaddexp(x, y).sum(), [x, y])
    np.testing.assert_allclose(gx.numpy(), np.exp(a) / (np.exp(a) + np.exp(b)), rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(gy.numpy(), np.exp(b) / (np.exp(a) + np.exp(b)), rtol=1e-12, atol=1e-15)


# second derivatives in closed form: (name, function, inputs, d^2 f / dx^2 of the first input)
SECOND = [
    ("log1p", zd.log1p, [np.array([-0.5, 0.2, 2.0])], lambda x: -1 / (1 + x) ** 2),
    ("asin", zd.asin, [np.array([-0.8, 0.1, 0.6])], lambda x: x / (1 - x * x) ** 1.5),
    ("atanh", zd.atanh, [np.array([-0.8, 0.1, 0.6])], lambda x: 2 * x / (1 - x * x) ** 2),
    ("asinh", zd.asinh, [np.array([-2.0, 0.1, 3.0])], lambda x: -x / (x * x + 1) ** 1.5),  # (through hypot's rule)
    ("acosh", zd.acosh, [np.array([1.2, 2.0, 5.0])], lambda x: -x / (x * x - 1) ** 1.5),
    ("sinh", zd.sinh, [np.array([-1.0, 0.3, 2.0])], np.sinh),
    ("hypot", zd.hypot, [np.array([0.5, -1.2, 2.0]), np.array([1.0, 0.4, -0.3])],
     lambda a, b: b * b / np.hypot(a, b) ** 3),
    ("atan2", zd.atan2, [np.array([0.5, -1.2, 2.0]), np.array([1.0, 0.4, -0.3])],
     lambda a, b: -2 * a * b / (a * a + b * b) ** 2),
]


@pytest.mark.parametrize("name,f,arrays,second", SECOND, ids=[s[0] for s in SECOND])
def test_second_derivative_matches_its_closed_form(name, f, arrays, second):
    xs = [zd.tensor(a) for a in arrays]
    (g,) = zd.grad(f(*xs).sum(), xs[:1])
    (gg,) = zd.grad(g.sum(), xs[:1])
    np.testing.assert_allclose(gg.numpy(), second(*arrays), rtol=1e-10, atol=1e-12)


def test_kinks_give_zero_gradients_not_nan():
    """hypot and atan2 at the origin, copysign at a == 0 (as abs's rule), and copysign, nextafter in b."""
    a, b = zd.tensor(np.array([0.0, 0.0, 1.5])), zd.tensor(np.array([0.0, -2.0, 0.7]))
    for f, want_a, want_b in ((zd.hypot, [0.0, 0.0, 1.5 / np.hypot(1.5, 0.7)], [0.0, -1.0, 0.7 / np.hypot(1.5, 0.7)]),
                              (zd.atan2, [0.0, -0.5, 0.7 / (1.5 ** 2 + 0.49)], [0.0, 0.0, -1.5 / (1.5 ** 2 + 0.49)]),
                              (zd.copysign, [0.0, 0.0, 1.0], [0.0, 0.0, 0.0]),
                              (zd.nextafter, [1.0, 1.0, 1.0], [0.0, 0.0, 0.0])):
        ga, gb = zd.grad(f(a, b).sum(), [a, b])
        np.testing.assert_allclose(ga.numpy(), want_a, rtol=1e-12, atol=0, err_msg=f.__name__)
        np.testing.assert_allclose(gb.numpy(), want_b, rtol=1e-12, atol=0, err_msg=f.__name__)
    # copysign's slope is the agreement of the two sign bits: -0.0 counts as negative
    x, y = zd.tensor(np.array([1.0, -1.0, 2.0, -2.0])), zd.tensor(np.array([3.0, 3.0, -0.0, -0.0]))
    (gx,) = zd.grad(zd.copysign(x, y).sum(), [x])
    np.testing.assert_array_equal(gx.numpy(), [1.0, -1.0, -1.0, 1.0])
