"""Driver side: shape and movement ops and indexing (API.md section 5). They take a tensor and shape
or axis arguments (validated at the call, raising `ShapeError` that names the shape) and give Tensors
built only from the movement nodes (reshape, permute, expand, pad, flip): a slice is a crop (pad with
negative widths), a strided slice a pad + reshape + crop, concat a sum of padded pieces, and an integer
array index a one-hot `where` summed over the indexed axis. None of them copies data on the driver.
"""

from __future__ import annotations

import itertools
import math
import operator
from typing import Any

import numpy as np

from .. import context, dtypes
from ..errors import DeviceError, ShapeError
from ..graph import companions
from ..graph import ir as graph
from ..graph import shard as shard_graph
from ..graph.guards import IndexGuard, guarded, index_guard
from ..graph.ir import Node, Op, ReduceOp
from .common import Axis, as_shape, as_tensor, broadcast_shapes, norm_axes, norm_axis, to_node
from .creation import arange, tensor
from .data import check_int_fits
from .elementwise import where
from .reduce import reduce_axes
from .tensor import Tensor

__all__ = [
    "broadcast_to",
    "cat",
    "concat",
    "expand_dims",
    "flatten",
    "flip",
    "matrix_transpose",
    "pad",
    "permute_dims",
    "repeat",
    "reshape",
    "split",
    "squeeze",
    "stack",
    "tile",
]


def reshape(x: Any, shape: Any, *, copy: bool | None = None) -> Tensor:
    """`x` with a new shape of the same size; one dim may be -1 (inferred). A reshape is always a view
    of the same value (index arithmetic), so every `copy` (the standard's keyword) is honoured."""
    x = as_tensor(x)
    items = shape if isinstance(shape, (tuple, list)) else (shape,)
    try:
        dims = [operator.index(s) for s in items]
    except TypeError:
        raise ShapeError(f"cannot reshape a tensor of shape {x.shape} into shape {shape!r}: non-integer size") from None
    if dims.count(-1) > 1 or any(d < -1 for d in dims):
        raise ShapeError(f"cannot reshape a tensor of shape {x.shape} into shape {tuple(dims)}: "
                         "only one dimension may be -1 and none may be otherwise negative")
    if -1 in dims:
        known = graph.prod(d for d in dims if d != -1)
        if known == 0 or x.size % known:
            raise ShapeError(f"cannot reshape a tensor of shape {x.shape} ({x.size} elements) into shape {tuple(dims)}")
        dims[dims.index(-1)] = x.size // known
    return Tensor(graph.reshape(x.node, tuple(dims)))


def permute_dims(x: Any, axes: Any) -> Tensor:
    """Reorder the axes (negatives allowed); `axes` must be a permutation of all of them."""
    x = as_tensor(x)
    axes = tuple(axes)
    if len(axes) != x.ndim:
        raise ShapeError(f"permutation {axes} does not have one entry per axis of shape {x.shape}")
    return Tensor(graph.permute(x.node, tuple(norm_axis(a, x.ndim, x.shape) for a in axes)))


def matrix_transpose(x: Any) -> Tensor:
    """Swap the last two axes (`x.mT`)."""
    x = as_tensor(x)
    n = x.ndim
    if n < 2:
        raise ShapeError(f"matrix transpose needs at least 2 dims, got shape {x.shape}")
    return Tensor(graph.permute(x.node, (*range(n - 2), n - 1, n - 2)))  # (a permutation by construction)


def broadcast_to(x: Any, shape: Any) -> Tensor:
    """Broadcast `x` to `shape` by NumPy rules (right-aligned; only size-1 dims stretch)."""
    x = as_tensor(x)
    shape = as_shape(shape)
    lead = len(shape) - x.ndim
    if lead < 0 or any(d != s and d != 1 for d, s in zip(x.shape, shape[lead:])):
        raise ShapeError(f"cannot broadcast a tensor of shape {x.shape} to shape {shape}")
    return Tensor(to_node(x.node, shape, x.dtype))


