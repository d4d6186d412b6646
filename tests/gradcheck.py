"""Gradient checks shared by tests/unit/test_autograd.py (gradients evaluated by the NumPy interpreter of
tests/reference.py) and tests/runtime/test_grad.py (gradients realized on PoCL), both in float64.

`CASES` holds every differentiable op of API.md section 5 (and the zero-gradient ones), each as a function
of tensors and the input arrays to try it on, at unit shapes and with broadcasting. `numeric_check` takes
one such function and its inputs, builds `zd.grad` of sum(w * f(xs)) for a random w (through grad_output;
a size-1 result uses the default), and compares it with central differences of the same forward graph
evaluated by the interpreter at perturbed leaf data: every element for small inputs, random directions
for larger ones. `evaluate_grads(gs)` is how the gradients are read: the interpreter, or the device.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from reference import evaluate

import zyx_dist as zd

H = 1e-6  # central difference step (float64)
FULL_CHECK_ELEMENTS = 40  # inputs up to this many elements in all are checked element by element


def _rand(shape, lo=-2.0, hi=2.0, seed=0, away=0.0):
    """Uniform values; `away` keeps them at least that far from 0 (for abs, relu, reciprocal...)."""
    rng = np.random.default_rng(seed)
    v = rng.uniform(lo, hi, shape)
    if away:
        v = np.where(np.abs(v) < away, np.sign(v + 1e-12) * away + v, v)
    return np.asarray(v, np.float64)


def _pos(shape, seed=0):
    return _rand(shape, 0.5, 2.0, seed)


def _distinct(shape, seed=0):
    """A random permutation of well separated values (no ties for max/min/sort-like ops)."""
    n = int(np.prod(shape))
    return (np.random.default_rng(seed).permutation(n) * 0.37 - n * 0.15).reshape(shape).astype(np.float64)


def _cases() -> list[tuple[str, Callable, list[np.ndarray]]]:
    c: list[tuple[str, Callable, list[np.ndarray]]] = []
    add = c.append
    x34, y34 = _rand((3, 4), seed=1, away=0.2), _rand((3, 4), seed=2, away=0.2)
    # elementwise unary, at a unit shape, a 0-d tensor and a matrix
    unary = {
        "abs": (zd.abs, "away"), "negative": (zd.negative, "any"), "positive": (zd.positive, "any"),
        "exp": (zd.exp, "any"), "exp2": (zd.exp2, "any"), "log": (zd.log, "pos"), "log2": (zd.log2, "pos"),
        "sqrt": (zd.sqrt, "pos"), "rsqrt": (zd.rsqrt, "pos"), "square": (zd.square, "any"),
        "reciprocal": (zd.reciprocal, "away"), "sin": (zd.sin, "any"), "cos": (zd.cos, "any"),
        "tan": (zd.tan, "unit"), "tanh": (zd.tanh, "any"), "sigmoid": (zd.sigmoid, "any"),
        "relu": (zd.relu, "away"), "floor": (zd.floor, "away"), "ceil": (zd.ceil, "away"),
        "round": (zd.round, "away"), "sign": (zd.sign, "away"),
    }
    for name, (f, dom) in unary.items():
        for shape in [(1,), (), (3, 4)]:
            if dom == "pos":
                a = _pos(shape, seed=3)
            elif dom == "unit":
                a = _rand(shape, -1.0, 1.0, seed=3)
            else:
                a = _rand(shape, seed=3, away=0.3 if dom == "away" else 0.0)
            add((f"{name}{shape}", f, [a]))
    # elementwise binary: same shapes, broadcasting both ways, a Python scalar on either side
    binary = {
        "add": zd.add, "subtract": zd.subtract, "multiply": zd.multiply, "divide": zd.divide,
        "maximum": zd.maximum, "minimum": zd.minimum,
    }
    for name, f in binary.items():
        add((f"{name}(3,4)", f, [x34, y34]))
        add((f"{name}(3,1)(1,4)", f, [_rand((3, 1), seed=4, away=0.3), _rand((1, 4), seed=5, away=0.3)]))
        add((f"{name}(4,)(3,4)", f, [_rand((4,), seed=6, away=0.3), y34]))
        add((f"{name}(1,)()", f, [_rand((1,), seed=7, away=0.3), _rand((), seed=8, away=0.3)]))
        add((f"{name}-scalar-right", lambda a, f=f: f(a, 1.7), [x34]))
        add((f"{name}-scalar-left", lambda a, f=f: f(-0.6, a), [x34]))
    add(("pow", zd.pow, [_pos((3, 4), 9), _rand((3, 4), seed=10)]))
    add(("pow(3,1)(4,)", zd.pow, [_pos((3, 1), 11), _rand((4,), seed=12)]))
    add(("pow-scalar-exponent", lambda a: a ** 3, [x34]))
    add(("pow-scalar-base", lambda a: 1.7 ** a, [x34]))
    add(("operator-pow-half", lambda a: a ** 0.5, [_pos((2, 3), 13)]))
    add(("remainder", zd.remainder, [_rand((3, 4), 0.1, 0.9, seed=14) + 2.0, np.full((3, 4), 1.3)]))
    add(("remainder-divisor", lambda b: zd.remainder(3.1, b), [_rand((5,), 1.0, 1.4, seed=15)]))
    add(("floor_divide", zd.floor_divide, [x34 * 3, np.full((3, 4), 0.7)]))
    add(("where", lambda a, b: zd.where(a > b, a * b, a - b), [x34, y34]))
    add(("where-broadcast", lambda a, b: zd.where(b > 0, a, 2.0), [_rand((3, 1), seed=16), _rand((4,), seed=17)]))
    add(("clip", lambda a: zd.clip(a, -0.5, 0.8), [_rand((3, 4), seed=18, away=0.05) * 1.3]))
    add(("clip-tensor-bounds", zd.clip, [x34, _rand((4,), -3, -1.0, seed=19), _rand((3, 1), 0.5, 3.0, seed=20)]))
    add(("comparison", lambda a, b: (a < b).astype(zd.float64) * a, [x34, y34]))
    add(("astype-int-zero-grad", lambda a: a.astype(zd.int32).astype(zd.float64) + a * 2, [x34 * 3]))
    # reductions: every axis form, keepdims, unit and empty-free shapes
    x345 = _rand((3, 4, 5), seed=21)
    d345 = _distinct((3, 4, 5), seed=22)
    for name, f, data in [("sum", zd.sum, x345), ("mean", zd.mean, x345), ("max", zd.max, d345),
                          ("min", zd.min, d345), ("prod", zd.prod, _rand((3, 4, 5), 0.6, 1.4, seed=23)),
                          ("var", zd.var, x345), ("std", zd.std, x345), ("logsumexp", zd.logsumexp, x345)]:
        for axis in [None, 0, -1, (0, 2), (1,)]:
            for keep in (False, True):
                add((f"{name}-axis{axis}-keep{keep}", lambda a, f=f, axis=axis, keep=keep: f(a, axis=axis, keepdims=keep),
                     [data]))
        if name != "std":  # the std of one element is sqrt(0): an infinite slope times a zero one (NaN, as torch)
            add((f"{name}-unit", lambda a, f=f: f(a, axis=0), [data[:1, :1, :1].copy()]))
    add(("var-correction", lambda a: zd.var(a, axis=1, correction=1), [x345]))
    add(("std-correction", lambda a: zd.std(a, axis=(0, 1), correction=1), [x345]))
    add(("prod-with-one-zero", lambda a: zd.prod(a, axis=1), [np.array([[1.5, 0.0, 2.0], [0.7, 1.1, 1.3]])]))
    add(("prod-with-two-zeros", lambda a: zd.prod(a, axis=1), [np.array([[0.0, 0.0, 2.0], [0.0, 1.1, 1.3]])]))
    add(("prod-all", zd.prod, [_rand((2, 3), 0.5, 1.5, seed=24)]))
    add(("max-of-row-sums", lambda a: zd.max(a.sum(axis=0)), [d345]))
    # shape and movement
    add(("reshape", lambda a: a.reshape(4, 15), [x345]))
    add(("reshape-minus-one", lambda a: a.reshape(-1, 2, 5)[:, 1], [x345]))
    add(("permute", lambda a: a.permute(2, 0, 1), [x345]))
    add(("transpose-T", lambda a: a.T, [x345]))
    add(("mT", lambda a: a.mT, [x345]))
    add(("broadcast_to", lambda a: zd.broadcast_to(a, (2, 3, 4)), [_rand((3, 1), seed=25)]))
    add(("expand-method", lambda a: a.expand(4, 3, 5), [_rand((1, 5), seed=26)]))
    add(("expand_dims", lambda a: zd.expand_dims(a, (0, 2)), [x34]))
    add(("squeeze", lambda a: zd.squeeze(a), [_rand((3, 1, 4, 1), seed=27)]))
    add(("flatten", lambda a: a.flatten(), [x345]))
    add(("pad", lambda a: zd.pad(a, ((1, 2), (0, 3)), value=1.5), [x34]))
    add(("pad-int-width", lambda a: zd.pad(a, 2), [x34]))
    add(("flip", lambda a: zd.flip(a, 1), [x345]))
    add(("flip-all", lambda a: zd.flip(a), [x345]))
    add(("concat", lambda a, b: zd.concat([a, b, a * 2], axis=1), [x34, _rand((3, 2), seed=28)]))
    add(("concat-axis0", lambda a, b: zd.concat([a, b]), [x34, _rand((1, 4), seed=29)]))
    add(("stack", lambda a, b: zd.stack([a, b], axis=1), [x34, y34]))
    add(("split", lambda a: zd.split(a, [1, 3], axis=1)[1] * zd.split(a, 2, axis=1)[0], [x34]))
    add(("tile", lambda a: zd.tile(a, (2, 1, 3)), [x34]))
    add(("repeat", lambda a: zd.repeat(a, 3, axis=1), [x34]))
    add(("repeat-flat", lambda a: zd.repeat(a, 2), [x34]))
    # indexing: ints, slices of every step, None, Ellipsis, gathers
    add(("index-int", lambda a: a[1], [x345]))
    add(("index-negative-int", lambda a: a[-1, 2], [x345]))
    add(("slice-step", lambda a: a[::2, 1::3], [x345]))
    add(("slice-negative-step", lambda a: a[::-1, 3:0:-2, ::-3], [x345]))
    add(("slice-none-ellipsis", lambda a: a[None, ..., 1:4], [x345]))
    add(("gather-array", lambda a: a[np.array([2, 0, 2, 1])], [x34]))
    add(("gather-axis1-negative", lambda a: a[:, np.array([[-1, 0], [1, 1]])], [x34]))
    add(("gather-tensor-index", lambda a: a[zd.tensor(np.array([1, 1, 0], np.int32)), 1:], [x34]))
    add(("gather-separated", lambda a: a[1, :, np.array([0, 3, 3])], [x345]))
    # linear algebra and NN helpers
    add(("matmul", zd.matmul, [x34, _rand((4, 5), seed=30)]))
    add(("matmul-batched", zd.matmul, [_rand((2, 3, 4), seed=31), _rand((2, 4, 5), seed=32)]))
    add(("matmul-broadcast-batch", zd.matmul, [_rand((2, 1, 3, 4), seed=33), _rand((3, 4, 2), seed=34)]))
    add(("matmul-1d-left", zd.matmul, [_rand((4,), seed=35), _rand((2, 4, 3), seed=36)]))
    add(("matmul-1d-right", zd.matmul, [_rand((3, 4), seed=37), _rand((4,), seed=38)]))
    add(("matmul-1d-both", zd.matmul, [_rand((4,), seed=39), _rand((4,), seed=40)]))
    add(("matmul-unit", zd.matmul, [_rand((1, 1), seed=41), _rand((1, 1), seed=42)]))
    add(("operator-matmul-transposed", lambda a, b: a @ b.T, [x34, y34]))
    add(("dot", zd.dot, [_rand((2, 3, 4), seed=43), _rand((4, 2), seed=44)]))
    add(("tensordot", lambda a, b: zd.tensordot(a, b, axes=([0, 2], [1, 0])), [x345, _rand((5, 3, 2), seed=45)]))
    add(("einsum", lambda a, b: zd.einsum("ijk,kj->ik", a, b), [x345, _rand((5, 4), seed=46)]))
    add(("softmax", lambda a: zd.softmax(a), [x345]))
    add(("softmax-axis0", lambda a: zd.softmax(a, axis=0), [x345]))
    add(("log_softmax", lambda a: zd.log_softmax(a, axis=1), [x345]))
    add(("layer_norm", lambda a: zd.layer_norm(a), [x345]))
    add(("layer_norm-axes", lambda a: zd.layer_norm(a, axis=(1, 2)), [x345]))
    add(("cross-entropy", lambda a: -(zd.log_softmax(a) * zd.tensor(np.eye(4)[[1, 3, 0]])).sum(axis=1).mean(),
         [x34]))
    add(("mlp", lambda x, w1, b1, w2: ((x @ w1 + b1).tanh() @ w2).sum(),
         [x34, _rand((4, 6), seed=47), _rand((6,), seed=48), _rand((6, 2), seed=49)]))
    add(("shared-subexpression", lambda a: (a.exp() * a.exp().sum(axis=0)).max(axis=1), [x34]))
    return c


CASES = _cases()


def output_weights(y: zd.Tensor, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed + 100).standard_normal(y.shape)


def build(f: Callable, arrays: list[np.ndarray]) -> tuple[list[zd.Tensor], zd.Tensor, np.ndarray, list[zd.Tensor]]:
    """(inputs, y, output weights, gradients of sum(w * y)) as lazy tensors, in float64."""
    xs = [zd.tensor(np.asarray(a, np.float64)) for a in arrays]
    y = f(*xs)
    if y.size == 1:
        w = np.ones(y.shape)
        gs = zd.grad(y, xs)
    else:
        w = output_weights(y)
        gs = zd.grad(y, xs, grad_output=zd.tensor(w))
    return xs, y, w, gs


def numeric(xs: list[zd.Tensor], y: zd.Tensor, w: np.ndarray, seed: int = 0) -> tuple[list, list, float]:
    """Central differences of L = sum(w * y) at the leaves' data (the interpreter evaluates y): per element
    when the inputs are small ('full', a list of arrays), else along 3 random directions ('dirs', a list of
    (directions, derivative)). Also gives the scale of L for the tolerance. Leaves get their data back."""
    base = [x.node.host.copy() for x in xs]

    def loss(vals) -> float:
        for x, v in zip(xs, vals):
            x.node.host = v
        try:
            return float(np.sum(w * evaluate(y.node)))
        finally:
            for x, b in zip(xs, base):
                x.node.host = b

    scale = abs(loss(base)) + 1.0
    total = sum(b.size for b in base)
    if total <= FULL_CHECK_ELEMENTS:
        full = []
        for k, b in enumerate(base):
            g = np.zeros_like(b)
            for i in np.ndindex(b.shape):
                up = [v.copy() for v in base]
                dn = [v.copy() for v in base]
                up[k][i] += H
                dn[k][i] -= H
                g[i] = (loss(up) - loss(dn)) / (2 * H)
            full.append(g)
        return full, [], scale
    rng = np.random.default_rng(seed + 7)
    dirs = []
    for _ in range(3):
        v = [rng.standard_normal(b.shape) for b in base]
        d = (loss([b + H * e for b, e in zip(base, v)]) - loss([b - H * e for b, e in zip(base, v)])) / (2 * H)
        dirs.append((v, d))
    return [], dirs, scale


def compare(name: str, grads: list[np.ndarray], xs: list[zd.Tensor], full: list, dirs: list, scale: float,
            tol: float = 1e-6) -> None:
    for g, x in zip(grads, xs):
        assert g.shape == x.shape and g.dtype == np.float64, f"{name}: gradient {g.shape} {g.dtype} for {x.shape}"
    if full:
        for k, (g, want) in enumerate(zip(grads, full)):
            np.testing.assert_allclose(g, want, rtol=tol, atol=tol * scale, err_msg=f"{name}: input {k}")
    for v, d in dirs:
        got = float(sum(np.sum(g * e) for g, e in zip(grads, v)))
        size = float(sum(np.sum(np.abs(g * e)) for g, e in zip(grads, v)))
        assert abs(got - d) <= tol * (scale + size), f"{name}: directional derivative {got} vs {d} (numeric)"


def numeric_check(name: str, f: Callable, arrays: list[np.ndarray], read: Callable[[list], list[np.ndarray]],
                  tol: float = 1e-6) -> None:
    """Gradients of f at arrays, read with `read` (interpreter or device), against central differences."""
    xs, y, w, gs = build(f, arrays)
    full, dirs, scale = numeric(xs, y, w)
    compare(name, read(gs), xs, full, dirs, scale, tol)


def read_reference(gs: list[zd.Tensor]) -> list[np.ndarray]:
    return [evaluate(g.node) for g in gs]


def read_device(gs: list[zd.Tensor]) -> list[np.ndarray]:
    zd.realize(*gs)
    return [g.numpy() for g in gs]
