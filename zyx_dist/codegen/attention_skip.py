"""Driver side: whole-block skips for the CUDA attention kernels (attention_tc.py, attention_tiled.py), the way
flash attention skips a causal mask's upper blocks, but decided from the data and with NumPy's results. Takes
the `attention.AttentionSpec` and the renderer's evaluator; gives a `SkipRule` when the scoring has the form
`f(q @ k^T) + mask` (f: casts and constant scales) or `where(cond, f(q @ k^T), -inf)`, and the source of a
prologue kernel that, before the attention kernel and in the same launch (runtime/cuda.py reads
`PROLOGUE_MARK`), writes per block a few flags to a scratch buffer: per (query block, key block) whether
the mask is -inf (or the condition false) at every element, and whether it leaves every score as it is
(0 added, or the condition true); per (batch, key block) the largest |k| and whether every element of v
is finite. A work-group then leaves out, loads included, every key block where its tile is masked, v's
block is finite (0 * inf is NaN in NumPy) and, for the additive form, its largest |q| times the block's
largest |k| bounds q @ k^T so that f stays finite (an overflow to inf would make the score NaN instead of
-inf); a block the mask leaves clear is scored with the mask as a constant. Nothing else changes: a
block that fails a test is computed as before. The TMA form (attention_tma.py) has no prologue: attention_flags.py
has its own work-groups make the same scans and publish the same flags, tagged per launch, in module memory.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import ml_dtypes
import numpy as np

from ..dtypes import dtype as dtype_named
from ..fuse.kernelize import Kernel
from ..graph.attention import MOVES
from ..graph.ir import BinaryOp, Node, Op, UnaryOp
from . import symbolic as sym
from .attention import AttentionSpec, Evaluate
from .cexpr import move_index
from .gemm import _walk

BM = BN = 64  # query rows and keys per block, as both kernels take them
THREADS = 128
PROLOGUE_MARK = "// zyx_dist: prologue "  # "<entry> <work-groups> <threads> <scratch bytes>", read by the CUDA runtime
FLT_MAX = float(np.finfo(np.float32).max)
SLACK = 1.01  # covers float32 rounding in the sums and products the bound leaves out
MAX_SCRATCH = 16 << 20  # bytes of flags at most (a per-batch mask over long rows needs B x blocks^2): else no skips


@dataclass(frozen=True)
class SkipRule:
    mask: Node  # the mask (additive form) or the condition (where form)
    index: tuple  # ... at the scores' (bz, gi, gk)
    test: str  # C test of its value at one element for "this score is -inf", e.g. "{} == -INFINITY"
    clear: str  # ... for "the mask leaves this score as it is" (0 added, or the score selected)
    value: str  # what the mask is where `clear` holds: the scoring of a clear block takes it as a constant
    limit: float | None  # |q| max * |k| max under which f(q . k) is finite; None: the score does not read q . k
    batched: bool  # the mask varies with the batch index bz


def _const(n: Node) -> float | None:
    while n.op in MOVES:
        n = n.srcs[0]
    return float(n.arg) if n.op is Op.CONST and not isinstance(n.arg, (list, tuple, np.ndarray)) else None


def _largest(n: Node) -> float:
    """The largest finite value of n's dtype, as the kernels compute it (in float32 at most)."""
    info = ml_dtypes.finfo(n.dtype.np_dtype) if n.dtype.name == "bfloat16" else np.finfo(n.dtype.np_dtype)
    return min(float(info.max), FLT_MAX)


def _bound(x: Node, qk: Node) -> float | None:
    """The largest |q . k| for which x, a chain of casts, negations and constant scales of qk, stays finite
    at every step (each node rounded to its dtype); None for any other chain."""
    steps: list[tuple[float, Node]] = []  # from x down to qk: each node and the factor it applies
    n = x
    while n is not qk:
        if n.op in (*MOVES, Op.FLIP) or (n.op is Op.UNARY and n.arg is UnaryOp.NEG) or (
                n.op is Op.CAST and n.dtype.is_float):
            steps.append((1.0, n))
            n = n.srcs[0]
            continue
        if n.op is not Op.BINARY or n.arg not in (BinaryOp.MUL, BinaryOp.DIV):
            return None
        a, b = n.srcs
        cb, ca = _const(b), _const(a) if n.arg is BinaryOp.MUL else None
        if cb is not None:
            factor, below = (abs(cb) if n.arg is BinaryOp.MUL else 1 / abs(cb) if cb else math.inf), a
        elif ca is not None:
            factor, below = abs(ca), b
        else:
            return None
        if not math.isfinite(factor):
            return None
        steps.append((factor, n))
        n = below
    # bottom up: each node's value is |q . k| times the factors of the steps up to it
    bound = _largest(qk) / SLACK
    factor = 1.0
    for f, node in reversed(steps):
        factor *= f
        if factor > 0:
            bound = min(bound, _largest(node) / (SLACK * factor))
    return bound


