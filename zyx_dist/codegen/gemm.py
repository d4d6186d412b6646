"""Driver side: register- and local-memory-tiled code for matmul-shaped kernels. Takes a kernel from
the kernelizer; `match` recognises a sum over one axis of the product of two operands (or of a masked
operand, where(c, x, 0): a gather's gradient), each a value
computed from the kernel's inputs through movement and elementwise ops (no reduce), and sorts the
product's other dims by which operand depends on them: the rows (the left operand only), the columns
(the right operand only) and the batch (both, or neither). So `A @ B`, `A @ B.T`, batched and
broadcast-batch products, `q @ k.mT` read through a permuted view, `x3d @ W` (its rows flattened into
one M) and epilogues such as `relu(A @ B + b)` are all one GEMM, also when stored through permutes (the
backward of a matmul, a projection split into attention heads) or when several outputs are elementwise in the
product (an optimizer's update of a weight from its gradient). `render` gives the tiled kernel: each
work-group computes a TILE_M x TILE_N block of one batch's output through `__local`/`__shared__` tiles
of A and B, each work-item a block of 4 or 8 rows by 4 or 8 columns read from the tiles as float4s.
An operand that is one float32 input seen through movement ops only is read in place as float4s where
`contiguous` proves four neighbours lie side by side along k (or along the rows/columns); any other
operand is evaluated element by element by the renderer (so pads, casts from half types and scaled
operands work too). The rest of the kernel (bias, activation, casts) is evaluated on each accumulator
before its store. Tensor cores for half types are in `gemm_tc.py`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..graph.ir import IOTA, Node, Op, ReduceOp, cast, prod
from . import symbolic as sym
from .cexpr import flat_index, move_index, strides

ELEMENTWISE = (Op.UNARY, Op.BINARY, Op.CAST, Op.WHERE)
MOVEMENT = (Op.RESHAPE, Op.PERMUTE, Op.EXPAND, Op.FLIP)
MIN_SIDE = 16  # M or N below this: the plain reduce loops (a matrix-vector product) do as well
WALK_LIMIT = 512  # operand subgraphs bigger than this are not worth a GEMM's per-element evaluation
# tile shapes: (rows per work-item, columns per work-item, rows of work-items, columns of work-items); the
# work-group's tile is the work-item's times its rows and columns of work-items. The 8 x 8 work-groups (32 x 32 to
# 64 x 32) are for products too small to give every compute unit a 64 x 64 tile (options.gemm_candidates). The
# last two, 256 x 64 and 64 x 256, are for a side of 64 (`p @ v` at head dim 64): they keep the 8 x 8 items of
# the 128 x 128 tile, which read one local-memory float per FMA where 8 x 4 items read 1.5.
TILES = ((8, 8, 16, 16), (4, 8, 16, 16), (8, 4, 16, 16), (4, 4, 16, 16), (4, 4, 8, 8), (8, 4, 8, 8), (4, 8, 8, 8),
         (8, 8, 32, 8), (8, 8, 8, 32))
PLAIN = len(TILES)  # the `tile` option that renders the kernel as plain reduce loops instead
FLOAT_DTYPES = ("float32", "float16", "bfloat16")


@dataclass(frozen=True)
class View:
    """An operand that is one input seen through movement ops only."""

    pos: int  # input position
    offset: sym.Expr  # element offset in that input, in the template variables bz, gi, gj, gk
    dtype: str  # the input's dtype name


@dataclass(frozen=True)
class GemmSpec:
    reduce: Node
    a: Node  # the operand that depends on the rows
    b: Node  # the operand that depends on the columns
    shape: tuple[int, ...]  # the product's shape
    k: tuple[int, ...]  # the reduced dims of the product, one K in row-major order (a weight's gradient sums over
    # a batch and a sequence)
    batch: tuple[int, ...]  # dims of the product, each sorted by position
    rows: tuple[int, ...]
    cols: tuple[int, ...]
    a_view: View | None
    b_view: View | None
    # when permutes lie between the reduce and the kernel's output (the backward of a matmul stores its
    # gradient transposed, attention splits a projection into heads): the outputs and each node's consumers
    # on the way up, through which the reduce's index is carried to the outputs' (the same for every output)
    outs: tuple[Node, ...] = ()
    up: tuple[tuple[int, tuple[Node, ...]], ...] = ()

    @property
    def M(self) -> int:
        return prod(self.shape[d] for d in self.rows)

    @property
    def N(self) -> int:
        return prod(self.shape[d] for d in self.cols)

    @property
    def K(self) -> int:
        return prod(self.shape[d] for d in self.k)

    @property
    def B(self) -> int:
        return prod(self.shape[d] for d in self.batch)

    def vars(self) -> tuple[sym.Var, sym.Var, sym.Var, sym.Var]:
        """The template's variables: batch, row, column and k (C variables of the same names)."""
        return (sym.Var("bz", 0, self.B - 1), sym.Var("gi", 0, self.M - 1), sym.Var("gj", 0, self.N - 1),
                sym.Var("gk", 0, self.K - 1))

    def index(self, bz: sym.Expr, gi: sym.Expr, gj: sym.Expr, gk: sym.Expr) -> tuple:
        """The product's index at batch bz, row gi, column gj and depth gk (flat positions of their dims)."""
        idx: list[sym.Expr] = [sym.ZERO] * len(self.shape)
        for dims, flat in ((self.batch, bz), (self.rows, gi), (self.cols, gj), (self.k, gk)):
            for d, e in zip(dims, flat_index(tuple(self.shape[d] for d in dims), flat)):
                idx[d] = e
        return tuple(idx)

    def out_flat(self) -> sym.Expr:
        """The flat index in the kernel's output of the reduce's element at the template's (bz, gi, gj)."""
        bz, gi, gj, _ = self.vars()
        idx = self.index(bz, gi, gj, sym.ZERO)
        if self.outs:
            flat = _carry_up(self.reduce, idx, self.outs, dict(self.up))
            assert flat is not None  # checked by `match`
            return flat
        return sym.add(*[sym.mul(e, s) for e, s in zip(idx, strides(self.reduce.shape)) if s])