def expand_dims(x: Any, /, axis: int | tuple[int, ...] = 0) -> Tensor:
    """Insert size-1 dims at `axis` (positions in the result; the array API's default 0, by keyword or,
    as NumPy's, by position)."""
    x = as_tensor(x)
    n_new = len(axis) if isinstance(axis, (tuple, list)) else 1
    axes = norm_axes(axis, x.shape, ndim=x.ndim + n_new)
    dims = iter(x.shape)
    return reshape(x, tuple(1 if i in axes else next(dims) for i in range(x.ndim + n_new)))


def squeeze(x: Any, axis: Axis = None) -> Tensor:
    """Remove size-1 dims (all of them, or those at `axis`; squeezing a larger dim raises ShapeError)."""
    x = as_tensor(x)
    if axis is None:
        axes = tuple(i for i, d in enumerate(x.shape) if d == 1)
    else:
        axes = norm_axes(axis, x.shape)
        for a in axes:
            if x.shape[a] != 1:
                raise ShapeError(f"cannot squeeze axis {a} of size {x.shape[a]} (shape {x.shape})")
    return reshape(x, tuple(d for i, d in enumerate(x.shape) if i not in axes))


def flatten(x: Any) -> Tensor:
    x = as_tensor(x)
    return reshape(x, (x.size,))


def pad(x: Any, pad_width: Any, value: Any = 0) -> Tensor:
    """Constant padding; `pad_width` as NumPy's: n, (before, after), or ((before, after), ...) per dim."""
    x = as_tensor(x)
    w = np.asarray(pad_width)
    if w.size and w.dtype.kind not in "iu":
        raise TypeError(f"pad_width must be integers, got {pad_width!r}")
    try:
        w = np.broadcast_to(w, (x.ndim, 2))
    except ValueError:
        raise ShapeError(f"pad_width {pad_width!r} does not fit shape {x.shape}") from None
    if (w < 0).any():
        raise ShapeError(f"pad_width {pad_width!r} has negative widths (shape {x.shape})")
    if isinstance(value, Tensor) or np.ndim(value) != 0 or np.asarray(value).dtype.kind not in "biuf":
        raise TypeError(f"pad: value must be a number, got {value!r}")
    check_int_fits(value, x.dtype)  # (a Python int the dtype cannot hold: NumPy 2's OverflowError, not a wrap)
    return Tensor(graph.pad(x.node, tuple((int(lo), int(hi)) for lo, hi in w), value))


def flip(x: Any, axis: Axis = None) -> Tensor:
    """Reverse the order of elements along `axis` (all axes if None)."""
    x = as_tensor(x)
    return Tensor(graph.flip(x.node, norm_axes(axis, x.shape)))


def _sum_nodes(nodes: list[Node]) -> Node:
    """A balanced tree of adds (ors for bool) so long concats stay shallow."""
    op = graph.BinaryOp.OR if nodes[0].dtype.is_bool else graph.BinaryOp.ADD
    while len(nodes) > 1:
        pairs = [graph.binary(op, a, b) for a, b in zip(nodes[::2], nodes[1::2])]
        nodes = pairs + nodes[len(pairs) * 2:]
    return nodes[0]


def concat(xs: Any, axis: int | None = 0) -> Tensor:
    """Join tensors along an existing axis (None: flattened first); other dims must agree; dtypes
    promote. Each piece is padded with zeros to the full shape and the pieces are added (or-ed for
    bool): one fusable expression."""
    ts = [as_tensor(x) for x in xs]
    if not ts:
        raise ShapeError("concat needs at least one tensor")
    if axis is None:
        ts, axis = [flatten(t) for t in ts], 0
    shapes = [t.shape for t in ts]
    if ts[0].ndim == 0:
        raise ShapeError(f"zero-dimensional tensors cannot be concatenated (shapes {shapes})")
    ax = norm_axis(axis, ts[0].ndim, ts[0].shape)
    rest = [s[:ax] + s[ax + 1:] for s in shapes]
    if any(len(s) != len(shapes[0]) or r != rest[0] for s, r in zip(shapes, rest)):
        raise ShapeError(f"concat: shapes {shapes} must agree except along axis {axis}")
    dtype = ts[0].dtype
    for t in ts[1:]:
        dtype = dtypes.promote(dtype, t.dtype)
    total = sum(s[ax] for s in shapes)
    out_shape = shapes[0][:ax] + (total,) + shapes[0][ax + 1:]
    nodes, offset = [], 0
    for t in ts:
        n = t.shape[ax]
        if n:
            widths = tuple((offset, total - offset - n) if i == ax else (0, 0) for i in range(t.ndim))
            nodes.append(graph.pad(graph.cast(t.node, dtype), widths, 0))
        offset += n
    return Tensor(_sum_nodes(nodes) if nodes else graph.const(0, out_shape, dtype))


