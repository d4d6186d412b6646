"""Driver side: whole-block skips without a prologue kernel, for the TMA form of the Hopper attention kernel
(attention_tma.py). Takes the `attention.AttentionSpec`, the kernel, the renderer's evaluator and where k's and
v's tiles lie in a stage; gives `InlineSkips`: the C with which the attention kernel's own work-groups make
attention_skip.py's scans (k's largest |x| and v's finiteness per key block, the mask's tests per tile), publish
the flags in module memory (one 64-bit word each, tagged with the launch's number) and walk the key blocks by
them. Each work-group runs its own key blocks first (the ones whose k and v flags it publishes) and scans k and
v there from the shared-memory stage its copies filled, so no work-group waits on global loads for the scans
before its first block (the mask's tiles, a few per work-group, are still read from global memory at its
start). The rule and the tests are attention_skip.py's: a block is left out only where the prologue's flags
would leave it out, and only once this launch's are out (until then it is computed, with the same result).
"""

from __future__ import annotations

from ..fuse.kernelize import Kernel
from ..graph.ir import Node
from .attention import AttentionSpec, Evaluate
from .attention_skip import (
    BN,
    K_WORDS,
    MAX_SCRATCH,
    THREADS,
    _Blocks,
    _mask_tile,
    block_max,
    layout,
    packed_abs,
    rule,
    v_words,
)


def _indent(code: str) -> str:
    return "".join("  " + ln if ln.strip() else ln for ln in code.splitlines(keepends=True))


FLAG_HELPERS = r"""#ifndef ZD_FLAG_HELPERS
#define ZD_FLAG_HELPERS
__device__ __forceinline__ unsigned long long zd_flag_ld(const unsigned long long* p) {  // as another SM left it
  unsigned long long v;
  asm volatile("ld.relaxed.gpu.b64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ void zd_flag_st(unsigned long long* p, unsigned tag, unsigned payload) {  // one word
  asm volatile("st.relaxed.gpu.b64 [%0], %1;" :: "l"(p), "l"(((unsigned long long)tag << 32) | payload) : "memory");
}
#endif"""


