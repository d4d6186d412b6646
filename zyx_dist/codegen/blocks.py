"""Driver side: the scopes of a kernel's generated code (the body, reduce loops, a row kernel's passes
over its row) and how they are emitted. Takes the lines and nested scopes the renderer fills in; gives
C source lines: plain loops, loops a work-group shares (with their combine code after), a row's passes
unrolled over register slots, with accumulator declarations before each loop and combined lanes after.
"""

from __future__ import annotations

from . import symbolic as sym


class Block:
    """A scope of generated code: the kernel body or one reduce loop."""

    def __init__(self, parent: Block | None, var: sym.Var | None = None):
        self.parent, self.var = parent, var
        self.depth = 0 if parent is None else parent.depth + 1
        self.lines: list = []  # str or Block (a nested loop)
        self.memo: dict = {}
        self.before_loop: list[str] = []  # accumulator declarations, placed before this loop
        self.after_loop: list[str] = []  # the lanes' accumulators combined, placed after it
        self.reduce: tuple | None = None  # (accumulator, dtype, ReduceOp) of a reduce loop
        self.group: tuple[str, int, list[str]] | None = None  # in-group reduce: (local id, size, combine code)
        self.passes = 0  # a row loop over a row cached in registers: the work-group's passes over the row
        self.slot = ""  # with passes: the column of register slot p (C; default: work-item lid's p-th stride)

    def emit(self, indent: int, index_type: str, unroll: int = 1) -> list[str]:
        out: list[str] = []
        for item in self.lines:
            if isinstance(item, Block):
                pad = "  " * indent
                out += [pad + s for s in item.before_loop]
                v = item.var
                assert v is not None
                if unroll > 1 and item.reduce is not None:
                    out.append(f"{pad}#pragma unroll {unroll}")
                close = "}"
                if item.group is None:
                    out.append(f"{pad}for ({index_type} {v.name} = 0; {v.name} < {v.hi + 1}; {v.name}++) {{")
                elif item.passes:  # a cached row: pass p of the work-group over the row is register slot p
                    lid, size, _ = item.group
                    out += [f"{pad}#pragma unroll", f"{pad}for (int p = 0; p < {item.passes}; p++) {{",
                            f"{pad}  const {index_type} {v.name} = {item.slot or f'{lid} + p * {size}'};",
                            f"{pad}  if ({v.name} < {v.hi + 1}) {{"]
                    close = "}}"
                else:  # the work-group shares the loop, then combines its partial results in local memory
                    lid, size, _ = item.group
                    out.append(f"{pad}for ({index_type} {v.name} = {lid}; {v.name} < {v.hi + 1}; "
                               f"{v.name} += {size}) {{")
                out += item.emit(indent + 1, index_type, unroll)
                out.append(pad + close)
                out += [pad + ln for ln in item.after_loop]
                if item.group is not None:
                    out += [pad + ln for ln in item.group[2]]
            else:
                out.append("  " * indent + item)
        return out
