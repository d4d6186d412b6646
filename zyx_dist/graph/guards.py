"""Driver side, pure: checks of values that a graph's shape cannot carry. A gather by an integer tensor
(`x[idx]`, `zd.take`) reads zeros where an index is out of range, so every such gather gets an
`IndexGuard`: the index's own range check, a boolean scalar node computed in the same realize as any
result that depends on the gather (nodes inherit their sources' guards, graph/ir.py), and read back
before those results are handed out (engine/index_checks.py). An index whose values are on the host
already (a host leaf or a constant) is checked here, at the call, unless zd.jit is recording; its verdict,
like a device check's, is raised at the realize, so a tensor index behaves the same wherever its values
live. A guard that passed is settled and costs nothing afterwards; one that failed keeps its error, raised
again by any later realize that depends on it.
"""

from __future__ import annotations

import weakref

import numpy as np

from . import ir
from .ir import BinaryOp, Node, Op, ReduceOp

# The check nodes of live guards (engine/jit.py finds them among a recorded realize's targets)
CHECKS: weakref.WeakSet[Node] = weakref.WeakSet()
# Above 0 while zd.jit records a function (engine/jit.py): host data is then checked on the device too, since
# the recorded plan's later calls bind other data, and only a check in the plan sees it.
recording = 0


class IndexGuard:
    """That every value of the integer index `idx` lies in [-size, size) (the gathered axis `axis`).
    `check`: the node that is True where one does not (None once settled, or where the host knew);
    `ok`: it passed; `message`: why it failed (then every realize that depends on it raises)."""

    __slots__ = ("axis", "check", "idx", "message", "ok", "size")

    def __init__(self, idx: Node, size: int, axis: int) -> None:
        self.idx, self.size, self.axis = idx, size, axis
        self.check: Node | None = None
        self.ok = False
        self.message: str | None = None

    def settle(self) -> None:
        """The check passed: nothing more to compute or keep."""
        self.ok, self.check, self.idx = True, None, None

    def fail(self, values: np.ndarray) -> str:
        """The check failed, and `values` are the index's: the error's message, kept for later realizes."""
        flat = np.asarray(values).reshape(-1)
        bad = flat[(flat >= self.size) | (flat < -self.size)]
        first = bad[0] if bad.size else "?"  # ("?" only if the check and the values disagreed: never expected)
        self.message = f"index {first} is out of bounds for axis {self.axis} with size {self.size}"
        self.check = self.idx = None
        return self.message

    def __repr__(self) -> str:
        state = "ok" if self.ok else "failed" if self.message else "pending"
        return f"IndexGuard(axis {self.axis}, size {self.size}, {state})"


def index_guard(idx: Node, size: int, axis: int) -> IndexGuard | None:
    """The guard of gathering along an axis of `size` by `idx` (an integer node), or None where no value of
    `idx` can be out of range (its dtype's range lies inside, or it is empty). Host data and constants are
    checked now."""
    if idx.size == 0:
        return None
    info = np.iinfo(idx.dtype.np_dtype)
    low, high = info.min < -size, info.max >= size  # which ends a value of this dtype can pass
    if not (low or high):
        return None
    g = IndexGuard(idx, size, axis)
    values = idx.host if idx.op is Op.LEAF and idx.buffer is None else \
        np.asarray(idx.arg) if idx.op is Op.CONST else None
    if values is None or recording:
        g.check = _out_of_range(idx, size, low, high)
        CHECKS.add(g.check)
    elif ((values >= size) | (values < -size)).any():
        g.fail(values)
    else:
        return None
    return g


def _out_of_range(idx: Node, size: int, low: bool, high: bool) -> Node:
    """A boolean node: whether any value of `idx` is below -size or at least size (the ends its dtype can
    reach)."""
    tests = []
    if high:
        tests.append(ir.binary(BinaryOp.GE, idx, ir.const(size, idx.shape, idx.dtype)))
    if low:
        tests.append(ir.binary(BinaryOp.LT, idx, ir.const(-size, idx.shape, idx.dtype)))
    bad = tests[0] if len(tests) == 1 else ir.binary(BinaryOp.OR, tests[0], tests[1])
    return ir.reduce(ReduceOp.MAX, bad, tuple(range(len(idx.shape))))


def guarded(node: Node, guard: IndexGuard | None) -> Node:
    """`node` (a gather's fresh result) made to depend on `guard` (and on whatever it inherited): the node,
    the movement nodes under it and the first computation they view. The graph's constructors compose a
    movement with the one under it (a reshape of a reshape is one reshape), so a guard is kept on a node
    they never skip, and a movement node's guards are always those of its source."""
    if guard is None or guard.ok:
        return node
    n = node
    while True:
        n.guards = (guard,) if n.guards is None else ir.merged_guards(n.guards, (guard,))
        if n.op not in ir.MOVEMENT_OPS:
            return node
        n = n.srcs[0]


def pending(nodes: list[Node]) -> list[IndexGuard]:
    """The guards the realize of `nodes` must check (or raise): those not settled, each once."""
    out: list[IndexGuard] = []
    for n in nodes:
        g = n.guards
        if g is not None:
            for x in g:
                if not x.ok and x not in out:
                    out.append(x)
    return out
