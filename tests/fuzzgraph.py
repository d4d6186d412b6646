"""Random multi-op graphs for fuzzing zyx_dist against NumPy (issue 7, item 4), shared by
tests/runtime/test_fuzz.py and tests/cluster/test_fuzz_ray.py.

A `Program` is data, not code: a few float32 inputs (each a shape and a seed; values on a 1/8 grid in
[-4, 4], or `zd.uniform` values for the determinism checks) and a list of instructions over value indices.
The same program runs on zyx_dist tensors (`run_zd`) and on NumPy arrays (`run_numpy`), so a failing case
prints as a short readable program that hypothesis shrinks.

Instructions (each names earlier values by index, so values are shared between later instructions):
- broadcasting binary ops (add, sub, mul, safe div, maximum, minimum) and `where(c > 0, a, b)`;
- unary ops kept in safe domains (tanh, sigmoid, sin of small values, exp of tanh, log(|x|+1),
  sqrt(|x|+1), square, abs, neg, relu, x*0.5+1.25) on floats, abs/neg on integers;
- reductions (sum, max, min, mean) over None / one axis / several (negative too), with keepdims;
- movement: reshape (flatten, split or merge axes, add an axis), permute, indexing with ints and slices of
  any step (negative too), pad, flip, expand (broadcast_to, possibly with a new leading axis);
- casts float32 -> float16 / int32 and back (to int32 only from exact values, so truncation agrees).

While a program is drawn, every value carries `Meta`: its shape and dtype (NumPy's result dtype, which
zyx_dist must match), a bound on its magnitude, and a bound on its absolute error against the exact
result (0 while every step so far is exact in its dtype: grid values, sums, products that fit the
mantissa). The comparison uses that bound: exact values must match bit for bit, the others within twice
the bound (both sides round). Magnitudes stay below `MAG_MAX`, so float16 and int32 never overflow.

Programs come from a `Chooser`: `programs()` is the hypothesis strategy (draws through hypothesis, which
shrinks failures), `program_from_seed(seed)` draws the same way from `random.Random(seed)` (for checks
that run one program on several sessions, e.g. the 1-worker vs 3-worker determinism check).

`detached_session()` is a context manager for tests that need a second session next to the running one
(the running session is put aside by `zyx_dist.engine.session.set_aside` and restored afterwards).
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field
from typing import Any

import numpy as np

import zyx_dist as zd
from zyx_dist.engine import session as zsession

MAG_MAX = 1.0e4
MAX_STEPS = 8
MANTISSA = {"float16": 11, "float32": 24, "float64": 53, "int32": 31, "int64": 63}
EPS = {"float16": 2.0 ** -10, "float32": 2.0 ** -23, "float64": 2.0 ** -52}
FLOATS = ("float16", "float32", "float64")

# name: (zd function, numpy function, magnitude bound from the input's, Lipschitz constant, primitive ops)
UNARY: dict[str, tuple] = {
    "neg": (lambda x: -x, lambda a: -a, lambda m: m, 1.0, 1),
    "abs": (zd.abs, np.abs, lambda m: m, 1.0, 1),
    "relu": (zd.relu, lambda a: np.maximum(a, a.dtype.type(0)), lambda m: m, 1.0, 1),
    "tanh": (zd.tanh, np.tanh, lambda m: min(m, 1.0), 1.0, 1),
    "sigmoid": (zd.sigmoid, lambda a: 1 / (1 + np.exp(-a)), lambda m: 1.0, 0.25, 4),
    "sin": (zd.sin, np.sin, lambda m: min(m, 1.0), 1.0, 1),
    "exp_tanh": (lambda x: zd.exp(zd.tanh(x)), lambda a: np.exp(np.tanh(a)), lambda m: math.e, math.e, 2),
    "log_abs1": (lambda x: zd.log(zd.abs(x) + 1), lambda a: np.log(np.abs(a) + 1), lambda m: math.log(m + 1), 1.0, 3),
    "sqrt_abs1": (lambda x: zd.sqrt(zd.abs(x) + 1), lambda a: np.sqrt(np.abs(a) + 1), lambda m: math.sqrt(m + 1),
                  0.5, 3),
    "square": (zd.square, np.square, lambda m: m * m, None, 1),  # error: 2 m e
    "scale": (lambda x: x * 0.5 + 1.25, lambda a: a * 0.5 + 1.25, lambda m: m * 0.5 + 1.25, 0.5, 2),
}
EXACT_UNARY = {"neg", "abs", "relu", "square", "scale"}  # exact on exact inputs (when the result fits)
INT_UNARY = ("neg", "abs")

BINARY: dict[str, tuple] = {
    "add": (lambda x, y: x + y, lambda a, b: a + b),
    "sub": (lambda x, y: x - y, lambda a, b: a - b),
    "mul": (lambda x, y: x * y, lambda a, b: a * b),
    "div": (lambda x, y: x / (zd.abs(y) + 1), lambda a, b: a / (np.abs(b) + 1)),
    "maximum": (zd.maximum, np.maximum),
    "minimum": (zd.minimum, np.minimum),
}
REDUCE: dict[str, tuple] = {
    "sum": (zd.sum, np.sum),
    "max": (zd.max, np.max),
    "min": (zd.min, np.min),
    "mean": (zd.mean, np.mean),
}


@dataclass(frozen=True)
class Meta:
    shape: tuple[int, ...]
    dtype: str  # NumPy dtype name
    mag: float  # bound on |value|
    err: float  # bound on |value - exact value|; 0: exact (bit-identical on both sides)
    frac: int = 0  # when exact: the values are multiples of 2**-frac

    @property
    def exact(self) -> bool:
        return self.err == 0.0

    @property
    def is_float(self) -> bool:
        return self.dtype in FLOATS


@dataclass
class Program:
    inputs: list[tuple[tuple[int, ...], int, str]]  # (shape, seed, kind: "grid" or "uniform")
    steps: list[tuple] = field(default_factory=list)
    outputs: list[int] = field(default_factory=list)
    metas: list[Meta] = field(default_factory=list)

    def __repr__(self) -> str:
        lines = [f"  v{i} = input{shape} seed={seed} {kind}" for i, (shape, seed, kind) in enumerate(self.inputs)]
        n = len(self.inputs)
        lines += [f"  v{n + i} = {s[0]}{s[1:]}  # {self.metas[n + i].dtype}{self.metas[n + i].shape}"
                  for i, s in enumerate(self.steps)]
        return "Program(\n" + "\n".join(lines) + f"\n  outputs {[f'v{o}' for o in self.outputs]})"


# ---- choosers -----------------------------------------------------------------------------------------------

class RandomChooser:
    def __init__(self, seed: int):
        self.r = random.Random(seed)

    def int(self, lo: int, hi: int) -> int:
        return self.r.randint(lo, hi)

    def choice(self, seq):
        return seq[self.r.randrange(len(seq))]

    def bool(self) -> bool:
        return self.r.random() < 0.5


class DrawChooser:
    """Draws through hypothesis (so failing programs shrink)."""

    def __init__(self, draw):
        from hypothesis import strategies as st

        self.draw, self.st = draw, st

    def int(self, lo: int, hi: int) -> int:
        return self.draw(self.st.integers(lo, hi))

    def choice(self, seq):
        return seq[self.draw(self.st.integers(0, len(seq) - 1))]

    def bool(self) -> bool:
        return self.draw(self.st.booleans())


# ---- building a program -----------------------------------------------------------------------------------

def _fits(dtype: str, mag: float, frac: int) -> bool:
    """Values k * 2**-frac with |value| <= mag are exact in `dtype`."""
    if dtype not in MANTISSA:
        return False
    if dtype.startswith("int"):
        return frac == 0 and mag < 2.0 ** MANTISSA[dtype]
    return mag * 2.0 ** frac < 2.0 ** MANTISSA[dtype] and frac <= 14 + MANTISSA[dtype] - 11


def _rounded(dtype: str, shape, mag: float, frac: int, err: float, exact_in: bool, ops: int = 1) -> Meta:
    """The meta of a result: exact when the inputs were and the result fits; else the propagated error plus
    the rounding of `ops` primitive operations in `dtype` (and of float16 results computed in float)."""
    if exact_in and _fits(dtype, mag, frac):
        return Meta(tuple(shape), dtype, mag, 0.0, frac)
    eps = EPS.get(dtype, 0.0)
    return Meta(tuple(shape), dtype, mag, err + 4 * ops * eps * max(mag, 1e-30) + 1e-30, 0)


def _result_dtype(*dtypes: str) -> str:
    return np.result_type(*[np.dtype(d) for d in dtypes]).name


def _broadcastable(s1, s2) -> bool:
    try:
        np.broadcast_shapes(s1, s2)
        return True
    except ValueError:
        return False


def build(ch, rand_inputs: bool = False) -> Program:
    """Draw one program from chooser `ch`."""
    base = tuple(ch.int(1, 5) for _ in range(ch.int(1, 3)))
    prog = Program(inputs=[])
    for _ in range(ch.int(1, 3)):
        k = ch.int(1, len(base))  # a broadcastable variant of the base shape: a suffix, some dims set to 1
        shape = tuple(d if ch.bool() else 1 for d in base[len(base) - k:])
        kind = "uniform" if rand_inputs and ch.bool() else "grid"
        prog.inputs.append((shape, ch.int(0, 2 ** 16), kind))
        if kind == "grid":
            prog.metas.append(Meta(shape, "float32", 4.0, 0.0, 3))
        else:  # not on a grid: never exact (no int casts), a representation error of 0 against itself
            prog.metas.append(Meta(shape, "float32", 4.0, 1e-30, 0))
    for _ in range(ch.int(1, MAX_STEPS)):
        kind = ch.choice(["unary", "binary", "binary", "where", "reduce", "move", "move", "move", "cast"])
        used = {k for st in prog.steps for k in _sources(st)}
        sinks = [k for k in range(len(prog.metas)) if k not in used]
        # mostly a value nothing reads yet (so few steps are dead code), sometimes any (shared values)
        i = ch.choice(sinks) if sinks and ch.int(0, 3) else ch.int(0, len(prog.metas) - 1)
        step = _STEP_BUILDERS[kind](ch, prog, i)
        if step is not None:
            prog.steps.append(step[0])
            prog.metas.append(step[1])
    n = len(prog.metas)
    used = {k for st in prog.steps for k in _sources(st)}
    sinks = [k for k in range(len(prog.inputs), n - 1) if k not in used]  # nothing reads them: outputs
    extra = sinks[-2:] + ([ch.int(0, n - 2)] if n > 1 and ch.bool() else [])  # and a shared value
    prog.outputs = [n - 1] + list(dict.fromkeys(extra))[:2]
    return prog


def _sources(step: tuple) -> list[int]:
    if step[0] in ("unary", "reduce"):
        return [step[2]]
    if step[0] == "binary":
        return [step[2], step[3]]
    if step[0] == "where":
        return list(step[1:4])
    return [step[1]]


def _unary(ch, prog, i):
    m = prog.metas[i]
    if not m.is_float:
        name = ch.choice(INT_UNARY)
    else:
        name = ch.choice(sorted(UNARY))
    if name == "sin" and m.mag > 64:
        name = "tanh"
    if name == "square" and m.mag * m.mag > MAG_MAX:
        name = "tanh"
    _, _, magf, lip, ops = UNARY[name]
    mag = magf(m.mag)
    err = 2 * m.mag * m.err + m.err * m.err if name == "square" else lip * m.err
    if name in EXACT_UNARY:
        frac = {"square": 2 * m.frac, "scale": max(m.frac + 1, 2)}.get(name, m.frac)
        meta = _rounded(m.dtype, m.shape, mag, frac, err, m.exact, ops)
    else:
        # float16 is computed in float and stored as half by zyx_dist, rounded at every op by NumPy
        meta = _rounded(m.dtype, m.shape, mag, 0, err, False, ops + (ops if m.dtype == "float16" else 0))
    return ("unary", name, i), meta


def _partner(ch, prog, i):
    s = prog.metas[i].shape
    return ch.choice([j for j, w in enumerate(prog.metas) if _broadcastable(s, w.shape)])


def _binary(ch, prog, i):
    j = _partner(ch, prog, i)
    if ch.bool():
        i, j = j, i
    a, b = prog.metas[i], prog.metas[j]
    name = ch.choice(sorted(BINARY))
    ints = not (a.is_float and b.is_float)
    if name == "div" and ints:
        name = "add"  # int / int is float32 in zyx_dist, float64 in NumPy (see the report); not fuzzed
    if name == "mul" and a.mag * b.mag > MAG_MAX:
        name = "maximum"
    if name in ("add", "sub") and a.mag + b.mag > MAG_MAX:
        name = "minimum"
    dtype = _result_dtype(a.dtype, b.dtype)
    shape = np.broadcast_shapes(a.shape, b.shape)
    exact = a.exact and b.exact
    frac = max(a.frac, b.frac)
    if name in ("add", "sub"):
        mag, err = a.mag + b.mag, a.err + b.err
    elif name == "mul":
        mag, err, frac = a.mag * b.mag, a.err * b.mag + b.err * a.mag + a.err * b.err, a.frac + b.frac
    elif name == "div":
        mag, err, exact = a.mag, a.err + a.mag * b.err, False
    else:
        mag, err = max(a.mag, b.mag), max(a.err, b.err)
    ops = 3 if name == "div" else 1
    return ("binary", name, i, j), _rounded(dtype, shape, mag, frac, err, exact, ops)


def _where(ch, prog, i):
    exact = [c for c, m in enumerate(prog.metas) if m.exact]
    c = ch.choice(exact) if exact else None
    if c is None:
        return _binary(ch, prog, i)
    cs = prog.metas[c].shape
    pool = [j for j, m in enumerate(prog.metas) if _broadcastable(cs, m.shape)]
    a = ch.choice(pool)
    sa = np.broadcast_shapes(cs, prog.metas[a].shape)
    b = ch.choice([j for j in pool if _broadcastable(sa, prog.metas[j].shape)])
    ma, mb = prog.metas[a], prog.metas[b]
    shape = np.broadcast_shapes(sa, mb.shape)
    dtype = _result_dtype(ma.dtype, mb.dtype)
    meta = _rounded(dtype, shape, max(ma.mag, mb.mag), max(ma.frac, mb.frac), max(ma.err, mb.err),
                    ma.exact and mb.exact, 1)
    return ("where", c, a, b), meta


def _reduce(ch, prog, i):
    m = prog.metas[i]
    nd = len(m.shape)
    name = ch.choice(sorted(REDUCE))
    if name == "mean" and not m.is_float:
        name = "sum"  # mean of ints is float32 in zyx_dist, float64 in NumPy (see the report); not fuzzed
    axis: Any = None
    if nd and ch.bool():
        k = ch.int(1, nd)
        pool = list(range(nd))
        axes = []
        for _ in range(k):
            a = pool.pop(ch.int(0, len(pool) - 1))
            axes.append(a - nd if ch.bool() else a)
        axis = axes[0] if len(axes) == 1 and ch.bool() else tuple(axes)
    keep = ch.bool()
    ax = tuple(range(nd)) if axis is None else (axis,) if isinstance(axis, int) else axis
    n = int(np.prod([m.shape[a] for a in ax])) if ax else 1
    if n == 0 and name != "sum":
        name = "sum"  # max/min/mean of an empty axis have no value
    if name == "sum" and m.mag * max(n, 1) > MAG_MAX:
        name = "max"
    out_shape = np.sum(np.zeros(m.shape, np.int8), axis=axis, keepdims=keep).shape
    dtype = np.sum(np.zeros((1,), m.dtype)).dtype.name if name == "sum" else m.dtype
    if name == "sum":
        meta = _rounded(dtype, out_shape, m.mag * max(n, 1), m.frac, n * m.err, m.exact, max(n, 1))
    elif name == "mean":
        pow2 = n > 0 and (n & (n - 1)) == 0
        meta = _rounded(dtype, out_shape, m.mag, m.frac + int(math.log2(n)) if pow2 else 0,
                        m.err + 4 * n * EPS.get(dtype, 0.0) * m.mag, m.exact and pow2, max(n, 1) + 1)
    else:
        meta = Meta(tuple(out_shape), dtype, m.mag, m.err, m.frac)
    return ("reduce", name, i, axis, keep), meta


def _move(ch, prog, i):
    m = prog.metas[i]
    shape, nd = m.shape, len(m.shape)
    op = ch.choice(["reshape", "permute", "index", "pad", "flip", "expand"])
    if nd == 0 and op != "expand":
        op = "reshape"
    if op == "reshape":
        how = ch.choice(["flat", "split", "merge", "unsqueeze"])
        size = int(np.prod(shape))
        if how == "flat" or nd == 0:
            new: tuple = (-1,) if ch.bool() else (size,)
        elif how == "merge" and nd >= 2:  # (-1 is ambiguous where the rest of the shape holds a 0)
            new = shape[:-2] + ((-1,) if size else (shape[-2] * shape[-1],))
        elif how == "split" and shape[-1] % 2 == 0 and shape[-1]:
            new = shape[:-1] + (2, shape[-1] // 2)
        else:
            new = (1,) + shape
        out = np.zeros(shape, np.int8).reshape(new).shape
        return ("reshape", i, new), Meta(out, m.dtype, m.mag, m.err, m.frac)
    if op == "permute":
        perm = list(range(nd))
        for k in range(nd - 1, 0, -1):
            j = ch.int(0, k)
            perm[k], perm[j] = perm[j], perm[k]
        return ("permute", i, tuple(perm)), Meta(tuple(shape[p] for p in perm), m.dtype, m.mag, m.err, m.frac)
    if op == "index":
        key: list = []
        for n in shape:
            if n and ch.int(0, 4) == 0:
                key.append(ch.int(-n, n - 1))
            else:
                step = ch.choice([1, 1, 2, -1, -2, 3])
                start = None if ch.bool() else ch.int(-n - 1, n)
                stop = None if ch.bool() else ch.int(-n - 1, n + 1)
                if not len(range(n)[start:stop:step]) and ch.int(0, 3):
                    start = stop = None  # empty slices, but not too often
                key.append(slice(start, stop, step))
        out = np.zeros(shape, np.int8)[tuple(key)].shape
        return ("index", i, tuple(key)), Meta(out, m.dtype, m.mag, m.err, m.frac)
    if op == "pad":
        width = tuple((ch.int(0, 2), ch.int(0, 2)) for _ in range(nd))
        value = ch.choice([0, 0, 1.5, -2]) if m.is_float else ch.choice([0, 3])
        out = tuple(s + a + b for s, (a, b) in zip(shape, width))
        return ("pad", i, width, value), Meta(out, m.dtype, max(m.mag, abs(value)), m.err, max(m.frac, 1))
    if op == "flip":
        axes = tuple(a for a in range(nd) if ch.bool()) or (ch.int(0, nd - 1),)
        return ("flip", i, axes), Meta(shape, m.dtype, m.mag, m.err, m.frac)
    new = tuple(3 if d == 1 and ch.bool() else d for d in shape)
    if nd == 0 or (nd < 3 and ch.int(0, 2) == 0):
        new = (2,) + new
    return ("expand", i, new), Meta(new, m.dtype, m.mag, m.err, m.frac)


def _cast(ch, prog, i):
    m = prog.metas[i]
    if m.dtype == "float32":
        to = ch.choice(["float16", "int32"] if m.exact else ["float16"])
    elif m.dtype in ("float16", "int32", "int64", "float64"):
        to = "float32"
    else:
        return None
    if to == "int32":  # truncation toward zero of exact values: exact on both sides
        return ("cast", i, to), Meta(m.shape, to, math.floor(m.mag), 0.0, 0)
    return ("cast", i, to), _rounded(to, m.shape, m.mag, m.frac, m.err, m.exact, 1)


_STEP_BUILDERS = {"unary": _unary, "binary": _binary, "where": _where, "reduce": _reduce, "move": _move,
                  "cast": _cast}


def programs(rand_inputs: bool = False):
    """The hypothesis strategy of programs."""
    from hypothesis import strategies as st

    @st.composite
    def _programs(draw):
        return build(DrawChooser(draw), rand_inputs)

    return _programs()


def program_from_seed(seed: int, rand_inputs: bool = False) -> Program:
    return build(RandomChooser(seed), rand_inputs)


# ---- running a program ------------------------------------------------------------------------------------

def grid_input(shape, seed: int) -> np.ndarray:
    return (np.random.default_rng(seed).integers(-32, 33, shape) / 8).astype(np.float32)


def zd_inputs(prog: Program) -> list[zd.Tensor]:
    return [zd.tensor(grid_input(shape, seed)) if kind == "grid" else
            zd.uniform(shape, low=-4.0, high=4.0, seed=seed) for shape, seed, kind in prog.inputs]


def _apply(step: tuple, vals: list, lib: str):
    kind, z = step[0], lib == "zd"
    if kind == "unary":
        f = UNARY[step[1]][0 if z else 1]
        return f(vals[step[2]])
    if kind == "binary":
        f = BINARY[step[1]][0 if z else 1]
        return f(vals[step[2]], vals[step[3]])
    if kind == "where":
        c, a, b = (vals[k] for k in step[1:])
        return zd.where(c > 0, a, b) if z else np.where(c > 0, a, b)
    if kind == "reduce":
        _, name, i, axis, keep = step
        return REDUCE[name][0 if z else 1](vals[i], axis=axis, keepdims=keep)
    x = vals[step[1]]
    if kind == "reshape":
        return x.reshape(step[2])
    if kind == "permute":
        return x.permute(*step[2]) if z else x.transpose(step[2])
    if kind == "index":
        return x[step[2]]
    if kind == "pad":
        return zd.pad(x, step[2], value=step[3]) if z else np.pad(x, step[2], constant_values=step[3])
    if kind == "flip":
        return zd.flip(x, step[2]) if z else np.flip(x, step[2])
    if kind == "expand":
        return x.expand(step[2]) if z else np.broadcast_to(x, step[2])
    if kind == "cast":
        return x.astype(zd.dtype(step[2])) if z else x.astype(step[2])
    raise ValueError(kind)


def run_zd(prog: Program) -> list[zd.Tensor]:
    """Build the program on zd tensors and realize its outputs together; returns the output tensors."""
    vals: list = list(zd_inputs(prog))
    for step in prog.steps:
        vals.append(_apply(step, vals, "zd"))
    outs = [vals[o] for o in prog.outputs]
    zd.realize(*outs)
    return outs


def run_numpy(prog: Program, inputs: list[np.ndarray] | None = None) -> list[np.ndarray]:
    """The program on NumPy; `inputs` gives the input arrays (else the grid inputs are made here)."""
    vals: list = list(inputs) if inputs is not None else [grid_input(s, seed) for s, seed, _ in prog.inputs]
    with np.errstate(all="ignore"):
        for step in prog.steps:
            vals.append(np.asarray(_apply(step, vals, "np")))
    return [vals[o] for o in prog.outputs]


def check_against_numpy(prog: Program) -> None:
    """Run `prog` on the current session and on NumPy; compare shapes, dtypes and values (exact values bit
    for bit, the others within twice the tracked error bound)."""
    outs = run_zd(prog)
    inputs = None
    if any(kind != "grid" for _, _, kind in prog.inputs):
        inputs = [t.numpy() for t in zd_inputs(prog)]
    wants = run_numpy(prog, inputs)
    for k, (t, want, o) in enumerate(zip(outs, wants, prog.outputs)):
        meta = prog.metas[o]
        got = t.numpy()
        where = f"output {k} (v{o}, {meta}) of {prog!r}"
        assert t.shape == want.shape == meta.shape, f"shape {t.shape} vs NumPy {want.shape}: {where}"
        assert got.dtype == want.dtype, f"dtype {got.dtype} vs NumPy {want.dtype}: {where}"
        if meta.exact:
            np.testing.assert_array_equal(got, want, err_msg=where)
        else:
            atol = 2 * meta.err + 8 * EPS.get(meta.dtype, 0.0) * meta.mag
            np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=0, atol=atol,
                                       err_msg=where)


def result_bits(prog: Program) -> list[tuple[str, tuple, bytes]]:
    """The outputs of `prog` on the current session as (dtype, shape, raw bytes)."""
    return [(str(t.dtype), t.shape, t.numpy().tobytes()) for t in run_zd(prog)]


# ---- sessions ---------------------------------------------------------------------------------------------

def detached_session():
    """Put the running session aside for the duration: inside, `zd.init(...)` starts a second one (or is
    refused); on exit that one is shut down and the original is the current session again."""
    return zsession.set_aside()