def _carry_up(r: Node, idx: tuple, outs: tuple[Node, ...], parents: dict[int, tuple[Node, ...]]) -> sym.Expr | None:
    """The outputs' flat index of the reduce's element at `idx`, carried up through the reshapes, permutes
    and elementwise ops between them; None when two paths (or two outputs) disagree on where the element goes."""
    at: dict[int, tuple] = {r.id: idx}
    work = [r]
    while work:
        n = work.pop()
        for p in parents.get(n.id, ()):
            if p.op is Op.PERMUTE:
                new = tuple(at[n.id][a] for a in p.arg)
            elif p.op is Op.RESHAPE:
                flat = sym.add(*[sym.mul(e, st) for e, st in zip(at[n.id], strides(n.shape)) if st])
                new = flat_index(p.shape, flat)
            else:
                new = at[n.id]
            if p.id in at:
                if at[p.id] != new:
                    return None
                continue
            at[p.id] = new
            work.append(p)
    if any(o.id not in at for o in outs):
        return None
    flats = {sym.add(*[sym.mul(e, st) for e, st in zip(at[o.id], strides(o.shape)) if st]) for o in outs}
    return flats.pop() if len(flats) == 1 else None


def _walk(x: Node, idx: tuple, pos: dict[int, int]) -> tuple[set[str], list[tuple[int, sym.Expr]], bool] | None:
    """The variables the value of `x` at `idx` depends on, its loads (input position, offset) and whether
    it computes anything beyond moving elements; None if it holds a reduce or is too big to repeat."""
    used: set[str] = set()
    loads: list[tuple[int, sym.Expr]] = []
    computes = False
    stack = [(x, idx)]
    visits = 0
    while stack:
        n, ix = stack.pop()
        visits += 1
        if visits > WALK_LIMIT:
            return None
        if n.id in pos:
            off = tidy(sym.add(*[sym.mul(e, s) for e, s in zip(ix, strides(n.shape)) if s]))
            used |= sym.variables(off)
            loads.append((pos[n.id], off))
        elif n.op is Op.CONST:
            computes = True
        elif n.op in MOVEMENT:
            stack.append((n.srcs[0], move_index(n, ix)))
        elif n.op is Op.PAD:
            inner, padding = [], False
            for e, (lo, _hi), d in zip(ix, n.arg[0], n.srcs[0].shape):
                e2 = sym.add(e, -lo)
                inner.append(e2)
                c = sym.cond(e2, 0, d - 1)
                if c is False:
                    padding = True
                elif c is not True:
                    used |= sym.variables(c[0])
                    computes = True
            if padding:
                computes = True
            else:
                stack.append((n.srcs[0], tuple(inner)))
        elif n.op in ELEMENTWISE:
            computes = True
            stack.extend((s, ix) for s in n.srcs)
        else:
            return None
    return used, loads, computes


