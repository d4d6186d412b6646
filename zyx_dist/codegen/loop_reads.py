"""Driver side: which way a kernel's reduce loops read memory. Takes a kernel; gives whether each load that depends
on a reduce's innermost reduced axis steps one element per step of it (a row sum of a row-major tensor, not a
column sum), which decides how a GPU should share the loops (`options.candidates`: a warp per row).
"""

from __future__ import annotations

from ..fuse.kernelize import Kernel
from ..graph.ir import Op
from . import gemm
from . import symbolic as sym


def reads_along_memory(kernel: Kernel) -> bool:
    """Whether the kernel's reduces read their inputs along memory: each load that depends on a reduce's
    innermost reduced axis steps one element per step of it (a row sum of a row-major tensor). A work-item per
    output then reads, with its neighbours, one element of each of 32 rows per load (`options.candidates`)."""
    pos = {n.id: i for i, n in enumerate(kernel.inputs)}
    along = False
    stack, seen = list(kernel.outputs), set()
    while stack:
        n = stack.pop()
        if n.id in seen or n.id in pos:
            continue
        seen.add(n.id)
        if n.op is not Op.REDUCE:
            stack.extend(n.srcs)
            continue
        src = n.srcs[0]
        idx = tuple(sym.Var(f"d{i}", 0, d - 1) if d > 1 else sym.ZERO for i, d in enumerate(src.shape))
        walked = gemm._walk(src, idx, pos)
        var = idx[max(n.arg[1])]
        if walked is None or not isinstance(var, sym.Var):
            return False
        for _, offset in walked[1]:
            e = gemm.tidy(offset)
            if var.name not in sym.variables(e):
                continue
            terms = e.terms if isinstance(e, sym.Sum) else ((e, 1),)
            if not any(t == var and c == 1 for t, c in terms) or \
                    any(var.name in sym.variables(t) and t != var for t, _ in terms):
                return False
            along = True
    return along