cat = concat


def stack(xs: Any, axis: int = 0) -> Tensor:
    """Join same-shaped tensors along a new axis."""
    ts = [as_tensor(x) for x in xs]
    if not ts:
        raise ShapeError("stack needs at least one tensor")
    shapes = [t.shape for t in ts]
    if any(s != shapes[0] for s in shapes):
        raise ShapeError(f"stack: all tensors must have the same shape, got {shapes}")
    ax = norm_axis(axis, ts[0].ndim + 1, shapes[0])
    return concat([expand_dims(t, ax) for t in ts], ax)


def split(x: Any, n_or_sizes: int | list[int], axis: int = 0) -> list[Tensor]:
    """NumPy's `split`: an int n gives n equal sections (the axis must divide evenly, else ShapeError);
    a list gives the split *indices* along the axis (as `np.split`), e.g. [2, 5] -> [:2], [2:5], [5:]."""
    x = as_tensor(x)
    if x.ndim == 0:
        raise ShapeError("cannot split a 0-d tensor")
    ax = norm_axis(axis, x.ndim, x.shape)
    n = x.shape[ax]
    if isinstance(n_or_sizes, (int, np.integer)):
        k = int(n_or_sizes)
        if k <= 0 or n % k:
            raise ShapeError(f"split of axis {axis} (size {n}, shape {x.shape}) into {k} equal sections is impossible")
        bounds = [i * (n // k) for i in range(k + 1)]
    else:
        try:
            bounds = [0, *(operator.index(i) for i in n_or_sizes), n]
        except TypeError:
            raise TypeError(f"split: sections must be an int or a list of int indices, got {n_or_sizes!r}") from None
    lead = (slice(None),) * ax
    return [x[(*lead, slice(lo, hi))] for lo, hi in itertools.pairwise(bounds)]


def tile(x: Any, reps: Any) -> Tensor:
    """NumPy's `tile`: repeat the whole tensor `reps` times per dim (reps and shape aligned on the right)."""
    x = as_tensor(x)
    reps = as_shape(reps)
    nd = max(len(reps), x.ndim)
    reps = (1,) * (nd - len(reps)) + reps
    shape = (1,) * (nd - x.ndim) + x.shape
    inter = tuple(v for d in shape for v in (1, d))
    big = tuple(v for r, d in zip(reps, shape) for v in (r, d))
    node = to_node(graph.reshape(x.node, inter), big, x.dtype)
    return Tensor(graph.reshape(node, tuple(r * d for r, d in zip(reps, shape))))


def repeat(x: Any, repeats: Any, axis: int | None = None) -> Tensor:
    """Repeat each element `repeats` times along `axis` (flattened first if None). `repeats` may also
    give one count per element (an integer tensor, NumPy array or Python list/tuple, as NumPy's): the
    output's size then depends on the counts, so a tensor of counts is realized and read, and the result
    is a gather."""
    x = as_tensor(x)
    if isinstance(repeats, (bool, float)):
        raise TypeError(f"repeat takes integer repeats, got {repeats!r}")
    if axis is None:
        x, axis = flatten(x), 0
    ax = norm_axis(axis, x.ndim, x.shape)
    if not isinstance(repeats, (int, np.integer)):
        # a list of counts goes to the host array it would be read back as anyway (no device round trip);
        # an empty list is NumPy's float64, but as counts it means none
        counts = np.asarray(repeats.numpy() if isinstance(repeats, Tensor) else repeats)
        if isinstance(repeats, (list, tuple)) and counts.size == 0:
            counts = counts.astype(np.int64)
        if counts.dtype.kind not in "iu":
            raise TypeError(f"repeat takes integer repeats, got dtype {counts.dtype}")
        if counts.ndim == 0 or counts.size == 1:
            repeats = int(counts.reshape(()))
        else:
            if counts.ndim != 1 or counts.shape[0] != x.shape[ax]:
                raise ShapeError(f"repeat: {counts.shape[0] if counts.ndim == 1 else counts.shape} counts for axis "
                                 f"{axis} of size {x.shape[ax]} (shape {x.shape})")
            if (counts < 0).any():
                raise ShapeError("repeat counts must not be negative")
            src = np.repeat(np.arange(x.shape[ax]), counts)
            if src.size == 0:
                return Tensor(graph.const(0, x.shape[:ax] + (0,) + x.shape[ax + 1:], x.dtype))
            return _gather(x, ax, tensor(src.astype(np.int32 if x.shape[ax] < 2**31 else np.int64)))
    if repeats < 0:
        raise ShapeError(f"repeat count {repeats} is negative")
    s = x.shape
    node = graph.reshape(x.node, s[:ax + 1] + (1,) + s[ax + 1:])
    node = to_node(node, s[:ax + 1] + (int(repeats),) + s[ax + 1:], x.dtype)
    return Tensor(graph.reshape(node, s[:ax] + (s[ax] * int(repeats),) + s[ax + 1:]))


# ---- indexing ------------------------------------------------------------------------------------------

def _crop(node: Node, axis: int, start: int, stop: int) -> Node:
    widths = [(0, 0)] * len(node.shape)
    widths[axis] = (-start, stop - node.shape[axis])
    return graph.pad(node, tuple(widths))


def _slice(node: Node, axis: int, s: slice) -> Node:
    """node[..., s, ...] on one axis: flip for a negative step, crop, and for |step| > 1 pad to a multiple
    of the step, split the axis into (length, step) and keep index 0 of the step dim."""
    n = node.shape[axis]
    start, stop, step = s.indices(n)
    length = len(range(start, stop, step))
    if step < 0:
        node, start, step = graph.flip(node, (axis,)), n - 1 - start, -step
    if step == 1 or length == 0:
        return _crop(node, axis, start, start + length)
    node = _crop(node, axis, start, start + length * step)  # may pad past the end: that part is dropped
    pre, post = node.shape[:axis], node.shape[axis + 1:]
    node = graph.reshape(node, pre + (length, step) + post)
    node = _crop(node, axis + 1, 0, 1)
    return graph.reshape(node, pre + (length,) + post)


def _index_tensor(item: Any, axis: int, n: int) -> tuple[Tensor, IndexGuard | None]:
    """An integer index array as a tensor, and the guard of its values where they are only known at the
    realize (graph/guards.py); array values are bounds-checked (bool masks became indices in `_masked`)."""
    if isinstance(item, Tensor):
        if not item.dtype.is_int:
            raise IndexError(f"tensors used as indices must be of integer type, got {item.dtype}")
        if n == 0 and item.size:
            raise IndexError(f"index out of bounds for axis {axis} with size 0")
        return item, index_guard(item.node, n, axis)
    arr = np.asarray(item)
    if arr.size == 0:
        arr = arr.astype(np.int64)
    if arr.dtype.kind not in "iu":
        raise IndexError(f"arrays used as indices must be of integer type, got {arr.dtype}")
    bad = arr[(arr >= n) | (arr < -n)]
    if bad.size:
        raise IndexError(f"index {bad.flat[0]} is out of bounds for axis {axis} with size {n}")
    return tensor(arr.astype(np.int32 if n < 2**31 else np.int64)), None


def _gather(x: Tensor, p: int, idx: Tensor, guard: IndexGuard | None = None) -> Tensor:
    """x indexed on axis p by an integer tensor: where(one_hot(idx), x, 0) summed over the axis, which
    depends on `guard` (an index out of range would read zeros). Codegen renders it as one load of x at the
    index (codegen/gather.py: the arange below is an `ir.IOTA` leaf)."""
    n, k = x.shape[p], idx.ndim
    if np.iinfo(idx.dtype.np_dtype).max < n:  # (an index of a narrow dtype: n and n - 1 must not wrap)
        idx = idx.astype(dtypes.int32 if n < 2**31 else dtypes.int64)
    idx = where(idx < 0, idx + n, idx)
    hot = idx.reshape(idx.shape + (1,)) == arange(n, dtype=idx.dtype)
    hot = hot.reshape((1,) * p + idx.shape + (n,) + (1,) * (x.ndim - p - 1))
    zero = x.dtype.np_dtype.type(0)  # a zero of x's own dtype (a Python 0 would turn bool into int)
    picked = where(hot, x.reshape(x.shape[:p] + (1,) * k + x.shape[p:]), zero)
    op, empty = (ReduceOp.MAX, False) if x.dtype.is_bool else (ReduceOp.SUM, 0)
    out = reduce_axes(op, picked, (p + k,), False, empty)
    guarded(out.node, guard)
    return out


def _is_array_index(item: Any) -> bool:
    return isinstance(item, (Tensor, np.ndarray, list, tuple))


def _expand_key(key: Any, ndim: int) -> list[Any]:
    key = list(key) if isinstance(key, tuple) else [key]
    ellipses, at, used = 0, len(key), 0  # (one loop: every slice of a model's tensors comes here)
    for i, item in enumerate(key):
        if item is Ellipsis:
            ellipses, at = ellipses + 1, i
        elif item is not None:
            used += 1
    if ellipses > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    if used > ndim:
        raise IndexError(f"too many indices for tensor: tensor is {ndim}-dimensional, but {used} were indexed")
    return key[:at] + [slice(None)] * (ndim - used) + key[at + 1:]


def _mask(item: Any) -> np.ndarray | None:
    """`item` as a boolean mask's host values (a tensor mask is realized: the result's shape depends on them), or
    None where it is no mask."""
    if isinstance(item, Tensor):
        return item.numpy() if item.dtype.is_bool else None
    if isinstance(item, (bool, np.bool_)) or (isinstance(item, np.ndarray) and item.dtype.kind == "b"):
        return np.asarray(item)
    if isinstance(item, (list, tuple)):
        arr = np.asarray(item)
        return arr if arr.dtype.kind == "b" else None
    return None


def _masked(x: Tensor, key: Any) -> tuple[Tensor, Any]:
    """NumPy's boolean mask indexing as an integer one. A mask alone: the axes it covers merged into one, indexed
    by the flat positions of its true elements (a 0-d mask, `x[True]`, covers no axes: a new axis of length 1 or
    0). A mask beside other masks or integer arrays: its true elements' coordinates, one integer array per axis it
    covers (NumPy's reading), for `_multi_index`. Gives x and key unchanged where the key has no mask."""
    for item in key if key.__class__ is tuple else (key,):  # (the common key, ints and slices, passes at once)
        if item.__class__ is not slice and item.__class__ is not int and item is not None and item is not Ellipsis:
            break
    else:
        return x, key
    items = list(key) if isinstance(key, tuple) else [key]
    masks = {i: m for i, item in enumerate(items) if (m := _mask(item)) is not None}
    if not masks:
        return x, key
    # the x axes each item takes (None and the ellipsis none here) and the first of them
    widths = [masks[i].ndim if i in masks else int(item is not None and item is not Ellipsis)
              for i, item in enumerate(items)]
    e = next((i for i, item in enumerate(items) if item is Ellipsis), None)  # (identity: `in` compares arrays)
    if e is not None:  # (axes after the ellipsis counted from the end)
        starts = [sum(widths[:i]) if i < e else x.ndim - sum(widths[i:]) for i in range(len(items))]
    else:
        starts = [sum(widths[:i]) for i in range(len(items))]
    for i, mask in masks.items():
        axis = starts[i]
        if axis < 0 or x.shape[axis:axis + mask.ndim] != mask.shape:
            raise IndexError(f"boolean index of shape {mask.shape} does not match the indexed axes of shape "
                             f"{x.shape} at axis {axis}")
    others = [i for i, item in enumerate(items) if i not in masks and _is_array_index(item)]
    if len(masks) == 1 and not others:
        (at, mask), = masks.items()
        axis = starts[at]  # (checked above)
        merged = x.reshape(x.shape[:axis] + (math.prod(mask.shape),) + x.shape[axis + mask.ndim:])
        items[at] = np.flatnonzero(mask)
        return merged, tuple(items)
    if any(m.ndim == 0 for m in masks.values()):
        raise IndexError("a 0-d boolean index (True or False) cannot stand beside other array indices")
    spliced: list = []
    for i, item in enumerate(items):
        spliced += list(np.nonzero(masks[i])) if i in masks else [item]
    return x, tuple(spliced)


def getitem(x: Tensor, key: Any) -> Tensor:
    """`x[key]`: ints, slices (any step), None, Ellipsis, integer arrays/tensors (gathers; several broadcast
    together, as `lp[arange(n), labels]`) and boolean masks (realized: their true elements' positions are the
    index), with NumPy's result layout (the gathered dims go first where the array indices are not adjacent)."""
    x, key = _masked(x, key)
    key = _expand_key(key, x.ndim)
    arrays = [item for item in key if item.__class__ is not slice and item.__class__ is not int and item is not None
              and _is_array_index(item)]
    guards: tuple = ()
    if len(arrays) > 1:
        x, key, guards = _multi_index(x, key)
    out = _getitem(x, key)
    for g in guards:
        guarded(out.node, g)
    return out


def _multi_index(x: Tensor, key: list) -> tuple[Tensor, list, tuple]:
    """Several integer arrays in an expanded key (ints count as such then, as in NumPy) as one: their axes moved
    together (to the first one's place where they stand side by side in the key, else to the front, where NumPy
    puts the result's broadcast axes) and merged, indexed by the broadcast arrays' flat positions there. Gives x,
    the key with that one array, and the arrays' own range guards (the merged index is in range where they are)."""
    advanced = [i for i, item in enumerate(key) if item is not None and item.__class__ is not slice]
    axes = [sum(item is not None for item in key[:i]) for i in advanced]  # (x's axis of each: Nones take none)
    sizes = [x.shape[ax] for ax in axes]
    picked, guards = [], []
    for i, ax, n in zip(advanced, axes, sizes):
        item = key[i]
        if not _is_array_index(item):
            item = np.asarray(operator.index(item))
        t, g = _index_tensor(item, ax, n)
        picked.append(where(t < 0, t + n, t))
        if g is not None:
            guards.append(g)
    try:
        shape = broadcast_shapes(*(t.shape for t in picked))
    except ShapeError:
        raise IndexError("indexing arrays of shapes " + " ".join(str(t.shape) for t in picked)
                         + " do not broadcast together") from None
    dt = dtypes.int32 if math.prod(sizes) < 2**31 else dtypes.int64
    flat = None
    for t, stride in zip(picked, [math.prod(sizes[j + 1:]) for j in range(len(sizes))]):
        term = t.astype(dt) * stride if stride != 1 else t.astype(dt)
        flat = term if flat is None else flat + term
    flat = broadcast_to(flat, shape)
    beside = advanced == list(range(advanced[0], advanced[-1] + 1))
    rest = [ax for ax in range(x.ndim) if ax not in axes]
    at = axes[0] if beside else 0
    order = rest[:at] + axes + rest[at:]
    merged = permute_dims(x, order).reshape(tuple(x.shape[ax] for ax in rest[:at]) + (math.prod(sizes),)
                                            + tuple(x.shape[ax] for ax in rest[at:]))
    if beside:
        new = key[:advanced[0]] + [flat] + key[advanced[-1] + 1:]
    else:  # (the result's broadcast axes first; so are x's merged ones, ahead of every other item's)
        new = [flat] + [item for i, item in enumerate(key) if i not in advanced]
    return merged, new, tuple(guards)


def _getitem(x: Tensor, key: list) -> Tensor:
    """`getitem` of an expanded key with one integer array at most."""
    node, dim, gather, drop = x.node, 0, None, []
    crops: list | None = None  # the crops of ints and unit-step slices not made yet: one pad makes them all
    for p, item in enumerate(key):
        if item.__class__ is slice:
            if item.start is None and item.stop is None and item.step is None:  # the whole axis: nothing to do
                pass
            elif item.step is None or item.step == 1:
                n = node.shape[p]
                start, stop, _ = item.indices(n)
                crops = crops or [(0, 0)] * len(node.shape)
                crops[p] = (-start, max(start, stop) - n)
            else:
                if crops:
                    node, crops = graph.pad(node, tuple(crops)), None
                node = _slice(node, p, item)
        elif item is None:
            if crops:
                node, crops = graph.pad(node, tuple(crops)), None
            node = graph.reshape(node, node.shape[:p] + (1,) + node.shape[p:])
        elif _is_array_index(item):
            gather = (p, *_index_tensor(item, dim, node.shape[p]))  # (axis, index, its guard)
        else:
            try:
                i = operator.index(item)
            except TypeError:
                raise IndexError(f"invalid index {item!r}: only integers, slices, None, Ellipsis and integer "
                                 "arrays are valid indices") from None
            n = node.shape[p]
            if not -n <= i < n:
                raise IndexError(f"index {i} is out of bounds for axis {dim} with size {n}")
            crops = crops or [(0, 0)] * len(node.shape)
            crops[p] = (-(i % n), i % n + 1 - n)
            drop.append(p)
        dim += item is not None
    if crops:
        node = graph.pad(node, tuple(crops))
    out = Tensor(graph.reshape(node, tuple([d for i, d in enumerate(node.shape) if i not in drop])))
    if gather is None:
        return out
    pos = gather[0] - sum(d < gather[0] for d in drop)
    out = _gather(out, pos, gather[1], gather[2])
    advanced = [i for i, item in enumerate(key) if item is not None and not isinstance(item, slice)]
    if advanced[-1] - advanced[0] + 1 != len(advanced) and pos:  # NumPy: separated advanced indices go first
        k = gather[1].ndim
        out = permute_dims(out, (*range(pos, pos + k), *range(pos), *range(pos + k, out.ndim)))
    return out


# ---- placement -----------------------------------------------------------------------------------------

def to_device(x: Tensor, device: str | None) -> Tensor:
    """`x.to(device)`: an identity RESHAPE carrying the device (graph.reshape would fold it away, so the
    node is built directly); None keeps `x`. An unknown name raises DeviceError."""
    dev = context.session().resolve_device(device)
    if dev is None:
        return x
    return Tensor(Node(Op.RESHAPE, (x.node,), x.shape, x.shape, x.dtype, device=dev))


def shard(x: Tensor, devices: list[str], axis: int = 0) -> Tensor:
    """`x.shard(devices, axis)`: nearly equal pieces along `axis` (np.array_split sizes), each pinned to its
    device (host data is cut on the host, and a tensor on a device there, so each device receives only its
    piece), joined back; the result is registered with `graph.shard`, which makes later ops run per shard when
    they are realized, and its pieces are realized with it (graph/companions.py), so later ops read them where
    they are rather than cutting them again. A device whose piece would be empty (more devices than rows) gets
    none."""
    if isinstance(devices, str) or not devices:
        raise DeviceError(f"shard needs a non-empty list of device names, got {devices!r}")
    devs = [context.session().resolve_device(d) for d in devices]
    if x.ndim == 0:
        raise ShapeError("cannot shard a 0-d tensor")
    ax = norm_axis(axis, x.ndim, x.shape)
    n, k = x.shape[ax], len(devs)
    sizes = [n // k + (i < n % k) for i in range(k)]
    lead = (slice(None),) * ax
    starts = np.cumsum([0, *sizes])
    node = x.node
    host = node.host if node.op is Op.LEAF and node.buffer is None and node.host is not None else None
    home = node.buffer.device if node.op is Op.LEAF and node.buffer is not None else None  # (x realized there)
    pieces, used = [], []
    for a, b, d in zip(starts[:-1], starts[1:], devs):
        if a == b and pieces:
            continue
        key = (*lead, slice(int(a), int(b)))
        if host is not None:
            pieces.append(Tensor(graph.leaf(np.ascontiguousarray(host[key]), x.dtype, device=d)))
        elif home is not None and home != d:  # cut where x is, then move the piece (not the whole x) to d
            pieces.append(x[key].to(home).to(d))
        else:
            pieces.append(x[key].to(d))
        used.append(d)
    out = concat(pieces, ax)
    if len(pieces) > 1:
        shard_graph.register(out.node, ax, [p.node for p in pieces], used)
        companions.attach(out.node, [p.node for p in pieces])
    return out
