"""Driver side: lowers one kernel (output nodes over input nodes, from the kernelizer) to C source.
Takes a `Kernel`; gives a `Program` (source, entry name, work sizes, cost figures) for a dialect:
`OPENCL` (OpenCL C) or `CUDA` (CUDA C for NVRTC). Both share all of the renderer; a `Dialect` holds
only the spellings that differ (qualifiers, type names, the global id, float16 loads and stores,
the preamble), and the program name carries the dialect (`k_<hash>` / `kc_<hash>`).

How the work is laid out comes from the kernel's `KernelOpts` (see `options.py`; the autotuner picks
them): one element per work-item, several a grid apart, or 4 adjacent ones through float4 loads and
stores; a work-group per output sharing its reduce loops; a work-group per row for row kernels (the
per-row reduces as in-group reductions, the row optionally held in registers); the tiled GEMM
(`gemm.py`) for matmul-shaped kernels. The program name carries the options too. A node is evaluated at a symbolic
index (one expression per dim): movement ops only rewrite the index, so they cost nothing. A chain of
reshapes, permutes, expands, flips and crops is one stack of strided views (`views.py`), a reshape that
no strides express holding its flat index in one temporary; a pad shifts and adds a validity condition.
Evaluation runs on an explicit stack (each node's computation a generator), never recursing. Loads under a validity condition are guarded (`c ? buf[i] : 0`) and a pad selects
its value with `?:`, so padding never reads through to real data. A reduce opens a `for` loop; values
are placed in the outermost loop where their index is defined (so loop-invariant work is hoisted),
and shared subexpressions are computed once per loop level. An `arange(n)` leaf (`ir.IOTA`) is its index, not a
load, and a gather's one-hot reduce (the sum over an axis of where(p == arange, x, 0)) is one guarded load of x
at p, with no loop.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Generator

from ..dtypes import DType, bfloat16, bool_, float16, float64
from ..fuse.kernelize import Kernel
from ..graph.ir import IOTA, BinaryOp, Node, Op, ReduceOp, prod
from . import (
    attention,
    attention_grad,
    attention_tc,
    attention_tma,
    contraction_forms,
    gemm,
    gemm_tc,
    gemm_wgmma,
    options,
)
from . import symbolic as sym
from .blocks import Block
from .cexpr import all_nodes, binary_op, ctype, flat_index, limit, literal, preamble, render_conds, strides, unary
from .dialects import CUDA, CUDA_SM90A, DIALECTS, OPENCL, Dialect  # noqa: F401 -- re-exported
from .loop_reads import reads_along_memory
from .options import KernelOpts
from .program import Program, kernel_key
from .rows import RowKernels
from .symbolic import tangled
from .views import chain, is_view_op

# what an evaluation generator yields (node, index, validity, block), is sent and returns (C expression, block)
Evaluation = Generator[tuple, tuple, tuple[str, Block]]




def _terms(e: sym.Expr) -> tuple:
    """An expression's terms and constant, in no particular order (two sums in different orders agree)."""
    s = e if isinstance(e, sym.Sum) else sym.Sum(((e, 1),), 0)
    return frozenset(s.terms), s.const


# the binary op that accumulates each reduction
COMBINE = {ReduceOp.SUM: BinaryOp.ADD, ReduceOp.PROD: BinaryOp.MUL, ReduceOp.MAX: BinaryOp.MAX, ReduceOp.MIN: BinaryOp.MIN}

