"""Driver side: the lazy graph. A `Node` is one op of the zyx opset (`LEAF, CONST, EXPAND, PERMUTE,
RESHAPE, PAD, REDUCE, CAST, UNARY, BINARY`, plus a ternary `WHERE` so that a NaN in the branch not taken
can never leak, which zyx's arithmetic `where` did). The constructors below take nodes and give nodes;
they check shapes and dtypes at the call (raising `ShapeError`/`DTypeError` that name the shapes) and fold
the trivial cases (identity movement, movement of a constant, reshape of a reshape), so the kernelizer sees
one small, canonical opset. The node itself is graph/node.py's (re-exported here); the usual cases of the
constructors also run in C (graph/_node.c), each handing the others to its Python form below.
"""

from __future__ import annotations

import math
import weakref
from collections import deque
from typing import Any

import numpy as np

from .. import dtypes
from ..dtypes import DType, bool_, float32
from ..errors import DTypeError, ShapeError
from .merged_views import kept_view, merged_view, track_views  # noqa: F401 -- track_views re-exported
from .node import (  # noqa: F401 -- the node, re-exported: passes and tests name it through this module
    _C_NODES,
    Node,
    PyNode,
    _c_node,
    _ids,
    c_nodes_enabled,
    merged_guards,
)
from .opset import (  # noqa: F401 -- the opset, re-exported: the graph's users name it through this module
    BITWISE,
    BOOL_UNARY,
    COMPARISONS,
    FLOAT_MATH_BINARY,
    FLOAT_ONLY_UNARY,
    INT_ONLY_BINARY,
    MOVEMENT_OPS,
    BinaryOp,
    Op,
    ReduceOp,
    UnaryOp,
)

Shape = tuple[int, ...]


def prod(xs) -> int:
    return math.prod(xs)


# ---- leaves and constants ------------------------------------------------------------------------------

IOTA = "iota"  # the `arg` of a 1-D leaf whose values are their positions (arange(n)): kernels may compute, not load, them


def leaf(data: np.ndarray, dtype: DType, device: str | None = None, iota: bool = False) -> Node:
    """A leaf holding host data, uploaded when a kernel first needs it. `iota`: the data is arange(n), which
    codegen may compute from the index (the buffer holds the same values, so reading it is right too)."""
    return Node(Op.LEAF, (), IOTA if iota else None, tuple(int(s) for s in data.shape), dtype, host=data,
                device=device)


def const(value: Any, shape: Shape, dtype: DType) -> Node:
    """A constant broadcast to `shape`; it costs no memory, kernels inline it. `value` is normalised to
    the dtype (so `const(300, (), uint8)` holds 44, as NumPy's cast would)."""
    return Node(Op.CONST, (), _normalise(value, dtype), tuple(shape), dtype)


# (type, value, dtype) -> the normalised value, for the Python scalars every `x * 2` brings: the NumPy
# round trip costs microseconds. Zero and NaN floats are left out (0.0 == -0.0, and NaN != NaN). A bounded
# memo of a pure function, not state: clearing it changes only speed. (A dict, not functools.lru_cache: the
# lookup is half the cost, 0.3 against 0.7 us per scalar.)
_NORMALISED: dict[tuple, Any] = {}
_NORMALISED_MAX = 4096


def _normalise(value: Any, dtype: DType) -> Any:
    cls = value.__class__
    cached = cls is int or cls is bool or (cls is float and value != 0.0 and not math.isnan(value))
    key = (cls, value, dtype.name) if cached else None
    if key is not None:
        v = _NORMALISED.get(key, _NORMALISED)
        if v is not _NORMALISED:
            return v
    with np.errstate(all="ignore"):
        v = np.array(value).astype(dtype.np_dtype).item()
    if key is not None:
        if len(_NORMALISED) >= _NORMALISED_MAX:
            _NORMALISED.clear()
        _NORMALISED[key] = v
    return v


