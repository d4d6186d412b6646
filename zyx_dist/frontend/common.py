"""Driver side: the small helpers every op module shares. They take user arguments (shapes, axes,
operands that may be Tensors, Python scalars, NumPy arrays or lists) and give validated tuples or graph
nodes of one shape and dtype, raising `ShapeError`/`DTypeError` at the call with the shapes named.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable
from typing import Any

import numpy as np

from .. import dtypes
from ..dtypes import DType
from ..errors import ShapeError
from ..graph import ir as graph
from ..graph.ir import Node
from .data import asarray
from .tensor import Tensor

Shape = tuple[int, ...]
Axis = int | tuple[int, ...] | list[int] | None
# What an op accepts as an operand besides a Tensor: scalars stay weak, arrays become leaves.
SCALARS = (bool, int, float, np.generic)
_DIRECT = (Tensor, *SCALARS)  # operands used as they are
_PY_SCALARS = frozenset((bool, int, float))


def as_shape(shape: Any) -> Shape:
    """A shape given as an int or a sequence of ints, validated (no negatives, no non-integers)."""
    items = shape if isinstance(shape, (tuple, list)) else (shape,)
    out = []
    for s in items:
        if isinstance(s, float) and not math.isfinite(s):
            raise ShapeError(f"invalid shape {shape!r}: sizes must be finite integers")
        try:
            n = operator.index(s)
        except TypeError:
            raise ShapeError(f"invalid shape {shape!r}: sizes must be integers, got {s!r}") from None
        if n < 0:
            raise ShapeError(f"invalid shape {shape!r}: negative dimensions are not allowed")
        out.append(n)
    return tuple(out)


def shape_args(shape: tuple) -> Shape:
    """`f(2, 3)` and `f((2, 3))` both mean shape (2, 3), as NumPy's `reshape` and `rand` take it."""
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        return as_shape(shape[0])
    return as_shape(shape)


def norm_axis(axis: int, ndim: int, shape: Shape) -> int:
    """One axis, negatives counted from the end; out of range raises ShapeError naming the shape."""
    try:
        a = operator.index(axis)
    except TypeError:
        raise ShapeError(f"axis {axis!r} is not an integer (shape {shape})") from None
    if not -ndim <= a < ndim:
        raise ShapeError(f"axis {axis} is out of range for shape {shape} ({ndim} dims)")
    return a % ndim


def norm_axes(axis: Axis, shape: Shape, ndim: int | None = None) -> tuple[int, ...]:
    """Axes as a sorted tuple of non-negative ints (None = all); `ndim` defaults to len(shape).
    A repeated axis raises ShapeError."""
    ndim = len(shape) if ndim is None else ndim
    if axis.__class__ is int and -ndim <= axis < ndim:  # one axis (softmax's, a norm's): every reduction asks
        return (axis % ndim,)
    if axis is None:
        return tuple(range(ndim))
    items = axis if isinstance(axis, (tuple, list)) else (axis,)
    axes = [norm_axis(a, ndim, shape) for a in items]
    if len(set(axes)) != len(axes):
        raise ShapeError(f"axis {axis} repeats an axis (shape {shape})")
    return tuple(sorted(axes))


def broadcast_shapes(*shapes: Shape) -> Shape:
    """NumPy broadcasting (right-aligned); failure raises ShapeError naming every shape."""
    if len(shapes) == 2:  # the case of every binary op and matmul: one loop, no sets
        a, b = shapes
        if a == b:
            return tuple(a)
        if len(a) != len(b):
            a, b = (1,) * (len(b) - len(a)) + tuple(a), (1,) * (len(a) - len(b)) + tuple(b)
        out = []
        for d, e in zip(a, b):
            if e == 1 or e == d:
                out.append(d)
            elif d == 1:
                out.append(e)
            else:
                break
        else:
            return tuple(out)
    if shapes and all(s == shapes[0] for s in shapes):  # nothing to broadcast (most elementwise ops)
        return tuple(shapes[0])
    ndim = max((len(s) for s in shapes), default=0)
    out = []
    for i in range(-ndim, 0):
        dims = {s[i] for s in shapes if len(s) >= -i} - {1}
        if len(dims) > 1:
            named = " ".join(str(s) for s in shapes)
            raise ShapeError(f"operands could not be broadcast together with shapes {named}")
        out.append(dims.pop() if dims else 1)
    return tuple(out)


# Two shapes of ints, the case of every binary op and matmul, broadcast in C (graph/_node.c, where it is built and
# ZYX_DIST_C_NODES is not 0); it hands every other case to the function above, which stays the reference.
python_broadcast_shapes = broadcast_shapes
if graph.c_nodes_enabled():
    graph._c_node.configure_broadcast(python_broadcast_shapes)
    broadcast_shapes = graph._c_node.broadcast_shapes  # (the C form of the function above)


