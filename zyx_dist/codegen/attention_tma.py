"""Driver side: the TMA form of the Hopper fused attention kernel (the tuner's `KernelOpts(wgmma=2)` where
`usable`), for float16/bfloat16 q, k and v whose k and v are plain views TMA can read (gemm_tma.affine_map:
an affine offset in the key and head-dim indices and digits of the batch index, 16-byte strides). Takes the
`attention.AttentionSpec` and the renderer's evaluators; gives CUDA C with attention_tc.py's wgmma form of
the arithmetic (q and the probabilities as register A operands, k and v from 128-byte-swizzled tiles, the
same scoring, online softmax and store), whose key blocks arrive differently: warp 0 chooses the blocks to
run and one lane copies each block's k, v and mask tiles with bulk tensor copies (`cp.async.bulk.tensor`,
the maps' marker lines read by runtime/cuda_tma.py) into a ring of `stages` shared-memory stages, each
signalling its mbarrier when its bytes have landed. Warp 0 does that while the tensor cores score the
current block (between q @ k^T's issue and its wait), for the block `stages` - 1 ahead, into the stage the
last block left; no other thread spends an instruction on copies. A scoring operand read at (row, key), such as
an additive mask, is staged the same way where a map can read it and the stages fit, else read from global
memory. Key blocks a mask hides are left out as attention_flags.InlineSkips decides (no prologue kernel: each
work-group runs its own key blocks first and scans k and v there from their stages, and scans its share of
the mask's tiles as it starts); blocks the mask leaves clear are scored without it and their mask tile is
not copied.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

from ..fuse.kernelize import Kernel
from . import gemm_tma
from . import symbolic as sym
from .attention import AttentionSpec, Evaluate, RowStats
from .attention_flags import InlineSkips
from .attention_tc import (
    BM,
    BN,
    PAD,
    ROW_MAX,
    THREADS,
    WAIT,
    ZERO_S,
    finish,
    launch_bounds,
    o_init,
    pin,
    q_registers,
    score_loop,
    side_reads,
    softmax,
    staged_output,
    tc_helpers,
    wgmma_loop,
    wgmma_usable,
    work_order,
)
from .attention_tiles import SIDE_TYPES, Tile, copyable, fill
from .gemm import Epilogue
from .gemm_tc import _HELPERS
from .gemm_wgmma import _WGMMA_HELPERS, ARCH_MARK, ATOM, SHARED_LIMIT

PANEL = 128  # bytes of a tile row per copy: one 128-byte swizzle row
STATIC = 256  # bytes of static shared memory the kernel declares besides its stages, at most

_ARRIVE = """#ifndef ZD_BAR_ARRIVE
#define ZD_BAR_ARRIVE
__device__ __forceinline__ void zd_bar_arrive(unsigned bar) {  // an arrival that brings no bytes
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" :: "r"(bar) : "memory");
}
#endif"""
# A side tile (BM rows of BN halves: one 128-byte row each) as TMA's 128-byte swizzle writes it: row r's 16-byte chunk
# c at r * 128 + 16 * (c ^ (r & 7)). The scoring reads it at the accumulators of score_loop (its `ni` and `h`): row
# warp * 16 + lane / 4 + 8 * (h / 2), byte 16 * ni + 4 * (lane % 4) + 2 * (h % 2), so r & 7 = (lane / 4) & 7 and the
# chunk is ni's: the thread's part (zd_mrow, zd_msw) is worked out once, not per score.
SIDE_AT = "zd_mrow + ((h >> 1) << 10) + ((ni ^ zd_msw) << 4) + ((h & 1) << 1)"
SIDE_BASE = "  const int zd_mrow = (warp * 16 + (lane >> 2)) * 128 + ((lane & 3) << 2), zd_msw = (lane >> 2) & 7;\n"


@dataclass(frozen=True)
class Staged:
    """A tile that arrives by tensor-map copies: its map, where it lies in a stage, its bytes, and the copies of
    one block (panels of 128 bytes along the map's inner dim)."""

    name: str  # the map's kernel parameter
    map: gemm_tma.TensorMap
    at: int  # bytes from the stage's start
    nbytes: int
    panels: int  # copies per block
    per_panel: int  # inner elements per copy


