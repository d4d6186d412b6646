"""Driver side: the fused attention kernel on tensor cores, for the CUDA dialect when q, k and v are float16
or bfloat16 (codegen/attention.py matches the pattern; attention_tiled.render_cuda picks this kernel or
its own float32 one). Takes the
`attention.AttentionSpec` and the renderer's evaluators; gives CUDA C in the manner of FlashAttention-2:
a work-group of 4 warps owns 64 query rows (16 per warp), keeps q's fragments in registers, and walks the
keys in blocks of 64. Per block, S = q @ k^T is `mma.sync.m16n8k16` with float32 accumulators; the
scoring (scale, mask, any elementwise expression) is evaluated at each accumulator's row and key; an
online softmax (running max per row across the 4 lanes that share it, partial sums per lane) turns S
into probabilities, which are rounded to the operands' half type and reused in registers as the A
fragments of p @ v (an m16n8 accumulator pair has the layout of one m16k16 A fragment), so the T x T
scores never leave the registers. k and v blocks reach shared memory by `cp.async` where they are views
with 8 neighbours side by side along the head dim (else element by element); v's copies run while S is
computed and the next k block's while p @ v is (`fill`, which attention_tiled.py shares). An input the
scoring reads at (row, key), such as an additive mask, is staged beside k as a tile of its own
(`side_reads`), so it is read from global memory once, in 16-byte runs. Key blocks that a mask hides
entirely are left out, loads included, and blocks it leaves clear are scored without it, as the prologue
of attention_skip.py flags them; a warp whose scores in a block are all -inf (a causal mask's diagonal
block) skips that block's softmax, and its p @ v where v's block is finite: the result is the same as
computing them. On Hopper (the dialect with wgmma) the tuner also times a wgmma form of the same kernel
(`render(..., wgmma=True)`, head dims of whole 64s): both products are then `wgmma.mma_async` from
128-byte-swizzled tiles; attention_tma.py's TMA form (`KernelOpts(wgmma=2)`, the tuner's first candidate
where TMA can read k and v) shares this module's pieces. Work-groups take the query blocks with the most keys
first (`work_order`). Other
dtypes and head dims take attention_tiled.py's float32 arithmetic on CUDA (no TF32).
"""

from __future__ import annotations

from functools import partial
from typing import NamedTuple

from ..dtypes import dtype as dtype_named
from ..fuse.kernelize import Kernel
from ..graph.attention import MOVES
from ..graph.ir import Node, Op
from . import symbolic as sym
from .attention import AttentionSpec, Evaluate, RowStats
from .attention_skip import Skips
from .attention_tiles import SIDE_TYPES, Tile, copyable, fill, filled_check
from .cexpr import move_index
from .gemm import ELEMENTWISE, Epilogue, GemmSpec, _walk, tidy
from .gemm_tc import _HELPERS
from .gemm_wgmma import _WGMMA_HELPERS, ARCH_MARK, ATOM, staged_store

BM = 64  # query rows per work-group, 16 per warp
BN = 64  # keys per block
THREADS = 128
PAD = 8  # halves of padding per shared-memory row: ldmatrix's eight row reads hit distinct banks
LOG2E = 1.4426950408889634
WAIT = 'asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");'
SHARED = 64 * 1024  # bytes of shared memory a work-group takes at most (3 fit an SM)


# the element offset of (row, col) in a tile of 64-column panels of {rows} rows, rows 128 bytes, swizzled as wgmma's
# 128-byte mode reads it (the tile 1024-aligned; 16-byte runs along the columns stay together)
_SWIZZLE = """#ifndef ZD_SWZ_AT_{rows}
#define ZD_SWZ_AT_{rows}
__device__ __forceinline__ int zd_swz_at(int row, int col) {{
  const unsigned off = (col >> 6) * {rows}u * 128u + row * 128u + (col & 63) * 2u;
  return (int)((off ^ (((off >> 7) & 7) << 4)) >> 1);
}}
#endif"""


def launch_bounds(a: AttentionSpec) -> str:
    """`__launch_bounds__` of both CUDA attention kernels: head dims up to 64 fit 128 registers a thread, so 4
    work-groups share an SM (wider heads would spill)."""
    return f"{THREADS}, 4" if max(a.head, a.spec.N) <= 64 else f"{THREADS}"


def usable(a: AttentionSpec, dialect) -> bool:
    """q, k and v of one half type, head dims in whole m16n8k16 steps, in the CUDA dialect."""
    dtypes = {a.q.dtype, a.k.dtype, a.v.dtype}
    return (dialect.name == "cuda" and len(dtypes) == 1 and a.q.dtype.is_half and a.head % 16 == 0
            and a.spec.N % 16 == 0)


