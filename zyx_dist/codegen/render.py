"""Driver side: lowers one kernel (output nodes over input nodes, from the kernelizer) to C source.
Takes a `Kernel`; gives a `Program` (source, entry name, work sizes, cost figures) for a dialect:
`OPENCL` (OpenCL C) or `CUDA` (CUDA C for NVRTC). Both share all of the renderer; a `Dialect` holds
only the spellings that differ (qualifiers, type names, the global id, float16 loads and stores,
the preamble), and the program name carries the dialect (`k_<hash>` / `kc_<hash>`).

Each work-item computes one element of the kernel's output shape. A node is evaluated at a symbolic
index (one expression per dim): movement ops only rewrite the index (permute reorders, expand zeroes,
reshape flattens and splits by div/mod, flip mirrors, pad shifts and adds a validity condition), so
they cost nothing. Loads under a validity condition are guarded (`c ? buf[i] : 0`) and a pad selects
its value with `?:`, so padding never reads through to real data. A reduce opens a `for` loop; values
are placed in the outermost loop where their index is defined (so loop-invariant work is hoisted),
and shared subexpressions are computed once per loop level.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass

from ..dtypes import DType, bool_, float16, float64
from ..graph import BinaryOp, Node, Op, ReduceOp, UnaryOp, prod
from ..kernelize import Kernel
from . import gemm
from . import symbolic as sym
from .dialects import CUDA, DIALECTS, OPENCL, Dialect  # noqa: F401 -- re-exported


@dataclass(frozen=True)
class Program:
    name: str
    source: str
    gws: tuple[int, ...]
    lws: tuple[int, ...] | None
    uses_fp64: bool
    flops: int
    bytes: int
    dialect: str = "opencl"




def ctype(dt: DType, dialect: Dialect = OPENCL) -> str:
    """C type used for computing in registers (half is computed in float, as PoCL lacks cl_khr_fp16)."""
    return "float" if dt is float16 else "bool" if dt is bool_ else dialect.type(dt.cname)


def literal(value, dt: DType, dialect: Dialect = OPENCL) -> str:
    if dt is bool_:
        return "true" if value else "false"
    if dt.is_float:
        v = float(value)
        if math.isnan(v):
            return "NAN"
        if math.isinf(v):
            return "INFINITY" if v > 0 else "(-INFINITY)"
        return repr(v) + ("" if dt is float64 else "f")
    v = int(value)
    if dt.is_unsigned:
        return f"{v}u" if dt.itemsize <= 4 else f"{v}{dialect.int_suffix[(8, True)]}"
    if dt.itemsize == 8:
        sfx = dialect.int_suffix[(8, False)]
        return f"{v}{sfx}" if v != -(2**63) else f"(-9223372036854775807{sfx}-1{sfx})"
    if dt.itemsize == 4:
        return str(v) if v != -(2**31) else "(-2147483647-1)"
    return f"(({dialect.type(dt.cname)}){v})"


def _limit(dt: DType, low: bool, dialect: Dialect = OPENCL) -> str:
    if dt is bool_:
        return "false" if low else "true"
    if dt.is_float:
        return "(-INFINITY)" if low else "INFINITY"
    info = __import__("numpy").iinfo(dt.np_dtype)
    return literal(info.min if low else info.max, dt, dialect)


def kernel_key(k: Kernel) -> tuple:
    """A structural key of the kernel (ops, shapes, dtypes; inputs by position): equal keys render equal code."""
    pos = {n.id: i for i, n in enumerate(k.inputs)}
    local: dict[int, int] = {}
    rows: list[tuple] = []

    def visit(n: Node) -> int:
        if n.id in local:
            return local[n.id]
        if n.id in pos:
            row: tuple = ("in", pos[n.id], n.shape, n.dtype.name)
        else:
            srcs = tuple(visit(s) for s in n.srcs)
            arg = n.arg.name if isinstance(n.arg, DType) else n.arg
            row = (n.op.value, repr(arg), n.shape, n.dtype.name, srcs)
        rows.append(row)
        local[n.id] = len(rows) - 1
        return local[n.id]

    outs = tuple(visit(o) for o in k.outputs)
    return tuple(rows), outs


class _Block:
    """A scope of generated code: the kernel body or one reduce loop."""

    def __init__(self, parent: _Block | None, var: sym.Var | None = None):
        self.parent, self.var = parent, var
        self.depth = 0 if parent is None else parent.depth + 1
        self.lines: list = []  # str or _Block (a nested loop)
        self.memo: dict = {}
        self.before_loop: list[str] = []  # accumulator declarations, placed before this loop
        self.reduce: tuple | None = None  # (accumulator, dtype, ReduceOp) of a reduce loop
        self.group: tuple[str, int, list[str]] | None = None  # in-group reduce: (local id, size, combine code)

    def emit(self, indent: int, index_type: str) -> list[str]:
        out: list[str] = []
        for item in self.lines:
            if isinstance(item, _Block):
                pad = "  " * indent
                out += [pad + s for s in item.before_loop]
                v = item.var
                assert v is not None
                if item.group is None:
                    out.append(f"{pad}for ({index_type} {v.name} = 0; {v.name} < {v.hi + 1}; {v.name}++) {{")
                else:  # the work-group shares the loop, then combines its partial results in local memory
                    lid, size, _ = item.group
                    out.append(f"{pad}for ({index_type} {v.name} = {lid}; {v.name} < {v.hi + 1}; "
                               f"{v.name} += {size}) {{")
                out += item.emit(indent + 1, index_type)
                out.append(pad + "}")
                if item.group is not None:
                    out += [pad + ln for ln in item.group[2]]
            else:
                out.append("  " * indent + item)
        return out


class _Renderer:
    def __init__(self, kernel: Kernel, dialect: Dialect, name: str):
        self.k, self.d, self.name = kernel, dialect, name
        self.inputs = {n.id: i for i, n in enumerate(kernel.inputs)}
        self.count = 0
        self.flops = 0
        self.uses_fp64 = any(n.dtype is float64 for n in kernel.inputs + kernel.outputs)
        # every index (loop counters over expanded intermediates too) must fit the index type
        biggest = max([n.size for n in kernel.inputs + _all_nodes(kernel)] + [1])
        self.index = "int" if biggest < 2**31 - 1 else "long"
        self.index_type = dialect.type(self.index)
        self.root = _Block(None)
        self.overrides: dict[int, str] = {}  # node id -> a C expression that stands for its value

    def var(self, block: _Block, dt: DType, expr: str, prefix: str = "v") -> str:
        name = f"{prefix}{self.count}"
        self.count += 1
        block.lines.append(f"{ctype(dt, self.d)} {name} = {expr};")
        return name

    # ---- evaluation of a node at a symbolic index ----------------------------------------------------
    # Each value is (C expression, home block): the outermost block where everything it reads is
    # defined. An op lives in the innermost home of its operands, so loop-invariant work is hoisted.

    def home(self, block: _Block, idx: tuple, valid: frozenset) -> _Block:
        """The outermost block (from `block` up) in which the variables of idx and valid are defined."""
        used: set[str] = set()
        for e in idx:
            used |= sym.variables(e)
        for c in valid:
            used |= sym.variables(c[0])
        while block.parent is not None and (block.var is None or block.var.name not in used):
            block = block.parent
        return block

    def value(self, n: Node, idx: tuple, valid: frozenset, block: _Block) -> tuple[str, _Block]:
        key = (n.id, idx, valid)
        b: _Block | None = block
        while b is not None:
            if key in b.memo:
                return b.memo[key]
            b = b.parent
        out = self.compute(n, idx, valid, block)
        out[1].memo[key] = out
        return out

    def compute(self, n: Node, idx: tuple, valid: frozenset, block: _Block) -> tuple[str, _Block]:
        if n.id in self.overrides:
            return self.overrides[n.id], self.root
        if n.id in self.inputs:
            return self.load(n, idx, valid, block)
        op = n.op
        if op is Op.CONST:
            return literal(n.arg, n.dtype, self.d), self.root
        if op in (Op.RESHAPE, Op.PERMUTE, Op.EXPAND, Op.FLIP):
            return self.value(n.srcs[0], _move(n, idx), valid, block)
        if op is Op.PAD:
            return self.pad(n, idx, valid, block)
        if op is Op.REDUCE:
            return self.reduce(n, idx, valid, block)
        vals = [self.value(s, idx, valid, block) for s in n.srcs]
        srcs = [v[0] for v in vals]
        at = max((v[1] for v in vals), key=lambda b: b.depth)
        self.flops += 1
        if op is Op.CAST:
            expr = self.cast(srcs[0], n.srcs[0].dtype, n.dtype, at)
        elif op is Op.WHERE:
            expr = f"({srcs[0]} ? {srcs[1]} : {srcs[2]})"
        elif op is Op.UNARY:
            expr = _unary(n.arg, srcs[0], n.srcs[0].dtype, self.d)
        else:
            expr = self.binary(n.arg, srcs[0], srcs[1], n.srcs[0].dtype, at)
        return self.var(at, n.dtype, expr), at

    def load(self, n: Node, idx: tuple, valid: frozenset, block: _Block) -> tuple[str, _Block]:
        strides = _strides(n.shape)
        off = sym.render(sym.add(*[sym.mul(e, s) for e, s in zip(idx, strides) if s]))
        arg = f"in{self.inputs[n.id]}"
        if n.dtype is float16:
            expr = self.d.load_half.format(off=off, arg=arg)
        elif n.dtype is bool_:
            expr = f"({arg}[{off}] != 0)"
        else:
            expr = f"{arg}[{off}]"
        if valid:
            expr = f"({_conds(valid)} ? {expr} : {literal(0, n.dtype, self.d)})"
        at = self.home(block, idx, valid)
        return self.var(at, n.dtype, expr, "ld"), at

    def pad(self, n: Node, idx: tuple, valid: frozenset, block: _Block) -> tuple[str, _Block]:
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
            return self.value(src, tuple(inner), valid, block)
        v, vat = self.value(src, tuple(inner), valid | frozenset(conds), block)
        at = max((vat, self.home(block, (), frozenset(conds))), key=lambda b: b.depth)
        return self.var(at, n.dtype, f"({_conds(conds)} ? {v} : {literal(value, n.dtype, self.d)})"), at

    def reduce(self, n: Node, idx: tuple, valid: frozenset, block: _Block) -> tuple[str, _Block]:
        rop, axes = n.arg
        src = n.srcs[0]
        size = prod(src.shape[a] for a in axes)
        at = self.home(block, idx, valid)
        loop = _Block(at, sym.Var(f"r{self.count}", 0, size - 1))
        self.count += 1
        inner = list(idx)
        rest: sym.Expr = loop.var  # type: ignore[assignment]
        for a in reversed(axes):  # split the flat loop index into the reduced dims, last fastest
            d = src.shape[a]
            inner[a] = sym.mod(rest, d)
            rest = sym.div(rest, d)
        dt = n.dtype
        acc = f"acc{self.count}"
        self.count += 1
        identity = {ReduceOp.SUM: literal(0, dt, self.d), ReduceOp.PROD: literal(1, dt, self.d),
                    ReduceOp.MAX: _limit(dt, True, self.d), ReduceOp.MIN: _limit(dt, False, self.d)}[rop]
        v, _ = self.value(src, tuple(inner), valid, loop)
        self.flops += size
        if rop is ReduceOp.SUM:
            update = f"{acc} = {acc} || {v};" if dt is bool_ else f"{acc} += {v};"
        elif rop is ReduceOp.PROD:
            update = f"{acc} = {acc} && {v};" if dt is bool_ else f"{acc} *= {v};"
        else:
            bop = BinaryOp.MAX if rop is ReduceOp.MAX else BinaryOp.MIN
            update = f"{acc} = {self.binary(bop, acc, v, dt, loop)};"
        loop.lines.append(update)
        loop.before_loop.append(f"{ctype(dt, self.d)} {acc} = {identity};")
        loop.reduce = (acc, dt, rop)
        at.lines.append(loop)
        return acc, at

    def cast(self, x: str, src: DType, dst: DType, block: _Block) -> str:
        if dst is bool_:
            return f"({x} != 0)"
        if dst is float16:  # round to half precision (OpenCL: through a private half slot)
            stmt, expr = self.d.round_half_double if src is float64 and self.d.round_half_double else self.d.round_half
            tmp = f"h{self.count}"
            if stmt:
                self.count += 1
                block.lines.append(stmt.format(x=x, tmp=tmp))
            return expr.format(x=x, tmp=tmp)
        return f"(({ctype(dst, self.d)})({x}))"

    def binary(self, op: BinaryOp, a: str, b: str, dt: DType, block: _Block) -> str:
        f, t = dt.is_float, ctype(dt, self.d)
        if dt is bool_ and op in (BinaryOp.ADD, BinaryOp.MAX, BinaryOp.OR):
            return f"({a} || {b})"
        if dt is bool_ and op in (BinaryOp.MUL, BinaryOp.MIN, BinaryOp.AND):
            return f"({a} && {b})"
        simple = {BinaryOp.ADD: "+", BinaryOp.SUB: "-", BinaryOp.MUL: "*", BinaryOp.DIV: "/", BinaryOp.EQ: "==",
                  BinaryOp.NE: "!=", BinaryOp.LT: "<", BinaryOp.LE: "<=", BinaryOp.GT: ">", BinaryOp.GE: ">=",
                  BinaryOp.AND: "&", BinaryOp.OR: "|", BinaryOp.XOR: "!=" if dt is bool_ else "^"}
        if op in simple:
            return f"({a} {simple[op]} {b})"
        if op in (BinaryOp.MAX, BinaryOp.MIN):
            cmp = ">" if op is BinaryOp.MAX else "<"
            nan = f" || {a} != {a}" if f else ""
            return f"(({a} {cmp} {b}{nan}) ? {a} : {b})"
        if op is BinaryOp.POW:
            if f:
                return f"pow({a}, {b})"
            self.flops += 8
            return f"ipow_{ctype(dt)}({a}, {b})"
        if op is BinaryOp.MOD:
            if f:
                r = self.var(block, dt, f"fmod({a}, {b})")
                return f"(({r} != 0) ? ((({b} < 0) != ({r} < 0)) ? {r} + {b} : {r}) : copysign(({t})0, {b}))"
            if dt.is_unsigned:
                return f"({b} == 0 ? ({t})0 : ({t})({a} % {b}))"
            r = self.var(block, dt, f"(({b} == 0 || {b} == -1) ? ({t})0 : ({t})({a} % {b}))")
            return f"(({r} != 0 && (({r} < 0) != ({b} < 0))) ? ({t})({r} + {b}) : {r})"
        if op is BinaryOp.FLOORDIV:
            if f:  # NumPy's npy_divmod, so results match bit for bit
                m = self.var(block, dt, f"fmod({a}, {b})")
                q = self.var(block, dt, f"({a} - {m}) / {b}")
                q2 = self.var(block, dt, f"(({m} != 0) && (({b} < 0) != ({m} < 0))) ? {q} - 1 : {q}")
                fl = self.var(block, dt, f"floor({q2})")
                return (f"({b} == 0 ? {a} / {b} : ({q2} != 0 ? ({q2} - {fl} > ({t})0.5 ? {fl} + 1 : {fl})"
                        f" : copysign(({t})0, {a} / {b})))")
            if dt.is_unsigned:
                return f"({b} == 0 ? ({t})0 : ({t})({a} / {b}))"
            return (f"({b} == 0 ? ({t})0 : {b} == -1 ? ({t})(-{a}) : "
                    f"({t})({a} / {b} - ((({a} % {b}) != 0) && (({a} < 0) != ({b} < 0)))))")
        raise NotImplementedError(f"binary op {op}")

    # ---- the kernel ------------------------------------------------------------------------------------

    def params(self) -> list[str]:
        d = self.d
        params = [f"{d.global_ptr}const {d.type(n.dtype.cname)}* {d.restrict} in{i}" for i, n in enumerate(self.k.inputs)]
        params += [f"{d.global_ptr}{d.type(o.dtype.cname)}* {d.restrict} out{i}" for i, o in enumerate(self.k.outputs)]
        return params

    def store(self, i: int, o: Node, v: str) -> str:
        if o.dtype is float16:
            return self.d.store_half.format(v=v, arg=f"out{i}")
        return f"out{i}[gid] = ({self.d.type(o.dtype.cname)})({v});"

    def elementwise_body(self) -> list[_Block]:
        """Build the per-element code at index `gid` (stores last); gives the loops at the top level."""
        shape = self.k.shape
        gid = sym.Var("gid", 0, prod(shape) - 1)
        idx = tuple(sym.ZERO if d == 1 else sym.mod(sym.div(gid, s), d) for d, s in zip(shape, _strides(shape)))
        stores = [self.store(i, o, self.value(o, idx, frozenset(), self.root)[0]) for i, o in enumerate(self.k.outputs)]
        loops = [item for item in self.root.lines if isinstance(item, _Block)]
        self.root.lines += stores
        self.stores = stores
        return loops

    def group_reduce(self, loops: list[_Block]) -> None:
        """One work-group per output element: its work-items stride through each top-level reduce loop
        (neighbours read neighbouring elements) and combine their accumulators by a tree in local memory;
        work-item 0 stores. `lid` must be defined by the caller."""
        shared, barrier = self.d.shared, self.d.barrier
        for i, loop in enumerate(loops):
            acc, dt, rop = loop.reduce
            t, red = ctype(dt, self.d), f"red{i}"
            if rop is ReduceOp.SUM:
                both = f"{red}[lid] || {red}[lid + s]" if dt is bool_ else f"{red}[lid] + {red}[lid + s]"
            elif rop is ReduceOp.PROD:
                both = f"{red}[lid] && {red}[lid + s]" if dt is bool_ else f"{red}[lid] * {red}[lid + s]"
            else:
                bop = BinaryOp.MAX if rop is ReduceOp.MAX else BinaryOp.MIN
                both = self.binary(bop, f"{red}[lid]", f"{red}[lid + s]", dt, self.root)
            loop.before_loop.insert(0, f"{shared} {t} {red}[{GROUP}];")
            loop.group = ("lid", GROUP, [
                f"{red}[lid] = {acc};", barrier,
                f"for (int s = {GROUP // 2}; s > 0; s >>= 1) {{ if (lid < s) {red}[lid] = {both}; {barrier} }}",
                f"{acc} = {red}[0];"])
        del self.root.lines[-len(self.stores):]
        self.root.lines += ["if (lid == 0) {", *["  " + ln for ln in self.stores], "}"]

    def render(self) -> Program:
        spec = gemm.match(self.k)
        if spec is not None:
            return self.render_gemm(spec)
        total = prod(self.k.shape)
        loops = self.elementwise_body()
        lws = _local_size(total)
        # Loop-free kernels handle the dialect's `elems` elements per work-item, a grid apart: more loads in
        # flight per work-item and fewer work-items, with every access still coalesced across the group.
        elems = self.d.elems if not loops and total >= self.d.elems * lws * 64 else 1
        # Long reduce loops into few outputs: one work-group per output (GPUs; PoCL's work-item loops
        # already read whole rows from cache, and barriers cost it more than they give)
        group = bool(loops) and self.d.name in GROUP_DIALECTS and min(lp.var.hi + 1 for lp in loops) >= GROUP
        threads = total * GROUP if group else -(-total // (lws * elems)) * lws
        src = self.preamble()
        src.append(f"{self.d.kernel_prefix} {self.name}({', '.join(self.params())}) {{")
        if group:
            self.group_reduce(loops)
            src.append(f"  {self.index_type} gid = {self.d.group_id};")
            src.append(f"  int lid = {self.d.local_id};")
            src += ["  " + ln for ln in self.root.emit(0, self.index_type)]
            lws = GROUP
        elif elems == 1:
            src.append(f"  {self.index_type} gid = {self.d.global_id[self.index]};")
            if threads != total:
                src.append(f"  if (gid >= {total}) return;")
            src += ["  " + ln for ln in self.root.emit(0, self.index_type)]
        else:
            src.append(f"  {self.index_type} base = {self.d.global_id[self.index]};")
            src.append(f"  for (int u = 0; u < {elems}; u++) {{")
            src.append(f"    {self.index_type} gid = base + u * {threads};")
            src.append(f"    if (gid < {total}) {{")
            src += ["      " + ln for ln in self.root.emit(0, self.index_type)]
            src += ["    }", "  }"]
        src.append("}")
        nbytes = sum(n.size * n.dtype.itemsize for n in self.k.inputs + self.k.outputs)
        return Program(self.name, "\n".join(src) + "\n", (threads,), (lws,), self.uses_fp64, self.flops * total,
                       nbytes, self.d.name)

    def render_gemm(self, spec: gemm.GemmSpec) -> Program:
        def epilogue(gid: str, acc: str) -> tuple[list[str], str]:
            self.overrides[spec.reduce.id] = acc
            out = self.k.outputs[0]
            total = prod(out.shape)
            g = sym.Var(gid, 0, total - 1)
            idx = tuple(sym.ZERO if d == 1 else sym.mod(sym.div(g, s), d) for d, s in zip(out.shape, _strides(out.shape)))
            v, _ = self.value(out, idx, frozenset(), self.root)
            return self.root.emit(0, self.index_type), f"({self.d.type(out.dtype.cname)})({v})"

        body, gws, lws = gemm.render(spec, self.name, self.d, self.params(), epilogue, self.index_type)
        src = self.preamble() + [body]
        nbytes = sum(n.size * n.dtype.itemsize for n in self.k.inputs + self.k.outputs)
        return Program(self.name, "\n".join(src), gws, lws, self.uses_fp64, 2 * spec.M * spec.N * spec.K, nbytes,
                       self.d.name)

    def preamble(self) -> list[str]:
        d = self.d
        lines = []
        if any(n.dtype is float16 for n in self.k.inputs + self.k.outputs) or any(
                n.op is Op.CAST and n.dtype is float16 for n in _all_nodes(self.k)):
            lines += d.half_preamble
        lines += d.preamble
        if self.uses_fp64:
            lines += d.fp64_preamble
        used = {o.dtype for o in _all_nodes(self.k) if o.op is Op.BINARY and o.arg is BinaryOp.POW}
        for dt in sorted(used, key=lambda d: d.name):
            src_dt = dt
            if src_dt.is_float:
                continue
            name, t = ctype(src_dt), ctype(src_dt, d)
            neg = "" if src_dt.is_unsigned else (f"  if (b < 0) return a == 1 ? ({t})1 : a == -1 ? "
                                                 f"((b & 1) ? ({t})-1 : ({t})1) : ({t})0;\n")
            lines.append(f"{d.func_prefix}{t} ipow_{name}({t} a, {t} b) {{\n{neg}  {t} r = 1;\n"
                         f"  while (b) {{ if (b & 1) r *= a; a *= a; b >>= 1; }}\n  return r;\n}}")
        return lines


def _all_nodes(k: Kernel) -> list[Node]:
    inputs = {n.id for n in k.inputs}
    out, seen, stack = [], set(), list(k.outputs)
    while stack:
        n = stack.pop()
        if n.id in seen or n.id in inputs:
            continue
        seen.add(n.id)
        out.append(n)
        stack.extend(n.srcs)
    return out


def _strides(shape: tuple[int, ...]) -> list[int]:
    out, acc = [], 1
    for d in reversed(shape):
        out.append(acc if d != 1 else 0)
        acc *= d
    return out[::-1]


def _move(n: Node, idx: tuple) -> tuple:
    """The index into the source of a movement node, given the index into its output."""
    src = n.srcs[0]
    if n.op is Op.PERMUTE:
        inner = [sym.ZERO] * len(idx)
        for i, a in enumerate(n.arg):
            inner[a] = idx[i]
        return tuple(inner)
    if n.op is Op.EXPAND:
        return tuple(sym.ZERO if d == 1 else e for e, d in zip(idx, src.shape))
    if n.op is Op.FLIP:
        return tuple(sym.add(sym.mul(e, -1), d - 1) if a in n.arg else e
                     for a, (e, d) in enumerate(zip(idx, src.shape)))
    # reshape: flatten with the output strides, split with the source's
    flat = sym.add(*[sym.mul(e, s) for e, s in zip(idx, _strides(n.shape)) if s])
    return tuple(sym.ZERO if d == 1 else sym.mod(sym.div(flat, s), d) for d, s in zip(src.shape, _strides(src.shape)))


def _conds(conds) -> str:
    parts = sorted(sym.render_cond(c) for c in conds)
    return parts[0] if len(parts) == 1 else "(" + " && ".join(parts) + ")"


_FLOAT_FN = {UnaryOp.EXP: "exp", UnaryOp.EXP2: "exp2", UnaryOp.LOG: "log", UnaryOp.LOG2: "log2",
             UnaryOp.SQRT: "sqrt", UnaryOp.RSQRT: "rsqrt", UnaryOp.SIN: "sin", UnaryOp.COS: "cos",
             UnaryOp.TAN: "tan", UnaryOp.TANH: "tanh", UnaryOp.FLOOR: "floor", UnaryOp.CEIL: "ceil",
             UnaryOp.ROUND: "rint"}


def _unary(op: UnaryOp, x: str, dt: DType, dialect: Dialect = OPENCL) -> str:
    if op is UnaryOp.NEG:
        return f"(-{x})"
    if op is UnaryOp.NOT:
        return f"(!{x})" if dt is bool_ else f"(~{x})"
    if op is UnaryOp.ABS:
        return f"fabs({x})" if dt.is_float else x if (dt.is_unsigned or dt is bool_) else f"({x} < 0 ? -{x} : {x})"
    if op is UnaryOp.RECIP:
        return f"(({ctype(dt, dialect)})1 / {x})"
    if op is UnaryOp.ISNAN:
        return f"(isnan({x}) != 0)" if dt.is_float else "false"
    if op is UnaryOp.ISINF:
        return f"(isinf({x}) != 0)" if dt.is_float else "false"
    if op in (UnaryOp.FLOOR, UnaryOp.CEIL, UnaryOp.ROUND) and not dt.is_float:
        return x
    return f"{_FLOAT_FN[op]}({x})"


GROUP = 256  # work-items sharing one output's reduce loops (in-group reduction)
GROUP_DIALECTS = ("cuda",)  # where in-group reduction is used (tests add "opencl" to run it on PoCL)


def _local_size(total: int) -> int:
    size = 256
    while size > 32 and size > total:
        size //= 2
    return size


def render_kernel(kernel: Kernel, dialect: Dialect | str = OPENCL) -> Program:
    """The kernel rendered in `dialect` (a `Dialect` or its name, "opencl" or "cuda")."""
    if isinstance(dialect, str):
        dialect = DIALECTS[dialect]
    key = kernel_key(kernel)
    name = dialect.prefix + hashlib.sha1(repr(key).encode()).hexdigest()[:12]
    return _Renderer(kernel, dialect, name).render()
