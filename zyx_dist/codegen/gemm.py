"""Driver side: register- and local-memory-tiled code for matmul-shaped kernels. Takes a kernel from
the kernelizer; `match` recognises a sum over one axis of the product of two inputs seen through
movement ops only, where each operand's address is affine in (row, k) and (k, column) (so `A @ B`,
`A @ B.T`, batched-free 2-D products and their epilogues such as `relu(A @ B + b)` all qualify, stored
through reshapes and permutes too, as the backward of a matmul stores `A.T @ G`), and
`render` gives the tiled kernel: each work-group computes a TILE_M x TILE_N block of the output through
`__local`/`__shared__` tiles of A and B, each work-item an 8x8 register block read from the tiles as
float4 pairs (optionally with the next tiles' loads in flight during the arithmetic), and the rest of the kernel (bias, activation, casts) is evaluated on each accumulator
before its store.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..graph.ir import Node, Op, ReduceOp
from . import symbolic as sym
from .cexpr import move_index, strides

TILE_M = TILE_N = 128
THREADS = 256  # 16 x 16 work-items, each an 8 x 8 block of contiguous rows and columns
ELEMENTWISE = (Op.UNARY, Op.BINARY, Op.CAST, Op.WHERE)


@dataclass(frozen=True)
class GemmSpec:
    reduce: Node
    a: int  # input position of the left operand
    b: int
    M: int
    N: int
    K: int
    a_off: tuple[int, int, int]  # offset = row * a_off[0] + k * a_off[1] + a_off[2]
    b_off: tuple[int, int, int]  # offset = k * b_off[0] + col * b_off[1] + b_off[2]
    out_strides: tuple[int, int]  # flat output index = row * s0 + col * s1
    out_index: str | None = None  # else the flat output index as a C expression of gi, gj (a head split)


def _operand(x: Node, pos: dict[int, int], idx: tuple) -> tuple[int, sym.Expr] | None:
    """(input position, offset expression) when x is an input seen through index-only movement ops."""
    while x.id not in pos:
        if x.op not in (Op.RESHAPE, Op.PERMUTE, Op.EXPAND, Op.FLIP):
            return None
        idx = move_index(x, idx)
        x = x.srcs[0]
    off = sym.add(*[sym.mul(e, s) for e, s in zip(idx, strides(x.shape)) if s])
    return pos[x.id], off


def _affine(e: sym.Expr, names: list[str]) -> tuple[int, ...] | None:
    """Coefficients of `names` and the constant, when e is affine in those variables only."""
    s = e if isinstance(e, sym.Sum) else sym.Sum(((e, 1),), 0)
    coef = dict.fromkeys(names, 0)
    for t, c in s.terms:
        if not isinstance(t, sym.Var) or t.name not in coef:
            return None
        coef[t.name] += c
    return (*[coef[n] for n in names], s.const)


def match(kernel) -> GemmSpec | None:
    if len(kernel.outputs) != 1 or kernel.outputs[0].dtype.name != "float32":
        return None
    out = kernel.outputs[0]
    pos = {n.id: i for i, n in enumerate(kernel.inputs)}
    reduces: list[Node] = []
    parents: dict[int, list[Node]] = {}  # node on a path from the output to the reduce -> its consumers there
    stack, seen = [(out, True, None)], set()
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
        stack.extend((s, keep, n if keep else None) for s in n.srcs)
    if len(reduces) != 1:
        return None
    r = reduces[0]
    rop, axes = r.arg
    src = r.srcs[0]
    if rop is not ReduceOp.SUM or len(axes) != 1 or not r.dtype.is_float or r.dtype.itemsize != 4:
        return None
    if src.op is not Op.BINARY or src.arg.value != "mul":
        return None
    shape = src.shape
    names = [f"d{i}" for i in range(len(shape))]
    idx = tuple(sym.Var(nm, 0, d - 1) if d > 1 else sym.ZERO for nm, d in zip(names, shape))
    ops = [_operand(s, pos, idx) for s in src.srcs]
    if any(o is None for o in ops):
        return None
    (ia, ea), (ib, eb) = ops  # type: ignore[misc]
    ca, cb = _affine(ea, names), _affine(eb, names)
    if ca is None or cb is None:
        return None
    k = axes[0]
    free = [d for d in range(len(shape)) if d != k and shape[d] > 1]
    if len(free) != 2:
        return None
    rows = [d for d in free if ca[d] and not cb[d]]
    cols = [d for d in free if cb[d] and not ca[d]]
    if len(rows) != 1 or len(cols) != 1:
        return None
    i, j = rows[0], cols[0]
    if any(ca[d] or cb[d] for d in range(len(shape)) if d not in (i, j, k)):
        return None
    flat = _output_index(out, r, i, j, parents)
    if flat is None:
        return None
    coef = _affine(flat, ["gi", "gj"])
    ostrides, index = ((coef[0], coef[1]), None) if coef is not None and coef[2] == 0 else ((0, 0), sym.render(flat))
    return GemmSpec(r, ia, ib, shape[i], shape[j], shape[k], (ca[i], ca[k], ca[-1]), (cb[k], cb[j], cb[-1]),
                    ostrides, index)


def _output_index(out: Node, r: Node, i: int, j: int, parents: dict[int, list[Node]]) -> sym.Expr | None:
    """The output's flat index of the reduce's element (gi, gj), found by carrying the reduce's index up to
    the output through the reshapes and permutes between them (the backward of a matmul stores its gradient
    transposed, attention splits a projection into heads); None when two paths disagree on where an
    element goes."""
    idx: dict[int, tuple] = {r.id: tuple(sym.Var("gi", 0, d - 1) if a == i else sym.Var("gj", 0, d - 1) if a == j
                                         else sym.ZERO for a, d in enumerate(r.shape))}
    work = [r]
    while work:
        n = work.pop()
        for p in parents.get(n.id, ()):
            if p.op is Op.PERMUTE:
                up = tuple(idx[n.id][a] for a in p.arg)
            elif p.op is Op.RESHAPE:
                flat = sym.add(*[sym.mul(e, st) for e, st in zip(idx[n.id], strides(n.shape)) if st])
                up = tuple(sym.ZERO if d == 1 else sym.mod(sym.div(flat, st), d)
                           for d, st in zip(p.shape, strides(p.shape)))
            else:
                up = idx[n.id]
            if p.id in idx:
                if idx[p.id] != up:
                    return None
                continue
            idx[p.id] = up
            work.append(p)
    if out.id not in idx:
        return None
    return sym.add(*[sym.mul(e, st) for e, st in zip(idx[out.id], strides(out.shape)) if st])


def render(spec: GemmSpec, name: str, dialect, params: list[str], epilogue, index_type: str,
           tile_k: int = 8, prefetch: bool = False) -> tuple[str, tuple, tuple]:
    """Source and (gws, lws) of the tiled kernel. `epilogue(gid, acc)` gives (C lines, value expr).
    Each work-item owns an 8x8 block, rows {ty*4..ty*4+3} and the same 64 further (columns likewise
    with tx), so the float4 reads of a quarter warp from the local tiles are contiguous (no bank
    conflicts) and its stores to the output are too. Tiles come from global memory as float4 where the
    layout allows it; with `prefetch`, the next tile's loads are issued before the current tile is
    multiplied, so they are in flight during the arithmetic."""
    shared, barrier, lid, grp = dialect.shared, dialect.barrier, dialect.local_id, dialect.group_id
    f4, zero4 = "float4", dialect.zero4

    def load4(ptr: str) -> str:
        return dialect.load4.format(ptr=ptr)

    def store4(ptr: str, v: str) -> str:
        return dialect.store4.format(ptr=ptr, v=v)

    M, N, K = spec.M, spec.N, spec.K
    nbx = -(-N // TILE_N)
    nby = -(-M // TILE_M)
    ai, ak, a0 = spec.a_off
    bk, bj, b0 = spec.b_off
    s0, s1 = spec.out_strides
    T = index_type
    reps = tile_k // 8  # float4 loads per work-item per tile, for each of A and B
    # float4 tile loads need 16-byte aligned rows: A with k contiguous, B with columns contiguous
    a_vec = ak == 1 and ai % 4 == 0 and a0 % 4 == 0 and K % 4 == 0
    b_vec = bj == 1 and bk % 4 == 0 and b0 % 4 == 0 and N % 4 == 0
    prefetch = prefetch and a_vec and b_vec
    # A: 128 rows x tile_k / 4 float4 of k; B: tile_k rows of k x 32 float4 of columns. Per operand: where
    # work-item tid's r-th float4 lies, its load (zero past the edges) and its store into the local tile
    a_at = f"const int e = tid + r * {THREADS}; const int ii = e / {tile_k // 4}, kq = (e % {tile_k // 4}) * 4;"
    b_at = f"const int e = tid + r * {THREADS}; const int kk = e / 32, jq = (e % 32) * 4;"

    def a_get(k0: str) -> str:
        return (f"{a_at} const {T} gi = bi + ii, gk = {k0} + kq; const {f4} v = (gi < {M} && gk < {K}) ? "
                f"{load4(f'in{spec.a} + gi * {ai} + gk + {a0}')} : {zero4};")

    def b_get(k0: str) -> str:
        return (f"{b_at} const {T} gj = bj + jq, gk = {k0} + kk; const {f4} v = (gj < {N} && gk < {K}) ? "
                f"{load4(f'in{spec.b} + gk * {bk} + gj + {b0}')} : {zero4};")

    def a_put(v: str) -> str:  # A transposed: k-major
        return f"As[kq][ii] = {v}.x; As[kq + 1][ii] = {v}.y; As[kq + 2][ii] = {v}.z; As[kq + 3][ii] = {v}.w;"

    def b_put(v: str) -> str:
        return store4("&Bs[kk][jq]", v)

    def per_float4(*blocks: str) -> str:
        inner = "\n".join(f"      {{ {blk} }}" for blk in blocks)
        return f"    #pragma unroll\n    for (int r = 0; r < {reps}; r++) {{\n{inner}\n    }}"

    def fetch(k0: str) -> str:  # float4 tiles of A and B into the registers pa, pb
        return per_float4(f"{a_get(k0)} pa[r] = v;", f"{b_get(k0)} pb[r] = v;")

    def put() -> str:  # the registers pa, pb into the local tiles
        return per_float4(f"{a_at} {a_put('pa[r]')}", f"{b_at} {b_put('pb[r]')}")

    if a_vec:
        load_a = per_float4(f"{a_get('k0')} {a_put('v')}")
    else:
        load_a = f"""    for (int r = 0; r < {TILE_M * tile_k // THREADS}; r++) {{
      const int e = tid + r * {THREADS};
      const int ii = e / {tile_k}, kk = e % {tile_k};
      const {T} gi = bi + ii, gk = k0 + kk;
      As[kk][ii] = (gi < {M} && gk < {K}) ? in{spec.a}[gi * {ai} + gk * {ak} + {a0}] : 0.0f;
    }}"""
    if b_vec:
        load_b = per_float4(f"{b_get('k0')} {b_put('v')}")
    else:
        load_b = f"""    for (int r = 0; r < {TILE_N * tile_k // THREADS}; r++) {{
      const int e = tid + r * {THREADS};
      const int kk = e / {TILE_N}, jj = e % {TILE_N};
      const {T} gj = bj + jj, gk = k0 + kk;
      Bs[kk][jj] = (gj < {N} && gk < {K}) ? in{spec.b}[gk * {bk} + gj * {bj} + {b0}] : 0.0f;
    }}"""
    if prefetch:
        head = f"  {f4} pa[{reps}], pb[{reps}];\n  {{ const {T} k0 = 0;\n{fetch('k0')}\n  }}"
        tile = f"""{put()}
    {barrier}
    if (k0 + {tile_k} < {K}) {{
{fetch(f"(k0 + {tile_k})")}
    }}"""
    else:
        head = ""
        tile = f"{load_a}\n{load_b}\n    {barrier}"
    lines, value = epilogue("gid", "acc")
    body = "\n".join("          " + ln for ln in lines)
    # two work-groups per compute unit: at most 128 registers per work-item, which an epilogue could exceed
    prefix = dialect.bounded_prefix.format(threads=THREADS, groups=2)
    src = f"""{prefix} {name}({', '.join(params)}) {{
  {shared} float As[{tile_k}][{TILE_M}];
  {shared} float Bs[{tile_k}][{TILE_N}];
  const int tid = {lid};
  const int tx = tid % 16, ty = tid / 16;
  const {T} bi = ({T})({grp} / {nbx}) * {TILE_M}, bj = ({T})({grp} % {nbx}) * {TILE_N};
  float c[8][8];
  #pragma unroll
  for (int m = 0; m < 8; m++)
    #pragma unroll
    for (int n = 0; n < 8; n++) c[m][n] = 0.0f;
{head}
  for ({T} k0 = 0; k0 < {K}; k0 += {tile_k}) {{
{tile}
    #pragma unroll
    for (int kk = 0; kk < {tile_k}; kk++) {{
      const {f4} a0 = {load4("&As[kk][ty * 4]")}, a1 = {load4("&As[kk][ty * 4 + 64]")};
      const {f4} b0 = {load4("&Bs[kk][tx * 4]")}, b1 = {load4("&Bs[kk][tx * 4 + 64]")};
      const float ra[8] = {{a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w}};
      const float rb[8] = {{b0.x, b0.y, b0.z, b0.w, b1.x, b1.y, b1.z, b1.w}};
      #pragma unroll
      for (int m = 0; m < 8; m++)
        #pragma unroll
        for (int n = 0; n < 8; n++) c[m][n] += ra[m] * rb[n];
    }}
    {barrier}
  }}
  #pragma unroll
  for (int m = 0; m < 8; m++) {{
    #pragma unroll
    for (int n = 0; n < 8; n++) {{  // unrolled, so c stays in registers whatever the epilogue does
      const {T} gi = bi + ty * 4 + (m & 3) + (m >> 2) * 64, gj = bj + tx * 4 + (n & 3) + (n >> 2) * 64;
      if (gi < {M} && gj < {N}) {{
          const {T} gid = {spec.out_index or f"gi * {s0} + gj * {s1}"};
          const float acc = c[m][n];
{body}
          out0[gid] = {value};
      }}
    }}
  }}
}}
"""
    return src, (nbx * nby * THREADS,), (THREADS,)