def rule(a: AttentionSpec, kernel: Kernel) -> SkipRule | None:
    inside = a.pattern.internal()
    qk = a.pattern.qk
    n, ix = a.pattern.scores, a.scores_idx
    while n.op in (*MOVES, Op.FLIP) or (n.op is Op.CAST and n.dtype.is_float):  # -inf stays -inf through these
        ix = move_index(n, ix) if n.op is not Op.CAST else ix
        n = n.srcs[0]
    pos = {x.id: i for i, x in enumerate(kernel.inputs)}
    found: tuple[Node, str, str, str, float | None] | None = None
    if n.op is Op.BINARY and n.arg is BinaryOp.ADD:
        x, m = n.srcs
        if m.id in inside:
            x, m = m, x
        if m.id not in inside and x.id in inside:
            limit = _bound(x, qk)
            if limit is not None:
                found = (m, "{} == -INFINITY", "{} == 0.0f", "0.0f", limit / (SLACK * a.head))
    elif n.op is Op.WHERE:
        cond, yes, no = n.srcs
        if cond.id not in inside:
            if _const(no) == -math.inf:
                found = (cond, "!({})", "({})", "true", None)
            elif _const(yes) == -math.inf:
                found = (cond, "({})", "!({})", "false", None)
    if found is None:
        return None
    m, test, clear, value, limit = found
    walk = _walk(m, ix, pos)
    if walk is None or not {"gi", "gk"} & walk[0]:  # a mask the same at every score: nothing per block
        return None
    return SkipRule(m, ix, test, clear, value, limit, "bz" in walk[0])


@dataclass(frozen=True)
class Layout:
    """Where the prologue's flags lie in the scratch buffer (offsets in bytes) and how many there are."""

    batches: int  # B
    row_blocks: int  # query blocks
    key_blocks: int
    mask_batches: int  # B for a mask that varies with bz, else 1

    @property
    def vfin_at(self) -> int:
        return 4 * self.batches * self.key_blocks

    @property
    def mask_at(self) -> int:
        return 8 * self.batches * self.key_blocks

    @property
    def nbytes(self) -> int:
        return self.mask_at + 4 * self.mask_batches * self.row_blocks * self.key_blocks

    @property
    def mask_tiles(self) -> int:
        return self.mask_batches * self.row_blocks * self.key_blocks

    @property
    def groups(self) -> int:
        """Work-groups of the prologue: one per (batch, key block) and one per mask tile, side by side (the
        first work-groups do both): in one wave where the device holds them all, since each is short and
        waits mostly on its loads."""
        return max(self.batches * self.key_blocks, self.mask_tiles)


