"""Driver side: `Tensor`, the user-facing handle on one lazy graph node (API.md section 4).

A Tensor holds `.node` and nothing else: every op builds new nodes through `zyx_dist.graph` (via the
`ops_*` modules) and returns a new Tensor, so building costs no device work. Reading (`numpy()`,
`item()`, `float()`, ...) and `realize()` go through `zyx_dist.session`, which kernelizes, schedules and
runs the graph. Tensors are immutable: `__setitem__` raises. `__eq__` is elementwise, so the hash is
identity-based.
"""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np

from .. import context
from ..dtypes import DType
from ..errors import ShapeError
from ..graph.ir import Node, Op


class Tensor:
    """A lazy n-dimensional array. Users get these from `zd.tensor`, `zd.zeros`, ... and ops on them."""

    __slots__ = ("__weakref__", "node")
    # NumPy's protocols (__array__, __array_ufunc__, __array_function__) and DLPack are put on the class
    # by frontend/interop.py: `array + tensor` and `np.exp(tensor)` give lazy Tensors.

    def __init__(self, node: Node):
        self.node = node

    # ---- attributes ----------------------------------------------------------------------------------

    @property
    def shape(self) -> tuple[int, ...]:
        return self.node.shape

    @property
    def dtype(self) -> DType:
        return self.node.dtype

    @property
    def ndim(self) -> int:
        return len(self.node.shape)

    @property
    def size(self) -> int:
        return self.node.size

    @property
    def nbytes(self) -> int:
        return self.node.size * self.node.dtype.itemsize

    @property
    def device(self) -> str | None:
        """The device holding the result once realized, else None. An empty tensor holds no buffer: its device is
        the one it was pinned to (`device=`, `from_dlpack(..., device=)`), else once realized the session's default."""
        node = self.node
        if node.buffer is None:  # not realized (no need to ask the session), or empty
            if node.size == 0:
                realized = node.op is Op.LEAF and node.host is None
                return node.device or (context.session().default_device if realized else None)
            return None
        return node.buffer.device

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of unsized object (a 0-d tensor)")
        return self.shape[0]

    def __repr__(self) -> str:
        return f"Tensor(shape={self.shape}, dtype={self.dtype}, device={self.device})"

    __hash__ = object.__hash__

    # ---- computing and reading -----------------------------------------------------------------------

    def realize(self) -> Tensor:
        """Compute this tensor on its device; blocks until the result exists there."""
        context.session((self.node,)).realize([self.node])
        return self

    def numpy(self) -> np.ndarray:
        """The value as a new NumPy array (realizes if needed)."""
        arr = context.session((self.node,)).read(self.node)
        host = self.node.host
        if host is not None and np.may_share_memory(arr, host):  # the user must not mutate our leaf data
            arr = arr.copy()
        return arr

    def _scalar(self) -> Any:
        if self.size != 1:
            raise NotAScalarError(f"can only convert a tensor of size 1 to a Python scalar, got shape {self.shape}")
        return self.numpy().reshape(()).item()

    def item(self) -> Any:
        return self._scalar()

    def tolist(self) -> Any:
        return self.numpy().tolist()

    def __float__(self) -> float:
        return float(self._scalar())

    def __int__(self) -> int:
        return int(self._scalar())

    def __bool__(self) -> bool:
        if self.size == 0:
            raise NotAScalarError(f"the truth value of an empty tensor (shape {self.shape}) is ambiguous; "
                                  "use x.size > 0 to test for emptiness")
        if self.size != 1:
            raise NotAScalarError(f"the truth value of a tensor with more than one element (shape {self.shape}) is "
                                  "ambiguous; use x.any() or x.all()")
        return bool(self._scalar())


class NotAScalarError(ShapeError, TypeError):
    """A tensor of other than one element where a Python scalar is asked for (`item()`, `float(x)`, `int(x)`,
    `bool(x)`, an index): a ShapeError, so a ValueError as `item()`'s is in NumPy, and a TypeError as NumPy 2's
    `float()` and `int()` of an array raise (NumPy's AxisError is likewise both a ValueError and an IndexError)."""


def is_operand(x: Any) -> bool:
    """What the operators accept; anything else gives NotImplemented (== and != give an all-False / all-True
    bool tensor instead: frontend/methods.py)."""
    return isinstance(x, _OPERANDS)


# int and float ahead of the Number ABC, whose isinstance check is slower
_OPERANDS = (Tensor, int, float, np.ndarray, list, tuple, numbers.Number, np.generic)


def nodes_of(xs: tuple, what: str) -> list:
    """The graph nodes of `xs`, each of which must be a Tensor (TypeError naming `zd.<what>` otherwise)."""
    out = []
    for x in xs:
        if not isinstance(x, Tensor):
            raise TypeError(f"zd.{what} takes tensors, got {type(x).__name__} {x!r:.60}")
        out.append(x.node)
    return out


def realize(*xs: Tensor) -> tuple[Tensor, ...]:
    """Compute several tensors in one scheduling pass (shared work done once); blocks until all exist."""
    nodes = nodes_of(xs, "realize")
    context.session(nodes).realize(nodes)
    return xs
