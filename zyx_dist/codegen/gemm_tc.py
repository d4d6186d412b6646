"""Driver side: the tensor-core GEMM of the CUDA dialect, for products of float16 or bfloat16 operands.
Takes a `gemm.GemmSpec` (see gemm.py: batch, rows, columns, operands as views or per-element values)
and gives CUDA C whose inner loop is `mma.sync.aligned.m16n8k16` (inline PTX, sm_80 and later) with
float32 accumulators. A work-group of 8 warps computes a TILE_M x TILE_N block of one batch's output in
k-steps of 32: operand tiles go from global to shared memory by `cp.async` 16-byte copies (zero-filled
past the edges) in two stages, so the next step's copies are in flight while the tensor cores work on
this one; an operand that is not a view with 8 neighbours side by side along k (or its rows/columns) is
evaluated element by element and stored as its 16 bits instead. Fragments come from shared memory by
`ldmatrix` (`.trans` for tiles stored k-major), rows padded by 16 bytes so its eight row reads hit
distinct banks. The epilogue (bias, activation, the cast to the output dtype) runs on each
accumulator before its store, as in gemm.py. Work-groups are ordered in panels of 8 tile rows, so
those that run together share their operand panels in L2.
"""

from __future__ import annotations

from ..fuse.kernelize import Kernel
from . import symbolic as sym
from .gemm import Epilogue, GemmSpec, Operand, contiguous

THREADS = 256  # 8 warps: 2 along the rows by 4 along the columns
BK = 32  # k per step
PAD = 8  # halves of padding per shared-memory row (16 bytes)
TILES = ((128, 128), (64, 128), (128, 64), (64, 64))  # the `tile` option, as gemm.TILES' work-group tiles
PANEL = 8  # tile rows per panel of the work-group order


def usable(spec: GemmSpec, kernel: Kernel, dialect) -> bool:
    """Tensor cores take the products of two float16 or two bfloat16 operands in the CUDA dialect."""
    return dialect.name == "cuda" and spec.a.dtype.is_half and spec.a.dtype is spec.b.dtype


def _mode(spec: GemmSpec, left: bool) -> str:
    """How the operand reaches shared memory: 'k' (16-byte copies along k), 'mn' (along its rows or
    columns) or 'scalar' (element by element)."""
    view = spec.a_view if left else spec.b_view
    _, gi, gj, gk = spec.vars()
    if view is None or view.dtype != (spec.a.dtype.name):
        return "scalar"
    if contiguous(view.offset, gk, 8):
        return "k"
    if contiguous(view.offset, gi if left else gj, 8):
        return "mn"
    return "scalar"


