"""Driver side: the lazy graph's node, one op of graph/ir.py's opset. Takes the op, its sources, parameters, shape
and dtype; gives the node, whose fields every pass reads. Two forms of one class: `PyNode` in Python, the reference,
and `Node`, the same class on graph/_node.c's C fields where that extension is built (ZYX_DIST_C_NODES=0 keeps the
Python one). Nodes are reference counted by Python itself: a realized node holds its device buffer, and the buffer
is freed when the last tensor or node that uses it goes away. graph/ir.py, which builds them, re-exports all of it.
"""

from __future__ import annotations

import itertools
import math
import os
from typing import Any

import numpy as np

from ..dtypes import DType
from .opset import Op

Shape = tuple[int, ...]
_ids = itertools.count()  # every node's id, in both forms: one sequence per process


class _NodeMethods:
    """What a Node has beyond its fields: one definition for both forms of the class below."""

    __slots__ = ()

    @property
    def realized(self) -> bool:
        return self.op is Op.LEAF and (self.buffer is not None or self.size == 0)

    def become_leaf(self, buffer: Any) -> None:
        """Turn a computed node into a realized leaf: its history is dropped (and freed if unused), and with
        it the guards its value passed."""
        self.op, self.srcs, self.arg, self.buffer, self.host, self.guards = Op.LEAF, (), None, buffer, None, None

    def __repr__(self) -> str:
        return f"Node#{self.id}({self.op.value}, {self.arg!r}, shape={self.shape}, {self.dtype})"


class PyNode(_NodeMethods):
    """One op of the lazy graph. `srcs` are its inputs, `arg` its parameters (see the constructors),
    `buffer` the device buffer once realized (then `op` is LEAF), `host` the NumPy data of a leaf not
    uploaded yet, `device` a pinned device name or None. `guards`: the checks of values (graph/guards.py:
    a gather's tensor index in range) that computing this node depends on, inherited from its sources;
    None where there are none, which is almost always. This is the class in Python: `Node` below is the same
    class built on graph/_node.c's fields where that is built (a model's graph makes a node per op: with the
    constructors in C too, a graph builds ~3x faster), and this one otherwise, or with ZYX_DIST_C_NODES=0."""

    __slots__ = (
        "__weakref__",
        "arg",
        "buffer",
        "device",
        "dtype",
        "guards",
        "host",
        "id",
        "lineage",
        "merged",
        "op",
        "origin",
        "shape",
        "size",
        "srcs",
        "weight",
    )

    def __init__(self, op: Op, srcs: tuple[Node, ...], arg: Any, shape: Shape, dtype: DType,
                 host: np.ndarray | None = None, device: str | None = None):
        self.id = next(_ids)
        self.op, self.srcs, self.arg, self.shape, self.dtype = op, srcs, arg, shape, dtype
        # the sources' guards (graph/guards.py), almost always None: one read per source
        g = None
        for s in srcs:
            if s.guards is not None:
                g = s.guards if g is None or g is s.guards else merged_guards(g, s.guards)
        self.guards = g
        self.size = math.prod(shape)  # the shape never changes: counted once, read on every plan
        self.buffer: Any = None
        self.host, self.device = host, device
        self.lineage: Node | None = None  # how to recompute the value once realized (see lineage.py)
        self.origin: Any = None  # in a recipe: a weak reference to the live node it describes
        self.weight = 1  # in a recipe: a bound on its size in nodes (see lineage.recipe)
        self.merged: Any = None  # a view merged into the one below it: (op, arg, the view it was built on), ir.py


def merged_guards(a: tuple, b: tuple) -> tuple:
    """Two sets of guards (graph/guards.py) as one, each once, in order."""
    return tuple(dict.fromkeys(a + b))


try:
    from . import _node as _c_node
except ImportError:  # not built here (no C compiler at install): the Python class
    _c_node = None


def _c_nodes_wanted() -> bool:
    return _c_node is not None and os.environ.get("ZYX_DIST_C_NODES", "1").strip().lower() not in ("0", "false", "off")


# The class is chosen once, at import, as the plan cache's walks are (fuse/plan_cache.py): the frontend's modules,
# imported after this one, follow the choice through `c_nodes_enabled`.
_C_NODES = _c_nodes_wanted()


def c_nodes_enabled() -> bool:
    """Whether Node and its usual constructors are graph/_node.c's: built here, and not turned off by
    ZYX_DIST_C_NODES=0/false/off when this module was imported."""
    return _C_NODES


if _C_NODES:
    _c_node.configure(_ids, merged_guards, Op.LEAF)

    class Node(_NodeMethods, _c_node.NodeBase):
        __slots__ = ()
        __doc__ = PyNode.__doc__
        become_leaf = _c_node.NodeBase.become_leaf  # (the C form of _NodeMethods.become_leaf)
else:
    Node = PyNode  # type: ignore[misc]