# A constant folded out of a movement or cast of another constant -> (op, arg, that constant). The folded
# node has no sources (kernels inline it), so the gradient pass (autograd.py) reads its history here: a
# parameter made by zd.zeros and broadcast still gets its gradient.
FOLDED: weakref.WeakKeyDictionary[Node, tuple[Op, Any, Node]] = weakref.WeakKeyDictionary()


# Elements of a view small enough to read on the host (graph/host_view.py's `small_views`), and the live pad
# and flip nodes no larger than that, held weakly. `small_views` finds views whose movement chain holds such a
# node, so while there is none it returns at once instead of walking the graph on every small realize. For
# that, every node that is made a PAD or FLIP, or becomes one, goes through `noted`: `pad` and `flip` below,
# and the passes that copy a node over other sources (graph/shard.py, graph/lineage.py) or turn one into
# another (lineage.restore). A noted node that later becomes a leaf stays in the set until it dies, which only
# costs a walk that finds nothing.
SMALL_VIEW = 64
SMALL_OFFSET_VIEWS: weakref.WeakSet[Node] = weakref.WeakSet()


def noted(n: Node) -> Node:
    """`n`, added to SMALL_OFFSET_VIEWS when it is a pad or flip of at most SMALL_VIEW elements."""
    if n.size <= SMALL_VIEW and (n.op is Op.PAD or n.op is Op.FLIP):
        SMALL_OFFSET_VIEWS.add(n)
    return n


def _fold(out: Node, op: Op, arg: Any, src: Node) -> Node:
    FOLDED[out] = (op, arg, src)
    return out


# ---- movement ------------------------------------------------------------------------------------------

def reshape(x: Node, shape: Shape) -> Node:
    shape = tuple(map(int, shape))  # (map, not a generator: this runs several times per op built)
    if math.prod(shape) != x.size or (shape and min(shape) < 0):
        raise ShapeError(f"cannot reshape a tensor of shape {x.shape} ({x.size} elements) into shape {shape}")
    if shape == x.shape:
        return x
    if x.op is Op.CONST:
        return _fold(const(x.arg, shape, x.dtype), Op.RESHAPE, shape, x)
    if x.op is Op.RESHAPE:
        src = x.srcs[0]
        if shape == src.shape:
            return kept_view(Op.RESHAPE, shape, x, src)
        return merged_view(Node(Op.RESHAPE, (src,), shape, shape, x.dtype), Op.RESHAPE, shape, x)
    return Node(Op.RESHAPE, (x,), shape, shape, x.dtype)


def permute(x: Node, axes: tuple[int, ...]) -> Node:
    axes = tuple(map(int, axes))
    if sorted(axes) != list(range(len(x.shape))):
        raise ShapeError(f"permutation {axes} is not a permutation of the {len(x.shape)} axes of shape {x.shape}")
    shape = tuple(x.shape[a] for a in axes)
    if axes == tuple(range(len(axes))):
        return x
    if x.op is Op.CONST:
        return _fold(const(x.arg, shape, x.dtype), Op.PERMUTE, axes, x)
    if x.op is Op.PERMUTE:  # compose two permutes into one (x's source is no permute: they compose as built)
        composed = tuple(x.arg[a] for a in axes)
        src = x.srcs[0]
        if composed == tuple(range(len(axes))):
            return kept_view(Op.PERMUTE, axes, x, src)
        return merged_view(Node(Op.PERMUTE, (src,), composed, shape, x.dtype), Op.PERMUTE, axes, x)
    return Node(Op.PERMUTE, (x,), axes, shape, x.dtype)


