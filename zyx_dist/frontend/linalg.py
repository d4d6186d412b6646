"""Driver side: linear algebra and NN helpers (API.md section 5): matmul, dot, tensordot, einsum,
softmax, log_softmax, layer_norm. Contractions take tensors and give a Tensor built as
reshape/expand -> multiply -> sum over the last axis, a (..., M, 1, K) * (..., 1, N, K) form that the
kernelizer fuses into one kernel. Sums keep the promoted dtype (no int64 widening, unlike `zd.sum`).
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from ..errors import ShapeError
from ..graph import autograd
from ..graph import ir as graph
from ..graph.ir import Node, ReduceOp
from .common import Axis, as_tensor, broadcast_shapes, norm_axes
from .elementwise import as_float
from .manipulation import moveaxis
from .movement import broadcast_to, permute_dims
from .reduce import mean, reduce_axes
from .tensor import Tensor

__all__ = ["dot", "einsum", "layer_norm", "log_softmax", "matmul", "softmax", "tensordot"]


def _contract_nodes(x: Node, y: Node, shape: tuple[int, ...] | None = None) -> Node | None:
    """sum(x * y) over the last axis after broadcasting, as nodes, reshaped to `shape` when given: the usual case (one
    dtype, not bool, not empty) built node by node, without the tensor layer's promotion and checks, which have
    nothing to do there (matmul is the op a model builds most of). None for the other cases."""
    if x.dtype is not y.dtype or x.dtype.is_bool:
        return None
    full = broadcast_shapes(x.shape, y.shape)
    if not graph.prod(full):
        return None
    if len(x.shape) < len(full):
        x = graph.reshape(x, (1,) * (len(full) - len(x.shape)) + x.shape)
    if len(y.shape) < len(full):
        y = graph.reshape(y, (1,) * (len(full) - len(y.shape)) + y.shape)
    product = graph.binary(graph.BinaryOp.MUL, graph.expand(x, full), graph.expand(y, full))
    summed = graph.reduce(ReduceOp.SUM, product, (len(full) - 1,))
    return graph.reshape(summed, full[:-1] if shape is None else shape)


def _contract_last(a: Tensor, b: Tensor, shape: tuple[int, ...] | None = None) -> Tensor:
    """sum(a * b) over the last axis after broadcasting, in the promoted dtype (bool: any of and), reshaped to
    `shape` when given (matmul's result)."""
    node = _contract_nodes(a.node, b.node, shape)
    if node is not None:
        return Tensor(node)
    prod = a * b
    op, empty = (ReduceOp.MAX, False) if prod.dtype.is_bool else (ReduceOp.SUM, 0)
    out = reduce_axes(op, prod, (prod.ndim - 1,), False, empty)
    return out if shape is None else Tensor(graph.reshape(out.node, shape))


def _matmul_nodes(x: Node, y: Node) -> Node | None:
    """`x @ y` for nodes of 2 dims or more, the usual case (see `_contract_nodes`), as `matmul` builds it; None where
    `matmul`'s general path must decide (it names the operands of an error)."""
    xs, ys = x.shape, y.shape
    xn, yn = len(xs), len(ys)
    if xn < 2 or yn < 2 or xs[-1] != ys[-2]:
        return None
    try:
        batch = broadcast_shapes(xs[:-2], ys[:-2])
    except ShapeError:
        return None
    k, n = xs[-1], ys[-1]
    yt = graph.permute(y, (*range(yn - 2), yn - 1, yn - 2))
    return _contract_nodes(graph.reshape(x, (*xs[:-1], 1, k)), graph.reshape(yt, (*ys[:-2], 1, n, k)),
                           (*batch, xs[-2], n))


# graph/_node.c has the function above in C (where it is built and ZYX_DIST_C_NODES is not 0), with the same nodes and
# the same None; the one above stays the reference.
python_matmul_nodes = _matmul_nodes
if graph.c_nodes_enabled():
    _matmul_nodes = graph._c_node.matmul_nodes  # (the C form of the function above)


def matmul(a: Any, b: Any) -> Tensor:
    """`a @ b` with NumPy's rules: 1-D operands gain (and lose) a dim, batch dims broadcast."""
    if a.__class__ is Tensor and b.__class__ is Tensor:  # two tensors, the usual case: on the nodes
        node = _matmul_nodes(a.node, b.node)
        if node is not None:
            return Tensor(node)
    a, b = as_tensor(a), as_tensor(b)
    if a.ndim == 0 or b.ndim == 0:
        raise ShapeError(f"matmul: operands must not be 0-d, got shapes {a.shape} and {b.shape}")
    x = a.reshape(1, a.shape[0]) if a.ndim == 1 else a
    y = b.reshape(b.shape[0], 1) if b.ndim == 1 else b
    if x.shape[-1] != y.shape[-2]:
        raise ShapeError(f"matmul: inner dimensions differ: shapes {a.shape} and {b.shape}")
    try:
        batch = broadcast_shapes(x.shape[:-2], y.shape[:-2])
    except ShapeError:
        raise ShapeError(f"matmul: batch dimensions of shapes {a.shape} and {b.shape} do not broadcast") from None
    (m, k), n = x.shape[-2:], y.shape[-1]
    # the views on the graph directly (their shapes are valid by construction): the tensor-level reshape/permute
    # would check again what is checked above
    yn = y.ndim
    xr = graph.reshape(x.node, x.shape[:-1] + (1, k))  # (..., M, 1, K)
    yt = graph.permute(y.node, (*range(yn - 2), yn - 1, yn - 2))
    yr = graph.reshape(yt, y.shape[:-2] + (1, n, k))  # (..., 1, N, K)
    shape = batch + ((m,) if a.ndim > 1 else ()) + ((n,) if b.ndim > 1 else ())
    return _contract_last(Tensor(xr), Tensor(yr), shape)  # (batch..., M, N), then the 1-D operands' dims dropped


def tensordot(a: Any, b: Any, axes: Any = 2) -> Tensor:
    """NumPy's tensordot: an int n contracts the last n axes of a with the first n of b; a pair of axis
    lists contracts those. The result has a's free axes, then b's."""
    a, b = as_tensor(a), as_tensor(b)
    if isinstance(axes, (int, np.integer)):
        axes = int(axes)
        if axes < 0 or axes > min(a.ndim, b.ndim):
            raise ShapeError(f"tensordot: cannot contract {axes} axes of shapes {a.shape} and {b.shape}")
        ax_a, ax_b = tuple(range(a.ndim - axes, a.ndim)), tuple(range(axes))
    else:
        try:
            ax_a, ax_b = ([operator.index(x)] if isinstance(x, (int, np.integer)) else [operator.index(i) for i in x]
                          for x in axes)
        except (TypeError, ValueError):
            raise TypeError(f"tensordot: axes must be an int or a pair of axis lists, got {axes!r}") from None
        if len(ax_a) != len(ax_b):
            raise ShapeError(f"tensordot: axes {axes} pair different numbers of axes")
        ax_a = tuple(norm_axes(a_, a.shape)[0] for a_ in ax_a)
        ax_b = tuple(norm_axes(b_, b.shape)[0] for b_ in ax_b)
        for name, ax, shape in (("a", ax_a, a.shape), ("b", ax_b, b.shape)):
            if len(set(ax)) != len(ax):
                raise ShapeError(f"tensordot: axes {axes} repeat an axis of {name} (shape {shape})")
    if any(a.shape[i] != b.shape[j] for i, j in zip(ax_a, ax_b)):
        raise ShapeError(f"tensordot: contracted axes {ax_a} of shape {a.shape} and {ax_b} of shape {b.shape} differ")
    free_a = [i for i in range(a.ndim) if i not in ax_a]
    free_b = [i for i in range(b.ndim) if i not in ax_b]
    k = graph.prod(a.shape[i] for i in ax_a)
    fa, fb = tuple(a.shape[i] for i in free_a), tuple(b.shape[i] for i in free_b)
    x = permute_dims(a, free_a + list(ax_a)).reshape(fa + (1,) * len(fb) + (k,))
    y = permute_dims(b, free_b + list(ax_b)).reshape((1,) * len(fa) + fb + (k,))
    return _contract_last(x, y)


def dot(a: Any, b: Any) -> Tensor:
    """NumPy's dot: scalars multiply; otherwise contract a's last axis with b's second-to-last (its only
    axis when 1-D), so 2-D is matmul and higher ranks follow NumPy (not matmul's batching)."""
    a, b = as_tensor(a), as_tensor(b)
    if a.ndim == 0 or b.ndim == 0:
        return a * b
    return tensordot(a, b, ([a.ndim - 1], [max(b.ndim - 2, 0)]))


def einsum(subscripts: str, *xs: Any) -> Tensor:
    """Einstein summation as NumPy's: explicit ("ij,jk->ik") or implicit output (the ellipsis' axes, then the
    letters used once, sorted), `...` for broadcast leading axes, a letter repeated in one operand for its diagonal
    ("ii->i", "ii"); size-1 axes broadcast. The operands are multiplied in one broadcast product and summed over
    the letters not kept, which the kernelizer fuses (a matmul's pattern becomes its GEMM)."""
    ts = [as_tensor(x) for x in xs]
    spec = subscripts.replace(" ", "")
    ins, out = spec.split("->") if "->" in spec else (spec, None)
    terms = ins.split(",")
    if len(terms) != len(ts):
        raise ShapeError(f"einsum: {subscripts!r} has {len(terms)} operands' subscripts for {len(ts)} operands")
    bad = [c for c in spec if not (c.isalpha() or c in ".,->")]
    if bad or any(t.replace("...", "").count(".") or t.count("...") > 1 for t in terms + [out or ""]):
        raise ShapeError(f"einsum: bad subscripts {subscripts!r} (letters, one '...' per operand, ',' and '->')")
    terms, out = _ellipsis(terms, out, ts, subscripts)
    used = "".join(terms)
    if out is None:  # (counted before the diagonals: "ii" is a trace)
        out = "".join(sorted(c for c in set(used) if used.count(c) == 1))
    for i, term in enumerate(terms):
        if len(term) != ts[i].ndim:
            raise ShapeError(f"einsum: subscripts {term!r} do not match shape {ts[i].shape}")
        ts[i], terms[i] = _diagonals(ts[i], term, subscripts)
    if len(set(out)) != len(out) or set(out) - set(used):
        raise ShapeError(f"einsum: bad output subscripts in {subscripts!r}")
    letters = out + "".join(sorted(set(used) - set(out)))
    sizes: dict[str, int] = {}
    for t, term in zip(ts, terms):
        for c, d in zip(term, t.shape):
            if sizes.setdefault(c, d) != d and 1 not in (sizes[c], d):
                raise ShapeError(f"einsum: letter {c!r} has sizes {sizes[c]} and {d} in {subscripts!r}")
            sizes[c] = max(sizes[c], d) if 0 not in (sizes[c], d) else 0
    # Each operand goes to the full letter order (permute + size-1 dims); then multiply and sum the rest.
    aligned = []
    for t, term in zip(ts, terms):
        order = sorted(range(len(term)), key=lambda i: letters.index(term[i]))
        p = permute_dims(t, order)
        aligned.append(p.reshape(tuple(t.shape[term.index(c)] if c in term else 1 for c in letters)))
    prod = aligned[0]
    for t in aligned[1:]:
        prod = prod * t
    prod = broadcast_to(prod, tuple(sizes[c] for c in letters))  # (a lone operand's size-1 axes stay as asked)
    op, empty = (ReduceOp.MAX, False) if prod.dtype.is_bool else (ReduceOp.SUM, 0)
    return reduce_axes(op, prod, tuple(range(len(out), len(letters))), False, empty)


def _ellipsis(terms: list[str], out: str | None, ts: list[Tensor], subscripts: str) -> tuple[list[str], str | None]:
    """The subscripts with each `...` spelled out: as many letters of their own (characters no subscript can hold)
    as the operand has axes beyond its letters, aligned on the right across operands as broadcasting aligns them;
    an implicit output starts with all of them."""
    counts = [t.ndim - len(term.replace("...", "")) if "..." in term else 0 for t, term in zip(ts, terms)]
    if any(k < 0 for k in counts):
        raise ShapeError(f"einsum: {subscripts!r} names more axes than its operands have")
    width = max(counts, default=0)
    own = "".join(chr(0x4E00 + i) for i in range(width))  # (CJK characters: never an einsum letter)
    terms = [term.replace("...", own[width - k:]) for term, k in zip(terms, counts)]
    if out is not None:
        out = out.replace("...", own)
    elif width:
        used = "".join(terms)
        out = own + "".join(sorted(c for c in set(used) - set(own) if used.count(c) == 1))
    return terms, out


def _diagonals(t: Tensor, term: str, subscripts: str) -> tuple[Tensor, str]:
    """An operand whose subscripts repeat a letter, reduced to its diagonal over each repeat (the axis of the
    letter's first place kept): a strided view of the two axes flattened, as NumPy's einsum reads "ii"."""
    while len(set(term)) != len(term):
        c = next(c for c in term if term.count(c) > 1)
        i, j = term.index(c), term.index(c, term.index(c) + 1)
        n = t.shape[i]
        if t.shape[j] != n:
            raise ShapeError(f"einsum: letter {c!r} repeated in {term!r} over axes of sizes {n} and {t.shape[j]}")
        rest = [a for a in range(t.ndim) if a not in (i, j)]
        flat = permute_dims(t, rest + [i, j]).reshape(tuple(t.shape[a] for a in rest) + (n * n,))
        diag = flat[(slice(None),) * len(rest) + (slice(None, None, n + 1),)]  # (n axis last)
        t = moveaxis(diag, -1, i)
        term = term[:j] + term[j + 1:]
    return t, term


def softmax(x: Any, axis: Axis = -1) -> Tensor:
    """exp(x - max) / sum(exp(x - max)) over `axis` (int or tuple), in float. Its gradient is p * (g - sum(g * p)),
    read from the result (graph/autograd.py `composite`)."""
    x = as_float(x)
    axes = norm_axes(axis, x.shape)  # (once: max and sum of a float are reductions in its dtype over these)
    e = (x - reduce_axes(ReduceOp.MAX, x, axes, True)).exp()
    out = e / reduce_axes(ReduceOp.SUM, e, axes, True, 0)
    autograd.composite(out.node, "softmax", x.node, axes)
    return out


def log_softmax(x: Any, axis: Axis = -1) -> Tensor:
    """x - max - log(sum(exp(x - max))) over `axis`, in float. Its gradient is g - exp(y) * sum(g)."""
    x = as_float(x)
    axes = norm_axes(axis, x.shape)
    shifted = x - reduce_axes(ReduceOp.MAX, x, axes, True)
    out = shifted - reduce_axes(ReduceOp.SUM, shifted.exp(), axes, True, 0).log()
    autograd.composite(out.node, "log_softmax", x.node, axes)
    return out


def layer_norm(x: Any, axis: Axis = -1, eps: float = 1e-5) -> Tensor:
    """(x - mean) / sqrt(var + eps) over `axis` (int or tuple); no affine weights."""
    x = as_float(x)
    centred = x - mean(x, axis, keepdims=True)  # one mean, shared by the variance (two row passes, not three)
    return centred * (mean(centred * centred, axis, keepdims=True) + eps).rsqrt()

