"""Driver side: `zd.grad` (API.md section 11), the user-facing form of the gradient pass. Takes `y`, the
tensors `xs` and an optional output gradient; checks them (a y of size other than 1 needs `grad_output`,
else ShapeError; integer and bool xs raise DTypeError) and gives lazy Tensors built by
`graph.autograd.gradients`, which fuse, realize and place like any other tensors.
"""

from __future__ import annotations

from typing import Any

from ..errors import DTypeError, ShapeError
from ..graph import autograd, history
from ..graph import ir as graph
from .common import as_tensor
from .tensor import Tensor

__all__ = ["grad"]


def grad(y: Tensor, xs: Any, grad_output: Any = None) -> list[Tensor]:
    """The gradients of `y` with respect to each tensor of `xs`, as a list of lazy tensors of their shapes
    and dtypes: d(sum(grad_output * y)) / dx, with grad_output 1 when y has one element.

    A y of one element or a gradient that was realized (read, printed, `realize()`d) before this call is
    differentiated through as the computation it was, when one of the last two realizes made it
    (graph/history.py): `y.item()`, or reading a gradient, and then `grad` works. Any other tensor realized
    before this call is a leaf, a constant to the gradient: call `grad` before reading intermediate results."""
    if not isinstance(y, Tensor):
        raise TypeError(f"zd.grad: y must be a Tensor, got {type(y).__name__}")
    items = [xs] if isinstance(xs, Tensor) else list(xs)
    for i, x in enumerate(items):
        if not isinstance(x, Tensor):
            raise TypeError(f"zd.grad: xs[{i}] is a {type(x).__name__}, not a Tensor")
        if not x.dtype.is_float:
            raise DTypeError(f"zd.grad: xs[{i}] has dtype {x.dtype}; gradients exist only for float tensors")
    if grad_output is None:
        if y.size != 1:
            raise ShapeError(f"zd.grad: y has shape {y.shape} ({y.size} elements); a y of more than one element "
                             "needs grad_output (a tensor of y's shape)")
        seed = graph.const(1, y.shape, y.dtype)
    else:
        go = as_tensor(grad_output)
        if go.shape != y.shape:
            raise ShapeError(f"zd.grad: grad_output has shape {go.shape}, y has shape {y.shape}")
        seed = graph.cast(go.node, y.dtype)
    if not y.dtype.is_float:  # nothing flows through an integer or bool result
        return [Tensor(graph.const(0, x.shape, x.dtype)) for x in items]
    grads = autograd.gradients(y.node, [x.node for x in items], seed)
    history.gradient(grads)
    return [Tensor(g) for g in grads]
