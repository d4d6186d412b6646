"""Property test: random programs from a small op grammar, run by zyx_dist and by NumPy, must agree.

A program starts from 1-3 realized float32 inputs of compatible (broadcastable) shapes, holding values on a
1/8 grid (exact in float16 and int32 casts). Each step applies one op to values already made: unary math
(kept finite: tanh/sigmoid/abs+1 before exp/log/sqrt), a broadcasting binary op, a reduction (with or without
keepdims), a movement op (reshape, permute, slice with any step, pad, flip, expand) or a cast. Values can be
used many times (shared subexpressions). 1-3 of them are realized together with `zd.realize` and compared
with the NumPy program (rtol 1e-4).
"""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import zyx_dist as zd


def fl(a: np.ndarray) -> np.ndarray:
    """Decided semantics: float-only math (and weak float scalars) on integers computes in float32."""
    return a if a.dtype.kind == "f" else a.astype(np.float32)


def true_div(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """x / (|y| + 1): true division of two integer operands gives float32."""
    out = a / (np.abs(b) + 1)
    return out if a.dtype.kind == "f" or b.dtype.kind == "f" else out.astype(np.float32)


UNARY = {
    "neg": (lambda x: -x, lambda a: -a),
    "abs": (zd.abs, np.abs),
    "tanh": (zd.tanh, lambda a: np.tanh(fl(a))),
    "sigmoid": (zd.sigmoid, lambda a: 1 / (1 + np.exp(-fl(a)))),
    "exp_tanh": (lambda x: zd.exp(zd.tanh(x)), lambda a: np.exp(np.tanh(fl(a)))),
    "log_abs1": (lambda x: zd.log(zd.abs(x) + 1), lambda a: np.log(fl(np.abs(a) + 1))),
    "sqrt_abs1": (lambda x: zd.sqrt(zd.abs(x) + 1), lambda a: np.sqrt(fl(np.abs(a) + 1))),
    "sin": (zd.sin, lambda a: np.sin(fl(a))),
    "relu": (zd.relu, lambda a: np.maximum(a, a.dtype.type(0))),
    "scale": (lambda x: x * 0.5 + 1.25, lambda a: fl(a) * fl(a).dtype.type(0.5) + fl(a).dtype.type(1.25)),
    "square_tanh": (lambda x: zd.square(zd.tanh(x)), lambda a: np.square(np.tanh(fl(a)))),
}

BINARY = {
    "add": (lambda x, y: x + y, lambda a, b: a + b),
    "sub": (lambda x, y: x - y, lambda a, b: a - b),
    "mul": (lambda x, y: x * y, lambda a, b: a * b),
    "div": (lambda x, y: x / (zd.abs(y) + 1), true_div),
    "maximum": (zd.maximum, np.maximum),
    "minimum": (zd.minimum, np.minimum),
    "where_max": (lambda x, y: zd.where(x > y, x, y), lambda a, b: np.where(a > b, a, b)),
    "where_min": (lambda x, y: zd.where(x > y, y, x), lambda a, b: np.where(a > b, b, a)),
}

REDUCE = {
    "sum": (zd.sum, np.sum),
    "max": (zd.max, np.max),
    "min": (zd.min, np.min),
    "mean": (zd.mean, lambda a, axis, keepdims: np.mean(fl(a), axis=axis, keepdims=keepdims)),
}


class Value:
    """One value of the program in both worlds; `exact` marks values holding grid numbers (casts are exact)."""

    def __init__(self, t: zd.Tensor, a: np.ndarray, exact: bool, expr: str):
        self.t, self.a, self.exact, self.expr = t, a, exact, expr

    def __repr__(self) -> str:
        return f"<{self.expr} shape={self.a.shape} dtype={self.a.dtype}>"


def broadcastable(s1, s2) -> bool:
    try:
        np.broadcast_shapes(s1, s2)
        return True
    except ValueError:
        return False


@st.composite
def programs(draw):
    base = draw(st.lists(st.integers(1, 4), min_size=1, max_size=3).map(tuple))
    seed = draw(st.integers(0, 2**16))
    rng = np.random.default_rng(seed)
    values: list[Value] = []
    for _ in range(draw(st.integers(1, 3))):
        # a broadcastable variant of the base shape: a suffix of it with some dims set to 1
        k = draw(st.integers(1, len(base)))
        shape = tuple(d if draw(st.booleans()) else 1 for d in base[len(base) - k:])
        a = (rng.integers(-32, 33, shape) / 8).astype(np.float32)
        values.append(Value(zd.tensor(a).realize(), a, True, f"in{len(values)}{shape}"))
    n_steps = draw(st.integers(1, 6))
    for _ in range(n_steps):
        kind = draw(st.sampled_from(["unary", "binary", "binary", "reduce", "move", "move", "cast"]))
        v = draw(st.sampled_from(values))
        if kind == "unary":
            name = draw(st.sampled_from(sorted(UNARY)))
            f, g = UNARY[name]
            values.append(Value(f(v.t), g(v.a), False, f"{name}({v.expr})"))
        elif kind == "binary":
            partners = [w for w in values if broadcastable(v.a.shape, w.a.shape)]
            w = draw(st.sampled_from(partners))
            name = draw(st.sampled_from(sorted(BINARY)))
            f, g = BINARY[name]
            if draw(st.booleans()):
                v, w = w, v
            values.append(Value(f(v.t, w.t), g(v.a, w.a), v.exact and w.exact and name in ("maximum", "minimum"),
                                f"{name}({v.expr}, {w.expr})"))
        elif kind == "reduce":
            name = draw(st.sampled_from(sorted(REDUCE)))
            nd = v.a.ndim
            axes = None
            if nd and draw(st.booleans()):
                axes = tuple(draw(st.lists(st.integers(-nd, nd - 1), min_size=1, max_size=nd,
                                           unique_by=lambda i, nd=nd: i % nd)))
            if axes is not None and len(axes) == 1 and draw(st.booleans()):
                axes = axes[0]
            keep = draw(st.booleans())
            ax = tuple(range(nd)) if axes is None else (axes,) if isinstance(axes, int) else axes
            if any(v.a.shape[i] == 0 for i in ax) and name != "sum":
                name = "sum"  # max/min/mean of an empty axis have no value
            f, g = REDUCE[name]
            values.append(Value(f(v.t, axis=axes, keepdims=keep), np.asarray(g(v.a, axis=axes, keepdims=keep)),
                                v.exact and name in ("max", "min"), f"{name}({v.expr}, axis={axes}, keepdims={keep})"))
        elif kind == "move":
            t, a, what = move(draw, v.t, v.a)
            values.append(Value(t, a, v.exact, f"{what}({v.expr})"))
        else:  # cast
            if v.exact:
                to = draw(st.sampled_from([zd.float16, zd.int32, zd.float64]))
            else:
                to = zd.float64
            t, a = v.t.astype(to), v.a.astype(to.dtype)
            expr = f"astype({v.expr}, {to})"
            if to is not zd.float64 and draw(st.booleans()):  # back to float32 at once, or later by promotion
                t, a, expr = t.astype(zd.float32), a.astype(np.float32), f"astype({expr}, float32)"
            values.append(Value(t, a, v.exact, expr))
    n_out = draw(st.integers(1, min(3, len(values))))
    picks = draw(st.lists(st.integers(0, len(values) - 1), min_size=n_out, max_size=n_out))
    return [values[-1]] + [values[i] for i in picks[1:]]


def move(draw, t, a):
    nd = a.ndim
    op = draw(st.sampled_from(["reshape", "permute", "slice", "pad", "flip", "expand"]))
    if nd == 0 or (op == "expand" and 1 not in a.shape):
        op = "reshape"
    if op == "reshape":
        choice = draw(st.sampled_from(["flat", "split", "merge", "unsqueeze"]))
        if choice == "flat" or nd == 0:
            shape = (-1,)
        elif choice == "merge" and nd >= 2:  # spelled out: with a 0 among the leading dims, -1 is ambiguous (NumPy refuses)
            shape = a.shape[:-2] + (a.shape[-2] * a.shape[-1],)
        elif choice == "split" and a.size and a.shape[-1] % 2 == 0:
            shape = a.shape[:-1] + (2, a.shape[-1] // 2)
        else:
            shape = (1,) + a.shape
        return t.reshape(shape), a.reshape(shape), f"reshape{shape}"
    if op == "permute":
        perm = tuple(draw(st.permutations(range(nd))))
        return t.permute(*perm), a.transpose(perm), f"permute{perm}"
    if op == "slice":
        key = []
        for n in a.shape:
            step = draw(st.sampled_from([1, 1, 2, -1, -2, 3]))
            start = draw(st.one_of(st.none(), st.integers(-n - 1, n)))
            stop = draw(st.one_of(st.none(), st.integers(-n - 1, n + 1)))
            key.append(slice(start, stop, step))
        return t[tuple(key)], a[tuple(key)], f"getitem{tuple(key)}"
    if op == "pad":
        width = tuple((draw(st.integers(0, 2)), draw(st.integers(0, 2))) for _ in range(nd))
        value = draw(st.sampled_from([0, 0, 1.5, -2]))
        return zd.pad(t, width, value=value), np.pad(a, width, constant_values=value), f"pad{width}={value}"
    if op == "flip":
        axes = tuple(sorted(draw(st.sets(st.integers(0, nd - 1), min_size=1))))
        return zd.flip(t, axes), np.flip(a, axes), f"flip{axes}"
    shape = tuple(3 if d == 1 and draw(st.booleans()) else d for d in a.shape)
    return t.expand(shape), np.broadcast_to(a, shape), f"expand{shape}"


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(programs())
def test_random_programs_match_numpy(outs):
    zd.realize(*[v.t for v in outs])
    for v in outs:
        got = v.t.numpy()
        want = np.asarray(v.a)
        assert v.t.shape == want.shape, (v, v.t.shape, want.shape)
        assert got.dtype == want.dtype, (v, got.dtype, want.dtype)
        scale = float(np.max(np.abs(want))) if want.size else 0.0
        # float16 results: kernels compute in float and round once, NumPy rounds after every op (1-2 ulp apart)
        rtol = 2e-3 if want.dtype == np.float16 else 1e-4
        np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol / 10 * (1 + scale), err_msg=repr(v))
