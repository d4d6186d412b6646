"""Driver side: the knobs of one kernel's rendering and the candidates the autotuner times. Takes a
kernel's shape facts (loop-free or not, reduce loop lengths, whether it is a row kernel or a GEMM, the
dialect and the device type); gives `KernelOpts`, the default first, then the other candidates in a
fixed order of preference for the device type. That order is a rule-based cost model, not a numeric
one: on GPUs more bytes in flight per work-item (float4, several elements a grid apart), a work-group
per output for long reductions and rows kept in registers come first; on CPUs plain loops come first;
variants that would leave the device with too few work-groups are left out. A small tuning budget so
times the likeliest winners.
"""

from __future__ import annotations

from dataclasses import dataclass

from .gemm import TILES, tile_shape


@dataclass(frozen=True)
class KernelOpts:
    lws: int = 256  # work-items per work-group
    elems: int = 1  # loop-free kernels: elements per work-item, a grid apart
    vec: int = 1  # loop-free kernels: 4 = each work-item does 4 adjacent elements through float4 loads/stores
    group: int = 0  # reduce loops into few outputs, and row kernels: work-items sharing one output's (row's) loops
    unroll: int = 1  # `#pragma unroll` factor of reduce loops
    tile_k: int = 8  # GEMM: depth of the local-memory tiles
    prefetch: int = 0  # GEMM: 1 = load the next tiles into registers while multiplying the current ones (wgmma: copies
    # one step deeper, each step's wgmma waited for)
    cache: int = 0  # row kernels: 1 = keep the row's elements in registers across the passes over it (GEMM: the
    # output tile staged in shared memory, then stored row by row)
    lanes: int = 0  # reduce loops without work-groups: iterations per pass, with vector loads (CPUs)
    stages: int = 0  # tensor-core GEMM: shared-memory stages of the k-steps in flight (0 = 2, static memory)
    tile: int = 0  # GEMM: the tile shape (an index of gemm.TILES / gemm_tc.TILES); gemm.PLAIN = plain reduce loops
    cpu_rows: int = 0  # GEMM on CPUs: rows per work-item of gemm_cpu's template (0: the tiled GPU template)
    wgmma: int = 0  # tensor-core GEMM: 1 = Hopper's wgmma (gemm_wgmma.py; `tile` then indexes its TILES), 2 = the
    # same with the operands TMA can read loaded by tensor-map copies (gemm_tma.py); attention likewise
    # (attention_tc.py's wgmma form, attention_tma.py's)

    def tag(self) -> str:
        """A short name of the non-default choices, part of the program name."""
        parts = [f"{k[0]}{v}" for k, v in (("lws", self.lws), ("elems", self.elems), ("vec", self.vec),
                                           ("group", self.group), ("unroll", self.unroll), ("k", self.tile_k),
                                           ("prefetch", self.prefetch), ("cache", self.cache),
                                           ("lanes", self.lanes), ("tile", self.tile),
                                           ("stages", self.stages), ("rows", self.cpu_rows),
                                           ("wgmma", self.wgmma))]
        return "".join(parts)


@dataclass(frozen=True)
class Shape:
    """What the candidates depend on: from the renderer's first look at a kernel."""

    total: int  # output elements
    loops: int  # top-level reduce loops (0: loop-free)
    shortest_loop: int  # length of the shortest top-level reduce loop
    row: int  # row kernels: elements per row (0: not a row kernel)
    gemm: bool
    vectorisable: bool  # loop-free with outputs the vector form writes four at a time (float32; CUDA: half types too)
    dialect: str
    gpu: bool
    max_lws: int = 1024
    gemm_dims: tuple[int, ...] = ()  # GEMM: (batch, M, N, K)
    tensor_cores: bool = False  # GEMM: on tensor cores (half-type operands, CUDA)
    attention: bool = False  # the fused attention kernel
    wgmma: bool = False  # GEMM or attention on tensor cores of a dialect with wgmma (compute capability 9.0)
    tma: bool = False  # a wgmma GEMM with an operand that tensor-map copies can load, an attention whose k and v they can
    inner: bool = False  # reduce loops that read along memory (loop_reads.py): a row sum, not a column sum
    quads: bool = False  # row kernels: rows of whole quads, every output stored four at a time (render.quads_fit)
    row_slots: int = 1  # row kernels: inputs and outputs of the row's shape (register slots per element in quads)


