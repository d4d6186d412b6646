"""Driver side: the kernels of an attention's backward products on tensor cores, the way flash attention's
backward computes them, for the CUDA dialect and half types. Takes a kernel whose output is one of the products
graph/attention_grad.py recognises (dV = p^T @ dO, dQ = dS @ K, dK = dS^T @ Q, their weights left unstored by the
kernelizer); `match` works out the index arithmetic (the batch, the kernel's rows, the loop axis the product sums
over, the operand's head dim, and for each contraction the weights recompute, which of its operands follows the
rows and which the loop); `render` gives CUDA C: a work-group of 4 warps owns 64 rows (16 per warp), keeps the
rows' operands of the contractions (q and dO for dQ, k and v for dK) as mma.sync A fragments in registers, and
walks the loop axis in blocks, the loop operands' tiles double-buffered in shared memory by `cp.async`. Per block,
each contraction is `mma.sync.m16n8k16` into float32 accumulators; the weights (the recomputed probabilities
exp2(s * log2(e) - lse * log2(e)) with the scale and the mask, dO @ V^T - D, their product, any elementwise
expression) are evaluated at each accumulator's row and loop index by the renderer's evaluator, rounded to the
half type as the A fragments of weights @ operand (an m16n8 accumulator pair has the layout of an m16k16 A
fragment), which accumulates in registers across the blocks. Nothing T x T is stored or read. Weights outside
the rows or the loop are 0, so tails need no other care. On Hopper, where the loop tiles are whole 64-half rows,
the same kernel has a wgmma form (`KernelOpts(wgmma=1)`, the tuner's first candidate there, `wgmma_usable`), with
the same arithmetic: each contraction and the product `wgmma.mma_async`, the loop tiles swizzled for its
descriptors, the rows' fragments loaded at every block.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..fuse.kernelize import Kernel
from ..graph.attention_grad import ChainedProduct
from ..graph.attention_grad import find as find_grad
from ..graph.ir import Node, Op
from . import symbolic as sym
from .attention import Evaluate, _down, _qk_index, _top_reduce, contraction_operands
from .attention_tc import _SWIZZLE, PAD, WAIT, ldm, mma_loop, pin, row_test, staged_output, tc_helpers, wgmma_loop
from .attention_tiles import Tile, fill
from .cexpr import move_index
from .gemm import ELEMENTWISE, Epilogue, GemmSpec, _walk, tidy
from .gemm_tc import _HELPERS
from .gemm_wgmma import _WGMMA_HELPERS, ARCH_MARK, ATOM

BM = 64  # rows per work-group, 16 per warp
THREADS = 128


@dataclass(frozen=True)
class Contraction:
    node: Node  # the sum over the head dim that the weights read
    row: Node  # its operand that follows the kernel's rows (at `index`)
    loop: Node  # ... and the one that follows the loop axis
    index: tuple  # its product's index at the template's (bz, gi, gk) and the head dim's `dd`
    head: int


@dataclass(frozen=True)
class GradSpec:
    pattern: ChainedProduct
    spec: GemmSpec  # of weights @ operand: batch, rows (M), the operand's head dim (N), the loop (K)
    weights_idx: tuple  # the weights' index at (bz, gi, gk)
    contractions: tuple[Contraction, ...]
    operand_idx: tuple  # the operand's index at (bz, gk) and its head dim's `dd`

    @property
    def flops(self) -> int:
        s = self.spec
        return 2 * s.B * s.M * s.K * (s.N + sum(c.head for c in self.contractions))


def match(kernel: Kernel) -> GradSpec | None:
    if len(kernel.outputs) != 1:
        return None
    out = _top_reduce(kernel)
    pattern = find_grad(out) if out is not None else None
    if pattern is None:
        return None
    pos = {n.id: i for i, n in enumerate(kernel.inputs)}
    if any(i in pos for i in pattern.nodes):
        return None
    mul = out.srcs[0]
    zero = tuple(sym.ZERO for _ in mul.shape)
    side = next((s for s in mul.srcs if s is not pattern.operand and _down(s, pattern.weights, zero) is not None), None)
    if side is None:
        return None
    shape, kj = mul.shape, out.arg[1][0]
    names = [f"d{i}" for i in range(len(shape))]
    idx = tuple(sym.Var(nm, 0, d - 1) if d > 1 else sym.ZERO for nm, d in zip(names, shape))
    widx = _down(side, pattern.weights, idx)
    w = _walk(pattern.operand, idx, pos)
    if widx is None or w is None:
        return None
    wvars = set().union(*[sym.variables(e) for e in widx])
    dims = [d for d in range(len(shape)) if d != kj and shape[d] > 1]
    rows = tuple(d for d in dims if names[d] in wvars and names[d] not in w[0])
    cols = tuple(d for d in dims if names[d] in w[0] and names[d] not in wvars)
    batch = tuple(d for d in dims if d not in rows and d not in cols)
    spec = GemmSpec(out, side, pattern.operand, shape, (kj,), batch, rows, cols, None, None)
    bz, gi, _, gk = spec.vars()
    weights_idx = _down(side, pattern.weights, spec.index(bz, gi, sym.ZERO, gk))
    if weights_idx is None:
        return None
    weights_idx = tuple(tidy(e) for e in weights_idx)
    contractions = []
    for c in pattern.contractions:
        at = _qk_index(pattern.weights, c, weights_idx, set(pos))
        split = contraction_operands(c, at, pos) if at is not None else None
        if split is None:
            return None
        contractions.append(Contraction(c, *split))
    operand_idx = spec.index(bz, sym.ZERO, sym.Var("dd", 0, spec.N - 1), gk)
    wo = _walk(pattern.operand, operand_idx, pos)
    if wo is None or "gi" in wo[0] or spec.N % 16 or spec.N > 128:
        return None
    return GradSpec(pattern, spec, weights_idx, tuple(contractions), operand_idx)


def wgmma_usable(g: GradSpec, kernel: Kernel, dialect) -> bool:
    """Whether the wgmma form applies: a dialect with wgmma, and every loop tile (the contractions' loop operands
    and the product's operand) in whole 128-byte swizzle rows (64 halves) up to the widest wgmma."""
    return dialect.wgmma and all(w % 64 == 0 and w <= 256 for _n, _ix, w in _tiles(kernel, g)[0])


def _tiles(kernel: Kernel, g: GradSpec) -> tuple[list[tuple[Node, tuple, int]], list[int]]:
    """The distinct (node, index, width) of the loop operands, and which of them each contraction's loop operand
    and then the product's operand reads: one tile serves two that load the same elements (k in dQ's kernel, q in
    dK's)."""
    pos = {n.id: i for i, n in enumerate(kernel.inputs)}
    tiles: list[tuple[Node, tuple, int]] = []
    keys: list = []
    uses: list[int] = []
    for node, index, width in [*((c.loop, c.index, c.head) for c in g.contractions),
                               (g.pattern.operand, g.operand_idx, g.spec.N)]:
        w = _walk(node, index, pos)
        key = (width, tuple(w[1])) if w is not None and not w[2] else (width, node.id, index)
        if key not in keys:
            keys.append(key)
            tiles.append((node, index, width))
        uses.append(keys.index(key))
    return tiles, uses


def _vector_reads(g: GradSpec, kernel: Kernel) -> tuple[list[tuple[Node, tuple]], list[tuple[Node, tuple]]]:
    """Inputs the weights read per row (at bz and gi only: lse and D in dQ's kernel) and per loop index (at bz and gk:
    the same two in dK's and dV's), each at one index: read once per row before the loop, or once per block into
    shared memory, rather than at every weight. Floats and bools only (staged as float); none where the weights'
    reads are not all followed."""
    pos = {n.id: i for i, n in enumerate(kernel.inputs)}
    inner = {c.node.id for c in g.contractions}
    found: dict[int, tuple[Node, tuple]] = {}
    twice: set[int] = set()
    stack = [(g.pattern.weights, g.weights_idx)]
    while stack:
        n, ix = stack.pop()
        if n.id in inner or n.op is Op.CONST:
            continue
        if n.id in pos:
            ix = tuple(tidy(e) for e in ix)
            if n.id in found and found[n.id][1] != ix:
                twice.add(n.id)
            found[n.id] = (n, ix)
        elif n.op in ELEMENTWISE:
            stack.extend((x, ix) for x in n.srcs)
        elif n.op in (Op.RESHAPE, Op.PERMUTE, Op.EXPAND):
            stack.append((n.srcs[0], move_index(n, ix)))
        else:
            return [], []
    rows, loops = [], []
    for nid, (n, ix) in found.items():
        walk = _walk(n, ix, pos)
        if nid in twice or walk is None or not (n.dtype.is_float or n.dtype.name == "bool"):
            continue
        if walk[0] <= {"bz", "gi"}:
            rows.append((n, ix))
        elif walk[0] <= {"bz", "gk"}:
            loops.append((n, ix))
    return rows, loops


def render(g: GradSpec, name: str, kernel: Kernel, params: list[str], evaluate: Evaluate, epilogue: Epilogue,
           index_type: str, wgmma: bool = False) -> tuple[str, tuple, tuple]:
    """The kernel; with `wgmma` (where `wgmma_usable`), each contraction and the product are Hopper's
    `wgmma.mma_async` of the work-group's one warpgroup, as in attention_tc.py's wgmma form: the rows' operands and
    the weights stay A fragments in registers (per warp the m16k16 ones of mma.sync, and the accumulators keep
    mma.sync's m16n8 layout, so the weights' code is the same), the loop tiles are read by the tensor cores from
    shared memory through matrix descriptors, 128-byte-swizzled (as B of the contractions contiguous along the head
    dim, as the product's B read transposed), so their ldmatrix loads and address arithmetic are gone."""
    spec, T = g.spec, index_type
    M, N, K = spec.M, spec.N, spec.K
    widest = max(N, *(c.head for c in g.contractions))
    BN = 64 if widest <= 64 else 32  # the loop's block: the contractions' accumulators stay in registers
    groups = -(-M // BM)
    half = g.pattern.out.dtype.name
    kind = "bf16" if half == "bfloat16" else "f16"
    store = "zd_bf16_store({})" if kind == "bf16" else "__half_as_ushort(__float2half_rn({}))"
    tiles, uses = _tiles(kernel, g)

    # shared memory: the loop tiles twice (cp.async into one buffer while the other is computed on; in the wgmma
    # form swizzled, from a 1024-aligned base), the rows' operands staged once (their fragments loaded from there)
    pool, at = [], 0
    loop_fill = []
    buffer = [BN * width * 2 for _n, _ix, width in tiles]  # bytes of one buffer of each loop tile (wgmma form)
    for t, (node, index, width) in enumerate(tiles):
        dd = sym.Var("dd", 0, width - 1)
        if wgmma:
            pool.append(f"  unsigned short* L{t} = reinterpret_cast<unsigned short*>(zd_base + {at});\n"
                        f"  const unsigned l{t} = zd_smem(L{t});")
            at += 2 * buffer[t]
            slot = f"L{t}[buf * {BN * width} + zd_swz_at(row, col)]"
        else:
            pitch = width + PAD
            pool.append(f"  unsigned short (*L{t})[{BN}][{pitch}] = "
                        f"reinterpret_cast<unsigned short (*)[{BN}][{pitch}]>(zd_base + {at});")
            at += 2 * BN * pitch * 2
            slot = f"L{t}[buf][row][col]"
        loop_fill.append(fill(kernel, node, index, Tile(slot, BN, width, "gk", "j0", K, dd, width, half, store),
                              evaluate, T, THREADS))
    rows_fill = []
    for i, c in enumerate(g.contractions):
        pitch = c.head + PAD
        pool.append(f"  unsigned short (*R{i})[{pitch}] = reinterpret_cast<unsigned short (*)[{pitch}]>(zd_base + {at});")
        at += BM * pitch * 2
        dd = sym.Var("dd", 0, c.head - 1)
        rows_fill.append(fill(kernel, c.row, c.index, Tile(f"R{i}[row][col]", BM, c.head, "gi", "r0", M, dd, c.head,
                                                          half, store), evaluate, T, THREADS))
    row_reads, loop_reads = _vector_reads(g, kernel)
    overrides = {}
    for i, (n, ix) in enumerate(loop_reads):
        pool.append(f"  float (*Vl{i})[{BN}] = reinterpret_cast<float (*)[{BN}]>(zd_base + {at});")
        at += 2 * BN * 4
        lines, value = evaluate(n, ix, {})
        loop_fill.append(f"""  for (int e = tid; e < {BN}; e += {THREADS}) {{
    const {T} gk = j0 + e;
    float v = 0.0f;
    if (gk < {K}) {{ {' '.join(lines)} v = {value}; }}
    Vl{i}[buf][e] = v;
  }}""")
        overrides[n.id] = f"Vl{i}[buf][gk - j0]"
    fills = "\n".join(loop_fill)
    per_row = []
    for i, (n, ix) in enumerate(row_reads):
        lines, value = evaluate(n, ix, {})
        per_row.append(f"""  float zd_r{i}[2];
  #pragma unroll
  for (int hh = 0; hh < 2; hh++) {{
    const {T} gi = r0 + warp * 16 + (lane >> 2) + hh * 8;
    float v = 0.0f;
    if (gi < {M}) {{ {' '.join(lines)} v = {value}; }}
    zd_r{i}[hh] = v;
  }}""")
        overrides[n.id] = f"zd_r{i}[h >> 1]"

    # the rows' fragments, by ldmatrix from their tiles: once, or in the wgmma form at every block (held across the
    # loop as wgmma's A, ptxas 13.0 gave their registers to the block's weights with two contractions, the second's
    # fragments then garbage from the second block on: found by the GPU tests, bf16 with tails)
    frags = []
    for i, c in enumerate(g.contractions):
        addr = f"&R{i}[warp * 16 + (((lane >> 3) & 1) << 3) + (lane & 7)][kk * 16 + ((lane >> 4) << 3)]"
        frags.append(f"""  unsigned rf{i}[{c.head // 16}][4];
  #pragma unroll
  for (int kk = 0; kk < {c.head // 16}; kk++)
    {ldm(False, addr, (f"rf{i}[kk][0]", f"rf{i}[kk][1]", f"rf{i}[kk][2]", f"rf{i}[kk][3]"))}""")
    frags_once, frags_per_block = ("", "\n".join(frags)) if wgmma else ("\n".join(frags), "")
    scores = []
    for i, c in enumerate(g.contractions):
        t = uses[i]
        if wgmma:  # (k16 steps of 32 bytes along a 128-byte row, panels of 64 head-dim columns BN rows apart; the
            # first step overwrites the accumulators: zeroed in C, a second contraction's zeros were moved by the
            # compiler after the first's issue, and ptxas then waited for that wgmma, C7517)
            scores.append(f"    float S{i}[{BN // 8}][4];\n" + wgmma_loop(
                kind, "kk", c.head // 16, BN, f"S{i}", f"rf{i}[kk]",
                f"zd_desc(l{t} + buf * {buffer[t]}u + (kk >> 2) * {BN * 128} + (kk & 3) * 32, 16, 1024)",
                0, "    ", fresh=True))
        else:
            scores.append(f"""    float S{i}[{BN // 8}][4];
    #pragma unroll
    for (int ni = 0; ni < {BN // 8}; ni++)
      #pragma unroll
      for (int h = 0; h < 4; h++) S{i}[ni][h] = 0.0f;
{mma_loop(kind, "kk", c.head // 16, BN // 16, f"S{i}", f"rf{i}[kk]", False,
          f"&L{t}[buf][j * 16 + ((lane >> 4) << 3) + (lane & 7)][kk * 16 + (((lane >> 3) & 1) << 3)]", "    ")}""")
        overrides[c.node.id] = f"S{i}[ni][h]"
    if wgmma:  # every contraction's group waited for at once, their accumulators pinned below the wait
        scores.append(f"    {WAIT}\n" + "\n".join(pin(f"S{i}", BN // 2) for i in range(len(g.contractions))))
    w_lines, w_val = evaluate(g.pattern.weights, g.weights_idx, overrides)
    inside = "true" if M % BM == 0 and K % BN == 0 else f"gi < {M} && gk < {K}"
    op_tile = uses[-1]
    if wgmma:  # (16 rows of 128 bytes per k16 step, panels of 64 columns BN rows apart, read transposed)
        product = wgmma_loop(kind, "t", BN // 16, N, "o", "pf[t]",
                             f"zd_desc(l{op_tile} + buf * {buffer[op_tile]}u + t * 2048, {BN * 128}, 1024)", 1, "    ")
        product += f"\n    {WAIT}"
        ready = ('    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");  // ... and visible to wgmma\n')
        base = (f"  unsigned char* zd_base = reinterpret_cast<unsigned char*>(zd_pool) + "
                f"(((zd_smem(zd_pool) + {ATOM - 1}u) & ~{ATOM - 1}u) - zd_smem(zd_pool));  // swizzle atoms: 1024-aligned")
        head, slack = f"{ARCH_MARK}\n{_HELPERS}\n{_WGMMA_HELPERS}\n{_SWIZZLE.format(rows=BN)}", ATOM
    else:
        product = mma_loop(kind, "t", BN // 16, N // 16, "o", "pf[t]", True,
                           f"&L{op_tile}[buf][t * 16 + (((lane >> 3) & 1) << 3) + (lane & 7)][j * 16 + ((lane >> 4) << 3)]",
                           "    ")
        ready, base, head, slack = "", "  unsigned char* zd_base = reinterpret_cast<unsigned char*>(zd_pool);", _HELPERS, 0
    # the output's tile through the loop tiles' memory (free after the loop's last barrier), out 16 bytes a thread
    out = staged_output(spec, kernel, params, epilogue, T, at, len(kernel.outputs), "r0")
    bz_expr = f"({T})(blockIdx.x / {groups})"
    src = f"""{head}
{tc_helpers(kind)}
extern "C" __global__ void __launch_bounds__({THREADS}) {name}({', '.join(params)}) {{
  // zyx_dist: dynamic shared bytes {at + slack}
  extern __shared__ __align__(16) float zd_pool[];
{base}
{chr(10).join(pool)}
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const {T} bz = {bz_expr};
  const {T} r0 = ({T})(blockIdx.x % {groups}) * {BM};
{chr(10).join(rows_fill)}
  zd_cp_commit();
  asm volatile("cp.async.wait_group 0;" ::: "memory");
  __syncthreads();
{frags_once}
{chr(10).join(per_row)}
  float o[{N // 8}][4];
  #pragma unroll
  for (int x = 0; x < {N // 8}; x++)
    #pragma unroll
    for (int h = 0; h < 4; h++) o[x][h] = 0.0f;
  const int steps = {-(-K // BN)};
  {{
    const {T} j0 = 0;
    const int buf = 0;
{fills}
  }}
  zd_cp_commit();
  for (int s = 0; s < steps; s++) {{
    if (s + 1 < steps) {{  // the next block's tiles, copied while this one is computed
      const {T} j0 = ({T})(s + 1) * {BN};
      const int buf = (s + 1) & 1;
{fills}
    }}
    zd_cp_commit();
    asm volatile("cp.async.wait_group 1;" ::: "memory");  // this block's tiles have landed
{ready}    __syncthreads();  // ... for every thread
    const int buf = s & 1;
    const {T} j0 = ({T})s * {BN};
{frags_per_block}
{chr(10).join(scores)}
    // the weights at each accumulator's row and loop index (0 past either end), as the A fragments of the product
    #pragma unroll
    for (int ni = 0; ni < {BN // 8}; ni++) {{
      #pragma unroll
      for (int h = 0; h < 4; h++) {{
        const {T} gi = r0 + warp * 16 + (lane >> 2) + ((h >> 1) << 3);
        const {T} gk = j0 + ni * 8 + ((lane & 3) << 1) + (h & 1);
        float w = 0.0f;
        if ({inside}) {{ {' '.join(w_lines)} w = {w_val}; }}
        S0[ni][h] = w;
      }}
    }}
    unsigned pf[{BN // 16}][4];
    #pragma unroll
    for (int t = 0; t < {BN // 16}; t++) {{
      pf[t][0] = zd_pack_{kind}(S0[2 * t][0], S0[2 * t][1]);
      pf[t][1] = zd_pack_{kind}(S0[2 * t][2], S0[2 * t][3]);
      pf[t][2] = zd_pack_{kind}(S0[2 * t + 1][0], S0[2 * t + 1][1]);
      pf[t][3] = zd_pack_{kind}(S0[2 * t + 1][2], S0[2 * t + 1][3]);
    }}
{product}
    __syncthreads();  // every warp is done with this block's buffers before the next fill takes them
  }}
{out.head}  #pragma unroll
  for (int x = 0; x < {N // 8}; x++) {{
    #pragma unroll
    for (int h = 0; h < 4; h++) {{
      const {T} gi = r0 + warp * 16 + (lane >> 2) + ((h >> 1) << 3);
      const {T} gj = x * 8 + ((lane & 3) << 1) + (h & 1);
      if ({row_test(M)}) {{
        const float acc = o[x][h];
{out.body}
      }}
    }}
  }}
{out.store}}}
"""
    return src, (spec.B * groups * THREADS,), (THREADS,)
