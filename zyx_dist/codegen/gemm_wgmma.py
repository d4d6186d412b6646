"""Driver side: the Hopper tensor-core GEMM of the CUDA dialect (sm_90a), for products of float16 or
bfloat16 operands. Takes a `gemm.GemmSpec` as gemm_tc.py does and gives CUDA C whose inner loop is
`wgmma.mma_async` (inline PTX): a warpgroup (4 warps) multiplies a 64-row slab of the tile by all its
columns, reading both operands straight from shared memory through matrix descriptors, so no fragment
passes through registers (gemm_tc.py's `mma.sync` loads every fragment with `ldmatrix` first, which caps
it near a third of the tensor cores' rate). A work-group of two warpgroups owns a 128 x TN tile of one
batch's output (TN = 256, 128, 64 or 192) in k-steps of 64. Operand tiles go to shared memory by `cp.async`
16-byte copies (zero-filled past the edges) in `stages` buffers, k-steps ahead, laid out as
wgmma's 128-byte-swizzled canonical layouts: an operand contiguous along k as rows of 64 k (K-major),
one contiguous along its rows or columns as 64-wide blocks of k rows (MN-major, which wgmma reads
transposed); an operand evaluated element by element is stored K-major, 16 bits at a time. Either one
wgmma group stays in flight while the next step's copies are issued (`stages - 2` steps ahead), or, `deep`,
each step's wgmma is waited for and the copies run `stages - 1` steps ahead. The epilogue runs on each accumulator
before its store, as in gemm.py. The source says `// zyx_dist: arch sm_90a`: the CUDA backend compiles it
for that target (the `a` features exist on compute capability 9.0 only)."""

from __future__ import annotations

from ..fuse.kernelize import Kernel
from . import gemm_tma
from . import symbolic as sym
from .gemm import Epilogue, GemmSpec, Operand, contiguous
from .gemm_tc import _HELPERS, PANEL, _mode, copy_loop, value_loop

ARCH_MARK = "// zyx_dist: arch sm_90a"
THREADS = 256  # two warpgroups, 64 rows of the tile each
BM, BK = 128, 64  # tile rows; k per step (64 halves: one 128-byte swizzle row)
TILES = (256, 128, 64, 192)  # the tile's columns, by the `tile` option
SHARED_LIMIT = 227 * 1024  # an sm_90 work-group's shared memory
SM_SHARED = 228 * 1024  # an SM's shared memory; each resident work-group also takes 1 KiB of it for the system
# work-groups of a 128 x 64 tile that may share an SM, by launch bounds (64 registers a thread: its 32 accumulators
# leave room; a 128-wide tile's wgmma needs ~90, so those keep the compiler's choice, two an SM at most)
NARROW_BLOCKS = 4
ATOM = 1024  # bytes of one swizzle atom (8 rows of 128 bytes); its tiles start 1024-aligned


def stage_bytes(tn: int) -> int:
    return 2 * BK * (BM + tn)


def fits(tile: int, stages: int) -> bool:
    """Whether `stages` buffers of the tile (and the alignment slack) fit in shared memory."""
    return stages >= 3 and stages * stage_bytes(TILES[tile]) + ATOM <= SHARED_LIMIT


def tma_usable(spec: GemmSpec) -> bool:
    """Whether tensor-map copies can load either operand of this GEMM (the `tma` option changes something)."""
    return any(gemm_tma.tensor_map(spec, left, _mode(spec, left), BM if left else TILES[0]) is not None
               for left in (True, False))