class InlineSkips(_Blocks):
    """Whole-block skips without a prologue (attention_tma.py): the attention kernel's work-groups make the
    prologue's scans themselves. Work-group (batch, query block qb) owns k's and v's key blocks qb, qb + groups,
    ... of its batch entry: it runs them first, whatever the flags say (no other work-group publishes theirs,
    so none can be known left out yet), and scans each from its stage once the copies land (`stage_scan`). At
    its start it scans mask tiles of its query block from global memory: for a mask the batch entries share,
    where bz is in the first chunk of C batch entries (attention.l2_batches), those at key blocks bz, bz + C, ...;
    for a mask that varies with the batch, its own batch entry's row of tiles. Each result is one 64-bit
    word in module memory (`globals`): the launch's tag above, the flags below, so a word is read whole or not
    at all and a word of an earlier launch is told apart. A key block is left out only where the flags of this
    launch that it needs are out; one whose flags are not out yet is computed, which gives the same result. The
    tag is the launch's number: the last work-group done with the flags (`finish`) counts it up, after every
    work-group of the launch has read it. Under a causal mask the longest query blocks run first
    (`attention_tc.work_order`), and each publishes its own block's flags after its first block, so the blocks a
    work-group may leave out were scanned by work-groups that started before it. `walk` is warp 0's choice of the
    next key block: its own blocks, then the others from the flags of 32 blocks at a time (one load per lane),
    cached while they stay known. `setup` declares the tag and the flags (before the first walk), `produce` scans
    the mask tiles (at the work-group's start), `finish` counts the launch (before the output's stores). `k_tile`
    and `v_tile` are (byte offset in a stage, bytes) of the staged tiles."""

    def __init__(self, a: AttentionSpec, kernel: Kernel, name: str, evaluate: Evaluate, T: str, dtype: str,
                 view_of, k_tile: tuple[int, int], v_tile: tuple[int, int]) -> None:
        self.rule = rule(a, kernel)
        self.globals = self.setup = self.produce = self.finish = self.counted = ""
        lay = layout(a, self.rule) if self.rule is not None else None
        if lay is None or 8 * (lay.batches * lay.key_blocks + lay.mask_tiles) > MAX_SCRATCH:
            self.rule = None
            return
        self.lay, self.name, self.dtype, self.k_tile, self.v_tile = lay, name, dtype, k_tile, v_tile
        kv = lay.batches * lay.key_blocks
        r = self.rule
        self.globals = (f"{FLAG_HELPERS}\n__device__ unsigned long long {name}_flags[{kv + lay.mask_tiles}];  "
                        f"// per (batch, key block), then per mask tile: tag << 32 | flags\n"
                        f"__device__ unsigned {name}_epoch, {name}_done;  // launches so far; work-groups done in this one\n")
        # a mask the batch entries share: each tile scanned once, by the first chunk of batch entries (the ones
        # that run first, attention_tc.work_order), its work-groups of a query block taking the tiles of their
        # row of tiles in turn (with the tiles of later chunks' work-groups, a long sequence's first chunks
        # found the tiles of the blocks they might leave out not scanned yet, and computed them)
        chunk = a.l2_batches()
        first, step = ("0", 1) if r.batched else (f"((int)bz < {chunk} ? (int)bz : {lay.key_blocks})", chunk)
        # the tag and the flags, and q's bound not known yet (infinite: no block is left out on it) until
        # q_max_frags sets it
        self.setup = (f"  const unsigned zd_tag = *reinterpret_cast<volatile unsigned*>(&{name}_epoch) + 1u;  // this launch's\n"
                      f"  unsigned long long* zd_flags = {name}_flags;\n"
                      "  __shared__ float zd_sred[4];  // the stage scans' block max\n"
                      + ("  float zd_qmax = INFINITY;\n" if r.limit is not None else ""))
        self.produce = f"""  for (int zd_kb = {first}; zd_kb < {lay.key_blocks}; zd_kb += {step}) {{  // this work-group's mask tiles
    const {T} j0 = ({T})zd_kb * {BN};
{_indent(_mask_tile(r, kernel, a.spec.M, a.spec.K, evaluate, T, view_of))}    if (tid == 0) zd_flag_st(&zd_flags[{kv} + {self._tile('zd_kb')}], zd_tag, (unsigned)masked | ((unsigned)clear << 1));
  }}
"""
        # counted before the output's stores (every warp is past the loop's last barrier), so that the fence waits
        # for no store of them (after them, Nsight Compute found 2.4% of the kernel's stall samples at it); the
        # count's answer is waited for after the stores (`counted`), not before them
        self.finish = f"""  unsigned zd_before = 0u;  // thread 0: the work-groups done with the flags before this one
  if (tid == 0) {{
    __threadfence();
    zd_before = atomicAdd(&{name}_done, 1u);
  }}
"""
        self.counted = f"""  if (tid == 0 && zd_before == gridDim.x - 1) {{  // the last one counts the launches (all have read this one's tag)
    atomicExch(&{name}_done, 0u);
    __threadfence();
    *reinterpret_cast<volatile unsigned*>(&{name}_epoch) = zd_tag;
  }}
"""

    def _tile(self, block: str) -> str:
        """The index of this work-group's mask tile at key block `block` among the mask's tiles."""
        lay = self.lay
        row = f"((int)bz * {lay.row_blocks} + zd_qb)" if self.rule.batched else "zd_qb"
        return f"{row} * {lay.key_blocks} + {block}"

    def state(self) -> str:
        """C declaring warp 0's window of known flags (none yet), before its first `walk`."""
        if self.rule is None:
            return ""
        return ("  int zd_wb = -64;  // warp 0: 32 key blocks from zd_wb known to be left out, visited, left clear\n"
                "  unsigned zd_ks = 0u, zd_kv = 0u, zd_kc = 0u;\n"
                "  int zd_own = zd_qb;  // warp 0: this work-group's next own key block (run first)\n")

    def forget(self) -> str:
        """C that drops warp 0's known flags once q's bound is in (blocks were judged without it before)."""
        if self.rule is None or self.rule.limit is None:
            return ""
        return "  zd_wb = -64;  // the flags read so far were judged without q's bound\n"

    def walk(self, steps: str, pad: str, own_flags: bool = True) -> str:
        """C for warp 0 (every lane gets the same): `zd_next`, the work-group's next own key block while there is
        one, then the first key block after `zd_last` not left out (`steps` when none is left), and `zd_nclear`,
        whether the mask leaves it clear; `advance()` then moves past it. `own_flags` False: an own block is taken
        as not clear without its mask flag read (the walk's first blocks, whose copies then start at once: the
        read waited for the launch's tag, itself a read, before any copy began), its mask tile copied with it."""
        if self.rule is None:
            return f"{pad}const int zd_next = min(zd_last + 1, {steps});\n{pad}const bool zd_nclear = false;"
        lay, r = self.lay, self.rule
        kv, groups = lay.batches * lay.key_blocks, lay.row_blocks
        bound = f"zd_qmax * zd_kp <= {r.limit:.9g}f" if r.limit is not None else "zd_kp == 0.0f"
        others = f"""int zd_b = zd_last + 1;
bool zd_fresh = false, zd_stale = false;
while (zd_b < {steps}) {{
  int zd_rel = zd_b - zd_wb;
  if (zd_stale || zd_rel < 0 || zd_rel >= 32) {{  // read the flags of the 32 blocks from zd_b, one per lane
    zd_wb = zd_b;
    zd_rel = 0;
    zd_fresh = true;
    zd_stale = false;
    const int zd_x = zd_b + lane;
    bool zd_s = false, zd_v = true, zd_c = false;  // known: left out, visited, left clear (past the end: visited)
    if (zd_x < {steps} && zd_x % {groups} == zd_qb) {{  // an own block: run already
      zd_s = true;
    }} else if (zd_x < {steps}) {{
      const unsigned long long zd_m = zd_flag_ld(&zd_flags[{kv} + {self._tile('zd_x')}]);
      const unsigned long long zd_k = zd_flag_ld(&zd_flags[(int)bz * {lay.key_blocks} + zd_x]);
      const bool zd_mk = (unsigned)(zd_m >> 32) == zd_tag, zd_kk = (unsigned)(zd_k >> 32) == zd_tag;
      const float zd_kp = __uint_as_float((unsigned)zd_k);
      const bool zd_ok = {bound};
      zd_s = zd_mk && (zd_m & 1ull) && zd_kk && zd_ok;
      zd_v = zd_mk && (!(zd_m & 1ull) || (zd_kk && !zd_ok));
      zd_c = zd_mk && (zd_m & 2ull);
    }}
    zd_ks = __ballot_sync(0xffffffffu, zd_s);
    zd_kv = __ballot_sync(0xffffffffu, zd_v);
    zd_kc = __ballot_sync(0xffffffffu, zd_c);
  }}
  const unsigned zd_open = ~zd_ks & (0xffffffffu << zd_rel);  // from zd_b on: not known to be left out
  if (zd_open == 0u) {{
    zd_b = zd_wb + 32;
    continue;
  }}
  const int zd_p = __ffs(zd_open) - 1;
  if (!zd_fresh && !((zd_kv >> zd_p) & 1u)) {{  // its flags were not out when the window was read: again
    zd_b = zd_wb + zd_p;
    zd_stale = true;
    continue;
  }}
  zd_next = min(zd_wb + zd_p, {steps});  // known to be visited, or not known yet: computed either way
  zd_nclear = (zd_kc >> zd_p) & 1u;
  break;
}}"""
        own = f"""
  const unsigned long long zd_m = zd_flag_ld(&zd_flags[{kv} + {self._tile('zd_own')}]);
  zd_nclear = (unsigned)(zd_m >> 32) == zd_tag && (zd_m & 2ull);""" if own_flags else ""
        code = f"""int zd_next = {steps};
bool zd_nclear = false;
const bool zd_mine = zd_own < {steps};
if (zd_mine) {{  // its own blocks first: their k and v flags are this work-group's to publish, none left out
  zd_next = zd_own;{own}
}} else {{
{_indent(others)}
}}"""
        return "\n".join(pad + ln for ln in code.splitlines())

    def advance(self) -> str:
        """C for warp 0 after a `walk` whose block's copies were started: the walk moves past it."""
        if self.rule is None:
            return "zd_last = zd_next;"
        return f"if (zd_mine) zd_own += {self.lay.row_blocks}; else zd_last = zd_next;"

    def stage_scan(self, block: str, stage: str, pad: str) -> str:
        """C for every thread once key block `block`'s copies have landed in shared memory at `stage` (a byte
        pointer): where it is one of the work-group's own blocks, k's largest |x| (where the rule bounds q . k)
        and whether every element of v is finite, from the staged tiles (TMA fills what lies past the keys' end
        with zeros, which change neither), published as its flags."""
        if self.rule is None:
            return ""
        (k_at, k_bytes), (v_at, v_bytes) = self.k_tile, self.v_tile

        def words(at: int, nbytes: int, fold: str) -> str:
            lanes = " ".join(fold.format(f"w.{c}") for c in "xyzw")
            return (f"  for (int e = tid; e < {nbytes // 16}; e += {THREADS}) {{\n"
                    f"    const uint4 w = *reinterpret_cast<const uint4*>({stage} + {at} + 16 * e);\n"
                    f"    {lanes}\n  }}\n")

        k_scan = ""
        if self.rule.limit is not None:
            k_scan = ("  unsigned zd_k2 = 0u;  // k's largest magnitude, two halves at a time\n"
                      + words(k_at, k_bytes, K_WORDS)
                      + f"  km = {packed_abs('zd_k2', self.dtype)};\n")
        code = f"""if ({block} % {self.lay.row_blocks} == zd_qb) {{  // an own block: its k and v flags, from the stage
  float km = 0.0f;
  bool fin = true;
{k_scan}{words(v_at, v_bytes, v_words(self.dtype))}  fin = __syncthreads_and(fin);
{block_max('km', 'zd_sred')}
  if (tid == 0) zd_flag_st(&zd_flags[(int)bz * {self.lay.key_blocks} + {block}], zd_tag, __float_as_uint(fin ? km : INFINITY));
}}"""
        return "\n".join(pad + ln for ln in code.splitlines())

    def scoring(self, loop, evaluate: Evaluate, node: Node, index: tuple, overrides: dict, pad: str) -> str:
        """The scoring loop for the block at `j0`, `zd_clear` telling a block the mask leaves clear."""
        return self._scoring(loop, evaluate, node, index, overrides, pad, "zd_clear")
