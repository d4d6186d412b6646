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
computed and the next k block's while p @ v is (`fill`, which attention_tiled.py shares). Other dtypes
and head dims take attention_tiled.py's float32 arithmetic on CUDA (no TF32).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..dtypes import dtype as dtype_named
from ..fuse.kernelize import Kernel
from . import symbolic as sym
from .attention import AttentionSpec, Evaluate
from .gemm import Epilogue, _walk, contiguous, tidy
from .gemm_tc import _HELPERS

BM = 64  # query rows per work-group, 16 per warp
BN = 64  # keys per block
THREADS = 128
PAD = 8  # halves of padding per shared-memory row: ldmatrix's eight row reads hit distinct banks
LOG2E = 1.4426950408889634


def usable(a: AttentionSpec, dialect) -> bool:
    """q, k and v of one half type, head dims in whole m16n8k16 steps, in the CUDA dialect."""
    dtypes = {a.q.dtype, a.k.dtype, a.v.dtype}
    return (dialect.name == "cuda" and len(dtypes) == 1 and a.q.dtype.is_half and a.head % 16 == 0
            and a.spec.N % 16 == 0)


@dataclass(frozen=True)
class Tile:
    """A block of an operand in shared memory: element (row, col) is the operand at `row_var` = row_base +
    row and `col_var` = col, zero where row_var >= row_limit or col_var >= col_limit."""

    slot: str  # the C lvalue of element (row, col), e.g. "Ks[row][col]"
    rows: int
    cols: int
    row_var: str
    row_base: str
    row_limit: int
    col_var: sym.Var
    col_limit: int
    dtype: str  # what the tile holds: a view of an input of this dtype is copied as it is
    store: str  # a computed (float) value as the tile's type, e.g. "zd_bf16_store({})"


def fill(kernel: Kernel, node, index: tuple, t: Tile, evaluate: Evaluate, T: str, threads: int) -> str:
    """Code with which `threads` threads put `node` (at `index`, in the tile's variables) into the tile:
    16-byte `cp.async` copies when the node is a view of an input of the tile's dtype whose elements lie
    side by side in 16-byte runs along the columns, else value by value. The caller commits and waits."""
    pos = {n.id: i for i, n in enumerate(kernel.inputs)}
    walk = _walk(node, index, pos)
    width = 16 // dtype_named(t.dtype).itemsize
    view = None
    if walk is not None and not walk[2] and len(walk[1]) == 1 and t.cols % width == 0:
        p, off = walk[1][0]
        if kernel.inputs[p].dtype.name == t.dtype:
            off = tidy(off)
            view = (p, off) if contiguous(off, t.col_var, width) else None
    col_guard = f" && {t.col_var.name} < {t.col_limit}" if t.cols > t.col_limit else ""
    if view is not None:
        chunks = t.rows * t.cols // width
        p, off = view
        return f"""  #pragma unroll
  for (int r = 0; r < {-(-chunks // threads)}; r++) {{
    const int e = tid + r * {threads};
    const int row = e / {t.cols // width}, col = (e % {t.cols // width}) * {width};
    const {T} {t.row_var} = {t.row_base} + row, {t.col_var.name} = col;
    const bool inside = {f'e < {chunks} && ' if chunks % threads else ''}{t.row_var} < {t.row_limit}{col_guard};
    if ({f'e < {chunks}' if chunks % threads else 'true'})
      zd_cp_async(&{t.slot}, inside ? (const void*)(in{p} + {sym.render(off)}) : (const void*)in{p}, inside);
  }}"""
    lines, value = evaluate(node, index, {})
    elems = t.rows * t.cols
    return f"""  #pragma unroll 4
  for (int r = 0; r < {-(-elems // threads)}; r++) {{
    const int e = tid + r * {threads};
    const int row = e / {t.cols}, col = e % {t.cols};
    const {T} {t.row_var} = {t.row_base} + row, {t.col_var.name} = col;
    float v = 0.0f;
    if ({f'e < {elems} && ' if elems % threads else ''}{t.row_var} < {t.row_limit}{col_guard}) {{ {' '.join(lines)} v = {value}; }}
    if ({f'e < {elems}' if elems % threads else 'true'}) {t.slot} = {t.store.format('v')};
  }}"""


