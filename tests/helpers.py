"""Helpers for the runtime tests: NumPy reference data and comparisons with dtype-aware tolerances.

`assert_close(t, expected, dtype)` reads a zyx_dist tensor (or takes an array), checks its shape and
(when given) its dtype, and compares it with the NumPy result: exact for integers and bools,
`np.testing.assert_allclose` with tolerances suited to the float dtype otherwise (float16 is stored as
half but computed in float, so it gets a loose tolerance).
"""

from __future__ import annotations

from typing import Any

import numpy as np

import zyx_dist as zd

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
    from zyx_dist import graph as g

    return g.leaf(np.zeros(shape, dtype.np_dtype), dtype)


def one(n):
    """The single kernel the kernelizer makes for node n."""
    from zyx_dist.kernelize import kernelize

    (k,) = kernelize([n])
    return k


def one_kernel(nodes: list):
    """A multi-output kernel over the leaves the nodes read (built directly: the kernelizer keeps
    outputs that share no work in separate kernels)."""
    from zyx_dist import graph as g
    from zyx_dist.kernelize import Kernel

    leaves = {n.id: n for n in g.toposort(nodes) if n.op is g.Op.LEAF}
    return Kernel(list(nodes), sorted(leaves.values(), key=lambda n: n.id))
