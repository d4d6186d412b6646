"""Driver side: the renderer's row kernels and in-group reductions. Takes a kernel whose outputs are rows reduced
along their last axes, inside `render._Renderer` (this class is its base, between it and the gathers'); gives one
work-group per row: the per-row reduces combined in the group (warp shuffles on CUDA, a tree in local memory
elsewhere), then the row's elements, kept in registers across the passes (`cache`) and moved four neighbours at a
time where the rows are whole quads (`vec` 4).
"""

from __future__ import annotations

from ..graph.ir import prod
from . import symbolic as sym
from .blocks import Block
from .cexpr import ctype, flat_index, literal
from .gather import OneHotGather
from .program import Program

SHUFFLED = ("float", "double", "int", "unsigned int", "long long", "unsigned long long")  # __shfl_xor_sync types


class RowKernels(OneHotGather):
    def group_loops(self, loops: list[Block], size: int) -> None:
        """The work-group's `size` work-items stride through each top-level reduce loop (neighbours read
        neighbouring elements) and combine their accumulators by a tree in local memory, after which
        every work-item holds the result. `lid` must be defined by the caller."""
        shared, barrier = self.d.shared, self.d.barrier
        for i, loop in enumerate(loops):
            acc, dt, rop = loop.reduce
            t, red = ctype(dt, self.d), f"red{i}"
            if self.d.name == "cuda" and size < 32 and t in SHUFFLED:
                # a lane group inside a warp (`_Renderer.render_lane_groups`): shuffles across its `size` lanes only
                mine = self.combine(rop, dt, acc, f"{acc}_sh")
                shuffle = f"{t} {acc}_sh = __shfl_xor_sync(0xffffffffu, {acc}, o); {acc} = {mine};"
                loop.group = ("lid", size, [f"for (int o = {size // 2}; o > 0; o >>= 1) {{ {shuffle} }}"])
                continue
            if self.d.name == "cuda" and size % 32 == 0 and t in SHUFFLED:
                # warp shuffles, then one exchange of the warps' partials: 1 barrier, not log2(size)
                # Every lane must reach each __shfl_xor_sync (a full mask): combining with max/min repeats
                # its operand in a ternary, so the shuffle is read into a variable first, never inside one.
                # A shuffle in the ternary's untaken side left lanes waiting forever (the H200 hung).
                mine = self.combine(rop, dt, acc, f"{acc}_sh")
                rest = self.combine(rop, dt, acc, f"{red}[w]")
                lanes = [(f"for (int o = 16; o > 0; o >>= 1) {{ {t} {acc}_sh = __shfl_xor_sync(0xffffffffu, {acc}, o); "
                          f"{acc} = {mine}; }}")]
                if size > 32:  # a warp alone has its result in every lane already
                    loop.before_loop.insert(0, f"{shared} {t} {red}[{size // 32}];")
                    lanes += [f"if ((lid & 31) == 0) {red}[lid >> 5] = {acc};", barrier,
                              f"{acc} = {red}[0];", f"for (int w = 1; w < {size // 32}; w++) {acc} = {rest};"]
                loop.group = ("lid", size, lanes)
                continue
            both = self.combine(rop, dt, f"{red}[lid]", f"{red}[lid + s]")
            loop.before_loop.insert(0, f"{shared} {t} {red}[{size}];")
            loop.group = ("lid", size, [
                f"{red}[lid] = {acc};", barrier,
                f"for (int s = {size // 2}; s > 0; s >>= 1) {{ if (lid < s) {red}[lid] = {both}; {barrier} }}",
                f"{acc} = {red}[0];"])

    def quads_fit(self, cols: int) -> bool:
        """Whether a row kernel's rows of `cols` can move in quads: whole quads per row, vector stores for every
        output (inputs of other dtypes are still read element by element)."""
        return cols % 4 == 0 and all(self.vector_io(o.dtype) for o in self.k.outputs)

    def render_rows(self, dims: int) -> Program:
        """One work-group per row: the per-row reduces run as in-group reductions (every work-item gets the
        result), then the work-items stride through the row's elements. The row is read once from memory
        per pass, and the passes after the first find it in cache. Cached in registers (`cache`), a row can
        also move in quads (`vec` 4): each work-item's slots p are four neighbours per 16-byte (half types:
        8-byte) load and store, so a row of half types is read in as few loads as one of float32."""
        shape, o = self.k.shape, self.opts
        cols = prod(shape[-dims:])
        rows = prod(shape) // cols
        size = o.group or 256
        quads = bool(o.cache) and o.vec == 4 and self.quads_fit(cols)
        slot = f"(lid + (p >> 2) * {size}) * 4 + (p & 3)" if quads else f"lid + p * {size}"  # register slot p's column
        r, j = sym.Var("row", 0, rows - 1), sym.Var("j", 0, cols - 1)
        idx = flat_index(shape[:-dims], r) + flat_index(shape[-dims:], j)
        col = Block(self.root, j)
        col.group = ("lid", size, [])
        passes = (4 * -(-cols // (4 * size)) if quads else -(-cols // size)) if o.cache else 0
        if passes:  # loads of the row's own elements (at row * cols + the loop variable) come from registers
            self.row_of = (r, cols)
        col.lines.append(f"{self.index_type} gid = row * {cols} + j;")
        if quads:  # the outputs wait in register slots for one vector store per quad
            col.lines += [f"so{i}[p] = {self.value(out, idx, frozenset(), col)[0]};"
                          for i, out in enumerate(self.k.outputs)]
        else:
            col.lines += self.elementwise_body(col, idx)
        loops = [b for b in self.root.lines if isinstance(b, Block)]
        self.group_loops(loops, size)
        self.root.lines.append(col)
        head = [f"{self.index_type} row = {self.d.group_id};", f"int lid = {self.d.local_id};"]
        if self.row_cache or quads:
            for b in [*loops, col]:
                b.passes = passes if b.var.hi + 1 == cols else 0
                b.slot = slot
            for pos, load in sorted(self.row_cache.items()):
                n = self.k.inputs[pos]
                t, zero = ctype(n.dtype, self.d), literal(0, n.dtype, self.d)
                head += [f"{t} rc{pos}[{passes}];", "#pragma unroll"]
                if quads and self.vector_io(n.dtype):
                    q = f"rq{pos}"
                    read = self.d.load4_narrow.get(n.dtype.name, self.d.load4).format(ptr=f"in{pos} + row * {cols} + c")
                    head += [f"for (int p = 0; p < {passes}; p += 4) {{",
                             f"  const {self.index_type} c = (lid + (p >> 2) * {size}) * 4;",
                             f"  const float4 {q} = c < {cols} ? {read} : {self.d.make4.format(*['0.0f'] * 4)};",
                             *[f"  rc{pos}[p + {u}] = {q}.{'xyzw'[u]};" for u in range(4)], "}"]
                    continue
                head += [f"for (int p = 0; p < {passes}; p++) {{", f"  const {self.index_type} c = {slot};",
                         f"  rc{pos}[p] = c < {cols} ? {load} : {zero};", "}"]
        if quads:
            head += [f"{ctype(out.dtype, self.d)} so{i}[{passes}];" for i, out in enumerate(self.k.outputs)]
            put = self.d.store4_narrow
            for i, out in enumerate(self.k.outputs):
                v = self.d.make4.format(*[f"so{i}[p + {u}]" for u in range(4)])
                ptr = f"out{i} + row * {cols} + c"
                self.root.lines += ["#pragma unroll", f"for (int p = 0; p < {passes}; p += 4) {{",
                                    f"  const {self.index_type} c = (lid + (p >> 2) * {size}) * 4;",
                                    f"  if (c < {cols}) {put.get(out.dtype.name, self.d.store4).format(ptr=ptr, v=v)}",
                                    "}"]
        return self.program(rows * size, size, head)

