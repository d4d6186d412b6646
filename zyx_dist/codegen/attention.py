"""Driver side: one flash-attention style kernel for a kernel that holds `softmax(q @ k^T * s + mask) @ v`
(recognised by graph/attention.py, kept in one kernel by the kernelizer). Takes the kernel; `match` works
out the index arithmetic (which dims are the batch, the query rows, the keys, the head dims of q/k and
of v, and where each operand, the scoring and the output are read and written), `render` gives OpenCL C
(the CUDA dialect takes attention_tc.py or attention_tiled.py instead) in which each work-item owns one
query row: q's row and the output row stay in registers,
the work-group brings blocks of BC keys (k and v) into local/shared memory, each work-item scores them
(the scoring, e.g. the scale and the mask, evaluated by the renderer at that row and key), and an online
softmax (running max and sum, the partial output rescaled when the max grows) accumulates p @ v, so
the T x T scores are never stored. The output's epilogue runs on each element before its store.
Everything is computed in float32 (half-type operands are converted as they are loaded).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ..fuse.kernelize import Kernel
from ..graph.attention import MAX_HEAD, MOVES, Attention
from ..graph.attention import find as find_attention
from ..graph.ir import Node, Op
from . import symbolic as sym
from .cexpr import flat_index, move_index, strides
from .gemm import ELEMENTWISE, Epilogue, GemmSpec, _walk, tidy

ROWS = 64  # query rows (work-items) per work-group


@dataclass(frozen=True)
class AttentionSpec:
    pattern: Attention
    spec: GemmSpec  # of p @ v: batch, query rows (M), head dim of v (N), keys (K)
    q: Node  # the operands of q @ k^T (in its product's shape)
    k: Node
    v: Node  # p @ v's right operand
    scores_idx: tuple  # the scores' index at the template's (bz, gi, gk)
    qk_idx: tuple  # q @ k^T's product index at (bz, gi, gk, dd)
    head: int  # head dim of q and k
    stats: tuple[Node, ...] = ()  # the kernel's other outputs: functions of each row's max and sum (row statistics)
    stats_flat: sym.Expr = sym.ZERO  # ... their flat index at the template's (bz, gi)

    def row_stats(self, m: str, l: str, evaluate: Evaluate, store: Callable[[int, Node, str], str],
                  index_type: str) -> list[str]:
        """C storing the row statistics of the row at (bz, gi), from its max `m` and its sum `l` (of exp(s - m)
        over its keys), both float: what a backward pass recomputes the probabilities from. Nothing without."""
        if not self.stats:
            return []
        over = {self.pattern.row_max.id: m, self.pattern.row_sum.id: l}
        lines = [f"const {index_type} gid = {sym.render(self.stats_flat)};"]
        for i, node in enumerate(self.stats, 1):
            pre, value = evaluate(node, flat_index(node.shape, self.stats_flat), over)
            lines += ["{", *pre, store(i, node, value), "}"]
        return lines

    def l2_batches(self) -> int:
        """Batch entries whose k and v fit in L2 together (16 MiB): the chunks the CUDA kernels take them in
        (attention_tc.work_order)."""
        kv_bytes = self.spec.K * (self.head * self.k.dtype.itemsize + self.spec.N * self.v.dtype.itemsize)
        return max(1, min(self.spec.B, (16 << 20) // max(kv_bytes, 1)))


def _top_reduce(kernel: Kernel) -> Node | None:
    """The one reduce the output is reached from through elementwise ops and reshapes."""
    pos = {n.id for n in kernel.inputs}
    found: list[Node] = []
    stack, seen = [kernel.outputs[0]], set()
    while stack:
        n = stack.pop()
        if n.id in seen or n.id in pos or n.op is Op.CONST:
            continue
        seen.add(n.id)
        if n.op is Op.REDUCE:
            found.append(n)
        elif n.op in ELEMENTWISE or n.op is Op.RESHAPE:
            stack.extend(n.srcs)
        else:
            return None
    return found[0] if len(found) == 1 else None


def _down(x: Node, stop: Node, idx: tuple) -> tuple | None:
    """The index of `stop` reached from x at idx through movement ops (reshape, permute, expand)."""
    while x is not stop:
        if x.op not in MOVES:
            return None
        idx = move_index(x, idx)
        x = x.srcs[0]
    return idx


def _qk_index(scores: Node, qk: Node, idx: tuple, inputs: set[int]) -> tuple | None:
    """The index at which the scores at idx read q @ k^T (one place only), through elementwise and
    movement ops (pads excepted); inputs, constants and other reduces end a path."""
    found: set[tuple] = set()
    stack = [(scores, idx)]
    visits = 0
    while stack:
        n, ix = stack.pop()
        visits += 1
        if visits > 512:
            return None
        if n is qk:
            found.add(tuple(tidy(e) for e in ix))
        elif n.id in inputs or n.op is Op.CONST or n.op is Op.REDUCE:
            continue
        elif n.op in ELEMENTWISE:
            stack.extend((s, ix) for s in n.srcs)
        elif n.op in (*MOVES, Op.FLIP):
            stack.append((n.srcs[0], move_index(n, ix)))
        else:
            return None
    return found.pop() if len(found) == 1 else None


def _of_row_stats(n: Node, stats: set[int], inputs: dict[int, int]) -> bool:
    """Whether `n` is computed from the row statistics `stats` (and constants) by elementwise ops alone."""
    stack, seen = [n], set()
    while stack:
        x = stack.pop()
        if x.id in seen or x.id in stats or x.op is Op.CONST:
            continue
        seen.add(x.id)
        if x.id in inputs or x.op not in (Op.UNARY, Op.BINARY, Op.CAST, *MOVES):
            return False
        stack.extend(x.srcs)
    return True


def contraction_operands(c: Node, at: tuple, pos: dict[int, int]) -> tuple[Node, Node, tuple, int] | None:
    """Of the contraction `c` read at index `at` (in the template's bz, gi, gk): its operand that follows the rows
    (gi, not gk), the one that follows the loop (gk, not gi), its product's index with the summed axis as `dd`, and
    that axis's length; None where the operands do not split so."""
    axis = c.arg[1][0]
    head = c.srcs[0].shape[axis]
    idx = tuple(sym.Var("dd", 0, head - 1) if a == axis else e for a, e in enumerate(at))
    uses = []
    for x in c.srcs[0].srcs:
        wx = _walk(x, idx, pos)
        if wx is None or "gj" in wx[0]:
            return None
        uses.append((x, wx[0]))
    row = next((x for x, used in uses if "gk" not in used), None)
    loop = next((x for x, used in uses if "gi" not in used and x is not row), None)
    return None if row is None or loop is None else (row, loop, idx, head)


def match(kernel: Kernel) -> AttentionSpec | None:
    out = _top_reduce(kernel)
    pattern = find_attention(out) if out is not None else None
    if pattern is None:
        return None
    pos = {n.id: i for i, n in enumerate(kernel.inputs)}
    stats = tuple(kernel.outputs[1:])  # row statistics (fuse/attention_fusion.py), of the row max's shape
    marks = {pattern.row_max.id, pattern.row_sum.id}
    if any(x.shape != pattern.row_max.shape or not _of_row_stats(x, marks, pos) for x in stats):
        return None
    if any(n.id in pos for n in (pattern.probs, pattern.scores, pattern.qk, pattern.row_max, pattern.row_sum)):
        return None
    mul = out.srcs[0]
    side = next((s for s in mul.srcs if _down(s, pattern.probs, tuple(sym.ZERO for _ in s.shape)) is not None), None)
    if side is None:
        return None
    vside = mul.srcs[1] if side is mul.srcs[0] else mul.srcs[0]
    shape, kj = mul.shape, out.arg[1][0]
    names = [f"d{i}" for i in range(len(shape))]
    idx = tuple(sym.Var(nm, 0, d - 1) if d > 1 else sym.ZERO for nm, d in zip(names, shape))
    sidx = _down(side, pattern.probs, idx)
    axis = pattern.row_max.arg[1][0]
    if sidx is None or sidx[axis] != idx[kj] or any(f"d{kj}" in sym.variables(e) for a, e in enumerate(sidx)
                                                    if a != axis):
        return None
    pvars = set().union(*[sym.variables(e) for e in sidx])
    w = _walk(vside, idx, pos)
    if w is None:
        return None
    vvars = w[0]
    dims = [d for d in range(len(shape)) if d != kj and shape[d] > 1]
    rows = tuple(d for d in dims if names[d] in pvars and names[d] not in vvars)
    cols = tuple(d for d in dims if names[d] in vvars and names[d] not in pvars)
    batch = tuple(d for d in dims if d not in rows and d not in cols)
    spec = GemmSpec(out, side, vside, shape, (kj,), batch, rows, cols, None, None)
    if spec.N > MAX_HEAD:
        return None
    bz, gi, gj, gk = spec.vars()
    scores_idx = _down(side, pattern.probs, spec.index(bz, gi, sym.ZERO, gk))
    scores_idx = tuple(tidy(e) for e in scores_idx) if scores_idx is not None else None
    qk = pattern.qk
    at = _qk_index(pattern.scores, qk, scores_idx, set(pos)) if scores_idx is not None else None
    if at is None:
        return None
    split = contraction_operands(qk, at, pos)
    wv = _walk(vside, spec.index(bz, sym.ZERO, gj, gk), pos)
    if split is None or wv is None or "gi" in wv[0] or split[3] > MAX_HEAD:
        return None
    q, k, qk_idx, head = split
    axis = pattern.row_max.arg[1][0]
    row = tuple(sym.ZERO if a == axis else e for a, e in enumerate(scores_idx))
    flat = sym.add(*[sym.mul(e, st) for e, st in zip(row, strides(pattern.row_max.shape)) if st])
    if any("gk" in sym.variables(e) or "gj" in sym.variables(e) for e in row):
        return None
    return AttentionSpec(pattern, spec, q, k, vside, scores_idx, qk_idx, head, stats, flat)


Evaluate = Callable[[Node, tuple, dict], tuple[list[str], str]]  # (node, index, overrides) -> (C lines, value)


RowStats = Callable[[str, str], list[str]]  # (row max, row sum) -> C storing the row statistics (`row_stats`)


def render(a: AttentionSpec, name: str, dialect, params: list[str], evaluate: Evaluate, epilogue: Epilogue,
           index_type: str, row_stats: RowStats) -> tuple[str, tuple, tuple]:
    spec, T = a.spec, index_type
    M, N, K, D = spec.M, spec.N, spec.K, a.head
    cols = 32 if max(D, N) <= 64 else 16  # keys per block: their scores stay in registers
    groups = -(-M // ROWS)
    bz, _, gj, gk = spec.vars()
    q_lines, q_val = evaluate(a.q, a.qk_idx, {})
    k_lines, k_val = evaluate(a.k, a.qk_idx, {})
    v_lines, v_val = evaluate(a.v, spec.index(bz, sym.ZERO, gj, gk), {})
    s_lines, s_val = evaluate(a.pattern.scores, a.scores_idx, {a.pattern.qk.id: "acc"})
    body = "\n".join("      " + ln for ln in epilogue(spec.out_flat()))
    stats = "\n    ".join(["", "{", *lines, "}"]) if (lines := row_stats("m", "l")) else ""
    shared, barrier, align = dialect.shared, dialect.barrier, dialect.align16
    vec = D % 4 == 0 and N % 4 == 0

    def dot(row: str) -> str:
        if not vec:
            return f"for (int dd = 0; dd < {D}; dd++) acc += q[dd] * Ks[{row}][dd];"
        kv = dialect.load4_local.format(ptr=f"&Ks[{row}][dd]")
        return (f"for (int dd = 0; dd < {D}; dd += 4) {{ const float4 kv = {kv}; "
                f"acc += q[dd] * kv.x + q[dd + 1] * kv.y + q[dd + 2] * kv.z + q[dd + 3] * kv.w; }}")

    def pv(row: str) -> str:
        if not vec:
            return f"for (int x = 0; x < {N}; x++) o[x] += p * Vs[{row}][x];"
        vv = dialect.load4_local.format(ptr=f"&Vs[{row}][x]")
        return (f"for (int x = 0; x < {N}; x += 4) {{ const float4 vv = {vv}; "
                f"o[x] += p * vv.x; o[x + 1] += p * vv.y; o[x + 2] += p * vv.z; o[x + 3] += p * vv.w; }}")

    prefix = dialect.bounded_prefix.format(threads=ROWS, groups=1)
    src = f"""{prefix} {name}({', '.join(params)}) {{
  {shared} float Ks[{cols}][{D}]{align};
  {shared} float Vs[{cols}][{N}]{align};
  const int tid = {dialect.local_id};
  const {T} bz = ({T})({dialect.group_id} / {groups});
  const {T} gi = ({T})({dialect.group_id} % {groups}) * {ROWS} + tid;
  const bool live = gi < {M};
  float q[{D}], o[{N}];
  #pragma unroll
  for (int dd = 0; dd < {D}; dd++) {{
    float v = 0.0f;
    if (live) {{ {' '.join(q_lines)} v = {q_val}; }}
    q[dd] = v;
  }}
  #pragma unroll
  for (int x = 0; x < {N}; x++) o[x] = 0.0f;
  float m = -INFINITY, l = 0.0f;
  for ({T} j0 = 0; j0 < {K}; j0 += {cols}) {{
    {barrier}
    for (int e = tid; e < {cols * D}; e += {ROWS}) {{
      const int kj = e / {D}, dd = e % {D};
      const {T} gk = j0 + kj;
      float v = 0.0f;
      if (gk < {K}) {{ {' '.join(k_lines)} v = {k_val}; }}
      Ks[kj][dd] = v;
    }}
    for (int e = tid; e < {cols * N}; e += {ROWS}) {{
      const int kj = e / {N}, gj = e % {N};
      const {T} gk = j0 + kj;
      float v = 0.0f;
      if (gk < {K}) {{ {' '.join(v_lines)} v = {v_val}; }}
      Vs[kj][gj] = v;
    }}
    {barrier}
    {{  // every work-item runs this (rows past the end score -inf): a branch around state that lives across
        // the barriers is miscompiled by PoCL
      float s[{cols}];
      float mb = m;
      #pragma unroll
      for (int kj = 0; kj < {cols}; kj++) {{
        float acc = 0.0f;
        #pragma unroll
        {dot("kj")}
        const {T} gk = j0 + kj;
        float sc = -INFINITY;
        if (live && gk < {K}) {{ {' '.join(s_lines)} sc = {s_val}; }}
        s[kj] = sc;
        mb = fmax(mb, sc);
      }}
      // online softmax: rescale what was summed under the old max
      const float alpha = mb == -INFINITY ? 1.0f : exp(m - mb);
      l *= alpha;
      #pragma unroll
      for (int x = 0; x < {N}; x++) o[x] *= alpha;
      #pragma unroll
      for (int kj = 0; kj < {cols}; kj++) {{
        const float p = s[kj] == -INFINITY ? 0.0f : exp(s[kj] - mb);
        l += p;
        #pragma unroll
        {pv("kj")}
      }}
      m = mb;
    }}
  }}
  if (live) {{{stats}
    #pragma unroll
    for (int x = 0; x < {N}; x++) {{
      const {T} gj = x;
      const float acc = o[x] / l;
{body}
    }}
  }}
}}
"""
    return src, (spec.B * groups * ROWS,), (ROWS,)