def render(spec: GemmSpec, name: str, kernel: Kernel, params: list[str], operand: Operand, epilogue: Epilogue,
           index_type: str, tile: int = 0, stages: int = 0, deep: bool = False,
           staged: bool = False, tma: bool = False, reads: list | None = None) -> tuple[str, tuple, tuple]:
    """`deep`: copies `stages - 1` k-steps ahead and each step's wgmma waited for before the next step's copies
    (no wgmma in flight across steps), for tiles small enough that two work-groups share an SM and fill each
    other's gaps; else `stages - 2` ahead with one wgmma group in flight. `staged`: the epilogue writes the
    outputs' tile into shared memory, which is then stored row by row, neighbours by neighbours (an
    accumulator's own layout writes 8 rows a few bytes each per warp), where the tiles fit; inputs the epilogue
    reads along the columns (`reads`: (input, offset) of its plain loads, filled by `epilogue`) are then copied in
    as tiles first, the same way (`_staged_loads`). `tma`: the operands
    the tensor memory accelerator can read (gemm_tma.py) arrive by one thread's tensor-map copies, which signal
    the stage's mbarrier, instead of every thread's 16-byte copies."""
    TN = TILES[tile if tile < len(TILES) else 0]
    S = stages if stages and fits(tile, stages) else 4 if fits(tile, 4) else 3
    ahead = S - 1 if deep else S - 2  # k-steps whose copies are in flight beside the wgmma of this one
    M, N, K, T = spec.M, spec.N, spec.K, index_type
    nbx, nby = -(-N // TN), -(-M // BM)
    kind = "bf16" if spec.a.dtype.name == "bfloat16" else "f16"
    to_bits = "zd_bf16_store({})" if kind == "bf16" else "__half_as_ushort(__float2half_rn({}))"
    a_bytes, b_bytes = 2 * BM * BK, 2 * TN * BK
    bz, gi, gj, gk = spec.vars()
    fill: list[str] = []  # every thread's copies of the operands TMA does not load
    tma_copies: list[str] = []  # one thread's tensor-map copies of those it does
    maps: list[tuple[str, gemm_tma.TensorMap]] = []
    tx = 0  # bytes the tensor-map copies of one k-step deliver
    trans: dict[bool, int] = {}
    for left in (True, False):
        mode = _mode(spec, left)
        trans[left] = int(mode == "mn")  # MN-major (read transposed) only when copied 8 along its rows/columns
        rows = BM if left else TN
        at = "sa" if left else "sb"
        me, size, first = (gi, M, "bi") if left else (gj, N, "bj")
        view = spec.a_view if left else spec.b_view
        tmap = gemm_tma.tensor_map(spec, left, mode, rows) if tma else None
        if tmap is not None:
            map_name = "zd_tma_a" if left else "zd_tma_b"
            maps.append((map_name, tmap))
            tma_copies += gemm_tma.copies(tmap, map_name, at, first, "k0", "bar", rows)
            tx += a_bytes if left else b_bytes
        elif mode in ("k", "mn"):
            if mode == "k":
                where = "const int row = e >> 3, kc = (e & 7) << 3;\n      const unsigned off = row * 128 + kc * 2;"
            else:
                where = (f"const int kc = e / {rows // 8}, row = (e % {rows // 8}) << 3;\n"
                         f"      const unsigned off = (row >> 6) * 8192 + kc * 128 + (row & 63) * 2;")
            fill.append(copy_loop(rows * BK // 8, THREADS, where, me.name, first, size, K, T,
                                  f"zd_cp_async_s({at} + zd_swz(off), {{src}}, inside)", view.pos,
                                  sym.render(view.offset)))
        else:
            index = spec.index(bz, gi, sym.ZERO, gk) if left else spec.index(bz, sym.ZERO, gj, gk)
            lines, value = operand(spec.a if left else spec.b, index)
            fill.append(value_loop(rows * BK, THREADS, "const int row = e >> 6, kc = e & 63;", me.name, first, size,
                                   K, T, lines, value, f"zd_st_shared_u16({at} + zd_swz(row * 128 + kc * 2), "
                                                       f"{to_bits.format('v')})"))
    cp = bool(fill)  # some operand still arrives by cp.async
    if tma_copies:  # thread 0 arms the stage's barrier with the bytes to come, then starts the copies
        fill.append("    if (tid == 0) {\n      const unsigned bar = bars + (f % " + str(S) + ") * 8u;\n"
                    f"      zd_bar_expect(bar, {tx}u);\n"
                    + "".join(f"      {c}\n" for c in tma_copies) + "    }")
    fill_code = "\n".join(fill)
    commit = "zd_cp_commit();" if cp else ""
    landed = (f'    asm volatile("cp.async.wait_group {ahead - 1};" ::: "memory");  // this step\'s copies have landed\n'
              '    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");  // ... and are visible to wgmma\'s reads\n'
              if cp else "")
    arrived = f"    zd_bar_wait(bars + (s % {S}) * 8u, (s / {S}) & 1);  // the tensor-map copies have landed\n" \
        if maps else ""
    map_params = [f"const __grid_constant__ zd_tmap {n}" for n, _ in maps]
    map_marks = "".join(m.marker() + "\n" for _, m in maps)
    coords = "".join(f"  {gemm_tma.coordinates(m, n)}\n" for n, m in maps if m.digits)
    barriers = (f"  __shared__ __align__(8) unsigned long long zd_full[{S}];  // per stage: its tensor-map copies landed\n"
                "  const unsigned bars = zd_smem(zd_full);\n"
                f"  if (tid == 0) {{\n    for (int i = 0; i < {S}; i++) zd_bar_init(bars + i * 8u, 1);\n"
                '    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");\n  }\n'
                "  __syncthreads();  // the barriers are set up before anyone waits on them\n") if maps else ""
    # descriptors: K-major tiles step 32 bytes per k16 and hold the warpgroup's rows 128 bytes apart;
    # MN-major tiles step 8 rows of 128 bytes per k16 and hold 64-row blocks 8192 bytes apart
    a_rows = "wg * 64 * 128" if not trans[True] else "wg * 8192"
    a_step, b_step = ("32", "2048")[trans[True]], ("32", "2048")[trans[False]]
    a_lbo, b_lbo = (16, 8192)[trans[True]], (16, 8192)[trans[False]]
    regs = TN // 2
    outs = ", ".join(f"%{i}" for i in range(regs))
    cons = ", ".join(f'"+f"(d[{i}])' for i in range(regs))
    mma = (f'asm volatile("{{ .reg .pred p; setp.ne.b32 p, %{regs + 2}, 0; '
           f'wgmma.mma_async.sync.aligned.m64n{TN}k16.f32.{kind}.{kind} {{{outs}}}, %{regs}, %{regs + 1}, p, 1, 1, '
           f'{trans[True]}, {trans[False]}; }}" : {cons} : "l"(da), "l"(db), "r"(1) : "memory");')
    steps = -(-K // BK)
    pool = S * stage_bytes(TN)  # the stages' memory by the tuner's option: the staged tiles may use all of it
    busy = min(S, steps) * stage_bytes(TN)  # the stages the k-steps fill (a short K fills fewer than S)
    body = "\n".join("        " + ln for ln in epilogue(spec.out_flat()))
    store = staged_store(spec, kernel, params, epilogue, TN, pool, busy, index_type, reads) if staged else None
    early = loads = store_out = ""
    end = busy
    if store is not None:
        body, early, loads, store_out, used = store
        end = max(busy, used)
    shared = end + ATOM
    reuse = (('  asm volatile("cp.async.wait_all;" ::: "memory");\n' if cp or early else "")
             + "  __syncthreads();  // every warpgroup is done with the stages the tile is staged in\n"
             + loads) if store_out else ""
    # a narrow tile's work-groups are small enough to share an SM four ways, each's chain of loads, products and
    # stores hiding the others' (a short K's tile is mostly latency); the bound caps registers to fit them
    blocks = min(NARROW_BLOCKS, SM_SHARED // (shared + 1024)) if TN == 64 else 1
    src = f"""{ARCH_MARK}
{_HELPERS}
{_WGMMA_HELPERS}
{gemm_tma.HELPERS if maps else ""}
// zyx_dist: dynamic shared bytes {shared}
{map_marks}extern "C" __global__ void __launch_bounds__({THREADS}, {blocks}) {name}({', '.join(params + map_params)}) {{
  extern __shared__ __align__(16) unsigned char zd_pool[];
  const unsigned base = (zd_smem(zd_pool) + {ATOM - 1}u) & ~{ATOM - 1}u;  // swizzle atoms are 1024-aligned
  const int tid = threadIdx.x, wg = tid >> 7, w = (tid >> 5) & 3, l = tid & 31;
  const {T} bz = ({T})(blockIdx.x / {nbx * nby});
  const int tile = blockIdx.x % {nbx * nby};
  const int panel = tile / {PANEL * nbx}, inpanel = tile % {PANEL * nbx};
  const int prows = min({PANEL}, {nby} - panel * {PANEL});
  const {T} bi = ({T})(panel * {PANEL} + inpanel % prows) * {BM}, bj = ({T})(inpanel / prows) * {TN};
{coords}{barriers}{early}  float d[{regs}];
  #pragma unroll
  for (int i = 0; i < {regs}; i++) d[i] = 0.0f;
  const int steps = {steps};
  #pragma unroll
  for (int f = 0; f < {ahead}; f++) {{  // the first {ahead} k-steps in flight
    if (f < steps) {{
      const unsigned sa = base + f * {a_bytes + b_bytes}u, sb = sa + {a_bytes}u;
      const {T} k0 = ({T})f * {BK};
{fill_code}
    }}
    {commit}
  }}
  for (int s = 0; s < steps; s++) {{
{landed}    __syncthreads();  // for every thread; and every wgmma but the last one's is done with its stage
    {{
      const int f = s + {ahead};
      if (f < steps) {{  // into the stage a finished wgmma read (the last step's if deep, else the one before)
        const unsigned sa = base + (f % {S}) * {a_bytes + b_bytes}u, sb = sa + {a_bytes}u;
        const {T} k0 = ({T})f * {BK};
{fill_code}
      }}
      {commit}
    }}
{arrived}    const unsigned sa = base + (s % {S}) * {a_bytes + b_bytes}u, sb = sa + {a_bytes}u;
    asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
    #pragma unroll
    for (int kk = 0; kk < {BK // 16}; kk++) {{
      const unsigned long long da = zd_desc(sa + {a_rows} + kk * {a_step}, {a_lbo}, 1024);
      const unsigned long long db = zd_desc(sb + kk * {b_step}, {b_lbo}, 1024);
      {mma}
    }}
    asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
    asm volatile("wgmma.wait_group.sync.aligned {0 if deep else 1};" ::: "memory");
  }}
  asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
{reuse}  #pragma unroll
  for (int i = 0; i < {regs}; i++) {{  // accumulator i: row w*16 + l/4 (+8), column 8*(i/4) + 2*(l%4) (+1)
    const {T} gi = bi + wg * 64 + w * 16 + (l >> 2) + (((i >> 1) & 1) << 3);
    const {T} gj = bj + ((i >> 2) << 3) + ((l & 3) << 1) + (i & 1);
    if (gi < {M} && gj < {N}) {{
      const float acc = d[i];
{body}
    }}
  }}
{store_out}}}
"""
    return src, (spec.B * nbx * nby * THREADS,), (THREADS,)


def staged_store(spec: GemmSpec, kernel: Kernel, params: list[str], epilogue: Epilogue, tn: int, pool: int,
                 busy: int, index_type: str, reads: list | None = None, *, rows: int = BM, threads: int = THREADS,
                 origin: str | None = None, outputs: int | None = None) -> tuple[str, str, str, str, int] | None:
    """(the epilogue into shared memory, the copies of the tiles of the inputs it reads along the columns into
    shared memory (`_staged_loads`) issued before the main loop, or else those made after it, the code that
    stores the tile, the bytes of shared memory used) or None when the outputs' tiles do not fit in the stages'
    memory `pool`, of which the k-steps fill `busy`. Rows are padded by 16 bytes against bank conflicts. The tile
    is `rows` x `tn` from (bi, bj), which the kernel declares, copied out by `threads` threads, in shared memory
    from `origin` (an `unsigned char*`; by default this module's aligned `base`); `outputs`: how many of the
    kernel's outputs the epilogue stores (the first ones; by default all)."""
    stored = kernel.outputs[:len(kernel.outputs) if outputs is None else outputs]
    pitch = tn + 8
    offsets, at = [], 0
    for o in stored:
        offsets.append(at)
        at += -(-rows * pitch * o.dtype.itemsize // 16) * 16
    if at > pool:
        return None
    ctypes = [_param_type(params, f"out{i}") for i in range(len(stored))]
    arrays = [f"zd_st{i}" for i in range(len(stored))]
    lines = epilogue(spec.out_flat())
    n = len(arrays)  # the epilogue ends with the outputs' stores, `out{i}[gid] = ...`: redirected to the tile
    stores = [ln.replace(f"out{i}[gid]", f"{a}[zd_l]", 1) for i, (a, ln) in enumerate(zip(arrays, lines[-n:]))]
    if not all(f"{a}[zd_l]" in ln for a, ln in zip(arrays, stores)):
        return None  # a store the staging does not know how to redirect
    lines = lines[:-n] + stores
    T = index_type
    _bz, gi, gj, _gk = spec.vars()
    out_flat = spec.out_flat()
    flat = sym.render(out_flat)
    width = _store_width(out_flat, gj, stored)
    # outputs laid out along the tile's rows (a weight's gradient summed in the weight's layout): stored by
    # neighbouring threads at neighbouring rows, one element each
    rows_first = width == 1 and contiguous(out_flat, gi, 2)
    lines, early, loads, at = _staged_loads(spec, kernel, params, lines, reads or [], pitch, at, pool, busy, tn, T,
                                            rows, threads, origin)
    decl = "\n".join(f"        {t}* {a} = {_tile(t, off, origin)};" for t, a, off in zip(ctypes, arrays, offsets))
    body = (f"{decl}\n        const int zd_l = (int)(gi - bi) * {pitch} + (int)(gj - bj);\n"
            + "\n".join("        " + ln for ln in lines))

    def copy(i: int, itemsize: int, t: str, off: int) -> str:
        tile = f"{_tile(t, off, origin)} + r * {pitch} + c"
        if width == 1:
            return f"      out{i}[gid] = *({tile});"
        v = _COPY_TYPES[width * itemsize]
        return f"      *reinterpret_cast<{v}*>(out{i} + gid) = *reinterpret_cast<const {v}*>({tile});"

    copies = "\n".join(copy(i, o.dtype.itemsize, t, off)
                        for i, (o, t, off) in enumerate(zip(stored, ctypes, offsets)))
    store = "  __syncthreads();  // the whole tile is in shared memory\n" + _tile_loop(
        spec, tn, width, T, "gid", flat, copies, "neighbours by neighbours in memory", rows_first, rows, threads)
    return body, early, loads, store, at


def _param_type(params: list[str], name: str) -> str:
    """The element type of kernel parameter `name` (`in3`, `out0`), without its const."""
    param = next(p for p in params if p.endswith(f" {name}"))
    return param[:param.index("*")].replace("const", "").strip()


def _tile(t: str, off: int, origin: str | None = None) -> str:
    """A `t*` to the shared-memory tile `off` bytes into the stages' pool (from `origin`, else the aligned `base`)."""
    return f"reinterpret_cast<{t}*>({origin or 'zd_pool + (base - zd_smem(zd_pool))'} + {off})"


def _tile_loop(spec: GemmSpec, tn: int, width: int, T: str, name: str, index: str, body: str, why: str,
               rows_first: bool = False, rows: int = BM, threads: int = THREADS) -> str:
    """A loop of the work-group's `threads` over its output tile of `rows` rows, `width` columns a thread
    (neighbouring threads, neighbouring columns; or, `rows_first`, one element a thread, neighbouring threads at
    neighbouring rows), with `name` = `index` at each (gi, gj) inside the product and `body` run there."""
    at = (f"const int r = e % {rows}, c = e / {rows};" if rows_first else
          f"const int r = e / {tn // width}, c = e % {tn // width} * {width};")
    return f"""  for (int e = tid; e < {rows * tn // width}; e += {threads}) {{  // {why}
    {at}
    const {T} gi = bi + r, gj = bj + c;
    if (gi < {spec.M} && gj < {spec.N}) {{
      const {T} {name} = {index};
{body}
    }}
  }}
"""


def _staged_loads(spec: GemmSpec, kernel: Kernel, params: list[str], lines: list[str], reads: list, pitch: int,
                  at: int, pool: int, busy: int, tn: int, T: str, rows: int = BM, threads: int = THREADS,
                  origin: str | None = None) -> tuple[list[str], str, str, int]:
    """The epilogue `lines` with each plain read of an input that moves along the tile's columns (`reads`: input
    and offset of each; an operand of the output's shape, such as the softmax rows an attention gradient's GEMM
    multiplies by, a residual, a mask broadcast over the batch) redirected to a copy of its tile in shared memory
    after the outputs' tiles (from byte `at`, while `pool` holds it); the code that makes those copies, neighbouring
    threads copying neighbouring columns, up to 16 bytes each where the columns lie side by side (an accumulator's
    own layout reads a few bytes of 8 rows per warp): as `cp.async` copies issued before the main loop where every
    copy moves 16 bytes and the tiles fit past the `busy` bytes the k-steps fill (their latency then hides behind
    the main loop's, which is most of a short K's tile), else plain copies after it; and the bytes used then. Reads
    that do not move along both rows and columns stay where they are."""
    bz, gi, gj, _gk = spec.vars()
    mine = {bz.name, gi.name, gj.name}
    picked = []  # (input, offset, its read in the epilogue, element type, columns a copy moves, tile bytes)
    for k, offset in dict.fromkeys(reads):
        names = sym.variables(offset)
        if gi.name not in names or gj.name not in names or not names <= mine:
            continue  # (a bias along the columns, a value per row: each a few distinct values per warp, from L1)
        read = f"in{k}[{sym.render(offset)}]"
        if not any(read in ln for ln in lines):  # (a load this dialect words otherwise: left as it is)
            continue
        inp = kernel.inputs[k]
        w = min(16 // inp.dtype.itemsize, 8)
        while w > 1 and (tn % w or not contiguous(offset, gj, w)):
            w //= 2
        size = -(-rows * pitch * inp.dtype.itemsize // 16) * 16
        picked.append((k, offset, read, _param_type(params, f"in{k}"), w, w * inp.dtype.itemsize, size))
    early = bool(picked) and all(b == 16 for *_, b, _ in picked) and max(at, busy) + sum(p[-1] for p in picked) <= pool
    if early:
        at = max(at, busy)
    code = []
    for k, offset, read, t, w, nbytes, size in picked:
        if at + size > pool:
            continue  # (no room for this one's tile; a narrower input's may still fit)
        tile = _tile(t, at, origin)
        lines = [ln.replace(read, f"{tile}[zd_l]") for ln in lines]
        v = _COPY_TYPES[nbytes] if w > 1 else t
        copy = (f"      zd_cp_async({tile} + r * {pitch} + c, in{k} + src, true);" if early else
                f"      *reinterpret_cast<{v}*>({tile} + r * {pitch} + c) = *reinterpret_cast<const {v}*>(in{k} + src);")
        code.append(_tile_loop(spec, tn, w, T, "src", sym.render(offset), copy,
                               f"input {k}'s tile, as the epilogue reads it", rows=rows, threads=threads))
        at += size
    if early:
        return lines, "".join(code) + "  zd_cp_commit();  // (waited for before the epilogue)\n", "", at
    if code:
        code.append("  __syncthreads();  // the inputs' tiles are in shared memory\n")
    return lines, "", "".join(code), at


_COPY_TYPES = {2: "unsigned short", 4: "unsigned", 8: "uint2", 16: "uint4"}  # by bytes copied at once


def _store_width(out_flat: sym.Expr, gj: sym.Var, outputs: list) -> int:
    """Columns each thread copies from the staged tile at once: up to 16 bytes of the widest of `outputs` (8 columns
    of a half type, 4 of float32), where every output's columns (`out_flat` along `gj`) lie side by side in
    memory in aligned groups of that many (`contiguous`: the tile's columns are a multiple of it, so a group is
    wholly inside or outside the product); 1 otherwise. Shared-memory rows (pitch tn + 8) keep such groups
    aligned."""
    width = min(16 // max(o.dtype.itemsize for o in outputs), 8)
    while width > 1 and not contiguous(out_flat, gj, width):
        width //= 2
    return width


_WGMMA_HELPERS = r"""#ifndef ZD_WGMMA_HELPERS
#define ZD_WGMMA_HELPERS
__device__ __forceinline__ unsigned zd_swz(unsigned off) { return off ^ (((off >> 7) & 7) << 4); }
__device__ __forceinline__ unsigned long long zd_desc(unsigned addr, unsigned lbo, unsigned sbo) {
  return (unsigned long long)((addr & 0x3FFFF) >> 4) | ((unsigned long long)((lbo >> 4) & 0x3FFF) << 16)
       | ((unsigned long long)((sbo >> 4) & 0x3FFF) << 32) | (1ull << 62);  // 128-byte swizzle
}
__device__ __forceinline__ void zd_cp_async_s(unsigned dst, const void* src, bool inside) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" :: "r"(dst), "l"(src), "r"(inside ? 16 : 0));
}
__device__ __forceinline__ void zd_st_shared_u16(unsigned dst, unsigned short v) {
  asm volatile("st.shared.u16 [%0], %1;" :: "r"(dst), "h"(v) : "memory");
}
#endif"""