def expand(x: Node, shape: Shape) -> Node:
    """Broadcast size-1 dims of `x` to `shape` (same rank; the tensor layer right-aligns first)."""
    if shape == x.shape and type(shape) is tuple:  # already that shape (the operands of most ops)
        return x
    shape = tuple(map(int, shape))
    if len(shape) != len(x.shape):
        raise ShapeError(f"cannot broadcast shape {x.shape} to {shape}")
    for s, d in zip(x.shape, shape):
        if s != d and s != 1:
            raise ShapeError(f"cannot broadcast shape {x.shape} to {shape}")
    if shape == x.shape:
        return x
    if prod(shape) == 0:
        return const(0, shape, x.dtype)
    if x.op is Op.CONST:
        return _fold(const(x.arg, shape, x.dtype), Op.EXPAND, shape, x)
    if x.op is Op.EXPAND:
        return merged_view(Node(Op.EXPAND, (x.srcs[0],), shape, shape, x.dtype), Op.EXPAND, shape, x)
    return Node(Op.EXPAND, (x,), shape, shape, x.dtype)


def pad(x: Node, widths: tuple[tuple[int, int], ...], value: Any = 0) -> Node:
    """Pad each dim by (before, after); negative widths crop (that is how slicing is expressed)."""
    widths = tuple([(int(lo), int(hi)) for lo, hi in widths])
    if len(widths) != len(x.shape):
        raise ShapeError(f"pad widths {widths} do not match the {len(x.shape)} dims of shape {x.shape}")
    dims, padded = [], False  # one loop, not a generator per check: slicing builds a pad per index
    for d, (lo, hi) in zip(x.shape, widths):
        n = d + lo + hi
        if n < 0 or -lo > d or -hi > d:
            raise ShapeError(f"pad widths {widths} crop more than shape {x.shape} holds")
        dims.append(n)
        padded = padded or lo != 0 or hi != 0
    if not padded:
        return x
    shape = tuple(dims)
    value = _normalise(value, x.dtype)
    if prod(shape) == 0:
        return const(0, shape, x.dtype)
    if x.size == 0:  # nothing of x survives: every element is padding
        return const(value, shape, x.dtype)
    if x.op is Op.CONST and (all(lo <= 0 and hi <= 0 for lo, hi in widths) or _same(x.arg, value)):
        return _fold(const(x.arg, shape, x.dtype), Op.PAD, (widths, value), x)
    # crop of a pad that cuts all of its padding away: crop the source, so slicing a padded tensor adds no mask
    view, asked = x, (widths, value)
    while (x.op is Op.PAD and all(lo <= 0 and hi <= 0 for lo, hi in widths)
           and all(lo >= 0 and hi >= 0 and -wlo >= lo and -whi >= hi for (wlo, whi), (lo, hi) in zip(widths, x.arg[0]))):
        x, widths, value = x.srcs[0], tuple((wlo + lo, whi + hi) for (wlo, whi), (lo, hi) in zip(widths, x.arg[0])), 0
        if all(lo == 0 and hi == 0 for lo, hi in widths):
            return kept_view(Op.PAD, asked, view, x)
        if x.op is Op.CONST:
            return _fold(const(x.arg, shape, x.dtype), Op.PAD, (widths, value), x)
    out = noted(Node(Op.PAD, (x,), (widths, value), shape, x.dtype))
    return out if x is view else merged_view(out, Op.PAD, asked, view)


def is_crop(n: Node) -> bool:
    """Whether `n` is a pad that only cuts (how slicing is expressed)."""
    return n.op is Op.PAD and all(lo <= 0 and hi <= 0 for lo, hi in n.arg[0])


def _same(a: Any, b: Any) -> bool:
    return a == b or (isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b))


def flip(x: Node, axes: tuple[int, ...]) -> Node:
    if any(int(a) < 0 or int(a) >= len(x.shape) for a in axes):
        raise ShapeError(f"flip axes {tuple(axes)} out of range for shape {x.shape}")
    axes = tuple(sorted({int(a) for a in axes if x.shape[int(a)] > 1}))
    if not axes:
        return x
    if x.op is Op.CONST:  # the same values, but a node of its own, so a gradient flows back flipped
        return _fold(const(x.arg, x.shape, x.dtype), Op.FLIP, axes, x)
    if x.op is Op.FLIP:  # flipping twice cancels (x's source is no flip: flips combine as built)
        combined = tuple(sorted(set(axes) ^ set(x.arg)))
        src = x.srcs[0]
        if not combined:
            return kept_view(Op.FLIP, axes, x, src)
        return merged_view(noted(Node(Op.FLIP, (src,), combined, x.shape, x.dtype)), Op.FLIP, axes, x)
    return noted(Node(Op.FLIP, (x,), axes, x.shape, x.dtype))