def default(s: Shape) -> KernelOpts:
    return candidates(s)[0]


def candidates(s: Shape) -> list[KernelOpts]:
    """Every variant worth timing, in order of preference (the default first)."""
    lws = [x for x in (256, 128, 512, 1024, 64) if x <= s.max_lws]
    if s.attention:  # wgmma's forms first where they run (TMA's first of them), mma.sync's beside them for the tuner
        tma = [KernelOpts(wgmma=2, stages=2)] if s.tma else []
        return [*tma, KernelOpts(wgmma=1), KernelOpts()] if s.wgmma else [KernelOpts()]
    if s.gemm:
        return gemm_candidates(s)
    if s.row:
        # one work-group per row; big groups share long rows, small ones leave room for more groups
        sizes = [g for g in lws if g <= max(32, s.row)] or [min(lws)]
        # registers for the row: at most 32 elements per work-item
        cached = [KernelOpts(group=g, cache=1) for g in sizes if s.row <= 32 * g]
        plain = [KernelOpts(group=g, unroll=u) for g in sizes for u in ((1, 4) if s.gpu else (1,))]
        # a row in quads: each work-item reads 4 neighbours at once, 4-32 elements in all (a warp alone, without a
        # barrier, for rows up to 1024)
        # (each element a register per input and output of the row's shape: with ~24 more, a work-group's must
        # fit an SM's 65536, or the launch fails)
        quads = [KernelOpts(group=g, cache=1, vec=4) for g in (64, 128, 32, 256, 512, 1024)
                 if g <= s.max_lws and 4 * g <= s.row <= 32 * g
                 and -(-s.row // g) * s.row_slots + 24 <= min(255, 65536 // g)] if s.quads else []
        return quads + cached + plain if s.gpu else plain + cached + quads
    if s.loops:
        flat = [KernelOpts(lws=small(s.total, w)) for w in lws]
        if not s.gpu:  # vector loads of 8 adjacent elements per pass (AVX registers), for the tuner to try:
            # not the default, since 8 copies of the loop body cost small kernels more compile time than they win
            flat = flat[:1] + [KernelOpts(lws=small(s.total, w), lanes=8) for w in lws[:2]] + flat[1:]
        if s.shortest_loop < 64:
            return flat
        groups = [KernelOpts(group=g, unroll=u) for g in lws if g <= s.shortest_loop for u in (1, 4, 8)]
        if s.gpu and s.inner and s.total >= 1 << 16:
            # many rows read along memory: a warp per row reads whole lines, where a work-item per row reads a
            # line per element (an attention's score rows in training: 1.6 ms against ~0.1 at bandwidth); one
            # warp's shuffles combine it, with no barrier (the estimate at bandwidth is too short to time)
            # rows of up to 256 on CUDA: also 8 or 16 lanes of a warp per row, several rows per work-group of 256,
            # first for rows of up to 128, where a warp per row leaves its lanes idle and makes work-groups so small
            # that an SM holds half the threads it could (an attention's D, 98304 rows of 64: 64 us for ~10 us of
            # bytes; too short to be timed, it takes the default)
            lanes = [KernelOpts(group=g) for g in (8, 16) if s.dialect == "cuda" and s.shortest_loop <= 32 * g]
            warp = [KernelOpts(group=32, unroll=u) for u in (4, 1)]
            return (lanes + warp if s.shortest_loop <= 128 else warp + lanes) + groups + flat
        # GPUs: few outputs with long loops want a work-group each; CPUs read whole rows from cache
        return groups + flat if s.gpu and s.total < 1 << 16 else flat + groups
    out: list[KernelOpts] = []
    for w in lws:
        vec = [KernelOpts(lws=small(s.total, w), vec=4, elems=e) for e in (1, 2)] if s.vectorisable else []
        grid = [KernelOpts(lws=small(s.total, w), elems=e) for e in ((4, 1, 2, 8) if s.gpu else (1, 4))]
        out += vec + grid if s.gpu else grid + vec
    big = [o for o in out if s.total >= o.lws * o.elems * o.vec * 64]  # enough work-groups to fill a device
    return big or [KernelOpts(lws=small(s.total, lws[0]))]


def small(total: int, lws: int) -> int:
    """A work-group no bigger than the work."""
    while lws > 32 and lws > total:
        lws //= 2
    return lws


# gemm.TILES as work-group tiles: 16 x 16 work-items, then 8 x 8 (for products too small for 64 x 64 tiles), then
# 256 x 64 and 64 x 256 (32 x 8 and 8 x 32 work-items)
GEMM_TILES = tuple(tile_shape(t) for t in range(len(TILES)))
WIDE_TILES = 4  # the first four are 16 x 16 work-items; gemm_tc.TILES has the same four
LONG_TILES = (7, 8)  # 256 x 64 and 64 x 256: float32 only
PLAIN_GEMM = len(GEMM_TILES)  # gemm.PLAIN
FILL = 132  # work-groups that keep a big GPU's compute units busy (an H100/H200 has 132)


def gemm_candidates(s: Shape) -> list[KernelOpts]:
    """GEMM tiles in order of how little of their work falls past the edges (tails) and how well they
    fill a GPU with work-groups, big tiles first among equals (they reuse each loaded element most);
    small K or a thin side also gets the plain reduce loops to compare against. A product too small to
    give every compute unit of a GPU two 64 x 64 tiles gets the 8 x 8-work-item tiles first (more, smaller
    work-groups: a short product is bound by the latency of its k-steps, not by the loads a big tile saves).
    Most such products are too short for the autotuner to time, so the first candidate is what runs. On
    GPUs the better of the long tiles (256 x 64, 64 x 256) follows where it wastes no more than the best
    wide one, then the best wide tile (and that long one, where K is small: the output's stores weigh
    most there) with the epilogue staged through local memory (whole-sector stores)."""
    b, m, n, k = s.gemm_dims
    plain = KernelOpts(tile=PLAIN_GEMM)

    def groups(t: int) -> int:
        tm, tn = GEMM_TILES[t]
        return b * -(-m // tm) * -(-n // tn)

    def rank(t: int) -> tuple:
        tm, tn = GEMM_TILES[t]
        waste = groups(t) * tm * tn / (b * m * n)
        few = s.gpu and groups(t) < 2 * FILL  # under two work-groups per compute unit of a big GPU
        return (round(waste, 1), few, -tm * tn)

    tiles = sorted(range(WIDE_TILES), key=rank)
    if s.tensor_cores:  # two static stages first (they need no launch attribute), deeper pipelines next
        out = [KernelOpts(tile=t, stages=st) for st in (0, 3, 4) for t in tiles[:2]]
        if s.wgmma:  # wgmma first: 128 x 256 and 128 x 128 tiles (gemm_wgmma.TILES; 128 x 128 in 3 stages fits
            # twice per SM), then the narrow and the 192-wide tiles where they may pay (`wgmma_extra_tiles`)
            extra = wgmma_extra_tiles(b, m, n, k)

            def extras(form: int) -> list[KernelOpts]:
                return [KernelOpts(wgmma=form, tile=t, stages=st, cache=c) for c in (1, 0) for t, st in extra]

            out = [KernelOpts(wgmma=1, tile=t, stages=st, prefetch=p, cache=c) for c in (0, 1)
                   for t, st, p in ((0, 4, 0), (1, 4, 0), (0, 3, 0), (1, 3, 0), (1, 3, 1), (1, 5, 0))] + extras(1) + out
            if s.tma:  # the 128 x 128 tile in 3 stages fits twice an SM, without waiting for each step's wgmma
                # (its deep form measured no faster; staged it took 17-33% off the K = 768 GEMMs of GPT-2 on an
                # H100: benchmarks/results/gemm-forms-t128s3-h100-2026-12-05-*.log)
                out = [KernelOpts(wgmma=2, tile=t, stages=st, prefetch=p, cache=c) for c in (1, 0)
                       for t, st, p in ((0, 4, 0), (1, 3, 0), (1, 4, 0))] + extras(2) + out
    elif not s.gpu and s.dialect == "opencl":  # CPUs: SIMD lanes over columns, no local memory (gemm_cpu)
        out = [KernelOpts(cpu_rows=r) for r in (8, 4)] + [KernelOpts(tile=tiles[0])]
    elif s.gpu and groups(3) < 2 * FILL:
        # the biggest small tile that still gives two work-groups per compute unit, else the one that gives
        # the most (measured on an H200, benchmarks/h200/gemm_small.py), then the fewest wasted past the edges
        def fill(t: int) -> tuple:
            g = groups(t)
            return (g < 2 * FILL, g if g >= 2 * FILL else -g, rank(t))

        small = sorted(range(WIDE_TILES, len(GEMM_TILES)), key=fill)
        out = [KernelOpts(tile=t, tile_k=d, prefetch=p) for t in (*small[:2], 3) for p in (1, 0)
               for d in ((16, 32) if k > 16 else (8,))]
    else:
        depths = (8, 16) if k > 8 else (8,)
        order = (1, 0) if s.gpu else (0, 1)
        out = [KernelOpts(tile=t, tile_k=d, prefetch=p) for t in tiles[:2] for p in order for d in depths]
        if s.gpu:
            # the better long tile where it wastes no more than the best wide one: for a side of 64 it keeps the
            # 128 x 128 tile's reads per FMA, which the 128 x 64 tile does not
            best = min(LONG_TILES, key=rank)
            staged = [tiles[0]]
            if rank(best)[0] <= rank(tiles[0])[0]:
                out += [KernelOpts(tile=best, tile_k=d, prefetch=p) for p in order for d in depths]
                if k <= 256:
                    staged.append(best)
            # the epilogue staged for whole-sector stores (gemm.render): worth most where K is small
            out += [KernelOpts(tile=t, tile_k=d, prefetch=p, cache=1) for t in staged for p in order for d in depths]
    if k <= 32 or min(m, n) < 64:
        out.insert(1, plain)
    return out


def wgmma_extra_tiles(b: int, m: int, n: int, k: int) -> list[tuple[int, int]]:
    """(tile, stages) of the wgmma GEMM's narrow and 192-wide tiles (gemm_wgmma.TILES 2 and 3) worth timing for a
    (b, m, n, k) product. The 128 x 64 tile where K is two k-steps or fewer, or N is 64 or less: such a tile is a
    short chain of latencies (its operands' copies, one or two wgmma groups, its epilogue's reads and stores), or
    a product that reads more than it computes (attention's p @ v reads T x T for 64 columns, half of a 128-wide
    tile wasted), and four of its work-groups share an SM where two 128 x 128 ones do, hiding each other's. The
    128 x 192 tile where its work per SM, whole waves of tiles over FILL SMs, is no more than either wide tile's:
    a weight gradient of 768 x 3072 is 144 tiles of 128 x 128 on 132 SMs (12 SMs doing two) and 96 of 128 x 192
    (one each); where the waves tie, its fewer tiles may still win (8192 x 768 x 3072 on an H100: 61 us against 75
    for 128 x 128, benchmarks/results/gemm-forms-h100-2026-12-06-5b37a94.txt)."""
    out = [(2, 3)] if k <= 128 or n <= 64 else []

    def per_sm(tn: int) -> int:
        return -(-b * -(-m // 128) * -(-n // tn) // FILL) * 128 * tn

    if per_sm(192) <= min(per_sm(128), per_sm(256)):
        out.append((3, 4))
    return out
