"""Driver side: the fused attention kernel of the CUDA dialect in float32 arithmetic (any operand dtype;
float16/bfloat16 with head dims in whole k16 steps go to attention_tc.py's tensor cores instead). Takes
the `attention.AttentionSpec` and the renderer's evaluators; gives CUDA C that register-tiles both
products the way a SIMT GEMM does, so that each value read from shared memory feeds several FMAs (the
one-row-per-work-item kernel of attention.py reads one value per FMA and is bound by shared memory).
A work-group of 128 threads owns 64 query rows; thread (tr, tc) = (tid / 16, tid % 16) owns rows
8*tr .. 8*tr+7, keys tc + 16*c of each block of 64, and output columns tc + 16*c (4 side by side per 64
columns when the head dim of v is a multiple of 64, for float4 reads). q stays in shared memory,
transposed, for the whole kernel; per block of keys, k and v are loaded, each thread computes its 8 x 4
scores (k read 4 head dims at a time), the scoring (scale, mask, any elementwise expression) is
evaluated at each, and the online softmax (running max per row, reduced across the 16 lanes that share
the row) turns them into probabilities, which take k's place in shared memory for p @ v; a warp whose
16 rows score -inf at every key of a block skips its softmax and p @ v there where v's block is finite
(the same result), and key blocks a mask hides entirely are left out (attention_skip.py). Exact float32:
no TF32. The T x T scores are never stored.
"""

from __future__ import annotations

from functools import partial

from ..fuse.kernelize import Kernel
from . import attention_tc, attention_tma
from . import symbolic as sym
from .attention import AttentionSpec, Evaluate, RowStats
from .attention_skip import Skips
from .attention_tc import _HELPERS
from .attention_tiles import Tile, copyable, fill, filled_check
from .dialects import CUDA
from .gemm import Epilogue

BM = 64  # query rows per work-group: 8 per thread row-group
BN = 64  # keys per block: 4 per thread
THREADS = 128
ROWS = 8  # query rows per thread: q and p are read as two float4 per step
KEYS = 4  # keys per thread and block


def render_cuda(a: AttentionSpec, name: str, kernel: Kernel, params: list[str], evaluate: Evaluate,
                epilogue: Epilogue, index_type: str, row_stats: RowStats, wgmma: int = 0,
                stages: int = 0) -> tuple[str, tuple, tuple]:
    """The CUDA dialect's fused attention: attention_tc.py's tensor cores where it takes the kernel (`wgmma` 1:
    its wgmma form; 2: attention_tma.py's, in `stages` stages, where TMA reads k and v, else the wgmma form),
    else this module's float32 one."""
    if attention_tc.usable(a, CUDA):
        if wgmma == 2 and attention_tma.plan(a, kernel, stages) is not None:
            return attention_tma.render(a, name, kernel, params, evaluate, epilogue, index_type, row_stats, stages)
        return attention_tc.render(a, name, kernel, params, evaluate, epilogue, index_type, row_stats, bool(wgmma))
    return render(a, name, kernel, params, evaluate, epilogue, index_type, row_stats)