# ---- compute -------------------------------------------------------------------------------------------

def cast(x: Node, dtype: DType) -> Node:
    if dtype is x.dtype:
        return x
    if x.op is Op.CONST:
        return _fold(const(x.arg, x.shape, dtype), Op.CAST, dtype, x)
    return Node(Op.CAST, (x,), dtype, x.shape, dtype)


def unary(op: UnaryOp, x: Node) -> Node:
    if op in FLOAT_ONLY_UNARY and not x.dtype.is_float:
        raise DTypeError(f"{op.value} needs a float tensor, got {x.dtype} (cast it first)")
    if op is UnaryOp.NEG and x.dtype.is_bool:
        raise DTypeError("negative of a bool tensor is not supported (use logical_not / ~)")
    if op is UnaryOp.NOT and x.dtype.is_float:
        raise DTypeError(f"~ / invert needs a bool or integer tensor, got {x.dtype}")
    dtype = bool_ if op in BOOL_UNARY else x.dtype
    return Node(Op.UNARY, (x,), op, x.shape, dtype)


def binary(op: BinaryOp, x: Node, y: Node) -> Node:
    """Both operands must have the same shape and dtype already (the tensor layer broadcasts and promotes)."""
    if x.shape != y.shape:
        raise ShapeError(f"{op.value}: shapes {x.shape} and {y.shape} differ")
    if x.dtype is not y.dtype:
        raise DTypeError(f"{op.value}: dtypes {x.dtype} and {y.dtype} differ")
    if op in BITWISE and x.dtype.is_float:
        raise DTypeError(f"bitwise {op.value} needs bool or integer tensors, got {x.dtype}")
    if op is BinaryOp.DIV and not x.dtype.is_float:
        raise DTypeError(f"true division node needs float operands, got {x.dtype}")
    if op in INT_ONLY_BINARY and not x.dtype.is_int:
        raise DTypeError(f"{op.value} needs integer operands, got {x.dtype}")
    dtype = bool_ if op in COMPARISONS else x.dtype
    return Node(Op.BINARY, (x, y), op, x.shape, dtype)


# arithmetic on nodes of one shape and dtype, for the passes that build graphs (autograd, the optimizers)

def full_like(value: Any, like: Node, dtype: DType | None = None) -> Node:
    return const(value, like.shape, like.dtype if dtype is None else dtype)


def add(x: Node, y: Node) -> Node:
    return binary(BinaryOp.ADD, x, y)


def sub(x: Node, y: Node) -> Node:
    return binary(BinaryOp.SUB, x, y)


def mul(x: Node, y: Node) -> Node:
    return binary(BinaryOp.MUL, x, y)


def div(x: Node, y: Node) -> Node:
    return binary(BinaryOp.DIV, x, y)


def neg(x: Node) -> Node:
    return unary(UnaryOp.NEG, x)


def where(cond: Node, x: Node, y: Node) -> Node:
    if not (cond.shape == x.shape == y.shape):
        raise ShapeError(f"where: shapes {cond.shape}, {x.shape}, {y.shape} differ")
    if cond.dtype is not bool_ or x.dtype is not y.dtype:
        raise DTypeError(f"where: needs a bool condition and equal branch dtypes, got {cond.dtype}, {x.dtype}, {y.dtype}")
    if cond.op is Op.CONST:
        return x if cond.arg else y
    return Node(Op.WHERE, (cond, x, y), None, x.shape, x.dtype)