def render(a: AttentionSpec, name: str, kernel: Kernel, params: list[str], evaluate: Evaluate,
           epilogue: Epilogue, index_type: str) -> tuple[str, tuple, tuple]:
    spec, T = a.spec, index_type
    M, N, K, D = spec.M, spec.N, spec.K, a.head
    groups = -(-M // BM)
    bz, _, gj, gk = spec.vars()
    dd = sym.Var("dd", 0, D - 1)
    kind = "bf16" if a.q.dtype.name == "bfloat16" else "f16"
    W = max(D, N) + PAD  # Vs holds q's block first, then each block of v
    half = a.q.dtype.name
    store = "zd_bf16_store({})" if kind == "bf16" else "__half_as_ushort(__float2half_rn({}))"
    fill_q = fill(kernel, a.q, a.qk_idx, Tile("Vs[row][col]", BM, D, "gi", "q0", M, dd, D, half, store), evaluate,
                  T, THREADS)
    fill_k = fill(kernel, a.k, a.qk_idx, Tile("Ks[row][col]", BN, D, "gk", "j0", K, dd, D, half, store), evaluate,
                  T, THREADS)
    fill_v = fill(kernel, a.v, spec.index(bz, sym.ZERO, gj, gk),
                  Tile("Vs[row][col]", BN, N, "gk", "j0", K, gj, N, half, store), evaluate, T, THREADS)
    s_lines, s_val = evaluate(a.pattern.scores, a.scores_idx, {a.pattern.qk.id: "acc"})
    body = "\n".join("        " + ln for ln in epilogue(spec.out_flat()))

    def mma_call(c: str, a_frag: str, b0: str, b1: str) -> str:
        acc = ", ".join(f'"+f"({c}[{h}])' for h in range(4))
        frag = ", ".join(f'"r"({a_frag}[{h}])' for h in range(4))
        return (f'asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.{kind}.{kind}.f32 {{%0,%1,%2,%3}}, '
                f'{{%4,%5,%6,%7}}, {{%8,%9}}, {{%0,%1,%2,%3}};" : {acc} : {frag}, "r"({b0}), "r"({b1}));')

    def ldm(trans: bool, addr: str, regs: tuple[str, str, str, str]) -> str:
        op = f"ldmatrix.sync.aligned.m8n8.x4{'.trans' if trans else ''}.shared.b16"
        outs = ", ".join(f'"=r"({r})' for r in regs)
        return f'asm volatile("{op} {{%0,%1,%2,%3}}, [%4];" : {outs} : "r"(zd_smem({addr})) : "memory");'

    src = f"""{_HELPERS}
#ifndef ZD_TC_PACK_{kind}
#define ZD_TC_PACK_{kind}
__device__ __forceinline__ unsigned zd_pack_{kind}(float lo, float hi) {{
  unsigned r;
  asm("cvt.rn.{kind}x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
}}
#endif
extern "C" __global__ void __launch_bounds__({THREADS}) {name}({', '.join(params)}) {{
  __shared__ __align__(16) unsigned short Ks[{BN}][{D + PAD}];
  __shared__ __align__(16) unsigned short Vs[{BN}][{W}];
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const {T} bz = ({T})(blockIdx.x / {groups});
  const {T} q0 = ({T})(blockIdx.x % {groups}) * {BM};
{fill_q}
  zd_cp_commit();
  asm volatile("cp.async.wait_group 0;" ::: "memory");
  __syncthreads();
  unsigned qf[{D // 16}][4];
  #pragma unroll
  for (int kk = 0; kk < {D // 16}; kk++)
    {ldm(False, "&Vs[warp * 16 + (((lane >> 3) & 1) << 3) + (lane & 7)][kk * 16 + ((lane >> 4) << 3)]",
         ("qf[kk][0]", "qf[kk][1]", "qf[kk][2]", "qf[kk][3]"))}
  __syncthreads();  // q is in registers: Vs takes v's blocks from here on
  float o[{N // 8}][4];
  #pragma unroll
  for (int x = 0; x < {N // 8}; x++)
    #pragma unroll
    for (int h = 0; h < 4; h++) o[x][h] = 0.0f;
  float m0 = -INFINITY, m1 = -INFINITY, l0 = 0.0f, l1 = 0.0f;  // rows lane/4 and lane/4 + 8 of the warp's 16
  const int steps = {-(-K // BN)};
  {{
    const {T} j0 = 0;
{fill_k}
  }}
  zd_cp_commit();
  for (int s = 0; s < steps; s++) {{
    const {T} j0 = ({T})s * {BN};
    asm volatile("cp.async.wait_group 0;" ::: "memory");  // this block of k has landed
    __syncthreads();  // ... for every thread, and every warp is done with the last block of v
{fill_v}
    zd_cp_commit();
    float S[{BN // 8}][4];
    #pragma unroll
    for (int ni = 0; ni < {BN // 8}; ni++)
      #pragma unroll
      for (int h = 0; h < 4; h++) S[ni][h] = 0.0f;
    #pragma unroll
    for (int kk = 0; kk < {D // 16}; kk++) {{
      #pragma unroll
      for (int j = 0; j < {BN // 16}; j++) {{
        unsigned b0, b1, b2, b3;
        {ldm(False, "&Ks[j * 16 + ((lane >> 4) << 3) + (lane & 7)][kk * 16 + (((lane >> 3) & 1) << 3)]",
             ("b0", "b1", "b2", "b3"))}
        {mma_call("S[2 * j]", "qf[kk]", "b0", "b1")}
        {mma_call("S[2 * j + 1]", "qf[kk]", "b2", "b3")}
      }}
    }}
    __syncthreads();  // every warp is done with this block of k
    if (s + 1 < steps) {{
      const {T} j0 = ({T})(s + 1) * {BN};
{fill_k}
    }}
    zd_cp_commit();
    float mb0 = m0, mb1 = m1;
    #pragma unroll
    for (int ni = 0; ni < {BN // 8}; ni++) {{
      #pragma unroll
      for (int h = 0; h < 4; h++) {{  // unrolled, so S stays in registers whatever the scoring does
        const {T} gi = q0 + warp * 16 + (lane >> 2) + ((h >> 1) << 3);
        const {T} gk = j0 + ni * 8 + ((lane & 3) << 1) + (h & 1);
        const float acc = S[ni][h];
        float sc = -INFINITY;
        if (gi < {M} && gk < {K}) {{ {' '.join(s_lines)} sc = {s_val}; }}
        S[ni][h] = sc;
        if (h < 2) mb0 = fmaxf(mb0, sc); else mb1 = fmaxf(mb1, sc);
      }}
    }}
    // the lanes of a quad hold the same two rows: their max is the rows' max
    mb0 = fmaxf(mb0, __shfl_xor_sync(0xffffffffu, mb0, 1));
    mb0 = fmaxf(mb0, __shfl_xor_sync(0xffffffffu, mb0, 2));
    mb1 = fmaxf(mb1, __shfl_xor_sync(0xffffffffu, mb1, 1));
    mb1 = fmaxf(mb1, __shfl_xor_sync(0xffffffffu, mb1, 2));
    // online softmax: what was summed under the old max is rescaled
    const float al0 = mb0 == -INFINITY ? 1.0f : exp2f((m0 - mb0) * {LOG2E}f);
    const float al1 = mb1 == -INFINITY ? 1.0f : exp2f((m1 - mb1) * {LOG2E}f);
    m0 = mb0;
    m1 = mb1;
    l0 *= al0;
    l1 *= al1;
    #pragma unroll
    for (int x = 0; x < {N // 8}; x++) {{
      o[x][0] *= al0; o[x][1] *= al0; o[x][2] *= al1; o[x][3] *= al1;
    }}
    unsigned pf[{BN // 16}][4];
    #pragma unroll
    for (int t = 0; t < {BN // 16}; t++) {{
      float p[2][4];
      #pragma unroll
      for (int u = 0; u < 2; u++)
        #pragma unroll
        for (int h = 0; h < 4; h++) {{
          const float sc = S[2 * t + u][h], mb = h < 2 ? mb0 : mb1;
          const float e = sc == -INFINITY ? 0.0f : exp2f((sc - mb) * {LOG2E}f);
          p[u][h] = e;
          if (h < 2) l0 += e; else l1 += e;
        }}
      pf[t][0] = zd_pack_{kind}(p[0][0], p[0][1]);
      pf[t][1] = zd_pack_{kind}(p[0][2], p[0][3]);
      pf[t][2] = zd_pack_{kind}(p[1][0], p[1][1]);
      pf[t][3] = zd_pack_{kind}(p[1][2], p[1][3]);
    }}
    asm volatile("cp.async.wait_group 1;" ::: "memory");  // this block of v has landed (the next k may not)
    __syncthreads();
    #pragma unroll
    for (int t = 0; t < {BN // 16}; t++) {{
      #pragma unroll
      for (int j = 0; j < {N // 16}; j++) {{
        unsigned v0, v1, v2, v3;
        {ldm(True, "&Vs[t * 16 + (((lane >> 3) & 1) << 3) + (lane & 7)][j * 16 + ((lane >> 4) << 3)]",
             ("v0", "v1", "v2", "v3"))}
        {mma_call("o[2 * j]", "pf[t]", "v0", "v1")}
        {mma_call("o[2 * j + 1]", "pf[t]", "v2", "v3")}
      }}
    }}
  }}
  l0 += __shfl_xor_sync(0xffffffffu, l0, 1);
  l0 += __shfl_xor_sync(0xffffffffu, l0, 2);
  l1 += __shfl_xor_sync(0xffffffffu, l1, 1);
  l1 += __shfl_xor_sync(0xffffffffu, l1, 2);
  #pragma unroll
  for (int x = 0; x < {N // 8}; x++) {{
    #pragma unroll
    for (int h = 0; h < 4; h++) {{
      const {T} gi = q0 + warp * 16 + (lane >> 2) + ((h >> 1) << 3);
      const {T} gj = x * 8 + ((lane & 3) << 1) + (h & 1);
      if (gi < {M}) {{
        const float acc = o[x][h] / (h < 2 ? l0 : l1);
{body}
      }}
    }}
  }}
}}
"""
    return src, (spec.B * groups * THREADS,), (THREADS,)