def wgmma_usable(a: AttentionSpec, dialect) -> bool:
    """Whether the wgmma form applies: a dialect with wgmma, and head dims in whole 128-byte swizzle rows
    (64 halves) up to the widest wgmma (256 columns)."""
    return (usable(a, dialect) and dialect.wgmma and a.head % 64 == 0 and a.spec.N % 64 == 0
            and max(a.head, a.spec.N) <= 256)


def work_order(a: AttentionSpec, groups: int, T: str) -> str:
    """C declaring `bz`, `zd_qb` (the query block) and `q0` from blockIdx.x, the longest work first: under a
    causal mask the last query blocks see the most keys, and in (batch, query block) order the longest ones
    ran last, leaving SMs idle at the end (Nsight Compute: 16% of the SMs' cycles). Batch entries are taken in
    chunks whose k and v fit in L2 together (`l2_batches`), each chunk from its last query block to its first."""
    batches, chunk = a.spec.B, a.l2_batches()
    per = chunk * groups
    last = f"min({chunk}, {batches} - zd_c * {chunk})" if batches % chunk else str(chunk)
    return (f"  const int zd_c = blockIdx.x / {per}, zd_r = blockIdx.x % {per}, zd_n = {last};\n"
            f"  const int zd_qb = {groups - 1} - zd_r / zd_n;  // the chunk's batch entries side by side\n"
            f"  const {T} bz = ({T})(zd_c * {chunk} + zd_r % zd_n);\n"
            f"  const {T} q0 = ({T})zd_qb * {BM};")


