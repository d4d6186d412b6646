"""Helpers for the runtime tests: NumPy reference data and comparisons with dtype-aware tolerances.

`assert_close(t, expected, dtype)` reads a zyx_dist tensor (or takes an array), checks its shape and
(when given) its dtype, and compares it with the NumPy result: exact for integers and bools,
`np.testing.assert_allclose` with tolerances suited to the float dtype otherwise (float16 is stored as
half but computed in float, so it gets a loose tolerance).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

import zyx_dist as zd
from zyx_dist.codegen.kernel_ops import kernel_ops
from zyx_dist.codegen.render import render_kernel
from zyx_dist.fuse.kernelize import kernelize
from zyx_dist.protocol import Alloc, Compile, CopyIn, CopyOut, Free, Launch

# (rtol, atol) per float dtype for simple arithmetic; `loose=True` multiplies them (transcendentals, long sums)
TOL = {
    np.dtype(np.float16): (1e-2, 1e-2),
    np.dtype(np.float32): (1e-5, 1e-6),
    np.dtype(np.float64): (1e-10, 1e-12),
}

# the dtypes the runtime tier sweeps, as NumPy dtypes (zd.dtype(...) maps them)
FLOATS = [np.float32, np.float16]
INTS = [np.int32, np.int64, np.uint8]
NUMERIC = FLOATS + INTS
ALL = NUMERIC + [np.bool_]


def ids(dtypes: list) -> list[str]:
    return [np.dtype(d).name for d in dtypes]


def tol(dtype: Any, loose: float = 1.0) -> dict:
    rtol, atol = TOL.get(np.dtype(dtype), (1e-5, 1e-6))
    return {"rtol": rtol * loose, "atol": atol * loose}


def read(t: Any) -> np.ndarray:
    return t.numpy() if isinstance(t, zd.Tensor) else np.asarray(t)


def assert_close(t: Any, expected: Any, dtype: Any = None, *, loose: float = 1.0, rtol: float | None = None,
                 atol: float | None = None) -> np.ndarray:
    """Compare a tensor with a NumPy result. `dtype` (zd or NumPy) is the dtype zyx_dist must give; the
    NumPy value is compared after conversion to it. Returns the array read from the tensor."""
    got = read(t)
    expected = np.asarray(expected)
    if dtype is not None:
        want = np.dtype(zd.dtype(dtype).dtype)
        if isinstance(t, zd.Tensor):
            assert t.dtype == zd.dtype(dtype), f"tensor dtype {t.dtype}, expected {want}"
        assert got.dtype == want, f"numpy() gave dtype {got.dtype}, expected {want}"
    else:
        want = got.dtype
    assert got.shape == expected.shape, f"shape {got.shape}, expected {expected.shape}"
    if isinstance(t, zd.Tensor):
        assert t.shape == expected.shape
    if want.kind == "f":
        kw = tol(want, loose)
        if rtol is not None:
            kw["rtol"] = rtol
        if atol is not None:
            kw["atol"] = atol
        with np.errstate(all="ignore"):
            exp = expected.astype(want) if expected.dtype.kind in "fiub" else expected
        # compare in float64 so float16 rounding of the reference does not overflow the comparison
        np.testing.assert_allclose(got.astype(np.float64), exp.astype(np.float64), equal_nan=True, **kw)
    else:
        with np.errstate(all="ignore"):
            np.testing.assert_array_equal(got, expected.astype(want))
    return got


def data(shape: tuple[int, ...], dtype: Any, kind: str = "any", seed: int = 0) -> np.ndarray:
    """Reference data for a dtype. kind: "any" (signed for signed dtypes), "pos" (> 0), "nonzero",
    "unit" (floats in (-1, 1)), "small" (integers in [-3, 3] or floats on a coarse grid, for ties)."""
    rng = np.random.default_rng(seed)
    dt = np.dtype(dtype)
    if dt.kind == "b":
        return rng.random(shape) < 0.5
    if dt.kind == "f":
        if kind == "pos":
            v = rng.uniform(0.1, 4.0, shape)
        elif kind == "unit":
            v = rng.uniform(-0.99, 0.99, shape)
        elif kind == "small":
            v = rng.integers(-3, 4, shape) * 0.5
        else:
            v = rng.uniform(-4.0, 4.0, shape)
            if kind == "nonzero":
                v = np.where(np.abs(v) < 0.25, 0.5, v)
        return v.astype(dt)
    lo, hi = (0, 12) if dt.kind == "u" else (-9, 10)
    if kind == "pos":
        lo = 1
    if kind == "small":
        lo, hi = (0, 4) if dt.kind == "u" else (-3, 4)
    v = rng.integers(lo, hi, shape)
    if kind == "nonzero":
        v = np.where(v == 0, 3, v)
    return v.astype(dt)


# ---- graph-level builders for the codegen unit tests ------------------------------------------------------

def leaf(*shape, dtype=zd.float32):
    """A host leaf of zeros (its values do not matter to rendered source)."""
    from zyx_dist.graph import ir as g

    return g.leaf(np.zeros(shape, dtype.np_dtype), dtype)


def one(n):
    """The single kernel the kernelizer makes for node n."""
    from zyx_dist.fuse.kernelize import kernelize

    (k,) = kernelize([n])
    return k


def one_kernel(nodes: list):
    """A multi-output kernel over the leaves the nodes read (built directly: the kernelizer keeps
    outputs that share no work in separate kernels)."""
    from zyx_dist.fuse.kernelize import Kernel
    from zyx_dist.graph import ir as g

    leaves = {n.id: n for n in g.toposort(nodes) if n.op is g.Op.LEAF}
    return Kernel(list(nodes), sorted(leaves.values(), key=lambda n: n.id))


def ref_attention(q, k, v, scale, mask=None):
    """softmax(q @ k^T * scale + mask) @ v in NumPy, the reference of the fused attention tests."""
    s = (q @ np.swapaxes(k, -1, -2)) * scale
    if mask is not None:
        s = s + mask
    e = np.exp(s - s.max(-1, keepdims=True))
    return (e / e.sum(-1, keepdims=True)) @ v


def ref_attention_grads(q, k, v, scale, mask, g):
    """The gradients (dq, dk, dv) of sum(g * softmax(q @ k^T * scale + mask) @ v) in NumPy float64 (v may be
    broadcast over the heads: its gradient is summed back)."""
    q, k, v, g = (np.asarray(x, np.float64) for x in (q, k, v, g))
    s = (q @ np.swapaxes(k, -1, -2)) * scale + (0 if mask is None else np.asarray(mask, np.float64))
    p = np.exp(s - s.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    dp = g @ np.swapaxes(v, -1, -2)
    ds = p * (dp - (p * dp).sum(-1, keepdims=True)) * scale
    dv = np.swapaxes(p, -1, -2) @ g
    return ds @ k, np.swapaxes(ds, -1, -2) @ q, dv.sum(axis=tuple(i for i, n in enumerate(v.shape) if n == 1),
                                                      keepdims=True)


def attention_grads(rng, np_dtype, mask: str, B: int, H: int, Tq: int, Tk: int, D: int, scale: float):
    """(zd.grad over q, k, v of sum(softmax(q @ k^T * scale + mask) @ v * g) as tensors, NumPy's gradients), for
    random data of `np_dtype`; `mask` is "causal" (additive -1e9), "where" (`zd.where` with -inf), "per_batch"
    (random, one per batch entry) or "none"."""
    Q, G = (rng.standard_normal((B, H, Tq, D)).astype(np_dtype) for _ in range(2))
    K, V = (rng.standard_normal((B, H, Tk, D)).astype(np_dtype) for _ in range(2))
    keep = np.tril(np.ones((Tq, Tk), bool))
    M = {"causal": np.where(keep, 0, -1e9), "where": np.where(keep, 0, -np.inf), "none": None,
         "per_batch": rng.standard_normal((B, 1, Tq, Tk))}[mask]
    M = None if M is None else M.astype(np.float32).astype(np_dtype)
    q, k, v = (zd.tensor(x) for x in (Q, K, V))
    s = q @ k.mT * scale
    if mask == "where":
        s = zd.where(zd.tensor(keep), s, -math.inf)
    elif M is not None:
        s = s + zd.tensor(M)
    grads = zd.grad((zd.softmax(s, axis=-1) @ v * zd.tensor(G)).sum(), [q, k, v])
    return grads, ref_attention_grads(Q, K, V, scale, M, G)


def option_graphs(rng):
    """(label, build, expected) graphs whose kernels between them have a candidate for every option of
    `codegen.options.KernelOpts` away from its default (the candidate tests check that)."""
    X = rng.standard_normal((48, 300)).astype(np.float32)
    # big enough for every loop-free candidate (the largest work-groups of 2 float4 per work-item), and not a
    # multiple of 4: the vector form's scalar tail
    v = rng.standard_normal((1 << 19) + 3).astype(np.float32)
    A, B = rng.standard_normal((70, 40)).astype(np.float32), rng.standard_normal((40, 52)).astype(np.float32)
    i = rng.integers(-50, 50, (33, 17)).astype(np.int32)
    Y, w = rng.standard_normal((48, 304)).astype(np.float32), rng.standard_normal(304).astype(np.float32)
    e = np.exp(X - X.max(1, keepdims=True))
    mu = X.mean(1, keepdims=True)
    # small integers: every sum exact in float16, so the tensor-core candidates' results are exact too
    Ah, Bh = rng.integers(-2, 3, (70, 40)).astype(np.float16), rng.integers(-2, 3, (40, 52)).astype(np.float16)
    return [
        ("ew_tail", lambda: zd.relu(zd.tensor(v) * 2 + 1) * zd.sigmoid(zd.tensor(v)),
         np.maximum(v * 2 + 1, 0) / (1 + np.exp(-v))),
        ("broadcast", lambda: zd.tensor(X) * zd.tensor(X[0]) + 1, X * X[0] + 1),
        ("row_softmax", lambda: zd.softmax(zd.tensor(X), axis=1), e / e.sum(1, keepdims=True)),
        ("layer_norm", lambda: (zd.tensor(X) - zd.tensor(X).mean(1, keepdims=True))
         / zd.sqrt(((zd.tensor(X) - zd.tensor(X).mean(1, keepdims=True)) ** 2).mean(1, keepdims=True) + 1e-5),
         (X - mu) / np.sqrt(((X - mu) ** 2).mean(1, keepdims=True) + 1e-5)),
        ("row_sum", lambda: zd.tensor(X).sum(1), X.sum(1)),
        ("row_dot", lambda: (zd.tensor(Y) * zd.tensor(w)).sum(1), (Y * w).sum(1)),  # 8 lanes, 2 vector loads
        ("total", lambda: zd.tensor(X).max(), X.max()),
        ("matmul_epilogue", lambda: zd.relu(zd.tensor(A) @ zd.tensor(B) + 1), np.maximum(A @ B + 1, 0)),
        ("matmul_half", lambda: (zd.tensor(Ah) @ zd.tensor(Bh)).astype(zd.float32),
         Ah.astype(np.float32) @ Bh.astype(np.float32)),
        ("int", lambda: (zd.tensor(i) * 3) % 7 - zd.tensor(i).sum(0), (i * 3) % 7 - i.sum(0)),
    ]


def run_kernels(worker, t, pick=lambda k: None, dialect: str = "opencl", with_ops: bool = False, limits=None):
    """Run the graph of `t` (a tensor or a node, or a tuple of them) kernel by kernel on a `Worker`, each kernel
    rendered in `dialect` with `pick(kernel)` options (None: the default), each Compile carrying the kernel's op
    list when `with_ops` (what a reference device interprets), the graph kernelized with `limits` (None: the
    default ones); gives the value of `t` (a tuple of values for a tuple)."""
    if isinstance(t, tuple):
        nodes = [getattr(x, "node", x) for x in t]
        return tuple(_run_kernels(worker, nodes, pick, dialect, with_ops, limits))
    return _run_kernels(worker, [getattr(t, "node", t)], pick, dialect, with_ops, limits)[0]


def _run_kernels(worker, nodes, pick, dialect: str, with_ops: bool, limits) -> list[np.ndarray]:
    kernels = kernelize(nodes) if limits is None else kernelize(nodes, limits)
    ids, cmds = iter(range(1, 10**6)), []  # fresh ids: every run frees what it made
    bufs: dict[int, int] = {}
    for k in kernels:
        for x in k.inputs:
            if x.id not in bufs:
                bufs[x.id] = next(ids)
                cmds += [Alloc(bufs[x.id], max(x.size * x.dtype.itemsize, 1)), CopyIn(bufs[x.id], x.host)]
        for o in k.outputs:
            bufs[o.id] = next(ids)
            cmds.append(Alloc(bufs[o.id], max(o.size * o.dtype.itemsize, 1)))
        p = render_kernel(k, dialect, pick(k))
        pid = next(ids)
        args = tuple(bufs[x.id] for x in k.inputs + k.outputs)
        cmds += [Compile(pid, p.source, p.name, kernel_ops(k) if with_ops else None), Launch(pid, args, p.gws, p.lws, args[: len(k.inputs)],
                                                       args[len(k.inputs):])]
    cmds += [CopyOut(bufs[n.id], n.dtype.name, n.shape) for n in nodes]
    cmds += [Free(b) for b in bufs.values()]
    res = worker.run(cmds)
    assert all(type(r).__name__ == "Done" for r in res.results), [r for r in res.results if type(r).__name__ != "Done"]
    first = len(res.results) - len(bufs) - len(nodes)
    return [r.value for r in res.results[first:first + len(nodes)]]


def deep_chain(x, n: int, row_max_every: int = 0):
    """n ops on x (a zd.Tensor or a NumPy array, the same code for both): alternately * 0.999 and + 0.001,
    and with row_max_every, every k-th op subtracts the row max instead (an unrolled loop's shape)."""
    for i in range(n):
        if row_max_every and i % row_max_every == row_max_every - 1:
            x = x - x.max(axis=-1, keepdims=True)
        elif i % 2 == 0:
            x = x * np.float32(0.999)
        else:
            x = x + np.float32(0.001)
    return x