def layout(a: AttentionSpec, r: SkipRule) -> Layout:
    spec = a.spec
    return Layout(spec.B, -(-spec.M // BM), -(-spec.K // BN), spec.B if r.batched else 1)


def pointers(lay: Layout) -> str:
    """C declarations of the flag arrays over `zd_scratch` (the kernels' last parameter)."""
    return (f"  float* zd_kmax = reinterpret_cast<float*>(zd_scratch);\n"
            f"  int* zd_vfin = reinterpret_cast<int*>(zd_scratch + {lay.vfin_at});\n"
            f"  int* zd_mask = reinterpret_cast<int*>(zd_scratch + {lay.mask_at});")


def _tile_flags(r: SkipRule, lay: Layout, block: str) -> str:
    """The prologue's mask flags of this work-group's query block and key block `block` (bit 0: masked,
    bit 1: clear), in the attention kernel (bz and the query block zd_qb known)."""
    qb = "zd_qb"
    mz = f"(int)bz * {lay.row_blocks * lay.key_blocks}" if r.batched else "0"
    return f"zd_mask[{mz} + {qb} * {lay.key_blocks} + ({block})]"


def skip_test(r: SkipRule, lay: Layout, block: str, qmax: str = "zd_qmax") -> str:
    """C test, in the attention kernel (bz and zd_qb known), of whether key block `block` can be left out."""
    at = f"(int)bz * {lay.key_blocks} + ({block})"
    test = f"({_tile_flags(r, lay, block)} & 1) && zd_vfin[{at}]"
    if r.limit is not None:
        test += f" && {qmax} * zd_kmax[{at}] <= {r.limit:.9g}f"
    return test


def largest_abs(name: str, value: str) -> str:
    """C that folds |value| into the running max `name` (NaN counts as inf, so no bound holds)."""
    return f"{{ const float zd_a = fabsf({value}); {name} = zd_a != zd_a ? INFINITY : fmaxf({name}, zd_a); }}"


def block_max(name: str, scratch: str, pad: str = "  ") -> str:
    """C that turns each thread's `name` into the work-group's max (128 threads; `scratch`: 4 shared floats)."""
    shuffles = " ".join(f"{name} = fmaxf({name}, __shfl_xor_sync(0xffffffffu, {name}, {w}));" for w in (16, 8, 4, 2, 1))
    return (f"{pad}{shuffles}\n{pad}if ((threadIdx.x & 31) == 0) {scratch}[threadIdx.x >> 5] = {name};\n"
            f"{pad}__syncthreads();\n{pad}{name} = fmaxf(fmaxf({scratch}[0], {scratch}[1]), fmaxf({scratch}[2], {scratch}[3]));")


# per half type: the exponent's bits, and C of the float whose 16-bit magnitude `{}` holds (its sign bit clear)
HALF_BITS = {"bfloat16": (0x7F80, "__uint_as_float({} << 16)"),
             "float16": (0x7C00, "__half2float(__ushort_as_half((unsigned short)({})))")}


K_WORDS = "zd_k2 = __vmaxu2(zd_k2, {} & 0x7fff7fffu);"  # k's two 16-bit magnitudes of a 32-bit word into zd_k2


def v_words(dtype: str) -> str:
    """C folding a 32-bit word `{}` of two `dtype` halves into `fin` (false where either is inf or NaN)."""
    exponents = f"{HALF_BITS[dtype][0] * 0x10001:#x}u"
    return f"fin = fin & (__vcmpeq2({{}} & {exponents}, {exponents}) == 0u);"


def packed_abs(bits: str, dtype: str) -> str:
    """C of the larger magnitude held in the two 16-bit halves of `bits` (each |x| of `dtype`, sign cleared:
    integers that order as the values do, NaN above inf) as a float, NaN counting as inf."""
    exponent, as_float = HALF_BITS[dtype]
    m = f"max({bits} & 0xffffu, {bits} >> 16)"
    return f"({m} > {exponent:#x}u ? INFINITY : {as_float.format(m)})"


def _lanes(dtype: str) -> tuple[str, list[str]]:
    """(C type of 16 bytes, each element of `w` of that type as a float) for a vector read of `dtype`."""
    if dtype == "float32":
        return "float4", [f"w.{c}" for c in "xyzw"]
    if dtype == "bfloat16":
        return "uint4", [f"__uint_as_float({e})" for c in "xyzw" for e in (f"w.{c} << 16", f"w.{c} & 0xffff0000u")]
    return "uint4", [f"__half2float(__ushort_as_half((unsigned short)({e})))"
                     for c in "xyzw" for e in (f"w.{c} & 0xffffu", f"w.{c} >> 16")]


@dataclass(frozen=True)
class _Span:
    """One side of a scanned tile: C variable `var` = `base` + i for i < `count`, inside while below `limit`."""

    var: str
    base: str
    count: int
    limit: int


def _scan(node: Node, index: tuple, rows: _Span, cols: _Span, col_checked: bool, fold: str, view, dtype: str,
          evaluate: Evaluate, T: str, as_used: str, name: str, word_fold: str = "") -> tuple[str, str]:
    """(loads, folds): C of the work-group over a `rows` x `cols` tile of `node` (at `index`, in their variables)
    that applies `fold` (C with `{}` for the value) to each element inside: 16 bytes of `dtype` at a time where
    `view` (the tile code's `copyable` result for it) says the elements lie side by side along the columns,
    each thread's loads (into registers `name`) all issued before the first fold, so that a caller may issue
    another scan's loads in between and wait once for both, and where `word_fold` is given for a half type, it
    (C with `{}` for 32 bits: two elements) folds them two at a time; else one by one, all in `folds`.
    `col_checked`: the columns may pass their limit (else only the rows are tested)."""
    guard = f"{rows.var} < {rows.limit}" + (f" && {cols.var} < {cols.limit}" if col_checked else "")
    width = 16 // dtype_named(dtype).itemsize if view is not None else 1
    if view is not None and not (col_checked and cols.limit % width):  # whole runs: none straddles the limit
        p, off = view
        ctype, lanes = _lanes(dtype)
        if word_fold and dtype in HALF_BITS:
            folds = " ".join(word_fold.replace("{}", f"w.{c}") for c in "xyzw")
        else:
            folds = " ".join(fold.replace("{}", x) for x in lanes)
        chunks = rows.count * cols.count // width
        per = -(-chunks // THREADS)
        first = f"e < {chunks} && " if chunks % THREADS else ""
        return f"""    {ctype} {name}[{per}];
    bool {name}_in[{per}];
    #pragma unroll
    for (int r = 0; r < {per}; r++) {{
      const int e = tid + r * {THREADS};
      const {T} {rows.var} = {rows.base} + e / {cols.count // width}, {cols.var} = {cols.base} + (e % {cols.count // width}) * {width};
      {name}_in[r] = {first}{guard};
      if ({name}_in[r]) {name}[r] = *reinterpret_cast<const {ctype}*>(in{p} + {sym.render(off)});
    }}
""", f"""    #pragma unroll
    for (int r = 0; r < {per}; r++)
      if ({name}_in[r]) {{ const {ctype} w = {name}[r]; {folds} }}
"""
    lines, value = evaluate(node, index, {})
    return "", f"""    #pragma unroll 8
    for (int e = tid; e < {rows.count * cols.count}; e += {THREADS}) {{
      const {T} {rows.var} = {rows.base} + e / {cols.count}, {cols.var} = {cols.base} + e % {cols.count};
      if ({guard}) {{ {' '.join(lines)} const auto zd_x = {as_used.format(value)}; {fold.replace("{}", "zd_x")} }}
    }}
"""


def _mask_scan(r: SkipRule, kernel: Kernel, M: int, K: int, evaluate: Evaluate, T: str, view_of) -> str:
    """The loop over mask tile (q0, j0) that ANDs each element's tests into `masked` and `clear`: 16 bytes at
    a time where the mask is a view of a float input whose elements lie side by side along the keys
    (`view_of(node, index, dtype, col, cols)`, the tile code's `copyable`), else one by one."""
    pos = {n.id: i for i, n in enumerate(kernel.inputs)}
    walk = _walk(r.mask, r.index, pos)
    dtype = kernel.inputs[walk[1][0][0]].dtype.name if walk is not None and len(walk[1]) == 1 else None
    floats = dtype in ("float32", "bfloat16", "float16")
    view = view_of(r.mask, r.index, dtype, sym.Var("gk", 0, K - 1), BN) if floats else None
    fold = f"masked = masked & ({r.test}); clear = clear & ({r.clear});"
    words = ""  # the additive form's -inf and 0 tests of a half mask, on two elements at once: -inf's bits, +-0
    if dtype in HALF_BITS and (r.test, r.clear) == ("{} == -INFINITY", "{} == 0.0f"):
        inf2 = (0x8000 | HALF_BITS[dtype][0]) * 0x10001
        words = f"masked = masked & ({{}} == {inf2:#x}u); clear = clear & (({{}} & 0x7fff7fffu) == 0u);"
    return "".join(_scan(r.mask, r.index, _Span("gi", "q0", BM, M), _Span("gk", "j0", BN, K), True, fold, view,
                         dtype if floats else "float32", evaluate, T, "{}", "zd_wm", words))


def _kv_scan(a: AttentionSpec, r: SkipRule, kernel: Kernel, evaluate: Evaluate, T: str, as_used: str, dtype: str,
             views: tuple) -> str:
    """C of the work-group that sets `km` (k's largest |x|, 0 where the rule needs no bound) and `fin` (every
    element of v finite) over key block `j0` of batch entry `bz`, the same in every thread."""
    spec = a.spec
    N, K, D = spec.N, spec.K, a.head
    bz, _, gj, gk = spec.vars()
    keys = _Span("gk", "j0", BN, K)
    half = dtype in HALF_BITS  # then 16-bit magnitudes and exponents are compared two at a time, as integers
    k_loads, k_folds = ("", "") if r.limit is None else _scan(
        a.k, a.qk_idx, keys, _Span("dd", "0", D, D), False, largest_abs("km", "{}"), views[0], dtype, evaluate, T,
        as_used, "zd_wk", K_WORDS)
    v_loads, v_folds = _scan(a.v, spec.index(bz, sym.ZERO, gj, gk), keys, _Span(gj.name, "0", N, N), False,
                             "fin = fin & ((__float_as_uint({}) & 0x7f800000u) != 0x7f800000u);", views[1], dtype,
                             evaluate, T, as_used, "zd_wv",
                             v_words(dtype) if half else "")
    packed = ("    unsigned zd_k2 = 0u;  // k's largest magnitude, two halves at a time\n",
              f"    km = fmaxf(km, {packed_abs('zd_k2', dtype)});\n") if half and r.limit is not None else ("", "")
    return f"""    float km = 0.0f;
    bool fin = true;
{packed[0]}{k_loads}{v_loads}{k_folds}{v_folds}{packed[1]}    fin = __syncthreads_and(fin);
{block_max('km', 'zd_red', '    ')}
"""


def _mask_tile(r: SkipRule, kernel: Kernel, M: int, K: int, evaluate: Evaluate, T: str, view_of) -> str:
    """C of the work-group that sets `masked` and `clear` for the mask tile at (q0, j0), the same in every thread."""
    return f"""    bool masked = true, clear = true;
{_mask_scan(r, kernel, M, K, evaluate, T, view_of).rstrip()}
    masked = __syncthreads_and(masked);
    clear = __syncthreads_and(clear);
"""


def prologue(a: AttentionSpec, r: SkipRule, lay: Layout, name: str, kernel: Kernel, params: list[str],
             evaluate: Evaluate, T: str, as_used: str, dtype: str, views: tuple, view_of) -> str:
    """The prologue kernel `name` (the attention kernel's parameters): work-group b takes (batch, key block) b,
    if there is one, for k's largest |x| and v's finiteness, and mask tile (mask batch, query block, key
    block) b, if there is one, for the mask test. `as_used` turns a computed float into the value the
    attention kernel uses (its rounding to the tiles' `dtype`); `views` are the tile code's `copyable` results
    for k and v in that dtype, `view_of` the same test for the mask (attention_tiles.copyable, bound to the kernel)."""
    kv = lay.batches * lay.key_blocks
    return f"""{PROLOGUE_MARK}{name} {lay.groups} {THREADS} {lay.nbytes}
extern "C" __global__ void __launch_bounds__({THREADS}) {name}({', '.join(params)}) {{
  __shared__ float zd_red[4];
{pointers(lay)}
  const int tid = threadIdx.x;
  if (blockIdx.x < {kv}) {{
    const {T} bz = ({T})(blockIdx.x / {lay.key_blocks});
    const {T} j0 = ({T})(blockIdx.x % {lay.key_blocks}) * {BN};
{_kv_scan(a, r, kernel, evaluate, T, as_used, dtype, views)}    if (tid == 0) {{
      zd_kmax[blockIdx.x] = km;
      zd_vfin[blockIdx.x] = fin;
    }}
  }}
  if (blockIdx.x < {lay.mask_tiles}) {{
    const int t = blockIdx.x;
{f"    const {T} bz = ({T})(t / {lay.row_blocks * lay.key_blocks});{chr(10)}" if r.batched else ""}    const {T} q0 = ({T})((t / {lay.key_blocks}) % {lay.row_blocks}) * {BM};
    const {T} j0 = ({T})(t % {lay.key_blocks}) * {BN};
{_mask_tile(r, kernel, a.spec.M, a.spec.K, evaluate, T, view_of)}    if (tid == 0) zd_mask[t] = (int)masked | ((int)clear << 1);
  }}
}}
"""


class _Blocks:
    """What both ways of skipping blocks share: the rule (None: no skips), the scoring of a block the mask
    leaves clear, and the work-group's largest |q|."""

    rule: SkipRule | None

    def _scoring(self, loop, evaluate: Evaluate, node: Node, index: tuple, overrides: dict, pad: str,
                 clear: str) -> str:
        """The scoring loop `loop(lines, value)` for the block at `j0`: with a rule, a second copy for blocks the
        mask leaves clear (C test `clear`, the same in every thread), in which the mask is a constant (neither
        read nor added)."""
        lines, value = evaluate(node, index, overrides)
        if self.rule is None:
            return loop(lines, value)
        c_lines, c_value = evaluate(node, index, {**overrides, self.rule.mask.id: self.rule.value})
        return (f"{pad}if ({clear}) {{  // the same in every thread\n{loop(c_lines, c_value)}\n"
                f"{pad}}} else {{\n{loop(lines, value)}\n{pad}}}")

    def q_max(self, element: str, count: int) -> str:
        """C that sets `zd_qmax` from q's `count` elements in shared memory (`element`: the e-th as a float),
        every thread taking part; empty where the rule needs no bound."""
        if self.rule is None or self.rule.limit is None:
            return ""
        return (f"  __shared__ float zd_qred[4];\n  float zd_qmax = 0.0f;\n"
                f"  for (int e = tid; e < {count}; e += {THREADS}) {largest_abs('zd_qmax', element)}\n"
                f"{block_max('zd_qmax', 'zd_qred')}\n")

    def q_max_frags(self, dtype: str, D: int, declare: bool = True) -> str:
        """C that sets `zd_qmax` (declaring it where `declare`) from the half-type q fragments `qf` of the tensor-core
        kernels, the work-group's rows by D head dims, every thread taking part: their 16-bit magnitudes compared
        as integers, two at a time; empty where the rule needs no bound."""
        if self.rule is None or self.rule.limit is None:
            return ""
        return (f"  unsigned zd_q2 = 0u;\n  #pragma unroll\n  for (int kk = 0; kk < {D // 16}; kk++)\n"
                f"    #pragma unroll\n    for (int r = 0; r < 4; r++) zd_q2 = __vmaxu2(zd_q2, qf[kk][r] & 0x7fff7fffu);\n"
                f"  {'float ' if declare else ''}zd_qmax = {packed_abs('zd_q2', dtype)};\n"
                f"  __shared__ float zd_qred[4];\n{block_max('zd_qmax', 'zd_qred')}\n")


class Skips(_Blocks):
    """What an attention kernel adds for whole-block skips, empty where no rule applies: its extra parameter,
    the prologue's source, the flag pointers, the test of a key block and the walk to the next one run, the
    scoring of a block the mask leaves clear, and the work-group's largest |q| (`zd_qmax`) where the rule
    bounds q . k."""

    def __init__(self, a: AttentionSpec, kernel: Kernel, name: str, params: list[str], evaluate: Evaluate, T: str,
                 as_used: str, dtype: str, views: tuple, view_of) -> None:
        self.rule = rule(a, kernel)
        self.params, self.prologue, self.setup = params, "", ""
        lay = layout(a, self.rule) if self.rule is not None else None
        if lay is None or lay.nbytes > MAX_SCRATCH:
            self.rule = None
            return
        self.params = [*params, "unsigned char* __restrict__ zd_scratch"]
        self.prologue = prologue(a, self.rule, lay, f"{name}_pre", kernel, self.params, evaluate, T, as_used, dtype,
                                 views, view_of)
        self.lay = lay
        self.setup = pointers(lay) + "\n"

    def next(self, var: str, after: str, pad: str = "  ") -> str:
        """C declaring `var`, the first key block after `after` not left out (inline: a lambda's closure
        costs registers)."""
        if self.rule is None:
            return f"int {var} = {after} + 1;"
        return (f"int {var} = {after} + 1;\n"
                f"{pad}for (; {var} < {self.lay.key_blocks} && ({self.skipped(var)}); {var}++) {{}}")

    def skipped(self, block: str) -> str:
        return "false" if self.rule is None else skip_test(self.rule, self.lay, block)

    def v_finite(self, block: str, check, note: str) -> str:
        """C declaring `v_finite`, whether v's key block `block` is finite, after a barrier (`note` says what
        else it waits for): the prologue's flag, or without one each thread's test of the elements it copied
        (`check()`, C that ANDs them into `finite`), ANDed through the barrier."""
        if self.rule is not None:
            return (f"    __syncthreads();  // {note}\n"
                    f"    const bool v_finite = zd_vfin[(int)bz * {self.lay.key_blocks} + {block}];")
        return (f"    bool finite = true;  // the elements of v's block that this thread copied are finite\n"
                f"{check()}\n    const bool v_finite = __syncthreads_and(finite);  // {note}")

    def clear(self, block: str) -> str:
        """C test of whether the mask leaves every score of key block `block` as it is (no rule: never)."""
        return "false" if self.rule is None else f"({_tile_flags(self.rule, self.lay, block)} & 2)"

    def scoring(self, loop, evaluate: Evaluate, node: Node, index: tuple, overrides: dict, pad: str) -> str:
        """The scoring loop `loop(lines, value)` for the block at `j0` (see `_Blocks._scoring`)."""
        return self._scoring(loop, evaluate, node, index, overrides, pad, self.clear(f"(int)(j0 / {BN})"))