def _tile(name: str, m: gemm_tma.TensorMap | None, rows: int, cols: int, at: int) -> Staged | None:
    """A tile of `rows` x `cols` halves at byte `at` of a stage, copied in panels of 64 columns (None: no map)."""
    if m is None:
        return None
    return Staged(name, m, at, rows * cols * 2, -(-cols * 2 // PANEL), PANEL // 2)


def budget(a: AttentionSpec) -> int:
    """Dynamic shared bytes a work-group may take: as many as let the work-groups that fit an SM by
    `launch_bounds` (4 where head dims are up to 64, else 2) share it."""
    per_sm = 4 if max(a.head, a.spec.N) <= 64 else 2
    return SHARED_LIMIT // per_sm - 1024 - STATIC  # the runtime reserves 1 KiB a work-group


def plan(a: AttentionSpec, kernel: Kernel, stages: int) -> tuple[int, list[Staged], list[tuple]] | None:
    """(stages, the staged tiles: k, v, then the scoring's side reads that fit, each side read's (node, index,
    dtype)) or None where k or v has no map or even two stages of k and v do not fit `budget`."""
    spec = a.spec
    M, N, K, D = spec.M, spec.N, spec.K, a.head
    bz, _, gj, gk = spec.vars()
    half = a.q.dtype.name
    dd = sym.Var("dd", 0, D - 1)

    def view_map(node, index, dtype: str, inner, outer: tuple[str, int], cols: int, rows: int):
        view = copyable(kernel, node, index, dtype, inner, cols)
        if view is None:
            return None
        return gemm_tma.affine_map(view[0], dtype, view[1], (inner.name, inner.hi + 1), outer, spec.B,
                                   (PANEL // 2, rows), True)

    k = _tile("zd_tma_k", view_map(a.k, a.qk_idx, half, dd, ("gk", K), D, BN), BN, D, 0)
    v = _tile("zd_tma_v", view_map(a.v, spec.index(bz, sym.ZERO, gj, gk), half, gj, ("gk", K), N, BN), BN, N,
              2 * BN * D)
    if k is None or v is None:
        return None
    S = max(stages, 2)
    while S > 2 and S * (k.nbytes + v.nbytes) + ATOM > budget(a):
        S -= 1
    at = k.nbytes + v.nbytes
    if S * at + ATOM > budget(a):
        return None
    tiles, sides = [k, v], []
    for n, ix, dt in side_reads(a, kernel, 1 << 30):  # half types (maps read no others)
        t = _tile(f"zd_tma_m{len(sides)}", view_map(n, ix, dt, gk, ("gi", M), BN, BM), BM, BN, at)
        if t is None or S * (at + t.nbytes) + ATOM > budget(a):
            continue
        tiles.append(t)
        sides.append((n, ix, dt))
        at += t.nbytes
    return S, tiles, sides


def usable(a: AttentionSpec, kernel: Kernel, dialect) -> bool:
    """Whether the TMA form applies: the wgmma form does, and TMA can read k and v."""
    return wgmma_usable(a, dialect) and plan(a, kernel, 2) is not None


def _copies(t: Staged, dst: str, inner0: str, outer0: str, bar: str) -> list[str]:
    """The calls that copy one block of tile `t` into shared address `dst`: panel p at inner coordinate
    `inner0` + p * per_panel, outer coordinate `outer0`."""
    r = len(t.map.dims)
    batch = "".join(f", {t.name}_c{i}" for i in range(len(t.map.digits)))
    panel = t.nbytes // t.panels
    return [f"zd_tma{r}({dst} + {p * panel}u, &{t.name}, {bar}, {inner0} + {p * t.per_panel}, {outer0}{batch});"
            for p in range(t.panels)]


def render(a: AttentionSpec, name: str, kernel: Kernel, params: list[str], evaluate: Evaluate,
           epilogue: Epilogue, index_type: str, row_stats: RowStats, stages: int = 2) -> tuple[str, tuple, tuple]:
    """The kernel (`usable` must hold). `stages`: the ring's depth (2 or more, as the shared memory allows):
    the copies of the next stages - 1 key blocks are in flight while one is computed."""
    spec, T = a.spec, index_type
    M, N, K, D = spec.M, spec.N, spec.K, a.head
    groups = -(-M // BM)
    dd = sym.Var("dd", 0, D - 1)
    kind = "bf16" if a.q.dtype.name == "bfloat16" else "f16"
    half = a.q.dtype.name
    store = "zd_bf16_store({})" if kind == "bf16" else "__half_as_ushort(__float2half_rn({}))"
    S, tiles, sides = plan(a, kernel, stages)
    stage = sum(t.nbytes for t in tiles)
    k_tile, v_tile, side_tiles = tiles[0], tiles[1], tiles[2:]
    fill_q = fill(kernel, a.q, a.qk_idx, Tile("Qs[row][col]", BM, D, "gi", "q0", M, dd, D, half, store), evaluate,
                  T, THREADS)
    skip = InlineSkips(a, kernel, name, evaluate, T, half, partial(copyable, kernel),
                       (k_tile.at, k_tile.nbytes), (v_tile.at, v_tile.nbytes))
    overrides = {a.pattern.qk.id: "acc"}
    for (n, _ix, dt), t in zip(sides, side_tiles):
        ctype, value = SIDE_TYPES[dt]
        overrides[n.id] = value.format(f"*reinterpret_cast<const {ctype}*>(zd_stage + {t.at} + {SIDE_AT})")
    out = staged_output(spec, kernel, params, epilogue, T, S * stage,  # (through the stages' memory)
                        len(kernel.outputs) - len(a.stats), "q0")
    inside = "true" if M % BM == 0 and K % BN == 0 else f"gi < {M} && gk < {K}"
    steps = -(-K // BN)

    # lane 0 of warp 0 starts the copies of block zd_next into stage `st` (or marks the walk's end there)
    always = k_tile.nbytes + v_tile.nbytes
    clear_skips = [t for (n, _ix, _dt), t in zip(sides, side_tiles) if skip.rule is not None and n is skip.rule.mask]
    kept = sum(t.nbytes for t in side_tiles if t not in clear_skips)
    expect = f"{always + kept}u" + (f" + (zd_nclear ? 0u : {sum(t.nbytes for t in clear_skips)}u)" if clear_skips
                                    else "")
    calls = [*_copies(k_tile, "zd_dst", "0", "zd_j", "zd_bar"), *_copies(v_tile, f"zd_dst + {v_tile.at}u", "0",
                                                                          "zd_j", "zd_bar")]
    for t in side_tiles:
        c = _copies(t, f"zd_dst + {t.at}u", "zd_j", "(int)q0", "zd_bar")
        calls += [f"if (!zd_nclear) {{ {' '.join(c)} }}"] if t in clear_skips else c

    def issue(own_flags: bool) -> str:
        return f"""{skip.walk(str(steps), "      ", own_flags)}
      if (lane == 0) {{
        const unsigned zd_bar = bars + st * 8u, zd_dst = zd_stages + st * {stage}u;
        if (zd_next < {steps}) {{
          const int zd_j = zd_next * {BN};
          zd_info[st] = 2 * zd_next + (zd_nclear ? 1 : 0);
          zd_bar_expect(zd_bar, {expect});
{chr(10).join("          " + c for c in calls)}
        }} else {{
          zd_info[st] = -1;  // the walk's end
          zd_bar_arrive(zd_bar);
        }}
      }}
      {skip.advance()}"""
    qk = wgmma_loop(kind, "kk", D // 16, BN, "S", "qf[kk]", f"zd_desc(ks + (kk >> 2) * {BN * 128} + (kk & 3) * 32, 16, 1024)",
                    0, "    ")
    pv = wgmma_loop(kind, "t", BN // 16, N, "o", "pf[t]", f"zd_desc(vs + t * 2048, {BN * 128}, 1024)", 1, "    ")
    # q's bound, where the rule has one, passes a barrier of every thread after q is in registers: that one tells
    # warp 0 it may copy into q's stage. The output's tile needs no barrier before it: every warp passed the main
    # loop's last one after its last read of a stage, and the copies issued after that are the walk's end marks
    # (blocks are issued in order, and the loop stops at the first mark), so none is in flight
    q_bound = (skip.q_max_frags(half, D, declare=False) + skip.forget()).rstrip("\n")
    map_params = [f"const __grid_constant__ zd_tmap {t.name}" for t in tiles]
    marks = "".join(t.map.marker() + "\n" for t in tiles)
    coords = "".join(f"  {gemm_tma.coordinates(t.map, t.name)}\n" for t in tiles if t.map.digits)
    src = f"""{ARCH_MARK}
{_HELPERS}
{_WGMMA_HELPERS}
{gemm_tma.HELPERS}
{_ARRIVE}
{skip.globals}{tc_helpers(kind)}
// zyx_dist: dynamic shared bytes {S * stage + ATOM}
{marks}extern "C" __global__ void __launch_bounds__({launch_bounds(a)}) {name}({', '.join(params + map_params)}) {{
  extern __shared__ __align__(16) float zd_pool[];
  unsigned char* zd_base = reinterpret_cast<unsigned char*>(zd_pool) + (((zd_smem(zd_pool) + {ATOM - 1}u) & ~{ATOM - 1}u) - zd_smem(zd_pool));  // swizzle atoms: 1024-aligned
  // q is staged in the last stage, whose first block is copied once q is in registers
  unsigned short (*Qs)[{D + PAD}] = reinterpret_cast<unsigned short (*)[{D + PAD}]>(zd_base + {(S - 1) * stage});
  const unsigned zd_stages = zd_smem(zd_base);
  __shared__ __align__(8) unsigned long long zd_full[{S}];  // per stage: its copies have landed
  __shared__ int zd_info[{S}];  // per stage: 2 * its key block + (the mask leaves it clear), -1 past the walk's end
  const unsigned bars = zd_smem(zd_full);
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
{work_order(a, groups, T)}
{coords}  if (tid == 0) {{
    for (int i = 0; i < {S}; i++) zd_bar_init(bars + i * 8u, 1);
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }}
{fill_q}
  zd_cp_commit();
{skip.setup}  int zd_last = -1;  // warp 0: the last key block whose copies were started
{skip.state()}  if (warp == 0) {{
    for (int it = {1 - S}; it < 0; it++) {{  // the first blocks' copies, one a stage, while q and the scans come in
      const int st = it + {S - 1};
{issue(False)}
    }}
  }}
{skip.produce}  asm volatile("cp.async.wait_group 0;" ::: "memory");
  __syncthreads();
{q_registers(D, "Qs[row][col]")}
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");  // q's staging is the copies' once every warp is here
{q_bound or "  __syncthreads();  // q is in registers"}
{o_init(N)}
{SIDE_BASE if side_tiles else ""}  for (int it = 0;; it++) {{
    const int st = it % {S};
    zd_bar_wait(bars + st * 8u, (it / {S}) & 1);  // this stage's copies have landed
    const int zd_at = zd_info[st];
    if (zd_at < 0) break;
    const {T} j0 = ({T})(zd_at >> 1) * {BN};
    const bool zd_clear = zd_at & 1;
    const unsigned char* zd_stage = zd_base + st * {stage};
    const unsigned ks = zd_stages + st * {stage}u, vs = ks + {v_tile.at}u;
{ZERO_S}
{qk}
{skip.stage_scan("(zd_at >> 1)", "zd_stage", "    ")}
    if (warp == 0) {{  // while the tensor cores score this block: the copies of block it + {S - 1} into the stage
      const int st = (it + {S - 1}) % {S};  // the last block used (every warp was done with it at the barrier)
{issue(True)}
    }}
    {WAIT}  // the block's scores are in S
{pin('S', BN // 2)}
{skip.scoring(partial(score_loop, T, inside, False), evaluate, a.pattern.scores, a.scores_idx, overrides, "    ")}
{ROW_MAX}
{softmax(kind, N)}
{pv}
    {WAIT}
    __syncthreads();  // every warp is done with this stage: the next block's copies may come in
  }}
{skip.finish}{finish(T, M, N, out, row_stats, freed=True)}
{skip.counted}}}
"""
    return src, (spec.B * groups * THREADS,), (THREADS,)