class _Renderer(RowKernels):
    def __init__(self, kernel: Kernel, dialect: Dialect, name: str, opts: KernelOpts):
        self.k, self.d, self.name, self.opts = kernel, dialect, name, opts
        self.inputs = {n.id: i for i, n in enumerate(kernel.inputs)}
        self.count = 0
        self.flops = 0
        self.uses_fp64 = any(n.dtype is float64 for n in kernel.inputs + kernel.outputs)
        # every index (loop counters over expanded intermediates too) must fit the index type
        biggest = max([n.size for n in kernel.inputs + all_nodes(kernel)] + [1])
        self.index = "int" if biggest < 2**31 - 1 else "long"
        self.index_type = dialect.type(self.index)
        self.root = Block(None)
        self.overrides: dict[int, str] = {}  # node id -> a C expression that stands for its value
        self.quad: list[str] = []  # vector form: the index variable of each of the 4 elements
        self.vec_inputs: dict[int, str] = {}  # vector form: input position -> its float4 of the lanes
        self.lane: int | None = None  # the lane of a reduce loop being evaluated (loops with `lanes`)
        self.lane_loads: list[tuple] = []  # (input position, lane, offset, variable, block) of lane loads
        self.row_of: tuple[sym.Var, int] | None = None  # cached row form: the row variable and the row's length
        self.row_cache: dict[int, str] = {}  # cached row form: input position -> the load of its element at `c`
        self.plain_loads: list[tuple[int, sym.Expr]] = []  # (input position, offset) of each unguarded scalar load

    def var(self, block: Block, dt: DType, expr: str, prefix: str = "v") -> str:
        name = f"{prefix}{self.count}"
        self.count += 1
        block.lines.append(f"{ctype(dt, self.d)} {name} = {expr};")
        return name

    # ---- evaluation of a node at a symbolic index ----------------------------------------------------
    # Each value is (C expression, home block): the outermost block where everything it reads is
    # defined. An op lives in the innermost home of its operands, so loop-invariant work is hoisted.

    def home(self, block: Block, idx: tuple, valid: frozenset) -> Block:
        """The outermost block (from `block` up) in which the variables of idx and valid are defined."""
        used: set[str] = set()
        for e in idx:
            used |= sym.variables(e)
        for c in valid:
            used |= sym.variables(c[0])
        while block.parent is not None and (block.var is None or block.var.name not in used):
            block = block.parent
        return block

    def value(self, n: Node, idx: tuple, valid: frozenset, block: Block) -> tuple[str, Block]:
        """(C expression, home block) of node n at idx. Each `compute` is a generator that yields the
        operand values it needs; this loop runs them on an explicit stack, so a chain of any depth renders."""
        stack: list = []
        result = self.lookup(n, idx, valid, block, stack)
        while stack:
            key, gen = stack[-1]
            try:
                request = gen.send(result)
            except StopIteration as done:
                stack.pop()
                result = done.value
                result[1].memo[key] = result
                continue
            result = self.lookup(*request, stack)
        return result

    def lookup(self, n: Node, idx: tuple, valid: frozenset, block: Block, stack: list) -> tuple[str, Block] | None:
        """The memoized value of n at idx visible from block, else None with its computation pushed."""
        key = (n.id, idx, valid)
        b: Block | None = block
        while b is not None:
            if key in b.memo:
                return b.memo[key]
            b = b.parent
        stack.append((key, self.compute(n, idx, valid, block)))
        return None

    def compute(self, n: Node, idx: tuple, valid: frozenset, block: Block) -> Evaluation:
        """A generator: yields (node, idx, valid, block) for each operand and receives its value; returns
        (C expression, home block)."""
        if n.id in self.overrides:
            return self.overrides[n.id], self.root
        if n.id in self.inputs:
            return self.load(n, idx, valid, block)
        op = n.op
        if op is Op.CONST:
            return literal(n.arg, n.dtype, self.d), self.root
        if is_view_op(n):
            base, views = chain(n, lambda x: x.id in self.inputs or x.id in self.overrides)
            return (yield base, self.through(views, idx, base.shape, block), valid, block)
        if op is Op.PAD:
            return (yield from self.pad(n, idx, valid, block))
        if op is Op.REDUCE:
            return (yield from self.reduce(n, idx, valid, block))
        vals = []
        for s in n.srcs:
            vals.append((yield s, idx, valid, block))
        srcs = [v[0] for v in vals]
        at = max((v[1] for v in vals), key=lambda b: b.depth)
        self.flops += 1
        if op is Op.CAST:
            expr = self.cast(srcs[0], n.srcs[0].dtype, n.dtype, at)
        elif op is Op.WHERE:
            expr = f"({srcs[0]} ? {srcs[1]} : {srcs[2]})"
        elif op is Op.UNARY:
            expr = unary(n.arg, srcs[0], n.srcs[0].dtype, self.d)
        else:
            expr = self.binary(n.arg, srcs[0], srcs[1], n.srcs[0].dtype, at)
        return self.var(at, n.dtype, expr), at

    def through(self, views: list, idx: tuple, shape: tuple[int, ...], block: Block) -> tuple:
        """The index into the node of `shape` under a stack of views (lowest first), given the index into
        the top view. Where a view's flat position does not split into clean digits of its variables (a
        reshape strides could not express), it is held in a temporary, so each view adds one line."""
        flat = views[-1].index(idx)
        for v in reversed(views[:-1]):
            flat = v.index(self.split(flat, v.shape, block))
        return self.split(flat, shape, block)

    def split(self, flat: sym.Expr, shape: tuple[int, ...], block: Block) -> tuple:
        idx = flat_index(shape, flat)
        if not any(tangled(e) for e in idx):
            return idx
        key = ("flat", flat)
        b: Block | None = block
        while b is not None and key not in b.memo:
            b = b.parent
        if b is None:
            at = self.home(block, (flat,), frozenset())
            name = f"ix{self.count}"
            self.count += 1
            at.lines.append(f"{self.index_type} {name} = {sym.render(flat)};")
            at.memo[key] = sym.Var(name, flat.lo, flat.hi, flat.names)
            b = at
        return flat_index(shape, b.memo[key])

    def load(self, n: Node, idx: tuple, valid: frozenset, block: Block) -> tuple[str, Block]:
        if n.op is Op.LEAF and n.arg == IOTA:  # arange(n): its value is its position, no load
            at = self.home(block, idx, valid)
            expr = f"(({ctype(n.dtype, self.d)})({sym.render(idx[0])}))"
            if valid:
                expr = f"({render_conds(valid)} ? {expr} : {literal(0, n.dtype, self.d)})"
            return self.var(at, n.dtype, expr, "io"), at
        offset = sym.add(*[sym.mul(e, s) for e, s in zip(idx, strides(n.shape)) if s])
        off = sym.render(offset)
        arg = f"in{self.inputs[n.id]}"
        at = self.home(block, idx, valid)
        mine = self.row_offset(at)
        if not valid and mine is not None and _terms(offset) == _terms(mine):  # the row's own element: read
            pos = self.inputs[n.id]                                          # once, kept in registers
            row, cols = self.row_of
            self.row_cache[pos] = self.typed_load(n, arg, sym.render(sym.add(sym.mul(row, cols),
                                                                             sym.Var("c", 0, cols - 1))))
            return f"rc{pos}[p]", at
        if off in self.quad and not valid and self.vector_io(n.dtype):  # one float4 load serves the quad
            pos = self.inputs[n.id]
            vec = self.vec_inputs.setdefault(pos, f"vin{pos}")
            return f"{vec}.{'xyzw'[self.quad.index(off)]}", self.root
        expr = self.typed_load(n, arg, off)
        if valid:
            expr = f"({render_conds(valid)} ? {expr} : {literal(0, n.dtype, self.d)})"
        else:
            self.plain_loads.append((self.inputs[n.id], offset))
        name = self.var(at, n.dtype, expr, "ld")
        if self.lane is not None and not valid:  # a candidate for one vector load with the other lanes
            self.lane_loads.append((self.inputs[n.id], self.lane, offset, name, at))
        return name, at

    def row_offset(self, block: Block) -> sym.Expr | None:
        """Cached row form: in a pass over the row (a top-level loop as long as the row), the offset of
        the row's own element, which is served from registers."""
        if self.row_of is None or block.parent is not self.root or block.var is None:
            return None
        row, cols = self.row_of
        if block.var.hi + 1 != cols or (block.reduce is None and block.var.name != "j"):
            return None
        return sym.add(sym.mul(row, cols), block.var)

    def typed_load(self, n: Node, arg: str, off: str) -> str:
        if n.dtype is float16:
            return self.d.load_half.format(off=off, arg=arg)
        if n.dtype is bfloat16:
            return self.d.load_bf16.format(off=off, arg=arg)
        if n.dtype is bool_:
            return f"({arg}[{off}] != 0)"
        return f"{arg}[{off}]"

    def pad(self, n: Node, idx: tuple, valid: frozenset, block: Block) -> Evaluation:
        widths, value = n.arg
        src = n.srcs[0]
        inner = []
        conds = set()
        for e, (lo, _hi), d in zip(idx, widths, src.shape):
            e2 = sym.add(e, -lo)
            inner.append(e2)
            c = sym.cond(e2, 0, d - 1)
            if c is False:
                return literal(value, n.dtype, self.d), self.root
            if c is not True:
                conds.add(c)
        if not conds:
            return (yield src, tuple(inner), valid, block)
        v, vat = yield src, tuple(inner), valid | frozenset(conds), block
        at = max((vat, self.home(block, (), frozenset(conds))), key=lambda b: b.depth)
        return self.var(at, n.dtype, f"({render_conds(conds)} ? {v} : {literal(value, n.dtype, self.d)})"), at

    def reduce(self, n: Node, idx: tuple, valid: frozenset, block: Block) -> Evaluation:
        rop, axes = n.arg
        src = n.srcs[0]
        size = prod(src.shape[a] for a in axes)
        at = self.home(block, idx, valid)
        pick = self.one_hot(n, idx) if at is self.root and self.row_of is None else None
        if pick is not None:
            return (yield from self.picked(n, idx, valid, *pick))
        # a top-level loop of a kernel without work-groups may run `lanes` iterations per pass, each with
        # its own accumulator, and read them with one vector load where they are adjacent (CPUs)
        width = self.opts.lanes if at is self.root and not self.opts.group and not self.quad else 0
        width = width if width and size % width == 0 and size > width else 1
        loop = Block(at, sym.Var(f"r{self.count}", 0, size // width - 1))
        self.count += 1
        dt = n.dtype
        acc = f"acc{self.count}"
        self.count += 1
        identity = {ReduceOp.SUM: literal(0, dt, self.d), ReduceOp.PROD: literal(1, dt, self.d),
                    ReduceOp.MAX: limit(dt, True, self.d), ReduceOp.MIN: limit(dt, False, self.d)}[rop]
        loop.reduce = (acc, dt, rop)  # before the body, which asks whether it is in a reduce loop
        accs = [acc] if width == 1 else [f"{acc}_{u}" for u in range(width)]
        loads_before = len(self.lane_loads)
        for u, name in enumerate(accs):
            rest: sym.Expr = loop.var if width == 1 else sym.add(sym.mul(loop.var, width), u)
            inner = list(idx)
            for a in reversed(axes):  # split the flat loop index into the reduced dims, last fastest
                d = src.shape[a]
                inner[a] = sym.mod(rest, d)
                rest = sym.div(rest, d)
            self.lane = u if width > 1 else None
            v, _ = yield src, tuple(inner), valid, loop
            loop.lines.append(self.update(rop, dt, name, v, loop))
            loop.before_loop.append(f"{ctype(dt, self.d)} {name} = {identity};")
        self.lane = None
        self.flops += size
        if width > 1:
            self.merge_lane_loads(loop, width, self.lane_loads[loads_before:])
            del self.lane_loads[loads_before:]
            total = accs
            while len(total) > 1:  # combined pairwise, as NumPy's pairwise sum does
                total = [self.combine(rop, dt, a, b) for a, b in zip(total[::2], total[1::2])]
            loop.after_loop.append(f"{ctype(dt, self.d)} {acc} = {total[0]};")
        at.lines.append(loop)
        return acc, at

    def update(self, rop: ReduceOp, dt: DType, acc: str, v: str, loop: Block) -> str:
        return f"{acc} = {self.binary(COMBINE[rop], acc, v, dt, loop)};"

    def combine(self, rop: ReduceOp, dt: DType, a: str, b: str) -> str:
        """Two partial results of a reduction as one (binary_op's semantics: bools or/and, signed ints wrap)."""
        return self.binary(COMBINE[rop], a, b, dt, self.root)

    def merge_lane_loads(self, loop: Block, width: int, loads: list[tuple]) -> None:
        """Where the lanes of a loop load `width` adjacent float32 elements of one input (lane u at lane 0's
        offset + u), one vector load replaces their scalar loads (OpenCL's vloadN; CUDA keeps scalars)."""
        if self.d.name != "opencl":
            return
        by_input: dict[int, list[list[tuple]]] = {}
        for pos, lane, off, name, block in loads:
            if block is loop and self.k.inputs[pos].dtype.name == "float32":
                by_input.setdefault(pos, [[] for _ in range(width)])[lane].append((off, name))
        for pos, lanes in by_input.items():
            if len({len(ln) for ln in lanes}) != 1:
                continue  # some lane shares a load with another: no one-to-one match
            for k in range(len(lanes[0])):
                base = lanes[0][k][0]
                if any(sym.render(lanes[u][k][0]) != sym.render(sym.add(base, u)) for u in range(1, width)):
                    continue
                vec = f"vl{self.count}"
                self.count += 1
                for u in range(width):
                    name = lanes[u][k][1]
                    i = next(i for i, ln in enumerate(loop.lines) if isinstance(ln, str) and ln.startswith(f"float {name} = "))
                    loop.lines[i] = f"float {name} = {vec}.s{u};"
                    if u == 0:
                        loop.lines.insert(i, f"const float{width} {vec} = vload{width}(0, in{pos} + {sym.render(base)});")

    def cast(self, x: str, src: DType, dst: DType, block: Block) -> str:
        if dst is bool_:
            return f"({x} != 0)"
        if dst is bfloat16:  # from double through float, as ml_dtypes converts
            return f"zd_bf16_round((float)({x}))"
        if dst is float16:  # round to half precision (OpenCL: through a private half slot)
            stmt, expr = self.d.round_half_double if src is float64 and self.d.round_half_double else self.d.round_half
            tmp = f"h{self.count}"
            if stmt:
                self.count += 1
                block.lines.append(stmt.format(x=x, tmp=tmp))
            return expr.format(x=x, tmp=tmp)
        return f"(({ctype(dst, self.d)})({x}))"

    def binary(self, op: BinaryOp, a: str, b: str, dt: DType, block: Block) -> str:
        if op is BinaryOp.POW and not dt.is_float:
            self.flops += 8  # the integer power's loop
        return binary_op(op, a, b, dt, self.d, lambda t, expr: self.var(block, t, expr))

    # ---- the kernel ------------------------------------------------------------------------------------

    def params(self) -> list[str]:
        d = self.d
        params = [f"{d.global_ptr}const {d.type(n.dtype.cname)}* {d.restrict} in{i}" for i, n in enumerate(self.k.inputs)]
        params += [f"{d.global_ptr}{d.type(o.dtype.cname)}* {d.restrict} out{i}" for i, o in enumerate(self.k.outputs)]
        return params

    def store(self, i: int, o: Node, v: str) -> str:
        if o.dtype is float16:
            return self.d.store_half.format(v=v, arg=f"out{i}")
        if o.dtype is bfloat16:
            return self.d.store_bf16.format(v=v, arg=f"out{i}")
        return f"out{i}[gid] = ({self.d.type(o.dtype.cname)})({v});"

    def elementwise_body(self, block: Block, idx: tuple) -> list[str]:
        """Evaluate the outputs at `idx` in `block`; gives their stores (at `gid`)."""
        return [self.store(i, o, self.value(o, idx, frozenset(), block)[0]) for i, o in enumerate(self.k.outputs)]

    def shape_facts(self, loops: int, shortest: int, row: int, gpu: bool, max_lws: int) -> options.Shape:
        vectorisable = not loops and all(self.vector_io(o.dtype) for o in self.k.outputs)
        return options.Shape(prod(self.k.shape), loops, shortest, row, False, vectorisable, self.d.name, gpu, max_lws)

    def render(self) -> Program:
        fused = attention.match(self.k)
        if fused is not None:
            return self.render_gemm(fused.spec, fused)
        grad = attention_grad.match(self.k) if self.d.name == "cuda" else None
        if grad is not None:
            return self.render_gemm(grad.spec, grad=grad)
        if apart(self.k):
            return self.render_apart()
        spec = gemm.match(self.k) if self.opts.tile != gemm.PLAIN else None
        if spec is not None:
            return self.render_gemm(spec)
        if self.k.row:
            return self.render_rows(self.k.row)
        total = prod(self.k.shape)
        gid = sym.Var("gid", 0, total - 1)
        stores = self.elementwise_body(self.root, flat_index(self.k.shape, gid))
        loops = [item for item in self.root.lines if isinstance(item, Block)]
        o = self.opts
        if loops and o.group and o.group < 32 and self.d.name == "cuda":
            return self.render_lane_groups(loops, stores, total)
        if loops and o.group:  # one work-group per output element, work-item 0 stores
            self.group_loops(loops, o.group)
            self.root.lines += ["if (lid == 0) {", *["  " + ln for ln in stores], "}"]
            return self.program(total * o.group, o.group, [f"{self.index_type} gid = {self.d.group_id};",
                                                          f"int lid = {self.d.local_id};"])
        self.root.lines += stores
        if loops or (o.vec == 1 and o.elems == 1):
            threads = -(-total // o.lws) * o.lws
            head = [f"{self.index_type} gid = {self.d.global_id[self.index]};"]
            if loops and self.d.name == "opencl":  # the call at each use: Intel's OpenCL CPU compiler (2026.2)
                # gave a select on this variable inside a loop (`(gid<=0) ? in1[r] : 0`) work-item 0's side for all
                head = [f"#define gid (({self.index_type}){self.d.global_id[self.index]})"]
            if threads != total:
                head.append(f"if (gid >= {total}) return;")
            return self.program(threads, o.lws, head)
        if o.vec == 1 or not all(self.vector_io(out.dtype) for out in self.k.outputs):
            # `elems` elements per work-item, a grid apart: more loads in flight, still coalesced
            threads = -(-total // (o.lws * o.elems)) * o.lws
            body = [f"{self.index_type} base = {self.d.global_id[self.index]};",
                    f"for (int u = 0; u < {o.elems}; u++) {{", f"  {self.index_type} gid = base + u * {threads};",
                    f"  if (gid < {total}) {{", *["    " + ln for ln in self.root.emit(0, self.index_type)], "  }", "}"]
            return self.program(threads, o.lws, body, emit=False)
        return self.render_vector(total)

    def render_lane_groups(self, loops: list, stores: list[str], total: int) -> Program:
        """CUDA: `group` lanes of a warp per output element, `lws / group` elements per work-group (many short
        rows summed along memory: an attention's D, 98304 rows of 64; a 32-lane work-group each held half an
        SM's threads at most and read 64 us where the bytes take ~10). The lanes of an element past the end
        recompute the last one, so that every lane reaches the shuffles; only the first lane of a real one stores."""
        o, T = self.opts, self.index_type
        size = o.group
        per = o.lws // size
        self.group_loops(loops, size)
        self.root.lines += [f"if (lid == 0 && row < {total}) {{", *["  " + ln for ln in stores], "}"]
        head = [f"const {T} row = ({T}){self.d.group_id} * {per} + {self.d.local_id} / {size};",
                f"const {T} gid = row < {total} ? row : {total - 1};", f"int lid = {self.d.local_id} % {size};"]
        return self.program(-(-total // per) * o.lws, o.lws, head)

    def render_apart(self) -> Program:
        """A kernel whose outputs differ in shape (an attention's output and its row statistics, where the fused
        attention kernel does not take the kernel): plain loops, each output over its own indices, in one launch."""
        T, lws = self.index_type, self.opts.lws
        total = max(o.size for o in self.k.outputs)
        lines = [f"{T} gid = {self.d.global_id[self.index]};"]
        for i, o in enumerate(self.k.outputs):
            sub = _Renderer(self.k, self.d, self.name, self.opts)
            v, _ = sub.value(o, flat_index(o.shape, sym.Var("gid", 0, o.size - 1)), frozenset(), sub.root)
            lines += [f"if (gid < {o.size}) {{", *["  " + ln for ln in sub.root.emit(0, T, self.opts.unroll)],
                      "  " + sub.store(i, o, v), "}"]
            self.flops += sub.flops * o.size // max(prod(self.k.shape), 1)
        return self.program(-(-total // lws) * lws, lws, lines, emit=False)

    def vector_io(self, dtype) -> bool:
        """Whether the vector form reads and writes `dtype` four elements at once: float32, and the half types
        where the dialect packs them (CUDA: 8 bytes, widened to a float4)."""
        return dtype.name == "float32" or dtype.name in self.d.load4_narrow

    def render_vector(self, total: int) -> Program:
        """Loop-free kernels, 4 adjacent elements per work-item (`elems` such quads, a grid apart): inputs
        read at the output's own index come as one float4 (half types as 8 bytes, widened), outputs leave as
        one; a quad that runs past the end falls back to the scalar code, element by element."""
        o, T = self.opts, self.index_type
        quads = -(-total // 4)
        threads = -(-quads // (o.lws * o.elems)) * o.lws
        quad = _Renderer(self.k, self.d, self.name, o)
        quad.quad = [f"g{u}" for u in range(4)]
        values = [[quad.value(out, flat_index(self.k.shape, sym.Var(g, 0, total - 1)), frozenset(), quad.root)[0]
                   for g in quad.quad] for out in self.k.outputs]
        body = [f"{T} g{u} = first + {u};" for u in range(4)]
        loads, stores = self.d.load4_narrow, self.d.store4_narrow
        body += [f"const float4 {v} = {loads.get(self.k.inputs[pos].dtype.name, self.d.load4).format(ptr=f'in{pos} + first')};"
                 for pos, v in quad.vec_inputs.items()]
        body += quad.root.emit(0, T)
        body += [stores.get(out.dtype.name, self.d.store4).format(ptr=f"out{i} + first", v=self.d.make4.format(*vs))
                 for i, (out, vs) in enumerate(zip(self.k.outputs, values))]
        scalar = self.root.emit(0, T)
        src = [f"{T} base = {self.d.global_id[self.index]};",
               f"for (int q = 0; q < {o.elems}; q++) {{",
               f"  const {T} first = (base + q * {threads}) * 4;",
               f"  if (first + 3 < {total}) {{", *["    " + ln for ln in body], "  } else {",
               f"    for ({T} gid = first; gid < {total} && gid < first + 4; gid++) {{",
               *["      " + ln for ln in scalar], "    }", "  }", "}"]
        return self.program(threads, o.lws, src, emit=False)

    def program(self, threads: int, lws: int, head: list[str], emit: bool = True) -> Program:
        """The kernel's source around `head` (and the emitted blocks, unless `head` already holds them)."""
        src = preamble(self.k, self.d, self.uses_fp64)
        src.append(f"{self.d.kernel_prefix} {self.name}({', '.join(self.params())}) {{")
        src += ["  " + ln for ln in head]
        if emit:
            src += ["  " + ln for ln in self.root.emit(0, self.index_type, self.opts.unroll)]
        src.append("}")
        nbytes = sum(n.size * n.dtype.itemsize for n in self.k.inputs + self.k.outputs)
        return Program(self.name, "\n".join(src) + "\n", (threads,), (lws,), self.uses_fp64,
                       self.flops * prod(self.k.shape), nbytes, self.d.name, self.opts)

    def render_gemm(self, spec: gemm.GemmSpec, fused: attention.AttentionSpec | None = None,
                    grad: attention_grad.GradSpec | None = None) -> Program:
        """The GEMM template (or, with `fused`, the attention kernel; with `grad`, an attention's backward
        product) around this kernel: its operands and
        its epilogue evaluated by renderers of their own (each in its own C scope), the reduce standing
        for the accumulator `acc`."""
        out = self.k.outputs[0]
        # indices address the inputs and the output only (never the product, which is not materialised)
        T = self.d.type("int" if max(n.size for n in self.k.inputs + self.k.outputs) < 2**31 - 1 else "long")

        def operand(node: Node, idx: tuple, overrides: dict | None = None) -> tuple[list[str], str]:
            sub = _Renderer(self.k, self.d, self.name, self.opts)
            sub.overrides.update(overrides or {})
            v, _ = sub.value(node, idx, frozenset(), sub.root)
            return sub.root.emit(0, T), v

        reads: list[tuple[int, sym.Expr]] = []  # the epilogue's plain loads, as its last rendering made them

        # the outputs of the kernel's shape (an attention's row statistics, last, are stored by `row_stats`)
        outputs = self.k.outputs[:len(self.k.outputs) - len(fused.stats)] if fused is not None else self.k.outputs

        def epilogue(flat: sym.Expr) -> list[str]:  # every output at `flat`: their shared work once
            sub = _Renderer(self.k, self.d, self.name, self.opts)
            sub.overrides[spec.reduce.id] = "acc"
            idx = flat_index(out.shape, flat)
            values = [sub.value(o, idx, frozenset(), sub.root)[0] for o in outputs]
            reads[:] = sub.plain_loads
            return [f"const {T} gid = {sym.render(flat)};", *sub.root.emit(0, T),
                    *(sub.store(i, o, v) for i, (o, v) in enumerate(zip(outputs, values)))]

        def row_stats(m: str, l: str) -> list[str]:
            return fused.row_stats(m, l, operand, self.store, T)

        body, gws, lws = contraction_forms.render_body(spec, fused, grad, self.name, self.k, self.d, self.params(),
                                                       operand, epilogue, T, self.opts, row_stats, reads)
        src = preamble(self.k, self.d, self.uses_fp64) + [body]
        nbytes = sum(n.size * n.dtype.itemsize for n in self.k.inputs + self.k.outputs)
        return Program(self.name, "\n".join(src), gws, lws, self.uses_fp64, contraction_forms.flops(spec, fused, grad),
                       nbytes, self.d.name, self.opts)


def apart(kernel: Kernel) -> bool:
    """Whether the kernel's outputs differ in shape (`_Renderer.render_apart`)."""
    return any(o.shape != kernel.shape for o in kernel.outputs)


def facts(kernel: Kernel, dialect: Dialect | str = OPENCL, gpu: bool | None = None,
          max_lws: int = 1024) -> options.Shape:
    """What the kernel's candidate options depend on (`gpu` defaults to whether the dialect is CUDA)."""
    d = DIALECTS[dialect] if isinstance(dialect, str) else dialect
    gpu = d.name == "cuda" if gpu is None else gpu
    r = _Renderer(kernel, d, "probe", KernelOpts())
    fused = attention.match(kernel)
    if fused is not None:  # one form, or more where wgmma (and TMA) can run it
        return options.Shape(prod(kernel.shape), 1, 0, 0, False, False, d.name, gpu, max_lws, attention=True,
                             wgmma=attention_tc.wgmma_usable(fused, d), tma=attention_tma.usable(fused, kernel, d))
    grad = attention_grad.match(kernel) if d.name == "cuda" else None
    if grad is not None:  # mma.sync's form, and wgmma's where it runs
        return options.Shape(prod(kernel.shape), 1, 0, 0, False, False, d.name, gpu, max_lws, attention=True,
                             wgmma=attention_grad.wgmma_usable(grad, kernel, d))
    if apart(kernel):
        return options.Shape(prod(kernel.shape), 1, 0, 0, False, False, d.name, gpu, max_lws)
    spec = gemm.match(kernel)
    if spec is not None:
        tc = gemm_tc.usable(spec, kernel, d)
        return options.Shape(prod(kernel.shape), 1, spec.K, 0, True, False, d.name, gpu, max_lws,
                             (spec.B, spec.M, spec.N, spec.K), tc, wgmma=d.wgmma and tc,
                             tma=d.wgmma and tc and gemm_wgmma.tma_usable(spec))
    if kernel.row:
        cols, size = prod(kernel.shape[-kernel.row:]), prod(kernel.shape)
        slots = sum(n.size == size for n in kernel.inputs) + len(kernel.outputs)
        return dataclasses.replace(r.shape_facts(1, 0, cols, gpu, max_lws), quads=r.quads_fit(cols), row_slots=slots)
    r.elementwise_body(r.root, flat_index(kernel.shape, sym.Var("gid", 0, max(prod(kernel.shape) - 1, 0))))
    loops = [b.var.hi + 1 for b in r.root.lines if isinstance(b, Block)]
    shape = r.shape_facts(len(loops), min(loops, default=0), 0, gpu, max_lws)
    return dataclasses.replace(shape, inner=bool(loops) and reads_along_memory(kernel))


def render_kernel(kernel: Kernel, dialect: Dialect | str = OPENCL, opts: KernelOpts | None = None,
                  gpu: bool | None = None) -> Program:
    """The kernel rendered in `dialect` (a `Dialect` or its name, "opencl" or "cuda") with `opts` (default:
    the cost model's first choice for a GPU or a CPU; `gpu` defaults to whether the dialect is CUDA)."""
    if isinstance(dialect, str):
        dialect = DIALECTS[dialect]
    if opts is None:
        opts = options.default(facts(kernel, dialect, gpu))
    key = kernel_key(kernel)
    name = dialect.prefix + hashlib.sha1((repr(key) + opts.tag()).encode()).hexdigest()[:12]
    return _Renderer(kernel, dialect, name, opts).render()