def to_node(x: Node, shape: Shape, dtype: DType) -> Node:
    """Cast `x` to dtype and broadcast it to shape (prepend 1s, then expand)."""
    if x.dtype is dtype and x.shape == shape:  # already there (most operands)
        return x
    x = graph.cast(x, dtype)
    if len(x.shape) < len(shape):
        x = graph.reshape(x, (1,) * (len(shape) - len(x.shape)) + x.shape)
    return graph.expand(x, shape)


def operands(*xs: Any, dtype: DType | Callable[[DType], DType] | None = None, extra: Shape = ()) -> list[Node]:
    """Broadcast and promote operands to one shape and dtype; give their nodes.

    Tensors (and arrays/lists, which become tensors) promote by NumPy 2 rules; Python scalars are weak
    (`dtypes.weak_promote`) and become constants. With no tensor among them the first operand is made one.
    `dtype` forces the result dtype, or maps the promoted one (e.g. to a float for true division);
    `extra` is one more shape to broadcast with (where's condition)."""
    if len(xs) == 2 and not extra:
        a, b = xs
        if a.__class__ is Tensor and b.__class__ is Tensor and not isinstance(dtype, DType):
            na, nb = a.node, b.node
            if na.dtype is nb.dtype:  # nothing to promote (`x + y`, `x - x.max(1, keepdims=True)`)
                shape = na.shape if na.shape == nb.shape else broadcast_shapes(na.shape, nb.shape)
                dt = na.dtype if dtype is None else dtype(na.dtype)
                return [to_node(na, shape, dt), to_node(nb, shape, dt)]
        # a tensor and a Python scalar, either way round (`x * 2`, `1 - x`): the general path below, for
        # the most common case
        t, c = xs if xs[0].__class__ is Tensor else xs[::-1]
        if t.__class__ is Tensor and c.__class__ in _PY_SCALARS:
            if not isinstance(dtype, DType):
                tdt = t.node.dtype
                promoted = tdt if c.__class__ is float and tdt.is_float else dtypes.weak_promote(tdt, c)
                dtype = promoted if dtype is None else dtype(promoted)
            if t is xs[0]:
                return [to_node(t.node, t.shape, dtype), scalar_const(c, t.shape, dtype)]
            return [scalar_const(c, t.shape, dtype), to_node(t.node, t.shape, dtype)]
    xs = [x if isinstance(x, _DIRECT) else as_tensor(x) for x in xs]
    tensors = [x for x in xs if isinstance(x, Tensor)]
    if not tensors:
        xs[0] = as_tensor(xs[0])
        tensors = [xs[0]]
    shape = broadcast_shapes(*[t.shape for t in tensors], *([extra] if extra else []))
    if not isinstance(dtype, DType):
        promoted = tensors[0].dtype
        for t in tensors[1:]:
            if t.dtype is not promoted:  # a dtype promotes with itself to itself
                promoted = dtypes.promote(promoted, t.dtype)
        for x in xs:
            if not isinstance(x, Tensor):
                promoted = dtypes.weak_promote(promoted, x)
        dtype = promoted if dtype is None else dtype(promoted)
    return [to_node(x.node, shape, dtype) if isinstance(x, Tensor) else scalar_const(x, shape, dtype) for x in xs]


# (type, value, shape, id of the dtype) -> the constant node of that operand (dtypes are unique, and their own hash is
# a Python call: the C node's ops key this dict alike, graph/_node.c's scalar_node)
_SCALAR_CONSTS: dict[tuple, Node] = {}
_SCALAR_CONSTS_MAX = 4096


def scalar_const(c: Any, shape: Shape, dtype: DType) -> Node:
    """The constant node of a scalar operand, one per (value, shape, dtype) and shared by every op that
    uses it: `x = x * 0.5` in a loop makes one constant, not one per step (fewer nodes to build and walk
    on every realize). Only operands share constants: no tensor of a user holds one, so none is ever
    realized (turned into a leaf). 0.0 and NaN are not shared (0.0 == -0.0, and NaN != NaN)."""
    cls = c.__class__
    if cls is float and (c == 0.0 or math.isnan(c)) or cls not in _PY_SCALARS:
        return graph.const(c, shape, dtype)
    key = (cls, c, shape, id(dtype))
    node = _SCALAR_CONSTS.get(key)
    if node is None or node.op is not graph.Op.CONST:
        if len(_SCALAR_CONSTS) >= _SCALAR_CONSTS_MAX:
            _SCALAR_CONSTS.clear()
        node = _SCALAR_CONSTS[key] = graph.const(c, shape, dtype)
    return node


def as_tensor(x: Any) -> Tensor:
    """An operand as a Tensor (`zd.asarray` rules for arrays, lists and scalars)."""
    return x if isinstance(x, Tensor) else asarray(x)