def render(a: AttentionSpec, name: str, kernel: Kernel, params: list[str], evaluate: Evaluate, epilogue: Epilogue,
           index_type: str, row_stats: RowStats) -> tuple[str, tuple, tuple]:
    spec, T = a.spec, index_type
    M, N, K, D = spec.M, spec.N, spec.K, a.head
    NC = -(-N // 16)  # output columns per thread
    groups = -(-M // BM)
    bz, _, gj, gk = spec.vars()
    q_lines, q_val = evaluate(a.q, a.qk_idx, {})
    body = "\n".join("        " + ln for ln in epilogue(spec.out_flat()))
    stats = "\n      ".join(row_stats("m[i]", "sum"))
    if stats:  # the row's statistics, from one of the 16 lanes that share it
        stats = f"\n    if (tc == 0 && gi < {M}) {{\n      {stats}\n    }}"
    vec_k, vec_v = D % 4 == 0, N % 64 == 0  # k read 4 head dims at a time, v 4 columns at a time
    # row pitches (floats): aligned float4 reads of q and p; k's pitch 4 (or 1) banks apart, so the 8 lanes of
    # a quarter-warp (or 32 of a warp) reading 8 keys (32) at one head dim hit distinct banks
    QP, KP, VP, PP = BM + 4, D + 4 if vec_k else D + 1, 16 * NC, BM + 4

    def col(c: str) -> str:  # output column of a thread's c-th: 4 side by side per 64 if vec_v, else strided
        return f"({c} >> 2) * 64 + tc * 4 + ({c} & 3)" if vec_v else f"tc + 16 * {c}"

    load_q = (f"      const float4 qa = *reinterpret_cast<const float4*>(&Qs[(DD) * {QP} + tr * {ROWS}]);\n"
              f"      const float4 qb = *reinterpret_cast<const float4*>(&Qs[(DD) * {QP} + tr * {ROWS} + 4]);\n"
              f"      const float q[{ROWS}] = {{qa.x, qa.y, qa.z, qa.w, qb.x, qb.y, qb.z, qb.w}};")
    if vec_k:
        steps = "\n".join(f"""      {{
{load_q.replace('DD', f'd4 + {u}')}
        #pragma unroll
        for (int c = 0; c < {KEYS}; c++)
          #pragma unroll
          for (int i = 0; i < {ROWS}; i++) s[i][c] += q[i] * kv[c].{"xyzw"[u]};
      }}""" for u in range(4))
        scores = f"""    #pragma unroll 2
    for (int d4 = 0; d4 < {D}; d4 += 4) {{
      float4 kv[{KEYS}];
      #pragma unroll
      for (int c = 0; c < {KEYS}; c++) kv[c] = *reinterpret_cast<const float4*>(&Ks[(tc + 16 * c) * {KP} + d4]);
{steps}
    }}"""
    else:
        scores = f"""    #pragma unroll 4
    for (int dd = 0; dd < {D}; dd++) {{
{load_q.replace('DD', 'dd')}
      #pragma unroll
      for (int c = 0; c < {KEYS}; c++) {{
        const float kv = Ks[(tc + 16 * c) * {KP} + dd];
        #pragma unroll
        for (int i = 0; i < {ROWS}; i++) s[i][c] += q[i] * kv;
      }}
    }}"""
    if vec_v:
        v_reads = "\n".join(f"""      {{
        const float4 vv = *reinterpret_cast<const float4*>(&Vs[kj * {VP} + {u * 64} + tc * 4]);
        #pragma unroll
        for (int i = 0; i < {ROWS}; i++) {{
          o[i][{4 * u}] += p[i] * vv.x; o[i][{4 * u + 1}] += p[i] * vv.y;
          o[i][{4 * u + 2}] += p[i] * vv.z; o[i][{4 * u + 3}] += p[i] * vv.w;
        }}
      }}""" for u in range(N // 64))
    else:
        v_reads = f"""      #pragma unroll
      for (int c = 0; c < {NC}; c++) {{
        const float vv = Vs[kj * {VP} + tc + 16 * c];
        #pragma unroll
        for (int i = 0; i < {ROWS}; i++) o[i][c] += p[i] * vv;
      }}"""
    products = f"""    #pragma unroll 4
    for (int kj = 0; kj < {BN}; kj++) {{
      const float4 pa = *reinterpret_cast<const float4*>(&Ps[kj * {PP} + tr * {ROWS}]);
      const float4 pb = *reinterpret_cast<const float4*>(&Ps[kj * {PP} + tr * {ROWS} + 4]);
      const float p[{ROWS}] = {{pa.x, pa.y, pa.z, pa.w, pb.x, pb.y, pb.z, pb.w}};
{v_reads}
    }}"""
    # p takes k's place once the scores are in registers (a barrier between): 4 work-groups fit an SM, not 3
    q_at, k_at, v_at = 0, D * QP, D * QP + BN * -(-max(KP, PP) // 4) * 4  # v's rows start 16-byte aligned
    p_at, shared_bytes = k_at, 4 * (v_at + BN * VP)
    dd = sym.Var("dd", 0, D - 1)
    v_tile, v_index = Tile(f"Vs[row * {VP} + col]", BN, VP, "gk", "j0", K, gj, N, "float32", "{}"), spec.index(
        bz, sym.ZERO, gj, gk)
    fill_k = fill(kernel, a.k, a.qk_idx, Tile(f"Ks[row * {KP} + col]", BN, D, "gk", "j0", K, dd, D, "float32", "{}"),
                  evaluate, T, THREADS)
    fill_v = fill(kernel, a.v, v_index, v_tile, evaluate, T, THREADS)
    skip = Skips(a, kernel, name, params, evaluate, T, "{}", "float32",
                 (copyable(kernel, a.k, a.qk_idx, "float32", dd, D), copyable(kernel, a.v, v_index, "float32", gj, N)),
                 partial(copyable, kernel))
    q_max = skip.q_max(f"Qs[(e % {D}) * {QP} + e / {D}]", BM * D)
    if q_max:
        q_max = "  __syncthreads();  // q has landed\n" + q_max
    inside = "true" if M % BM == 0 and K % BN == 0 else f"gi < {M} && gk < {K}"  # else the score is -inf
    v_finite = skip.v_finite("blk", lambda: filled_check(kernel, a.v, v_index, v_tile, THREADS, "finite", (
        "float4", " && ".join(f"zd_finite(w.{c})" for c in "xyzw")), "zd_finite(x)"),
        "every thread is done with k: p goes there")

    def score_loop(lines: list[str], value: str) -> str:  # the scoring at each of the thread's scores
        return f"""    #pragma unroll
    for (int i = 0; i < {ROWS}; i++) {{
      const {T} gi = q0 + tr * {ROWS} + i;
      #pragma unroll
      for (int c = 0; c < {KEYS}; c++) {{  // unrolled, so s stays in registers whatever the scoring does
        const {T} gk = j0 + tc + 16 * c;
        const float acc = s[i][c];
        float sc = -INFINITY;
        if ({inside}) {{ {' '.join(lines)} sc = {value}; }}
        s[i][c] = sc;
        none = none && sc == -INFINITY;
      }}
    }}"""

    def shuffle_max(x: str) -> str:
        return " ".join(f"{x} = fmaxf({x}, __shfl_xor_sync(0xffffffffu, {x}, {w}));" for w in (1, 2, 4, 8))

    # the stores' tests only where a block of rows or the columns have a tail (the tensor-core forms' reason:
    # attention_tc.row_test)
    stored = " && ".join([f"gi < {M}"] * (M % BM != 0) + [f"gj < {N}"] * (N % 16 != 0)) or "true"
    src = f"""{_HELPERS}
{skip.prologue}#ifndef ZD_FINITE
#define ZD_FINITE
__device__ __forceinline__ bool zd_finite(float x) {{ return (__float_as_uint(x) & 0x7f800000u) != 0x7f800000u; }}
#endif
extern "C" __global__ void __launch_bounds__({attention_tc.launch_bounds(a)}) {name}({', '.join(skip.params)}) {{
  // zyx_dist: dynamic shared bytes {shared_bytes}
  extern __shared__ __align__(16) float zd_pool[];
  float* Qs = zd_pool + {q_at};  // q transposed: Qs[dd * {QP} + row]
  float* Ks = zd_pool + {k_at};  // Ks[key * {KP} + dd]
  float* Vs = zd_pool + {v_at};  // Vs[key * {VP} + col], zero past the head dim
  float* Ps = zd_pool + {p_at};  // probabilities, where k was: Ps[key * {PP} + row]
  const int tid = threadIdx.x, tr = tid >> 4, tc = tid & 15;
{attention_tc.work_order(a, groups, T)}
  for (int e = tid; e < {BM * D}; e += {THREADS}) {{
    const int row = e / {D}, dd = e % {D};
    const {T} gi = q0 + row;
    float v = 0.0f;
    if (gi < {M}) {{ {' '.join(q_lines)} v = {q_val}; }}
    Qs[dd * {QP} + row] = v;
  }}
{q_max}{skip.setup}  float o[{ROWS}][{NC}], m[{ROWS}], l[{ROWS}];
  #pragma unroll
  for (int i = 0; i < {ROWS}; i++) {{
    m[i] = -INFINITY;
    l[i] = 0.0f;
    #pragma unroll
    for (int c = 0; c < {NC}; c++) o[i][c] = 0.0f;
  }}
  // the key blocks run, in order (the same in every thread): those a skip test leaves out are never loaded
  {skip.next("blk", "-1")}
  while (blk < {-(-K // BN)}) {{
    const {T} j0 = ({T})blk * {BN};
    __syncthreads();  // every thread is done with the last block's k, v and p (and q has landed)
{fill_k}
    zd_cp_commit();
{fill_v}
    zd_cp_commit();
    asm volatile("cp.async.wait_group 1;" ::: "memory");  // k has landed (v may still be on its way)
    __syncthreads();
    float s[{ROWS}][{KEYS}];
    #pragma unroll
    for (int i = 0; i < {ROWS}; i++)
      #pragma unroll
      for (int c = 0; c < {KEYS}; c++) s[i][c] = 0.0f;
{scores}
    asm volatile("cp.async.wait_group 0;" ::: "memory");  // v has landed
{v_finite}
    bool none = true;  // every score of this thread is -inf
{skip.scoring(score_loop, evaluate, a.pattern.scores, a.scores_idx, {a.pattern.qk.id: "acc"}, "    ")}
    // a warp (16 rows) that scores -inf at every key of the block adds nothing to its rows when v is finite
    // (else 0 * inf is NaN), so it skips the softmax and p @ v; each warp reads only its own rows of p
    if (!(v_finite && __all_sync(0xffffffffu, none))) {{
      #pragma unroll
      for (int i = 0; i < {ROWS}; i++) {{
        float mb = m[i];
        #pragma unroll
        for (int c = 0; c < {KEYS}; c++) mb = fmaxf(mb, s[i][c]);
        {shuffle_max("mb")}  // the 16 lanes that share the row
        // online softmax: what was summed under the old max is rescaled
        const float alpha = mb == -INFINITY ? 1.0f : expf(m[i] - mb);
        const float top = mb == -INFINITY ? 0.0f : mb;  // a row -inf so far: its -inf scores give 0, not NaN
        m[i] = mb;
        l[i] *= alpha;
        #pragma unroll
        for (int c = 0; c < {NC}; c++) o[i][c] *= alpha;
        #pragma unroll
        for (int c = 0; c < {KEYS}; c++) {{
          const float p = expf(s[i][c] - top);
          l[i] += p;
          Ps[(tc + 16 * c) * {PP} + tr * {ROWS} + i] = p;
        }}
      }}
      __syncwarp();
{products}
    }}
    {skip.next("next", "blk", "    ")}
    blk = next;
  }}
  #pragma unroll
  for (int i = 0; i < {ROWS}; i++) {{
    float sum = l[i];
    {" ".join(f"sum += __shfl_xor_sync(0xffffffffu, sum, {w});" for w in (1, 2, 4, 8))}
    const {T} gi = q0 + tr * {ROWS} + i;{stats}
    #pragma unroll
    for (int c = 0; c < {NC}; c++) {{
      const {T} gj = {col('c')};
      if ({stored}) {{
        const float acc = o[i][c] / sum;
{body}
      }}
    }}
  }}
}}
"""
    return src, (spec.B * groups * THREADS,), (THREADS,)