def match(kernel) -> GemmSpec | None:
    """The kernel as one GEMM, or None. Several outputs share the product when each is elementwise in it (an
    optimizer's update of a weight from its gradient, the gradient not stored) and every output reads the
    product at the same index as the others (the permutes on their ways to it agree)."""
    pos = {n.id: i for i, n in enumerate(kernel.inputs)}
    reduces: list[Node] = []
    parents: dict[int, list[Node]] = {}  # node on a path from the output to the reduce -> its consumers there
    permuted = False
    stack, seen = [(o, True, None) for o in kernel.outputs], set()
    while stack:  # the reduce must be reached through elementwise ops, reshapes and permutes only
        n, direct, parent = stack.pop()
        if direct and parent is not None:
            parents.setdefault(n.id, []).append(parent)
        if n.id in seen or n.id in pos:
            continue
        seen.add(n.id)
        if n.op is Op.REDUCE:
            if not direct:
                return None
            reduces.append(n)
            continue
        keep = direct and (n.op in ELEMENTWISE or n.op in (Op.RESHAPE, Op.PERMUTE))
        permuted |= keep and n.op is Op.PERMUTE
        stack.extend((s, keep, n if keep else None) for s in n.srcs)
    if len(reduces) != 1:
        return None
    r = reduces[0]
    rop, axes = r.arg
    src = r.srcs[0]
    if rop is not ReduceOp.SUM or r.dtype.name not in FLOAT_DTYPES:
        return None
    shape, k = src.shape, tuple(axes)
    idx = tuple(sym.Var(f"d{i}", 0, d - 1) if d > 1 else sym.ZERO for i, d in enumerate(shape))
    if src.op is Op.WHERE:
        factors = _masked(src, k, idx, pos, kernel)
        if factors is None:
            return None
    elif src.op is Op.BINARY and src.arg.value == "mul":
        factors = src.srcs
    else:
        return None
    walks = [_walk(s, idx, pos) for s in factors]
    if any(w is None for w in walks):
        return None
    (ua, _, _), (ub, _, _) = walks  # type: ignore[misc]
    dims = [d for d in range(len(shape)) if d not in k and shape[d] > 1]
    rows = tuple(d for d in dims if f"d{d}" in ua and f"d{d}" not in ub)
    cols = tuple(d for d in dims if f"d{d}" in ub and f"d{d}" not in ua)
    batch = tuple(d for d in dims if d not in rows and d not in cols)
    up = tuple((i, tuple(ps)) for i, ps in parents.items()) if permuted else ()
    outs = tuple(kernel.outputs) if up else ()
    fa, fb = factors
    narrow = [_narrowed(f, pos) for f in (fa, fb)]
    if narrow[0] is not None and narrow[1] is not None and narrow[0].dtype is narrow[1].dtype:
        fa, fb = narrow  # type: ignore[assignment]
    spec = GemmSpec(r, fa, fb, shape, k, batch, rows, cols, None, None, outs, up)
    if min(spec.M, spec.N) < MIN_SIDE:
        return None
    if up and _carry_up(r, spec.index(*spec.vars()[:3], sym.ZERO), outs, dict(up)) is None:
        return None
    bz, gi, gj, gk = spec.vars()
    views = []
    for x, row, col in ((spec.a, gi, sym.ZERO), (spec.b, sym.ZERO, gj)):
        w = _walk(x, spec.index(bz, row, col, gk), pos)
        assert w is not None
        _, loads, computes = w
        plain = not computes and len(loads) == 1
        views.append(View(loads[0][0], tidy(loads[0][1]), kernel.inputs[loads[0][0]].dtype.name) if plain else None)
    return GemmSpec(r, spec.a, spec.b, shape, k, batch, rows, cols, views[0], views[1], outs, up)