def reduce(op: ReduceOp, x: Node, axes: tuple[int, ...]) -> Node:
    """Reduce over `axes` (non-negative, sorted, unique); the reduced dims stay as size 1."""
    if axes.__class__ is not tuple or len(axes) != 1 or axes[0].__class__ is not int:  # (one int axis: most reduces)
        axes = tuple(sorted(set(map(int, axes))))
    if axes and (axes[0] < 0 or axes[-1] >= len(x.shape)):
        raise ShapeError(f"reduce axes {axes} out of range for shape {x.shape}")
    kept = list(x.shape)
    for a in axes:
        kept[a] = 1
    shape = tuple(kept)
    if shape == x.shape:  # no axes, or only size-1 ones
        return x
    if x.size == 0:
        if prod(shape) == 0:  # the reduced axes are not empty, but the result is
            return const(0, shape, x.dtype)
        if op in (ReduceOp.MAX, ReduceOp.MIN):
            raise ShapeError(f"{op.value} of an empty axis (shape {x.shape}, axes {axes}) has no identity")
        return const(0 if op is ReduceOp.SUM else 1, shape, x.dtype)
    if x.size // math.prod(shape) >= SPLIT_REDUCE_AT and math.prod(shape) <= 16:  # (x.size is not 0 here)
        return _split_reduce(op, x, axes, shape)
    parts = _column_parts(x.shape, axes) if SPLIT_K and axes[0] == 0 else 1  # (leading axes only, there)
    if parts > 1 and x.op is not Op.WHERE and not broadcast_product(x):  # (a gather's one-hot, a contraction: not here)
        return _split_columns(op, x, axes, parts, shape)
    # (a contraction the GEMM matcher reads: both factors broadcast. A row's sum of an elementwise product, a layer
    # norm's or RMS norm's sum of squares, is one row kernel's loop: split, it took three kernels)
    if SPLIT_K and op is ReduceOp.SUM and len(axes) == 1 and x.shape[axes[0]] >= SPLIT_K_AT and broadcast_product(x):
        parts = _split_k_parts(x.shape[axes[0]], prod(shape))
        if parts > 1 and not any(_softmax_like(f) for f in x.srcs) and not (WHOLE_SUMS and WHOLE_SUMS(x, axes, shape)):
            return _split_contraction(x, axes[0], parts, shape)
    return Node(Op.REDUCE, (x,), (op, axes), shape, x.dtype)


SPLIT_REDUCE_AT = 1 << 15  # a reduce this long into few outputs runs in two stages, in parallel
SPLIT_PARTS = 1024


