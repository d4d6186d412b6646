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
    if axis is None:
        return tuple(range(ndim))
    items = axis if isinstance(axis, (tuple, list)) else (axis,)
    axes = [norm_axis(a, ndim, shape) for a in items]
    if len(set(axes)) != len(axes):
        raise ShapeError(f"axis {axis} repeats an axis (shape {shape})")
    return tuple(sorted(axes))


def broadcast_shapes(*shapes: Shape) -> Shape:
    """NumPy broadcasting (right-aligned); failure raises ShapeError naming every shape."""
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
        # a tensor and a Python scalar, either way round (`x * 2`, `1 - x`): the general path below, for
        # the most common case
        t, c = xs if xs[0].__class__ is Tensor else xs[::-1]
        if t.__class__ is Tensor and c.__class__ in _PY_SCALARS:
            if not isinstance(dtype, DType):
                promoted = dtypes.weak_promote(t.dtype, c)
                dtype = promoted if dtype is None else dtype(promoted)
            if t is xs[0]:  # nodes made in operand order, as below
                return [to_node(t.node, t.shape, dtype), graph.const(c, t.shape, dtype)]
            return [graph.const(c, t.shape, dtype), to_node(t.node, t.shape, dtype)]
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
    return [to_node(x.node, shape, dtype) if isinstance(x, Tensor) else graph.const(x, shape, dtype) for x in xs]


def as_tensor(x: Any) -> Tensor:
    """An operand as a Tensor (`zd.asarray` rules for arrays, lists and scalars)."""
    return x if isinstance(x, Tensor) else asarray(x)