def _masked(src: Node, k: tuple[int, ...], idx: tuple, pos: dict[int, int], kernel) -> tuple[Node, Node] | None:
    """where(c, x, 0) summed as the product of c (cast to x's dtype: 0 or 1) and x: a gather's gradient (the sum
    over the ids of where(ids == arange(rows), g, 0), a scatter-add), or any masked product, is a GEMM whose
    mask operand is computed element by element. Not a gather itself (frontend/movement.py `_gather`: the arange
    runs along the reduced axis), which codegen/gather.py renders as one load; None there and for other wheres.
    One difference from the where: an infinite or NaN x spreads along its column (0 * inf is NaN), as in any
    one-hot matmul; a scatter-add (`np.add.at`) keeps it in its row. Finite values give the same sums."""
    c, x, zero = src.srcs
    while zero.op in MOVEMENT and zero.id not in pos:
        zero = zero.srcs[0]
    if zero.op is not Op.CONST or zero.arg != 0 or not x.dtype.is_float:
        return None
    eq = c
    while eq.op in MOVEMENT and eq.id not in pos:
        idx = move_index(eq, idx)
        eq = eq.srcs[0]
    if eq.id not in pos and eq.op is Op.BINARY and eq.arg.value == "eq":
        along_k = {f"d{d}" for d in k}
        for side in eq.srcs:
            walk = _walk(side, idx, pos)
            if walk is not None and len(walk[1]) == 1 and not walk[2]:
                leaf = kernel.inputs[walk[1][0][0]]
                if leaf.op is Op.LEAF and leaf.arg == IOTA and walk[0] and walk[0] <= along_k:
                    return None  # a gather's one-hot
    return cast(c, x.dtype), x


def _narrowed(f: Node, pos: dict[int, int]) -> Node | None:
    """Factor `f` read at its half type, when it is a half-type value widened to float32 under movement ops
    only (`a.astype(float32) @ b.astype(float32)`, split-K's partials of a half-type product): products of two
    such values are exact in float32, so the tensor cores' half-type products with float32 accumulators give
    the float32 contraction, and the narrow operand is read (and copied to shared memory) at half the bytes.
    The movement ops are rebuilt over the cast's source; None when `f` is not such a value."""
    chain = []
    while f.op in MOVEMENT and f.id not in pos:
        chain.append(f)
        f = f.srcs[0]
    if f.op is not Op.CAST or f.id in pos or f.dtype.name != "float32" or not f.srcs[0].dtype.is_half:
        return None
    out = f.srcs[0]
    for m in reversed(chain):
        out = Node(m.op, (out,), m.arg, m.shape, out.dtype)
    return out


# ---- offsets: regrouped so that contiguity shows --------------------------------------------------------

