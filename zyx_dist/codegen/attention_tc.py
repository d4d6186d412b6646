"""Driver side: the fused attention kernel on tensor cores, for the CUDA dialect when q, k and v are float16
or bfloat16 (codegen/attention.py matches the pattern and renders every other case). Takes the
`attention.AttentionSpec` and the renderer's evaluators; gives CUDA C in the manner of FlashAttention-2:
a work-group of 4 warps owns 64 query rows (16 per warp), keeps q's fragments in registers, and walks the
keys in blocks of 64. Per block, S = q @ k^T is `mma.sync.m16n8k16` with float32 accumulators; the
scoring (scale, mask, any elementwise expression) is evaluated at each accumulator's row and key; an
online softmax (running max per row across the 4 lanes that share it, partial sums per lane) turns S
into probabilities, which are rounded to the operands' half type and reused in registers as the A
fragments of p @ v (an m16n8 accumulator pair has the layout of one m16k16 A fragment), so the T x T
scores never leave the registers. k and v blocks reach shared memory by `cp.async` where they are views
with 8 neighbours side by side along the head dim (else element by element); v's copies run while S is
computed and the next k block's while p @ v is. fp32 attention stays on codegen/attention.py (no TF32).
"""

from __future__ import annotations

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


def _fill(kernel: Kernel, node, index: tuple, tile: str, rows: int, cols: int, row_var: str, row_base: str,
          row_limit: int, col_var: sym.Var, kind: str, evaluate: Evaluate, T: str) -> str:
    """Code that puts rows x cols of `node` (row r at `row_var` = row_base + r, column c at `col_var` = c)
    into tile[r][c] as 16-bit values, zeros past row_limit: 16-byte `cp.async` copies when the node is a
    view of an input of the same half type, contiguous in 8s along the columns, else value by value."""
    pos = {n.id: i for i, n in enumerate(kernel.inputs)}
    walk = _walk(node, index, pos)
    view = None
    if walk is not None and not walk[2] and len(walk[1]) == 1:
        p, off = walk[1][0]
        if kernel.inputs[p].dtype.name == ("bfloat16" if kind == "bf16" else "float16"):
            off = tidy(off)
            view = (p, off) if contiguous(off, col_var, 8) else None
    if view is not None:
        chunks = rows * cols // 8
        p, off = view
        return f"""  #pragma unroll
  for (int r = 0; r < {-(-chunks // THREADS)}; r++) {{
    const int e = tid + r * {THREADS};
    const int row = e / {cols // 8}, col = (e % {cols // 8}) * 8;
    const {T} {row_var} = {row_base} + row, {col_var.name} = col;
    const bool inside = {f'e < {chunks} && ' if chunks % THREADS else ''}{row_var} < {row_limit};
    if ({f'e < {chunks}' if chunks % THREADS else 'true'})
      zd_cp_async(&{tile}[row][col], inside ? (const void*)(in{p} + {sym.render(off)}) : (const void*)in{p}, inside);
  }}"""
    lines, value = evaluate(node, index, {})
    to_bits = "zd_bf16_store({})" if kind == "bf16" else "__half_as_ushort(__float2half_rn({}))"
    elems = rows * cols
    return f"""  #pragma unroll 4
  for (int r = 0; r < {-(-elems // THREADS)}; r++) {{
    const int e = tid + r * {THREADS};
    const int row = e / {cols}, col = e % {cols};
    const {T} {row_var} = {row_base} + row, {col_var.name} = col;
    float v = 0.0f;
    if ({f'e < {elems} && ' if elems % THREADS else ''}{row_var} < {row_limit}) {{ {' '.join(lines)} v = {value}; }}
    if ({f'e < {elems}' if elems % THREADS else 'true'}) {tile}[row][col] = {to_bits.format('v')};
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
    fill_q = _fill(kernel, a.q, a.qk_idx, "Vs", BM, D, "gi", "q0", M, dd, kind, evaluate, T)
    fill_k = _fill(kernel, a.k, a.qk_idx, "Ks", BN, D, "gk", "j0", K, dd, kind, evaluate, T)
    fill_v = _fill(kernel, a.v, spec.index(bz, sym.ZERO, gj, gk), "Vs", BN, N, "gk", "j0", K, gj, kind,
                   evaluate, T)
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