def render(spec: GemmSpec, name: str, kernel: Kernel, params: list[str], operand: Operand, epilogue: Epilogue,
           index_type: str, tile: int = 0, stages: int = 0) -> tuple[str, tuple, tuple]:
    """The kernel with `stages` k-steps in shared memory (0: two, in static shared memory; 3 or 4: in
    dynamic shared memory past the 48 KB static limit, which the CUDA backend raises for it)."""
    TM, TN = TILES[tile if tile < len(TILES) else 0]
    S = stages or 2
    WTM, WTN = TM // 2, TN // 4  # one warp's tile
    MI, NI = WTM // 16, WTN // 8  # m16 and n8 tiles per warp
    M, N, K, T = spec.M, spec.N, spec.K, index_type
    nbx, nby = -(-N // TN), -(-M // TM)
    kind = "bf16" if spec.a.dtype.name == "bfloat16" else "f16"
    to_bits = "zd_bf16_store({})" if kind == "bf16" else "__half_as_ushort(__float2half_rn({}))"
    bz, gi, gj, gk = spec.vars()
    out: list[str] = []
    decls: list[tuple[int, int]] = []
    fill: list[str] = []  # code that fills stage `st` with the k-step starting at `k0`
    frag: dict[bool, str] = {}  # ldmatrix of one operand's fragments
    for left in (True, False):
        mode = _mode(spec, left)
        rows = TM if left else TN
        tile_name = "As" if left else "Bs"
        me, size, first = (gi, M, "bi") if left else (gj, N, "bj")
        view = spec.a_view if left else spec.b_view
        dims = (BK, rows + PAD) if mode == "mn" else (rows, BK + PAD)  # k-major S[k][row], else S[row][k]
        decls.append(dims)
        if mode in ("k", "mn"):
            chunks = rows * BK // 8
            if mode == "k":
                at = f"const int row = e / {BK // 8}, kc = (e % {BK // 8}) * 8;"
                dst = f"&{tile_name}[st][row][kc]"
            else:
                at = f"const int kc = e / {rows // 8}, row = (e % {rows // 8}) * 8;"
                dst = f"&{tile_name}[st][kc][row]"
            fill.append(copy_loop(chunks, THREADS, at, me.name, first, size, K, T,
                                  f"zd_cp_async({dst}, {{src}}, inside)", view.pos, sym.render(view.offset)))
        else:
            index = spec.index(bz, gi, sym.ZERO, gk) if left else spec.index(bz, sym.ZERO, gj, gk)
            lines, value = operand(spec.a if left else spec.b, index)
            fill.append(value_loop(rows * BK, THREADS, f"const int row = e / {BK}, kc = e % {BK};", me.name, first,
                                   size, K, T, lines, value, f"{tile_name}[st][row][kc] = {to_bits.format('v')}"))
        trans = mode == "mn"
        ld = f"ldmatrix.sync.aligned.m8n8.x4{'.trans' if trans else ''}.shared.b16"
        if left:
            # a0..a3: rows 0-7/8-15 by k 0-7/8-15 of the m16 x k16 tile (lane l reads matrix l/8, row l%8)
            addr = ("&As[st][kk + ((l >> 4) << 3) + (l & 7)][wm + mi * 16 + (((l >> 3) & 1) << 3)]" if trans else
                    "&As[st][wm + mi * 16 + (((l >> 3) & 1) << 3) + (l & 7)][kk + ((l >> 4) << 3)]")
            frag[True] = f"""      #pragma unroll
      for (int mi = 0; mi < {MI}; mi++)
        asm volatile("{ld} {{%0,%1,%2,%3}}, [%4];" : "=r"(fa[mi][0]), "=r"(fa[mi][1]), "=r"(fa[mi][2]),
                     "=r"(fa[mi][3]) : "r"(zd_smem({addr})) : "memory");"""
        else:
            # two n8 tiles: b0, b1 of tile 2j and b0, b1 of tile 2j+1 (k 0-7 and 8-15 of each)
            addr = ("&Bs[st][kk + (((l >> 3) & 1) << 3) + (l & 7)][wn + j * 16 + ((l >> 4) << 3)]" if trans else
                    "&Bs[st][wn + j * 16 + ((l >> 4) << 3) + (l & 7)][kk + (((l >> 3) & 1) << 3)]")
            frag[False] = f"""      #pragma unroll
      for (int j = 0; j < {NI // 2}; j++)
        asm volatile("{ld} {{%0,%1,%2,%3}}, [%4];" : "=r"(fb[2 * j][0]), "=r"(fb[2 * j][1]),
                     "=r"(fb[2 * j + 1][0]), "=r"(fb[2 * j + 1][1]) : "r"(zd_smem({addr})) : "memory");"""
    fill_code = "\n".join(fill)
    (a0, a1), (b0, b1) = decls
    if stages:
        a_size = S * a0 * a1
        shared_bytes = 2 * (a_size + S * b0 * b1)
        smem = (f"// zyx_dist: dynamic shared bytes {shared_bytes}\n"
                f"  extern __shared__ __align__(16) unsigned short zd_pool[];\n"
                f"  unsigned short (*As)[{a0}][{a1}] = reinterpret_cast<unsigned short (*)[{a0}][{a1}]>(zd_pool);\n"
                f"  unsigned short (*Bs)[{b0}][{b1}] = reinterpret_cast<unsigned short (*)[{b0}][{b1}]>(zd_pool + {a_size});")
    else:
        smem = (f"__shared__ __align__(16) unsigned short As[{S}][{a0}][{a1}];\n"
                f"  __shared__ __align__(16) unsigned short Bs[{S}][{b0}][{b1}];")
    body = "\n".join("          " + ln for ln in epilogue(spec.out_flat()))
    out.append(_HELPERS)
    groups = 2 if TM * TN <= 128 * 128 else 1
    out.append(f"""extern "C" __global__ void __launch_bounds__({THREADS}, {groups}) {name}({', '.join(params)}) {{
  {smem}
  const int tid = threadIdx.x, l = tid & 31, warp = tid >> 5;
  const int wm = (warp >> 2) * {WTM}, wn = (warp & 3) * {WTN};
  const {T} bz = ({T})(blockIdx.x / {nbx * nby});
  const int tile = blockIdx.x % {nbx * nby};
  // panels of {PANEL} tile rows: work-groups that run together share their rows of A and columns of B
  const int panel = tile / {PANEL * nbx}, inpanel = tile % {PANEL * nbx};
  const int prows = min({PANEL}, {nby} - panel * {PANEL});
  const {T} bi = ({T})(panel * {PANEL} + inpanel % prows) * {TM}, bj = ({T})(inpanel / prows) * {TN};
  float c[{MI}][{NI}][4];
  #pragma unroll
  for (int mi = 0; mi < {MI}; mi++)
    #pragma unroll
    for (int ni = 0; ni < {NI}; ni++)
      #pragma unroll
      for (int h = 0; h < 4; h++) c[mi][ni][h] = 0.0f;
  unsigned fa[{MI}][4], fb[{NI}][2];
  const int steps = {-(-K // BK)};
  #pragma unroll
  for (int f = 0; f < {S - 1}; f++) {{  // the first {S - 1} k-steps in flight
    if (f < steps) {{
      const int st = f;
      const {T} k0 = ({T})f * {BK};
{fill_code}
    }}
    zd_cp_commit();
  }}
  for (int s = 0; s < steps; s++) {{
    asm volatile("cp.async.wait_group {S - 2};" ::: "memory");  // this step's copies have landed
    __syncthreads();  // ... for every thread, and every thread is done with the stage refilled next
    {{
      const int f = s + {S - 1};
      if (f < steps) {{
        const int st = f % {S};
        const {T} k0 = ({T})f * {BK};
{fill_code}
      }}
      zd_cp_commit();
    }}
    const int st = s % {S};
    #pragma unroll
    for (int kk = 0; kk < {BK}; kk += 16) {{
{frag[True]}
{frag[False]}
      #pragma unroll
      for (int mi = 0; mi < {MI}; mi++)
        #pragma unroll
        for (int ni = 0; ni < {NI}; ni++)
          asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.{kind}.{kind}.f32 {{%0,%1,%2,%3}}, {{%4,%5,%6,%7}}, "
                       "{{%8,%9}}, {{%0,%1,%2,%3}};"
                       : "+f"(c[mi][ni][0]), "+f"(c[mi][ni][1]), "+f"(c[mi][ni][2]), "+f"(c[mi][ni][3])
                       : "r"(fa[mi][0]), "r"(fa[mi][1]), "r"(fa[mi][2]), "r"(fa[mi][3]), "r"(fb[ni][0]), "r"(fb[ni][1]));
    }}
  }}
  #pragma unroll
  for (int mi = 0; mi < {MI}; mi++) {{
    #pragma unroll
    for (int ni = 0; ni < {NI}; ni++) {{
      #pragma unroll
      for (int h = 0; h < 4; h++) {{  // unrolled, so c stays in registers whatever the epilogue does
        const {T} gi = bi + wm + mi * 16 + (l >> 2) + ((h >> 1) << 3);
        const {T} gj = bj + wn + ni * 8 + ((l & 3) << 1) + (h & 1);
        if (gi < {M} && gj < {N}) {{
          const float acc = c[mi][ni][h];
{body}
        }}
      }}
    }}
  }}
}}
""")
    return "\n".join(out), (spec.B * nbx * nby * THREADS,), (THREADS,)


def copy_loop(n: int, threads: int, where: str, var: str, first: str, size: int, k: int, T: str, copy: str,
              pos: int, offset: str) -> str:
    """The loop in which `threads` threads issue an operand tile's `n` 16-byte `cp.async` copies (zero-filled past
    the edges): `where` (C) sets `row` and `kc` of copy `e`; `copy` is the call, `{src}` standing for its source
    (input `pos` at `offset`, in the variables `var` (the row or column) and `gk`)."""
    guard = f"e < {n}" if n % threads else "true"
    src = f"inside ? (const void*)(in{pos} + {offset}) : (const void*)in{pos}"
    return f"""    #pragma unroll
    for (int r = 0; r < {-(-n // threads)}; r++) {{
      const int e = tid + r * {threads};
      {where}
      const {T} {var} = {first} + row, gk = k0 + kc;
      const bool inside = {f'e < {n} && ' if n % threads else ''}{var} < {size} && gk < {k};
      if ({guard})
        {copy.format(src=src)};
    }}"""


def value_loop(n: int, threads: int, where: str, var: str, first: str, size: int, k: int, T: str, lines: list[str],
               value: str, put: str) -> str:
    """The loop in which `threads` threads evaluate an operand tile's `n` elements (`lines`, `value`; zero past
    the edges) into `v` and `put` it: `where` (C) sets `row` and `kc` of element `e`."""
    guard = f"e < {n}" if n % threads else "true"
    return f"""    #pragma unroll 4
    for (int r = 0; r < {-(-n // threads)}; r++) {{
      const int e = tid + r * {threads};
      {where}
      const {T} {var} = {first} + row, gk = k0 + kc;
      float v = 0.0f;
      if ({f'e < {n} && ' if n % threads else ''}{var} < {size} && gk < {k}) {{ {' '.join(lines)} v = {value}; }}
      if ({guard}) {put};
    }}"""


_HELPERS = r"""#ifndef ZD_TC_HELPERS
#define ZD_TC_HELPERS
__device__ __forceinline__ unsigned zd_smem(const void* p) {
  unsigned a;
  asm("{ .reg .u64 t; cvta.to.shared.u64 t, %1; cvt.u32.u64 %0, t; }" : "=r"(a) : "l"(p));
  return a;
}
__device__ __forceinline__ void zd_cp_async(void* dst, const void* src, bool inside) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" :: "r"(zd_smem(dst)), "l"(src), "r"(inside ? 16 : 0));
}
__device__ __forceinline__ void zd_cp_commit() { asm volatile("cp.async.commit_group;"); }
#endif"""