def _regroup(t: sym.Div | sym.Mod) -> sym.Expr:
    """floor((g*X + r) / c) = floor(X / (c/g)) and (g*X + r) mod c = (X mod (c/g))*g + r, where g divides
    c and 0 <= r < g: what a reshape that splits flattened rows leaves behind (`(gk + gi*1024) / 2**20`
    is `gi / 1024` for gk < 1024), and which the simplifier's own division does not see."""
    x, c = t.x, t.c
    if not isinstance(x, sym.Sum):
        return t
    for g in sorted({math.gcd(c, abs(k)) for _, k in x.terms}, reverse=True):
        if g <= 1:
            continue
        rest = sym.add(*[sym.mul(u, k) for u, k in x.terms if k % g], x.const % g)
        lo, hi = sym.bounds(rest)
        if lo < 0 or hi >= g:
            continue
        big = sym.add(*[sym.mul(u, k // g) for u, k in x.terms if k % g == 0], x.const // g)
        if isinstance(t, sym.Div):
            return sym.div(big, c // g)
        return sym.add(sym.mul(sym.mod(big, c // g), g), rest)
    return t


def tidy(e: sym.Expr) -> sym.Expr:
    """e with its top-level division and modulo terms regrouped (a few passes, each may enable the next)."""
    for _ in range(4):
        s = e if isinstance(e, sym.Sum) else sym.Sum(((e, 1),), 0)
        parts = [sym.mul(_regroup(t) if isinstance(t, (sym.Div, sym.Mod)) else t, k) for t, k in s.terms]
        new = sym.add(*parts, s.const)
        if new == e:
            break
        e = new
    return e


# ---- contiguity: may `width` neighbours along one variable be read as one vector? ------------------------

def _evaluate(e: sym.Expr, name: str, values: np.ndarray) -> np.ndarray:
    """e at every value of the variable `name` (e must hold no other variable)."""
    done: dict[int, np.ndarray] = {}
    stack: list[tuple[sym.Expr, bool]] = [(e, False)]
    while stack:
        x, ready = stack.pop()
        if id(x) in done:
            continue
        kids = [t for t, _ in x.terms] if isinstance(x, sym.Sum) else [x.x] if isinstance(x, (sym.Div, sym.Mod)) else []
        if not ready:
            stack.append((x, True))
            stack.extend((kid, False) for kid in kids)
            continue
        if isinstance(x, sym.Var):
            if x.name != name:
                raise ValueError(f"{x.name} is not {name}")
            done[id(x)] = values
        elif isinstance(x, sym.Sum):
            total = np.full(values.shape, x.const, np.int64)
            for t, c in x.terms:
                total = total + c * done[id(t)]
            done[id(x)] = total
        elif isinstance(x, sym.Div):
            done[id(x)] = done[id(x.x)] // x.c
        else:
            done[id(x)] = done[id(x.x)] % x.c
    return done[id(e)]


def contiguous(offset: sym.Expr, var: sym.Var, width: int) -> bool:
    """Whether, for every value of the other variables, the elements at var = width*q .. width*q + width-1
    lie at consecutive offsets starting at a multiple of `width` (so one aligned vector load reads them).
    Terms free of `var` must be multiples of `width`; the terms in `var` alone are checked at every value."""
    if (var.hi + 1) % width:
        return False
    s = offset if isinstance(offset, sym.Sum) else sym.Sum(((offset, 1),), 0)
    mine = []
    for t, c in s.terms:
        names = sym.variables(t)
        if var.name in names:
            if names != {var.name}:
                return False
            mine.append((t, c))
        elif c % width:
            return False
    if s.const % width or not mine:
        return False
    values = np.arange(var.hi + 1, dtype=np.int64)
    f = sum(c * _evaluate(t, var.name, values) for t, c in mine).reshape(-1, width)
    return bool(np.all(f[:, 0] % width == 0) and np.all(f - f[:, :1] == np.arange(width)))


# ---- the kernel --------------------------------------------------------------------------------------------

Operand = Callable[[Node, tuple], tuple[list[str], str]]  # (node, product index) -> (C lines, float value)
Epilogue = Callable[[sym.Expr], list[str]]  # flat output index -> C lines that store the output at `gid`


@dataclass(frozen=True)
class _Tile:
    """How one operand's tile (rows x tile_k, stored k-major in local memory as S[k][row]) is filled:
    `slots` register slots per work-item of type `vtype`; `at` places slot r's element(s) (e, ii/q, kk/kq),
    `fetch(k0)` reads them into `v` (zero past the edges) and `put` stores `v` into the tile; `guard` is
    the condition for slots past the tile's end (empty when every slot is used)."""

    slots: int
    vtype: str
    at: str
    fetch: Callable[[str], str]
    put: str
    guard: str


def _tile_loads(spec: GemmSpec, left: bool, rows: int, tile_k: int, T: str, dialect, operand: Operand,
                threads: int) -> _Tile:
    bz, gi, gj, gk = spec.vars()
    view = spec.a_view if left else spec.b_view
    node = spec.a if left else spec.b
    me, size, first = (gi, spec.M, "bi") if left else (gj, spec.N, "bj")
    tile = "As" if left else "Bs"
    mode = "scalar"
    if view is not None and view.dtype == "float32" and contiguous(view.offset, gk, 4):
        mode = "k"
    elif view is not None and view.dtype == "float32" and contiguous(view.offset, me, 4):
        mode = "mn"
    units = rows * tile_k // (4 if mode != "scalar" else 1)
    guard = f"e < {units}" if units % threads else ""
    edge = f"{guard + ' && ' if guard else ''}{me.name} < {size} && gk < {spec.K}"
    e = f"const int e = tid + r * {threads};"
    if mode in ("k", "mn"):
        load = dialect.load4_global.format(ptr=f"in{view.pos} + {sym.render(view.offset)}")
        if mode == "k":
            at = f"{e} const int ii = e / {tile_k // 4}, kq = (e % {tile_k // 4}) * 4;"
            put = " ".join(f"{tile}[kq + {u}][ii] = v.{c};" for u, c in enumerate("xyzw"))
            where = "ii", "kq"
        else:
            at = f"{e} const int kk = e / {rows // 4}, q = (e % {rows // 4}) * 4;"
            put = dialect.store4_local.format(ptr=f"&{tile}[kk][q]", v="v")
            where = "q", "kk"

        def fetch(k0: str) -> str:
            return (f"const {T} {me.name} = {first} + {where[0]}, gk = {k0} + {where[1]}; "
                    f"const float4 v = ({edge}) ? {load} : {dialect.zero4};")
        return _Tile(-(-units // threads), "float4", at, fetch, put, guard)
    # element by element: k fastest in the rows of A, the columns of B fastest
    at = f"{e} " + (f"const int ii = e / {tile_k}, kk = e % {tile_k};" if left else
                    f"const int kk = e / {rows}, ii = e % {rows};")
    idx = spec.index(bz, gi, sym.ZERO, gk) if left else spec.index(bz, sym.ZERO, gj, gk)
    lines, value = operand(node, idx)
    inner = " ".join(lines)

    def fetch_one(k0: str) -> str:
        return (f"const {T} {me.name} = {first} + ii, gk = {k0} + kk; float v = 0.0f; "
                f"if ({edge}) {{ {inner} v = {value}; }}")
    return _Tile(-(-units // threads), "float", at, fetch_one, f"{tile}[kk][ii] = v;", guard)


def tile_shape(tile: int) -> tuple[int, int]:
    """(rows, columns) of the work-group's tile of TILES[tile]."""
    rm, rn, rows, cols = TILES[tile]
    return rm * rows, rn * cols


def render(spec: GemmSpec, name: str, dialect, params: list[str], operand: Operand, epilogue: Epilogue,
           index_type: str, tile_k: int = 8, prefetch: bool = False, tile: int = 0,
           staged: bool = False) -> tuple[str, tuple, tuple]:
    """Source and (gws, lws) of the tiled kernel. Each work-item owns RM x RN accumulators: rows
    {ty*4..ty*4+3} (and, with 8 rows, the same TILE_M/2 further; columns likewise with tx), so the float4
    reads of a quarter warp from the local tiles are contiguous (no bank conflicts). With `prefetch`, the
    next tiles' loads are issued before the current tiles are multiplied, so they are in flight during the
    arithmetic. Unstaged, each work-item runs the epilogue on its own accumulators, so neighbouring
    work-items store four columns apart: every store instruction fills a quarter of each 32-byte sector
    it touches. `staged` passes the accumulators through local memory one row slice at a time and runs
    the epilogue with neighbouring work-items on neighbouring columns, so its loads (a bias, a residual)
    and its stores are whole sectors; that pays where the output is large beside the k loop (small K)."""
    shared, barrier, lid, grp = dialect.shared, dialect.barrier, dialect.local_id, dialect.group_id
    RM, RN, rows, cols = TILES[tile]
    TM, TN, threads = rows * RM, cols * RN, rows * cols
    M, N, K, T = spec.M, spec.N, spec.K, index_type
    nbx, nby = -(-N // TN), -(-M // TM)
    ta = _tile_loads(spec, True, TM, tile_k, T, dialect, operand, threads)
    tb = _tile_loads(spec, False, TN, tile_k, T, dialect, operand, threads)

    def loop(t: _Tile, body: str) -> str:
        body = f"{t.at} {body}"
        return f"    #pragma unroll\n    for (int r = 0; r < {t.slots}; r++) {{ {body} }}"

    def put(t: _Tile, v: str | None = None) -> str:  # slots past the tile's end put nothing
        code = t.put if v is None else f"const {t.vtype} v = {v}; {t.put}"
        return f"if ({t.guard}) {{ {code} }}" if t.guard else code

    if prefetch:
        head = (f"  {ta.vtype} pa[{ta.slots}];\n  {tb.vtype} pb[{tb.slots}];\n  {{\n"
                f"{loop(ta, ta.fetch('0') + ' pa[r] = v;')}\n{loop(tb, tb.fetch('0') + ' pb[r] = v;')}\n  }}")
        tile_code = (f"{loop(ta, put(ta, 'pa[r]'))}\n{loop(tb, put(tb, 'pb[r]'))}\n    {barrier}\n"
                     f"    if (k0 + {tile_k} < {K}) {{\n      const {T} k1 = k0 + {tile_k};\n"
                     f"{loop(ta, '{ ' + ta.fetch('k1') + ' pa[r] = v; }')}\n"
                     f"{loop(tb, '{ ' + tb.fetch('k1') + ' pb[r] = v; }')}\n    }}")
    else:
        head = ""
        tile_code = (f"{loop(ta, '{ ' + ta.fetch('k0') + ' ' + put(ta) + ' }')}\n"
                     f"{loop(tb, '{ ' + tb.fetch('k0') + ' ' + put(tb) + ' }')}\n    {barrier}")

    def reads(tile_name: str, n: int, half: int, of: str) -> str:
        parts = [dialect.load4_local.format(ptr=f"&{tile_name}[kk][{of} * 4{' + ' + str(half) if h else ''}]")
                 for h in range(n // 4)]
        names = [f"{tile_name[0].lower()}{h}" for h in range(n // 4)]
        regs = ", ".join(f"{nm}.{c}" for nm in names for c in "xyzw")
        return (f"const float4 {', '.join(f'{nm} = {p}' for nm, p in zip(names, parts))};\n"
                f"      const float r{tile_name[0].lower()}[{n}] = {{{regs}}};")

    flat = spec.out_flat()
    body = "\n".join("          " + ln for ln in epilogue(flat))
    prefix = dialect.bounded_prefix.format(threads=threads, groups=2)
    row = "ty * 4 + (m & 3)" + (f" + (m >> 2) * {TM // 2}" if RM == 8 else "")
    col = "tx * 4 + (n & 3)" + (f" + (n >> 2) * {TN // 2}" if RN == 8 else "")
    align = dialect.align16
    src = f"""{prefix} {name}({', '.join(params)}) {{
  {shared} float As[{tile_k}][{TM}]{align};
  {shared} float Bs[{tile_k}][{TN}]{align};
  const int tid = {lid};
  const int tx = tid % {cols}, ty = tid / {cols};
  const {T} bz = ({T})({grp} / {nbx * nby});
  const int tile = {grp} % {nbx * nby};
  const {T} bi = ({T})(tile / {nbx}) * {TM}, bj = ({T})(tile % {nbx}) * {TN};
  float c[{RM}][{RN}];
  #pragma unroll
  for (int m = 0; m < {RM}; m++)
    #pragma unroll
    for (int n = 0; n < {RN}; n++) c[m][n] = 0.0f;
{head}
  for ({T} k0 = 0; k0 < {K}; k0 += {tile_k}) {{
{tile_code}
    #pragma unroll
    for (int kk = 0; kk < {tile_k}; kk++) {{
      {reads("As", RM, TM // 2, "ty")}
      {reads("Bs", RN, TN // 2, "tx")}
      #pragma unroll
      for (int m = 0; m < {RM}; m++)
        #pragma unroll
        for (int n = 0; n < {RN}; n++) c[m][n] += ra[m] * rb[n];
    }}
    {barrier}
  }}
{_staged_epilogue(dialect, body, M, N, T, RM, RN, rows, cols) if staged else _epilogue(body, M, N, T, RM, RN, row, col)}
}}
"""
    return src, (spec.B * nbx * nby * threads,), (threads,)


def _epilogue(body: str, M: int, N: int, T: str, RM: int, RN: int, row: str, col: str) -> str:
    """The epilogue on each work-item's own accumulators, where they lie."""
    return f"""  #pragma unroll
  for (int m = 0; m < {RM}; m++) {{
    #pragma unroll
    for (int n = 0; n < {RN}; n++) {{  // unrolled, so c stays in registers whatever the epilogue does
      const {T} gi = bi + {row}, gj = bj + {col};
      if (gi < {M} && gj < {N}) {{
          const float acc = c[m][n];
{body}
      }}
    }}
  }}"""


def _staged_epilogue(dialect, body: str, M: int, N: int, T: str, RM: int, RN: int, rows: int, cols: int) -> str:
    """The epilogue through local memory: for each of a work-item's RM rows (m), the work-group's `rows`
    rows of that m (one per ty) are written as float4s into Cs, rows x TILE_N floats (a quarter warp's
    float4s side by side: no bank conflicts), then read back with work-item `tid` on column `tid %
    TILE_N`, RN elements each, the epilogue run on each. Cs is its own array, not the operand tiles':
    OpenCL C and CUDA C have no portable aliasing of two local arrays, and rows x TILE_N floats (4-8 KiB)
    leave the occupancy as it was (registers bound it)."""
    TM, TN, threads = rows * RM, cols * RN, rows * cols
    shared, barrier = dialect.shared, dialect.barrier
    puts = " ".join(dialect.store4_local.format(
        ptr=f"&Cs[ty][tx * 4 + {h * (TN // 2)}]",
        v=dialect.make4.format(*(f"c[m][{4 * h + q}]" for q in range(4)))) for h in range(RN // 4))
    # row of staged row r: ty * 4 + (m & 3) (+ TILE_M / 2 for m >= 4 in the 8-row tiles), as in `render`
    row = "r * 4 + (m & 3)" + (f" + (m >> 2) * {TM // 2}" if RM == 8 else "")
    return f"""  {shared} float Cs[{rows}][{TN}]{dialect.align16};
  #pragma unroll
  for (int m = 0; m < {RM}; m++) {{
    {barrier}
    {puts}
    {barrier}
    #pragma unroll
    for (int j = 0; j < {RN}; j++) {{  // neighbouring work-items, neighbouring columns
      const int e = tid + j * {threads}, r = e / {TN};
      const {T} gi = bi + {row}, gj = bj + e % {TN};
      if (gi < {M} && gj < {N}) {{
          const float acc = Cs[r][e % {TN}];
{body}
      }}
    }}
  }}"""