def side_reads(a: AttentionSpec, kernel: Kernel, free_bytes: int) -> list[tuple[Node, tuple, str]]:
    """(node, index, dtype) of each operand of the scoring, other than q @ k^T, that reads an input at
    (query row, key) in 16-byte runs along the keys, e.g. an additive mask: staged per block as a BM x BN
    tile by `cp.async` (two buffers, the next block's copied with its k), the scoring reads it from shared
    memory in the accumulators' layout (from global memory that is a few bytes per lane from each of 8
    rows). As many as fit `free_bytes`; a node read at two indices stays a global read (the scoring's
    overrides are per node)."""
    pos = {n.id: i for i, n in enumerate(kernel.inputs)}
    inside = a.pattern.internal()
    gk = a.spec.vars()[3]
    found: dict[int, tuple[Node, tuple]] = {}
    twice: set[int] = set()
    stack = [(a.pattern.scores, a.scores_idx)]
    while stack:
        n, ix = stack.pop()
        if n is a.pattern.qk or n.op is Op.CONST:
            continue
        if n.id in inside and n.id not in pos:  # on the way to q @ k^T
            if n.op in ELEMENTWISE:
                stack.extend((x, ix) for x in n.srcs)
            elif n.op in (*MOVES, Op.FLIP):
                stack.append((n.srcs[0], move_index(n, ix)))
            continue
        ix = tuple(tidy(e) for e in ix)
        if n.id in found and found[n.id][1] != ix:
            twice.add(n.id)
        found[n.id] = (n, ix)
    out = []
    for nid, (n, ix) in found.items():
        walk = _walk(n, ix, pos)
        dtype = kernel.inputs[walk[1][0][0]].dtype.name if walk is not None and len(walk[1]) == 1 else None
        if nid in twice or dtype not in SIDE_TYPES or not {"gi", "gk"} <= walk[0]:
            continue
        size = dtype_named(dtype).itemsize
        if copyable(kernel, n, ix, dtype, gk, BN) is None or 2 * BM * (BN + 16 // size) * size > free_bytes:
            continue
        free_bytes -= 2 * BM * (BN + 16 // size) * size
        out.append((n, ix, dtype))
    return out


def ldm(trans: bool, addr: str, regs: tuple[str, str, str, str]) -> str:
    """One ldmatrix.x4 (transposed for v) of the 16-bit tile at shared address `addr` into `regs`."""
    op = f"ldmatrix.sync.aligned.m8n8.x4{'.trans' if trans else ''}.shared.b16"
    outs = ", ".join(f'"=r"({r})' for r in regs)
    return f'asm volatile("{op} {{%0,%1,%2,%3}}, [%4];" : {outs} : "r"(zd_smem({addr})) : "memory");'


def mma_call(kind: str, c: str, a_frag: str, b0: str, b1: str) -> str:
    acc = ", ".join(f'"+f"({c}[{h}])' for h in range(4))
    frag = ", ".join(f'"r"({a_frag}[{h}])' for h in range(4))
    return (f'asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.{kind}.{kind}.f32 {{%0,%1,%2,%3}}, '
            f'{{%4,%5,%6,%7}}, {{%8,%9}}, {{%0,%1,%2,%3}};" : {acc} : {frag}, "r"({b0}), "r"({b1}));')


def mma_loop(kind: str, step: str, steps: int, pairs: int, acc: str, frag: str, trans: bool, addr: str,
             pad: str) -> str:
    """`acc` += a @ b over `steps` k16 steps (`step`) and `pairs` pairs of n8 tiles (`j`): b's fragments by
    ldmatrix at `addr` (transposed for v), a's in registers (`frag`)."""
    return "\n".join(pad + line for line in f"""#pragma unroll
for (int {step} = 0; {step} < {steps}; {step}++) {{
  #pragma unroll
  for (int j = 0; j < {pairs}; j++) {{
    unsigned b0, b1, b2, b3;
    {ldm(trans, addr, ("b0", "b1", "b2", "b3"))}
    {mma_call(kind, f"{acc}[2 * j]", frag, "b0", "b1")}
    {mma_call(kind, f"{acc}[2 * j + 1]", frag, "b2", "b3")}
  }}
}}""".splitlines())


def wgmma_loop(kind: str, step: str, steps: int, cols: int, acc: str, frag: str, desc: str, trans: int,
               pad: str, fresh: bool = False) -> str:
    """`acc` (cols / 2 accumulators a thread) += a @ b over `steps` k16 steps (`step`), one m64n{cols}k16
    wgmma each: a's fragments in registers (`frag`), b's descriptor `desc`; committed, not waited for. `fresh`:
    `acc` = a @ b, the first step not adding the accumulators (which need no zeroing before it)."""
    regs = cols // 2
    outs = ", ".join(f"%{i}" for i in range(regs))
    cons = ", ".join(f'"+f"({acc}[{i // 4}][{i % 4}])' for i in range(regs))
    frag_in = ", ".join(f'"r"({frag}[{h}])' for h in range(4))
    mma = (f'asm volatile("{{ .reg .pred p; setp.ne.b32 p, %{regs + 5}, 0; '
           f'wgmma.mma_async.sync.aligned.m64n{cols}k16.f32.{kind}.{kind} {{{outs}}}, '
           f'{{%{regs},%{regs + 1},%{regs + 2},%{regs + 3}}}, %{regs + 4}, p, 1, 1, {trans}; }}" : {cons} : '
           f'{frag_in}, "l"({desc}), "r"({f"(int)({step} > 0)" if fresh else 1}) : "memory");')
    return "\n".join(pad + line for line in f"""asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#pragma unroll
for (int {step} = 0; {step} < {steps}; {step}++) {{
  {mma}
}}
asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");""".splitlines())


def pin(acc: str, regs: int) -> str:
    """An empty asm that takes and gives every accumulator of `acc`, after a wgmma wait: the compiler may then
    move no read or write of them above the wait (the wgmma asm names them, the wait does not)."""
    cons = ", ".join(f'"+f"({acc}[{i // 4}][{i % 4}])' for i in range(regs))
    return f'    asm volatile("" : {cons} :: "memory");'


def score_loop(T: str, inside: str, chain: bool, lines: list[str], value: str) -> str:
    """The scoring at each accumulator of S (the block at j0); `chain`: each score also folded into its row's max
    (mb0, mb1, from -inf), else ROW_MAX takes the max after the loop."""
    fold = "\n        if (h < 2) mb0 = zd_max_nan(mb0, sc); else mb1 = zd_max_nan(mb1, sc);" if chain else ""
    return f"""    #pragma unroll
    for (int ni = 0; ni < {BN // 8}; ni++) {{
      #pragma unroll
      for (int h = 0; h < 4; h++) {{  // unrolled, so S stays in registers whatever the scoring does
        const {T} gi = q0 + warp * 16 + (lane >> 2) + ((h >> 1) << 3);
        const {T} gk = j0 + ni * 8 + ((lane & 3) << 1) + (h & 1);
        const float acc = S[ni][h];
        float sc = -INFINITY;
        if ({inside}) {{ {' '.join(lines)} sc = {value}; }}
        S[ni][h] = sc;{fold}
      }}
    }}"""


# the block's max of each of the lane's two rows (mb0, mb1), NaN where a score is NaN (so the row's results are), as
# a tree of depth 4 after the scoring (max is exact in any order): in the TMA form the chain of 16 in score_loop held
# up every exp behind it (H200: 95.8 -> 94.4 us with the side tiles' offsets below); the cp.async forms keep the
# chain (the tree cost them 1 us)
ROW_MAX = f"""    float mb0, mb1;
    {{
      float r0[{BN // 8}], r1[{BN // 8}];
      #pragma unroll
      for (int ni = 0; ni < {BN // 8}; ni++) {{
        r0[ni] = zd_max_nan(S[ni][0], S[ni][1]);
        r1[ni] = zd_max_nan(S[ni][2], S[ni][3]);
      }}
      #pragma unroll
      for (int w = {BN // 16}; w >= 1; w >>= 1)
        #pragma unroll
        for (int ni = 0; ni < w; ni++) {{
          r0[ni] = zd_max_nan(r0[ni], r0[ni + w]);
          r1[ni] = zd_max_nan(r1[ni], r1[ni + w]);
        }}
      mb0 = r0[0];
      mb1 = r1[0];
    }}"""


ZERO_S = f"""    float S[{BN // 8}][4];
    #pragma unroll
    for (int ni = 0; ni < {BN // 8}; ni++)
      #pragma unroll
      for (int h = 0; h < 4; h++) S[ni][h] = 0.0f;"""


def tc_helpers(kind: str) -> str:
    """The device functions every tensor-core attention kernel of this half type calls (once per source)."""
    exponent = "0x7f80u" if kind == "bf16" else "0x7c00u"  # all ones in a non-finite value's exponent
    return f"""#ifndef ZD_TC_PACK_{kind}
#define ZD_TC_PACK_{kind}
__device__ __forceinline__ unsigned zd_pack_{kind}(float lo, float hi) {{
  unsigned r;
  asm("cvt.rn.{kind}x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
}}
__device__ __forceinline__ float zd_ex2(float x) {{  // 2^x in one instruction; a result below 2^-126 is 0
  float r;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x));
  return r;
}}
__device__ __forceinline__ float zd_max_nan(float a, float b) {{  // NaN if either is (fmaxf drops a NaN)
  float r;
  asm("max.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
  return r;
}}
__device__ __forceinline__ bool zd_finite8_{kind}(uint4 w) {{  // eight halves: none infinite or NaN
  const unsigned x[4] = {{w.x, w.y, w.z, w.w}};
  bool ok = true;
  #pragma unroll
  for (int i = 0; i < 4; i++)
    ok = ok && (x[i] & {exponent}) != {exponent} && ((x[i] >> 16) & {exponent}) != {exponent};
  return ok;
}}
#endif"""


def q_registers(D: int, q_slot: str) -> str:
    """C loading the warp's 16 rows of q (staged in shared memory as `q_slot`) into A fragments `qf`."""
    q_frags = f"&{q_slot[:2]}[warp * 16 + (((lane >> 3) & 1) << 3) + (lane & 7)][kk * 16 + ((lane >> 4) << 3)]"
    return f"""  unsigned qf[{D // 16}][4];
  #pragma unroll
  for (int kk = 0; kk < {D // 16}; kk++)
    {ldm(False, q_frags, ("qf[kk][0]", "qf[kk][1]", "qf[kk][2]", "qf[kk][3]"))}"""


def o_init(N: int) -> str:
    """C declaring the output accumulators and the running max and sum of the lane's two rows."""
    return f"""  float o[{N // 8}][4];
  #pragma unroll
  for (int x = 0; x < {N // 8}; x++)
    #pragma unroll
    for (int h = 0; h < 4; h++) o[x][h] = 0.0f;
  float m0 = -INFINITY, m1 = -INFINITY, l0 = 0.0f, l1 = 0.0f;  // rows lane/4 and lane/4 + 8 of the warp's 16"""


def _exps(exponent: str) -> str:
    """C turning each score S[2 * t + u][h] into its probability in place, `exponent` being its power of 2 (its
    row's max removed), with the rows' sums (l0, l1) gathering them."""
    return f"""      #pragma unroll
      for (int t = 0; t < {BN // 16}; t++)
        #pragma unroll
        for (int u = 0; u < 2; u++)
          #pragma unroll
          for (int h = 0; h < 4; h++) {{
            const float e = zd_ex2({exponent});
            S[2 * t + u][h] = e;
            if (h < 2) l0 += e; else l1 += e;
          }}"""


def softmax(kind: str, N: int) -> str:
    """C that turns the block's scores S (the rows' block max in mb0, mb1) into the probabilities' A fragments
    `pf` of p @ v, with the online softmax's rescaling of the running sums and the output."""
    return f"""    // a warp whose 16 rows score -inf at every key of the block (masked out) leaves its max, sums and
    // output as they are: the softmax is skipped, and its probabilities are 0
    const bool masked = __all_sync(0xffffffffu, mb0 == -INFINITY && mb1 == -INFINITY);
    unsigned pf[{BN // 16}][4];
    if (masked) {{
      #pragma unroll
      for (int t = 0; t < {BN // 16}; t++) pf[t][0] = pf[t][1] = pf[t][2] = pf[t][3] = 0u;
    }} else {{
      // the lanes of a quad hold the same two rows: their max is the rows' max in the block
      mb0 = zd_max_nan(mb0, __shfl_xor_sync(0xffffffffu, mb0, 1));
      mb0 = zd_max_nan(mb0, __shfl_xor_sync(0xffffffffu, mb0, 2));
      mb1 = zd_max_nan(mb1, __shfl_xor_sync(0xffffffffu, mb1, 1));
      mb1 = zd_max_nan(mb1, __shfl_xor_sync(0xffffffffu, mb1, 2));
      // online softmax: the running max moves, and what was summed under the old one is rescaled, only where a
      // row's block max passes it by more than 8 in exp2's units (or is NaN): a probability is then at most 2^8,
      // exact enough in the half type, and the sums and the output are the same to their rounding (the row's
      // common factor divides out), while most blocks leave the output as it is (ex2.approx: within 2^-22 of
      // 2^x, far below the half type the probabilities are rounded to; a probability under 2^-126 counts as 0)
      if (__any_sync(0xffffffffu, !(mb0 <= m0 + {8 / LOG2E}f) || !(mb1 <= m1 + {8 / LOG2E}f))) {{
        mb0 = zd_max_nan(m0, mb0);
        mb1 = zd_max_nan(m1, mb1);
        const float al0 = mb0 == -INFINITY ? 1.0f : zd_ex2((m0 - mb0) * {LOG2E}f);
        const float al1 = mb1 == -INFINITY ? 1.0f : zd_ex2((m1 - mb1) * {LOG2E}f);
        m0 = mb0;
        m1 = mb1;
        l0 *= al0;
        l1 *= al1;
        #pragma unroll
        for (int x = 0; x < {N // 8}; x++) {{
          o[x][0] *= al0; o[x][1] *= al0; o[x][2] *= al1; o[x][3] *= al1;
        }}
      }}
      // a row that is -inf so far takes 0 for its max, so its -inf scores give exp(-inf) = 0, not NaN, without a
      // test per score
      const float ms0 = m0 == -INFINITY ? 0.0f : m0, ms1 = m1 == -INFINITY ? 0.0f : m1;
      // s * log2(e) - max * log2(e) is one FMA, exact but for max * log2(e)'s rounding: under 2^-17 where every
      // max of the warp's rows is below 128 in magnitude (a relative error of 2^-17.5 in a probability). At larger
      // scores that rounding grows with them (exp(0) = 1 is lost), so there the difference is taken first.
      if (__all_sync(0xffffffffu, fabsf(ms0) < 128.0f && fabsf(ms1) < 128.0f)) {{
        const float ml0 = ms0 * {LOG2E}f, ml1 = ms1 * {LOG2E}f;
{_exps(f"fmaf(S[2 * t + u][h], {LOG2E}f, h < 2 ? -ml0 : -ml1)")}
      }} else {{
{_exps(f"(S[2 * t + u][h] - (h < 2 ? ms0 : ms1)) * {LOG2E}f")}
      }}
      #pragma unroll
      for (int t = 0; t < {BN // 16}; t++) {{  // rounded to the half type: the A fragments of p @ v
        pf[t][0] = zd_pack_{kind}(S[2 * t][0], S[2 * t][1]);
        pf[t][1] = zd_pack_{kind}(S[2 * t][2], S[2 * t][3]);
        pf[t][2] = zd_pack_{kind}(S[2 * t + 1][0], S[2 * t + 1][1]);
        pf[t][3] = zd_pack_{kind}(S[2 * t + 1][2], S[2 * t + 1][3]);
      }}
    }}"""


class StagedOutput(NamedTuple):
    """The output's epilogue of a 64-row work-group (`staged_output`): C declaring the tile's origin before the
    accumulators' loop (empty where nothing is staged), the loop's body run at each accumulator, and the code
    storing the tile after the loop (empty where the body stores directly)."""

    head: str
    body: str
    store: str


def staged_output(spec: GemmSpec, kernel: Kernel, params: list[str], epilogue: Epilogue, T: str, pool: int,
                  outputs: int, row0: str) -> StagedOutput:
    """The epilogue of a work-group of 128 threads owning 64 rows of the product `spec` from row `row0`, and all
    its columns: the body writes the tile of the `outputs` first outputs into shared memory from `zd_base` (its
    first `pool` bytes free once the loop is done), which is then stored in up to 16 bytes a thread, neighbours by
    neighbours in memory (gemm_wgmma.staged_store). An accumulator's own layout stores 2 bytes of 8 rows a warp:
    Nsight Compute found those stores and their drain at exit 8% of the TMA form's stall samples. Where the tile
    does not fit, the body stores directly."""
    staged = staged_store(spec, kernel, params, epilogue, spec.N, pool, 0, T, rows=BM, threads=THREADS,
                          origin="zd_base", outputs=outputs)
    if staged is None:
        return StagedOutput("", "\n".join("        " + ln for ln in epilogue(spec.out_flat())), "")
    body, _early, _loads, store, _used = staged  # (no input tiles staged: nothing before the main loop)
    return StagedOutput(f"  const {T} bi = {row0}, bj = 0;  // the output tile's origin\n", body, store)


def row_test(M: int) -> str:
    """The test of an output row `gi` of a 64-row work-group: none where every block of rows is whole (with one,
    each store sat in a branch of its own, and each waited for the last to read its register: Nsight Compute, 9%
    of the TMA form's stall samples)."""
    return f"gi < {M}" if M % BM else "true"


def finish(T: str, M: int, N: int, out: StagedOutput, row_stats: RowStats, freed: bool = False) -> str:
    """C that stores the row statistics (`row_stats`, where the kernel has them), divides each output row by its
    sum and runs the epilogue `out` (`staged_output`) on every element; a staged tile after a barrier unless the
    stages are `freed` (every warp done with them, and no copy into them in flight, at the main loop's end)."""
    stats = ""
    if lines := row_stats("zd_m", "zd_l"):
        stats = f"""
  if ((lane & 3) == 0) {{  // the row statistics, from one lane of the quad that shares a row
    #pragma unroll
    for (int h = 0; h < 2; h++) {{
      const {T} gi = q0 + warp * 16 + (lane >> 2) + (h << 3);
      const float zd_m = h ? m1 : m0, zd_l = h ? l1 : l0;
      if (gi < {M}) {{
        {chr(10).join("        " + ln for ln in lines).lstrip()}
      }}
    }}
  }}"""
    barrier = "" if freed or not out.store else \
        "  __syncthreads();  // every warp is done with the stages the tile is staged in\n"
    return f"""{out.head}{barrier}  l0 += __shfl_xor_sync(0xffffffffu, l0, 1);
  l0 += __shfl_xor_sync(0xffffffffu, l0, 2);
  l1 += __shfl_xor_sync(0xffffffffu, l1, 1);
  l1 += __shfl_xor_sync(0xffffffffu, l1, 2);{stats}
  // one division a row: o * (1 / l) is NaN or inf where o / l is (l is 0 only in a row masked at every key, and
  // at least 1 otherwise: exp(0) for its max), within an ulp of it elsewhere
  const float r0 = 1.0f / l0, r1 = 1.0f / l1;
  #pragma unroll
  for (int x = 0; x < {N // 8}; x++) {{
    #pragma unroll
    for (int h = 0; h < 4; h++) {{
      const {T} gi = q0 + warp * 16 + (lane >> 2) + ((h >> 1) << 3);
      const {T} gj = x * 8 + ((lane & 3) << 1) + (h & 1);
      if ({row_test(M)}) {{
        const float acc = o[x][h] * (h < 2 ? r0 : r1);
{out.body}
      }}
    }}
  }}{chr(10) + out.store if out.store else ""}"""


def render(a: AttentionSpec, name: str, kernel: Kernel, params: list[str], evaluate: Evaluate,
           epilogue: Epilogue, index_type: str, row_stats: RowStats, wgmma: bool = False) -> tuple[str, tuple, tuple]:
    """`wgmma` (where `wgmma_usable`): both products are Hopper's `wgmma.mma_async`, the work-group's 4 warps
    one warpgroup. q and the probabilities stay the A operand in registers (an m64k16 A fragment is, per warp,
    the m16k16 one of `mma.sync`, and the accumulators have mma.sync's m16n8 layout), k and v are read by the
    tensor cores from shared memory through matrix descriptors, as 128-byte-swizzled tiles (gemm_wgmma.py's
    layouts: k as B of q @ k^T contiguous along the head dim, v as B of p @ v read transposed), so the
    ldmatrix loads of every k and v fragment and their address arithmetic are gone."""
    spec, T = a.spec, index_type
    M, N, K, D = spec.M, spec.N, spec.K, a.head
    groups = -(-M // BM)
    bz, _, gj, gk = spec.vars()
    dd = sym.Var("dd", 0, D - 1)
    kind = "bf16" if a.q.dtype.name == "bfloat16" else "f16"
    W = max(D, N) + PAD  # Vs holds q's block first, then each block of v
    half = a.q.dtype.name
    store = "zd_bf16_store({})" if kind == "bf16" else "__half_as_ushort(__float2half_rn({}))"
    if wgmma:  # q staged apart (padded for ldmatrix) at the pool's start, over the tiles it precedes
        q_slot, k_slot, v_slot = "Qs[row][col]", "Ks[zd_swz_at(row, col)]", "Vs[zd_swz_at(row, col)]"
        own, slack = max(2 * BN * (D + N), 2 * BM * (D + PAD)), ATOM  # Ks and Vs from a 1024-aligned base
    else:
        q_slot, k_slot, v_slot = "Vs[row][col]", "Ks[row][col]", "Vs[row][col]"
        own, slack = 2 * BN * (D + PAD + W), 0  # bytes of Ks and Vs
    fill_q = fill(kernel, a.q, a.qk_idx, Tile(q_slot, BM, D, "gi", "q0", M, dd, D, half, store), evaluate, T, THREADS)
    fill_k = fill(kernel, a.k, a.qk_idx, Tile(k_slot, BN, D, "gk", "j0", K, dd, D, half, store), evaluate, T, THREADS)
    v_tile, v_index = Tile(v_slot, BN, N, "gk", "j0", K, gj, N, half, store), spec.index(bz, sym.ZERO, gj, gk)
    fill_v = fill(kernel, a.v, v_index, v_tile, evaluate, T, THREADS)
    sides = side_reads(a, kernel, SHARED - slack - own)
    overrides = {a.pattern.qk.id: "acc"}
    views, at = [], own  # the side tiles' pointers into the pool, each 2 buffers of BM x pitch
    side_fills: list[tuple[Node, str]] = []
    for i, (n, ix, dt) in enumerate(sides):
        ctype, value = SIDE_TYPES[dt]
        size = dtype_named(dt).itemsize
        pitch = BN + 16 // size  # elements per row: 16 bytes of padding
        views.append(f"  {ctype} (*Ms{i})[{BM}][{pitch}] = reinterpret_cast<{ctype} (*)[{BM}][{pitch}]>(zd_base + {at});")
        at += 2 * BM * pitch * size
        side_fills.append((n, fill(kernel, n, ix, Tile(f"Ms{i}[buf][row][col]", BM, BN, "gi", "q0", M, gk, K, dt, "",
                                                      "j0 + "), evaluate, T, THREADS)))
        overrides[n.id] = value.format(f"Ms{i}[it & 1][gi - q0][gk - j0]")
    out = staged_output(spec, kernel, params, epilogue, T, at, len(kernel.outputs) - len(a.stats), "q0")
    exponent = "0x7f80u" if kind == "bf16" else "0x7c00u"  # all ones in a non-finite value's exponent
    as_float = SIDE_TYPES[half][1]
    skip = Skips(a, kernel, name, params, evaluate, T, as_float.format(store), half,
                 (copyable(kernel, a.k, a.qk_idx, half, dd, D), copyable(kernel, a.v, v_index, half, gj, N)),
                 partial(copyable, kernel))
    q_max = skip.q_max_frags(half, D)
    for n, code in side_fills:  # a mask tile is not copied for a block it leaves clear: it is not read there
        fill_k += "\n" + (code if skip.rule is None or n is not skip.rule.mask else
                          f"  if (!{skip.clear(f'(int)(j0 / {BN})')}) {{\n{code}\n  }}")
    # scores past the ends of the rows or keys are -inf: no test where both are whole blocks
    inside = "true" if M % BM == 0 and K % BN == 0 else f"gi < {M} && gk < {K}"

    if wgmma:
        # k's tile: 64-wide panels of the head dim, each BN rows of 128 bytes (K-major as q @ k^T's B, stepping
        # 32 bytes per k16); v's the same, MN-major as p @ v's B: 16 keys of 128-byte rows per k16, panels of 64
        # columns LBO apart
        qk = wgmma_loop(kind, "kk", D // 16, BN, "S", "qf[kk]", f"zd_desc(ks + (kk >> 2) * {BN * 128} + (kk & 3) * 32, 16, 1024)",
                        0, "    ")
        pv = wgmma_loop(kind, "t", BN // 16, N, "o", "pf[t]", f"zd_desc(vs + t * 2048, {BN * 128}, 1024)", 1, "    ")
        fence = '    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");  // ... and visible to wgmma\n'
        pool = (f"  unsigned char* zd_base = reinterpret_cast<unsigned char*>(zd_pool) + "
                f"(((zd_smem(zd_pool) + {ATOM - 1}u) & ~{ATOM - 1}u) - zd_smem(zd_pool));  // swizzle atoms: 1024-aligned\n"
                f"  unsigned short* Ks = reinterpret_cast<unsigned short*>(zd_base);\n"
                f"  unsigned short* Vs = reinterpret_cast<unsigned short*>(zd_base + {2 * BN * D});\n"
                f"  unsigned short (*Qs)[{D + PAD}] = reinterpret_cast<unsigned short (*)[{D + PAD}]>(zd_base);\n"
                f"  const unsigned ks = zd_smem(Ks), vs = zd_smem(Vs);")
        # wgmma is one instruction of the warpgroup: p @ v runs in every warp (a masked warp's zero
        # probabilities give what NumPy gives, 0 * inf = NaN included)
        v_ready = f"    asm volatile(\"cp.async.wait_group 1;\" ::: \"memory\");  // this block of v has landed\n{fence}" \
                  "    __syncthreads();  // ... for every thread\n" + pv + f"\n    {WAIT}"
        # the block's q @ k^T is issued before v's copies, which then run in its shadow (p @ v is waited for at
        # once: left in flight into the next block, ptxas serializes every wgmma)
        top = (f"{fence}    __syncthreads();  // ... for every thread, and every warp is done with the last block of v\n"
               f"{ZERO_S}\n{qk}\n{fill_v}\n    zd_cp_commit();\n    {WAIT}  // the block's scores are in S\n"
               f"{pin('S', BN // 2)}")
        head = f"{ARCH_MARK}\n{_HELPERS}\n{_WGMMA_HELPERS}\n{_SWIZZLE.format(rows=BN)}"
    else:
        qk = mma_loop(kind, "kk", D // 16, BN // 16, "S", "qf[kk]", False,
                      "&Ks[j * 16 + ((lane >> 4) << 3) + (lane & 7)][kk * 16 + (((lane >> 3) & 1) << 3)]", "    ")
        pv = mma_loop(kind, "t", BN // 16, N // 16, "o", "pf[t]", True,
                      "&Vs[t * 16 + (((lane >> 3) & 1) << 3) + (lane & 7)][j * 16 + ((lane >> 4) << 3)]", "      ")
        fence = ""
        pool = (f"  unsigned char* zd_base = reinterpret_cast<unsigned char*>(zd_pool);\n"
                f"  unsigned short (*Ks)[{D + PAD}] = reinterpret_cast<unsigned short (*)[{D + PAD}]>(zd_base);\n"
                f"  unsigned short (*Vs)[{W}] = reinterpret_cast<unsigned short (*)[{W}]>(zd_base + {2 * BN * (D + PAD)});")
        v_finite = skip.v_finite("s", lambda: filled_check(kernel, a.v, v_index, v_tile, THREADS, "finite", (
            "uint4", f"zd_finite8_{kind}(w)"), f"(x & {exponent}) != {exponent}"), "v's block is visible to every warp")
        v_ready = ('    asm volatile("cp.async.wait_group 1;" ::: "memory");  // this block of v has landed (the next k may not)\n'
                   f"{v_finite}\n    if (!(masked && v_finite)) {{\n{pv}\n    }}")
        head = _HELPERS
        top = (f"    __syncthreads();  // ... for every thread, and every warp is done with the last block of v\n"
               f"{fill_v}\n    zd_cp_commit();\n{ZERO_S}\n{qk}")

    src = f"""{head}
{skip.prologue}{tc_helpers(kind)}
extern "C" __global__ void __launch_bounds__({launch_bounds(a)}) {name}({', '.join(skip.params)}) {{
  // zyx_dist: dynamic shared bytes {slack + at}
  extern __shared__ __align__(16) float zd_pool[];
{pool}
{chr(10).join(views)}
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
{work_order(a, groups, T)}
{fill_q}
  zd_cp_commit();
  asm volatile("cp.async.wait_group 0;" ::: "memory");
  __syncthreads();
{q_registers(D, q_slot)}
{q_max}  __syncthreads();  // q is in registers: Vs takes v's blocks from here on
{skip.setup}{o_init(N)}
  const int steps = {-(-K // BN)};
  // the key blocks run, in order: those a skip test leaves out are never loaded
  {skip.next("s", "-1")}
  if (s < steps) {{
    const {T} j0 = ({T})s * {BN};
    const int buf = 0;
{fill_k}
  }}
  zd_cp_commit();
  for (int it = 0; s < steps; it++) {{
    const {T} j0 = ({T})s * {BN};
    {skip.next("next", "s", "    ")}
    asm volatile("cp.async.wait_group 0;" ::: "memory");  // this block of k (and the side tiles) has landed
{top}
    __syncthreads();  // every warp is done with this block of k
    if (next < steps) {{
      const {T} j0 = ({T})next * {BN};
      const int buf = (it + 1) & 1;
{fill_k}
    }}
    zd_cp_commit();
    // the block's max of each of this lane's two rows, NaN where a score is NaN (so the row's results are)
    float mb0 = -INFINITY, mb1 = -INFINITY;
{skip.scoring(partial(score_loop, T, inside, True), evaluate, a.pattern.scores, a.scores_idx, overrides, "    ")}
{softmax(kind, N)}
{v_ready}
    s = next;
  }}
{finish(T, M, N, out, row_stats)}
}}
"""
    return src, (spec.B * groups * THREADS,), (THREADS,)