def _split_reduce(op: ReduceOp, x: Node, axes: tuple[int, ...], shape: Shape) -> Node:
    """Reduce in two kernels: SPLIT_PARTS partial results over contiguous chunks, then the total.
    The kernelizer stores the partials because a reduce reads them."""
    keep = tuple(i for i in range(len(x.shape)) if i not in axes)
    outer = prod(x.shape[i] for i in keep)
    n = prod(x.shape[a] for a in axes)
    chunk = -(-n // SPLIT_PARTS)
    flat = reshape(permute(x, keep + axes), (outer, n))
    if chunk * SPLIT_PARTS != n:  # pad with the identity so the extra elements change nothing
        flat = pad(flat, ((0, 0), (0, chunk * SPLIT_PARTS - n)), reduce_identity(op, x.dtype))
    parts = Node(Op.REDUCE, (reshape(flat, (outer, SPLIT_PARTS, chunk)),), (op, (2,)), (outer, SPLIT_PARTS, 1), x.dtype)
    total = Node(Op.REDUCE, (parts,), (op, (1,)), (outer, 1, 1), x.dtype)
    return reshape(total, shape)


SPLIT_K = False  # split-K and column splits on: the session sets it when one of its devices is a GPU (graphs are
# built before they are placed, so this is the session's choice, not a device's)
WHOLE_SUMS = None  # the session's test of a sum (x, axes, shape) that split-K leaves whole: an attention backward's
# product whose kernel recomputes its weights (graph/attention_grad.recomputes), where the session's devices do that
COLUMN_SPLIT_AT = 4096  # a sum over leading axes this long, into at most COLUMN_SPLIT_COLUMNS outputs, is split
COLUMN_SPLIT_COLUMNS = 1 << 14
COLUMN_SPLIT_OUTPUTS = 1 << 16  # outputs of its first stage: enough work-items to fill a GPU
COLUMN_SPLIT_CHUNK = 64  # the shortest part


def broadcast_product(x: Node) -> bool:
    """Whether `x` is a product of two operands that are both broadcast (an expand that grows, under movement ops
    and casts): what a matmul-shaped reduce sums (`a @ b`, batched, einsum-like, a weight's gradient)."""
    if x.op is not Op.BINARY or x.arg is not BinaryOp.MUL:
        return False
    for y in x.srcs:
        while y.op in MOVEMENT_OPS or y.op is Op.CAST:
            if y.op is Op.EXPAND and y.size > y.srcs[0].size:
                break
            y = y.srcs[0]
        else:
            return False
    return True


def _column_parts(shape: Shape, axes: tuple[int, ...]) -> int:
    """In how many parts to split a sum (or max, min) over the leading axes `axes` of `shape` into the columns that
    the trailing axes hold (a bias's gradient: the rows of a batch summed per column): 1 for none. One stage
    leaves a GPU a choice of two bad forms: a work-group per column reads across rows, a sector per element, and a
    work-item per column is too few of them; the parts are a work-item per (part, column), neighbours reading
    neighbouring columns, then a short sum of the parts."""
    if axes != tuple(range(len(axes))):
        return 1
    n, cols = prod(shape[: len(axes)]), prod(shape[len(axes):])
    if n < COLUMN_SPLIT_AT or not 32 <= cols <= COLUMN_SPLIT_COLUMNS:
        return 1
    # (at least COLUMN_SPLIT_OUTPUTS: codegen/options.py gives so many outputs a work-item each)
    return max(1, min(-(-COLUMN_SPLIT_OUTPUTS // cols), n // COLUMN_SPLIT_CHUNK))


def _split_columns(op: ReduceOp, x: Node, axes: tuple[int, ...], parts: int, shape: Shape) -> Node:
    """`_column_parts`'s split: partials over row chunks (in float32 for half types, whose stored partials would
    add their rounding), then their reduce in a fixed order (deterministic)."""
    n = prod(x.shape[a] for a in axes)
    cols = x.size // n
    wide = x.dtype.is_half
    flat = reshape(cast(x, float32) if wide else x, (n, cols))
    chunk = -(-n // parts)
    if chunk * parts != n:  # pad with the identity so the extra rows change nothing
        flat = pad(flat, ((0, chunk * parts - n), (0, 0)), reduce_identity(op, flat.dtype))
    part = Node(Op.REDUCE, (reshape(flat, (parts, chunk, cols)),), (op, (1,)), (parts, 1, cols), flat.dtype)
    total = Node(Op.REDUCE, (part,), (op, (0,)), (1, 1, cols), flat.dtype)
    return reshape(cast(total, x.dtype) if wide else total, shape)


SPLIT_K_AT = 1024  # a contraction this long into few GEMM tiles is split along its length (split-K)
SPLIT_K_WORK = 1 << 23  # ... when it is this many multiply-adds or more (an LM head's gradient at a small vocabulary,
# 768 x 17 over 8192 rows, took 396 us unsplit on an H100: six work-groups in a row of 128 k-steps)
SPLIT_K_CHUNK = 128  # the shortest part of the split length
GEMM_TILE = 128 * 128  # outputs of the GEMM template's biggest work-group tile
SPLIT_K_GROUPS = 256  # the splits stop once tiles x parts reach this many work-groups (two per SM of a big GPU)


def _split_k_parts(n: int, outputs: int) -> int:
    """In how many parts to split a contraction of length `n` into `outputs` results: the gradient of a weight
    (`x.T @ g` over a batch of rows) is a few GEMM tiles with a long k loop each, which leaves most of a GPU
    idle; split, its parts are one batched GEMM with enough tiles, and a short reduce over the parts adds
    them in a fixed order (deterministic, unlike atomics) and carries the epilogue (an optimizer's update)."""
    if n < SPLIT_K_AT or n * outputs < SPLIT_K_WORK:
        return 1
    tiles = -(-outputs // GEMM_TILE)
    parts = 1
    while n % (2 * parts) == 0 and n // (2 * parts) >= SPLIT_K_CHUNK and tiles * parts * 2 <= SPLIT_K_GROUPS:
        parts *= 2
    return parts


def _softmax_like(f: Node, limit: int = 32) -> bool:
    """Whether factor `f` computes probabilities near its top, through elementwise and movement ops (not below a
    reduce): exponentials divided by their sum, those of `softmax(q @ k.mT) @ v`, which the kernelizer fuses into
    one attention kernel when the contraction over the keys is left whole. An exp without that division is no
    softmax (the gradient of a cross-entropy's logits, exp(y) * sum(g), which an LM head's weight gradient
    reads: that one is split). Breadth first over at most `limit` nodes, since the division is a few nodes down
    while a gradient's factor can be a long chain (walked for every candidate contraction of a backward pass,
    so bounded); past the limit, not softmax-like."""
    queue, seen = deque([f]), {f.id}
    while queue and len(seen) <= limit:
        n = queue.popleft()
        if n.op is Op.BINARY and n.arg is BinaryOp.DIV:
            e, den = (view_base(x) for x in n.srcs)
            if (e.op is Op.UNARY and e.arg in (UnaryOp.EXP, UnaryOp.EXP2) and den.op is Op.REDUCE
                    and den.arg[0] is ReduceOp.SUM):
                return True
        if n.op is not Op.REDUCE:
            for src in n.srcs:
                if src.id not in seen:
                    seen.add(src.id)
                    queue.append(src)
    return False


def view_base(n: Node) -> Node:
    """The node under a chain of movement ops (views: index arithmetic, no values computed)."""
    while n.op in MOVEMENT_OPS:
        n = n.srcs[0]
    return n


def _split_contraction(x: Node, axis: int, parts: int, shape: Shape) -> Node:
    """sum over `axis` of the product x = a * b as `parts` partial sums and their total. The split is applied to
    both factors (reshape the axis into (parts, chunk), parts first and chunk last), so the partials stay a
    product of views that the GEMM matcher reads in place as a batched GEMM, never a stored product. Half-type
    factors are widened to float32 above their views: their products are exact in float32, so the partials are
    what tensor cores accumulate (gemm.match reads the narrow views), stored unrounded, and the total is rounded
    once, as the unsplit product would be."""
    a, b = x.srcs
    n = x.shape[axis]
    split = x.shape[:axis] + (parts, n // parts) + x.shape[axis + 1:]
    rest = tuple(i for i in range(len(split)) if i not in (axis, axis + 1))
    order = (axis, *rest, axis + 1)
    halves = [_split_axis(f, axis, split, order) for f in (a, b)]
    narrow = x.dtype.is_half
    if narrow:
        halves = [cast(h, float32) for h in halves]
    part = reduce(ReduceOp.SUM, binary(BinaryOp.MUL, *halves), (len(split) - 1,))  # (parts, rest..., 1)
    total = reduce(ReduceOp.SUM, part, (0,))
    return reshape(cast(total, x.dtype) if narrow else total, shape)


def _split_axis(f: Node, axis: int, split: Shape, order: tuple[int, ...]) -> Node:
    """`f` reshaped to `split` (its `axis` cut in two) and permuted by `order`, below a broadcast when f is one:
    a view over an expand of a computed value is no view the kernelizer reads through (it would store the
    broadcast product), while an expand of the moved value is."""
    if f.op is not Op.EXPAND:
        return permute(reshape(f, split), order)
    src = f.srcs[0]
    if src.shape[axis] == f.shape[axis]:  # the cut axis is a real one: cut it below the expand
        inner = src.shape[:axis] + split[axis:axis + 2] + src.shape[axis + 1:]
    else:  # broadcast along the cut axis too: both halves stay size 1
        inner = src.shape[:axis] + (1, 1) + src.shape[axis + 1:]
    return expand(permute(reshape(src, inner), order), tuple(split[i] for i in order))


def reduce_identity(op: ReduceOp, dtype: DType) -> Any:
    if op is ReduceOp.SUM:
        return 0
    if op is ReduceOp.PROD:
        return 1
    if dtype.is_float:
        return -math.inf if op is ReduceOp.MAX else math.inf
    if dtype.is_bool:
        return op is ReduceOp.MIN
    info = np.iinfo(dtype.np_dtype)
    return info.min if op is ReduceOp.MAX else info.max


def toposort(roots: list[Node], stop=lambda n: False, sources=lambda n: n.srcs) -> list[Node]:
    """Nodes reachable from `roots` through `sources` (a node's srcs by default), producers first; a node
    for which `stop` is true is included but its sources are not visited."""
    order: list[Node] = []
    seen: set[int] = set()
    stack: list[tuple[Node, bool]] = [(r, False) for r in reversed(roots)]
    while stack:
        node, expanded = stack.pop()
        if expanded:
            order.append(node)
            continue
        if node.id in seen:
            continue
        seen.add(node.id)
        stack.append((node, True))
        if not stop(node):
            for s in reversed(sources(node)):
                if s.id not in seen:
                    stack.append((s, False))
    return order


# ---- the constructors' usual cases in C ------------------------------------------------------------------

# graph/_node.c has the usual cases of these seven (no fold of a constant, no error, shapes of exact ints, no split
# rule of `reduce`), and hands every other case to the Python function, which stays the reference: a model's graph
# is built from them.
python_reshape, python_expand, python_permute, python_cast, python_unary, python_binary, python_reduce = (
    reshape, expand, permute, cast, unary, binary, reduce)


def _unary_rule(op: UnaryOp) -> int:
    """How _node.c types an op's result (its RULE_*): the checks `unary` makes, as a number."""
    if op in FLOAT_ONLY_UNARY:
        return 2  # float operands only
    if op is UnaryOp.NEG:
        return 3  # no bool
    if op is UnaryOp.NOT:
        return 4  # no float
    return 1 if op in BOOL_UNARY else 0  # a bool result, else the operand's dtype


def _binary_rules() -> dict[BinaryOp, int]:
    """How _node.c types a binary op's result (its RULE_*), for the ops whose checks it makes (those of `binary`);
    integer-only ops are left to Python."""
    rules = {}
    for op in BinaryOp:
        if op not in INT_ONLY_BINARY:
            rules[op] = 4 if op in BITWISE else 2 if op is BinaryOp.DIV else 1 if op in COMPARISONS else 0
    return rules


if _C_NODES:
    _c_node.configure_constructors(
        Node, (Op.CONST, Op.RESHAPE, Op.EXPAND, Op.PERMUTE, Op.CAST, Op.UNARY, Op.BINARY),
        {op: _unary_rule(op) for op in UnaryOp}, _binary_rules(),
        tuple((d, 1 if d.is_float else 2 if d.is_bool else 0) for d in dtypes.ALL), bool_,
        (python_reshape, python_expand, python_permute, python_cast, python_unary, python_binary))
    _c_node.configure_contract(globals(), Op.REDUCE, ReduceOp.SUM, BinaryOp.MUL, python_reduce)
    reshape, expand, permute, cast, unary, binary, reduce = (
        _c_node.reshape, _c_node.expand, _c_node.permute, _c_node.cast, _c_node.unary, _c_node.binary,
        _c_node.reduce)
