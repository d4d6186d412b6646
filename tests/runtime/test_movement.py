"""Runtime tests of shape/movement ops and indexing (API.md section 5): reshape, permute/transpose/T/mT,
broadcast_to/expand, expand_dims, squeeze, flatten, pad, flip, concat/cat/stack/split/tile/repeat, and
`x[...]` with ints, slices, None, Ellipsis and integer-array gathers, against NumPy on PoCL."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import assert_close, data, ids

import zyx_dist as zd

MOVE_DTYPES = [np.float32, np.bool_, np.float16]


@pytest.fixture(params=MOVE_DTYPES, ids=ids(MOVE_DTYPES))
def dtype(request):
    return request.param


def test_reshape(dtype):
    a = data((2, 3, 4), dtype)
    x = zd.tensor(a)
    for shape in ((24,), (4, 6), (2, -1), (-1, 3, 2), (1, 24, 1), (4, 3, 2)):
        assert_close(zd.reshape(x, shape), a.reshape(shape), dtype)
    assert_close(x.reshape(4, -1), a.reshape(4, -1), dtype)
    assert_close(x.reshape((3, 8)), a.reshape(3, 8), dtype)
    assert_close(x.reshape(-1), a.reshape(-1), dtype)
    assert_close(x.T.reshape(6, 4), a.T.reshape(6, 4), dtype)  # not mergeable into one strided view
    assert_close(x[:, 1:].reshape(-1), a[:, 1:].reshape(-1), dtype)
    assert_close(zd.tensor(np.array(5, dtype)).reshape(1, 1), np.array(5, dtype).reshape(1, 1), dtype)
    assert_close(zd.zeros((0, 3)).reshape(3, 0, 2), np.zeros((3, 0, 2)), zd.float32)


def test_reshape_method_shape_keyword():
    """`x.reshape(shape=...)` (NumPy 2.1's `np.reshape(a, shape=...)` keyword) beside the varargs and tuple
    forms; `copy=` as the function's."""
    a = data((2, 3, 4), np.float32)
    x = zd.tensor(a)
    assert_close(x.reshape(shape=(4, -1)), np.reshape(a, shape=(4, -1)), zd.float32)
    assert_close(x.reshape(shape=24), np.reshape(a, shape=24), zd.float32)
    assert_close(x.reshape((6, 4), copy=False), np.reshape(a, (6, 4), copy=False), zd.float32)
    with pytest.raises(TypeError, match="shape"):
        x.reshape(4, 6, shape=(4, 6))


def test_permute_transpose(dtype):
    a = data((2, 3, 4), dtype)
    x = zd.tensor(a)
    assert_close(zd.permute_dims(x, (2, 0, 1)), a.transpose(2, 0, 1), dtype)
    assert_close(zd.permute_dims(x, (-1, 0, -2)), a.transpose(2, 0, 1), dtype)
    assert_close(x.permute(1, 2, 0), a.transpose(1, 2, 0), dtype)
    assert_close(x.permute((1, 0, 2)), a.transpose(1, 0, 2), dtype)
    assert_close(x.transpose(), a.transpose(), dtype)
    assert_close(x.transpose(0, 2, 1), a.transpose(0, 2, 1), dtype)
    assert_close(x.T, a.T, dtype)
    assert_close(x.mT, np.swapaxes(a, -1, -2), dtype)
    assert_close(x.T.T, a, dtype)
    v = zd.tensor(a[0, 0])
    assert_close(v.T, a[0, 0], dtype)


def test_broadcast_expand(dtype):
    a = data((3, 1), dtype)
    x = zd.tensor(a)
    assert_close(zd.broadcast_to(x, (3, 4)), np.broadcast_to(a, (3, 4)), dtype)
    assert_close(zd.broadcast_to(x, (2, 3, 5)), np.broadcast_to(a, (2, 3, 5)), dtype)
    assert_close(x.expand(2, 3, 4), np.broadcast_to(a, (2, 3, 4)), dtype)
    assert_close(x.expand((3, 2)), np.broadcast_to(a, (3, 2)), dtype)
    assert_close(x.broadcast_to((3, 0)), np.broadcast_to(a, (3, 0)), dtype)
    s = zd.tensor(np.array(1, dtype))
    assert_close(s.expand(2, 2), np.ones((2, 2), dtype), dtype)


def test_expand_dims_squeeze_flatten(dtype):
    a = data((3, 1, 4), dtype)
    x = zd.tensor(a)
    for axis in (0, 1, -1, 3, (0, 2), (-1, 0)):
        assert_close(zd.expand_dims(x, axis), np.expand_dims(a, axis), dtype)
    assert_close(x.expand_dims(2), np.expand_dims(a, 2), dtype)
    assert_close(zd.squeeze(x), np.squeeze(a), dtype)
    assert_close(x.squeeze(1), np.squeeze(a, 1), dtype)
    assert_close(x.squeeze(-2), np.squeeze(a, -2), dtype)
    assert_close(zd.squeeze(zd.tensor(a[:1, :, :1])), np.squeeze(a[:1, :, :1]), dtype)
    assert_close(x.flatten(), a.flatten(), dtype)
    assert_close(x.T.flatten(), a.T.flatten(), dtype)
    assert_close(zd.tensor(np.array(3, dtype)).flatten(), np.array([3], dtype), dtype)


@pytest.mark.parametrize("width", [1, (1, 2), ((1, 0), (2, 1), (0, 3)), ((2,),), ((0, 0), (0, 0), (1, 1)), 0,
                                   [[1, 2], [0, 0], [3, 0]]], ids=str)
def test_pad_forms(width, dtype):
    a = data((2, 3, 2), dtype)
    x = zd.tensor(a)
    assert_close(zd.pad(x, width), np.pad(a, width), dtype)
    if np.dtype(dtype).kind != "b":
        assert_close(x.pad(width, value=7), np.pad(a, width, constant_values=7), dtype)
    else:
        assert_close(zd.pad(x, width, value=True), np.pad(a, width, constant_values=True), dtype)


def test_pad_float_value_and_views():
    a = data((3, 4), np.float32)
    x = zd.tensor(a)
    assert_close(zd.pad(x, 2, value=-1.5), np.pad(a, 2, constant_values=-1.5), zd.float32)
    assert_close(zd.pad(x.T, ((1, 0), (0, 2))), np.pad(a.T, ((1, 0), (0, 2))), zd.float32)
    assert_close(zd.pad(x[::2, ::-1], 1) * 2, np.pad(a[::2, ::-1], 1) * 2, zd.float32)
    assert_close(zd.pad(zd.pad(x, 1), ((0, 1), (2, 0))), np.pad(np.pad(a, 1), ((0, 1), (2, 0))), zd.float32)
    assert_close(zd.pad(zd.zeros((0, 2)), 1), np.pad(np.zeros((0, 2)), 1), zd.float32)


def test_flip(dtype):
    a = data((3, 4, 2), dtype)
    x = zd.tensor(a)
    for axis in (0, 1, -1, (0, 2), None):
        assert_close(zd.flip(x, axis), np.flip(a, axis), dtype)
    assert_close(x.flip(1), np.flip(a, 1), dtype)
    assert_close(x.flip(), np.flip(a), dtype)
    assert_close(zd.flip(zd.flip(x, 0), 0), a, dtype)


def test_concat_stack(dtype):
    a = data((2, 3), dtype, seed=1)
    b = data((4, 3), dtype, seed=2)
    c = data((2, 5), dtype, seed=3)
    x, y, z = zd.tensor(a), zd.tensor(b), zd.tensor(c)
    assert_close(zd.concat([x, y]), np.concatenate([a, b]), dtype)
    assert_close(zd.concat([x, z], axis=1), np.concatenate([a, c], axis=1), dtype)
    assert_close(zd.cat((x, z, x), axis=-1), np.concatenate([a, c, a], axis=-1), dtype)
    assert_close(zd.concat([x]), a, dtype)
    assert_close(zd.concat([x, zd.tensor(a[:0]), y], axis=0), np.concatenate([a, a[:0], b]), dtype)
    assert_close(zd.stack([x, x.flip(0)]), np.stack([a, a[::-1]]), dtype)
    assert_close(zd.stack([x, x, x], axis=1), np.stack([a, a, a], axis=1), dtype)
    assert_close(zd.stack([x, x], axis=-1), np.stack([a, a], axis=-1), dtype)


def test_concat_promotes_and_many_pieces():
    a = np.arange(6, dtype=np.int32).reshape(2, 3)
    b = np.linspace(0, 1, 6, dtype=np.float32).reshape(2, 3)
    got = zd.concat([zd.tensor(a), zd.tensor(b)], axis=0)
    want = np.concatenate([a, b])
    assert_close(got, want, want.dtype)
    pieces = [data((1, 3), np.float32, seed=i) for i in range(9)]
    assert_close(zd.concat([zd.tensor(p) for p in pieces]), np.concatenate(pieces), zd.float32)
    nan = np.array([np.nan, 1.0], np.float32)
    assert_close(zd.concat([zd.tensor(nan), zd.tensor(nan)]), np.concatenate([nan, nan]), zd.float32)


def test_split():
    a = data((6, 4), np.float32)
    x = zd.tensor(a)
    for args in ((3,), (2, 1), ([1, 4],), ([2, 2, 5], 0), ([1], 1), ([0, 6],)):
        got = zd.split(x, *args)
        want = np.split(a, *args)
        assert len(got) == len(want)
        for g, w in zip(got, want):
            assert_close(g, w, zd.float32)
    parts = x.split(2, axis=-1)
    for g, w in zip(parts, np.split(a, 2, axis=-1)):
        assert_close(g, w, zd.float32)


@pytest.mark.parametrize("reps", [2, (2, 1), (1, 3), (2, 2, 2), (0, 2)], ids=str)
def test_tile(reps):
    a = data((2, 3), np.int32)
    assert_close(zd.tile(zd.tensor(a), reps), np.tile(a, reps), zd.int32)
    assert_close(zd.tensor(a).tile(reps), np.tile(a, reps), zd.int32)


@pytest.mark.parametrize("axis", [None, 0, 1, -1], ids=str)
def test_repeat(axis):
    a = data((2, 3), np.float32)
    x = zd.tensor(a)
    assert_close(zd.repeat(x, 3, axis=axis), np.repeat(a, 3, axis=axis), zd.float32)
    assert_close(x.repeat(2, axis), np.repeat(a, 2, axis=axis), zd.float32)
    assert_close(zd.repeat(x, 0, axis=axis), np.repeat(a, 0, axis=axis), zd.float32)


@pytest.mark.parametrize("counts,axis", [([1, 0, 2], 1), ((2, 1), 0), ([3], 1), ([0, 1, 2, 0, 1, 1], None)], ids=str)
def test_repeat_python_counts(counts, axis):
    """A Python list or tuple of counts, as NumPy takes (the same path as an array of counts)."""
    a = data((2, 3), np.float32)
    x = zd.tensor(a)
    assert_close(zd.repeat(x, counts, axis=axis), np.repeat(a, counts, axis=axis), zd.float32)
    assert_close(x.repeat(counts, axis), np.repeat(a, counts, axis=axis), zd.float32)


def test_repeat_python_counts_checked():
    x = zd.ones((2, 3))
    with pytest.raises(zd.ShapeError, match="2 counts for axis 1 of size 3"):
        zd.repeat(x, [1, 2], axis=1)
    with pytest.raises(zd.ShapeError, match="negative"):
        zd.repeat(x, [1, -1], axis=0)
    with pytest.raises(TypeError, match="float64"):
        zd.repeat(x, [1.0, 2.0], axis=0)
    assert_close(zd.repeat(zd.ones((0, 3)), [], axis=0), np.repeat(np.ones((0, 3)), [], axis=0), zd.float32)


# ---- indexing ---------------------------------------------------------------------------------------------------

BASE = (4, 5, 6)
KEYS = [
    1, -1, (2, 3), (-1, -2, -3), slice(1, 3), slice(None, None, 2), slice(None, None, -1), slice(3, 0, -2),
    slice(-3, None), slice(10, 20), (slice(None), 2), (Ellipsis, 0), (Ellipsis, slice(None, None, -3)),
    (None,), (slice(None), None, slice(1, 4)), (1, Ellipsis, None), (slice(None, None, 3), slice(4, 0, -1), -2),
    (0, slice(None), slice(1, 6, 2)), Ellipsis, (None, Ellipsis, None), (2, None, 1, slice(5, None, -2)),
    slice(1, 1),
]


@pytest.mark.parametrize("key", KEYS, ids=str)
def test_basic_indexing(key):
    a = data(BASE, np.float32)
    x = zd.tensor(a)
    assert_close(x[key], a[key], zd.float32)


def test_basic_indexing_dtypes(dtype):
    a = data(BASE, dtype)
    x = zd.tensor(a)
    for key in ((1, slice(None, None, -2)), (Ellipsis, 3), (slice(1, None, 2), None, -1)):
        assert_close(x[key], a[key], dtype)


GATHER_KEYS = [
    [0, 2, 3], [-1, 0, -4], np.array([[0, 1], [3, -2]]), (slice(None), [4, 0, -1]), (Ellipsis, [5, 5, 0]),
    (1, [0, -1]), (slice(1, 3), [2]), ([2], 1), (slice(None), 1, [0, 3]), np.array(2), ([], ),
    (slice(None, None, -1), np.array([1, 3, 1])),
]


@pytest.mark.parametrize("key", GATHER_KEYS, ids=str)
def test_gather_indexing(key):
    a = data(BASE, np.float32)
    x = zd.tensor(a)
    assert_close(x[key], a[key], zd.float32)


MASK_KEYS = [
    lambda a: a > 0, lambda a: (a > 0)[:, :, 0], lambda a: (slice(None), (a > 0)[0, :, 0]),
    lambda a: (1, (a > 0)[0, :, 0]),
    lambda a: (Ellipsis, (a > 0)[0, 0]), lambda a: ((a > 0)[..., 0], slice(2, 5)), lambda a: (None, (a > 0)[:, :, 0]),
    lambda a: np.zeros(a.shape, bool), lambda a: True, lambda a: False, lambda a: (0, True),
    lambda a: [True, False, True, True],
]


@pytest.mark.parametrize("case", range(len(MASK_KEYS)))
def test_boolean_mask_indexing(case):
    """x[mask] as NumPy's: the axes the mask covers become one axis of its true elements (the mask is realized,
    the shape depends on it), with a NumPy, list, Python or lazy zd mask, and a gradient back to x."""
    a = data(BASE, np.float32) - 0.5
    key = MASK_KEYS[case](a)
    x = zd.tensor(a)
    assert_close(x[key], a[key], zd.float32)
    items = key if isinstance(key, tuple) else (key,)
    if any(isinstance(k, np.ndarray) for k in items):  # the same mask, computed lazily
        lazy = tuple(zd.tensor(np.where(k, 1.0, -1.0).astype(np.float32)) > 0 if isinstance(k, np.ndarray) else k
                     for k in items)
        assert_close(x[lazy], a[key], zd.float32)
    (g,) = zd.grad((x[key] * 3).sum(), [x])
    want = np.zeros_like(a)
    want[key] = 3
    assert_close(g, want, zd.float32)


MULTI_KEYS = [  # several integer arrays (ints among them count as arrays), masks beside them
    lambda a: ([0, 3, -1], [4, 0, 2]), lambda a: (np.arange(4), [1, 2, 3, 4]),
    lambda a: ([0, 3, -1], slice(None), [5, 0, 2]),
    lambda a: (slice(None), np.array([[1], [4]]), [5, 0, 2]), lambda a: (0, slice(None), [5, 0, 2]),
    lambda a: ([0, 3, -1], 2), lambda a: (None, [0, 3], slice(1, 3), [5, 0]),
    lambda a: (Ellipsis, [[1], [4]], [5, 0, 2]),
    lambda a: (a[:, :, 0] > 0, [2]), lambda a: ([0, 3], np.arange(5) % 2 == 1), lambda a: (1, a[0, :, 0] > 0.1, [3]),
]


@pytest.mark.parametrize("case", range(len(MULTI_KEYS)))
def test_several_array_indices(case):
    """`x[rows, cols]` as NumPy's: the arrays broadcast together, their result axes in place where they stand side
    by side and first where they do not; a mask beside them gives its coordinates; the gradient is the gathers'."""
    a = data(BASE, np.float32) - 0.5
    key = MULTI_KEYS[case](a)
    x = zd.tensor(a)
    assert_close(x[key], a[key], zd.float32)
    (g,) = zd.grad((x[key] * 3).sum(), [x])
    want = np.zeros_like(a)
    np.add.at(want, key, 3)
    assert_close(g, want, zd.float32)


def test_picking_each_rows_label():
    """The cross-entropy idiom: log-probabilities at each row's label, with lazy index tensors."""
    lp = data((5, 3), np.float32)
    y = np.array([0, 2, 1, 1, 0])
    x = zd.tensor(lp)
    assert_close(x[zd.arange(5), zd.tensor(y)], lp[np.arange(5), y], zd.float32)
    with pytest.raises(IndexError, match="do not broadcast"):
        x[[0, 1, 2], [0, 1]]
    with pytest.raises(IndexError, match="out of bounds"):
        x[[0, 9], [0, 1]]


def test_gather_with_tensor_indices():
    a = data(BASE, np.int32)
    x = zd.tensor(a)
    idx = np.array([3, -1, 0, 0], np.int64)
    assert_close(x[zd.tensor(idx)], a[idx], zd.int32)
    assert_close(x[:, zd.tensor(idx)], a[:, idx], zd.int32)
    computed = zd.tensor(np.array([0, 1, 2], np.int32)) * 2 - 1  # -1, 1, 3, lazy
    assert_close(x[..., computed], a[..., np.array([-1, 1, 3])], zd.int32)
    b = data((5,), np.bool_)
    assert_close(zd.tensor(b)[[4, 0, 2]], b[[4, 0, 2]], zd.bool)
    f = data((7,), np.float16)
    assert_close(zd.tensor(f)[np.array([6, -7])], f[[6, -7]], zd.float16)


def test_gather_is_one_indexed_load_per_element():
    """An embedding lookup, `table[ids]`: each element is one load of the table at its id (the arange of the
    one-hot compare is computed from the index, codegen/render.py `one_hot`), not a loop over every row; in
    both dialects, for float, bool and integer tables and any index dtype; equal to NumPy."""
    from zyx_dist.codegen.render import CUDA, OPENCL, facts, render_kernel
    from zyx_dist.fuse.kernelize import kernelize

    rng = np.random.default_rng(3)
    table = rng.standard_normal((3000, 24)).astype(np.float32)
    ids = rng.integers(-3000, 3000, (4, 9))
    for idt in (np.int32, np.int64, np.int16):
        y = zd.tensor(table)[zd.tensor(ids.astype(idt))]
        (k,) = kernelize([y.node])
        for dialect in (OPENCL, CUDA):
            assert facts(k, dialect).loops == 0
            assert "for (" not in render_kernel(k, dialect).source
        assert_close(y, table[ids], zd.float32)
    flags = rng.random((500, 3)) < 0.5
    assert_close(zd.tensor(flags)[zd.tensor(ids[:, :3] % 500)], flags[ids[:, :3] % 500], zd.bool)
    counts = rng.integers(0, 100, (6, 400)).astype(np.int32)
    assert_close(zd.take(zd.tensor(counts), zd.tensor(ids[0] % 400), axis=1), np.take(counts, ids[0] % 400, axis=1),
                 zd.int32)


def test_an_arange_and_another_index_of_its_shape_never_share_a_plan():
    """A plan made where an index is `arange(n)` (computed from the position, not read) must not serve a graph of
    the same shape whose index holds other values: the leaf's `ir.IOTA` is part of the plan's key."""
    table = np.arange(50, dtype=np.float32) * 3
    t = zd.tensor(table).realize()
    other = np.arange(20, dtype=np.int32)[::-1].copy()
    for _ in range(3):  # (repeats: replayed plans too)
        assert_close(t[zd.arange(20)] + 1, table[:20] + 1, zd.float32)
        assert_close(t[zd.tensor(other)] + 1, table[other] + 1, zd.float32)
    assert_close(zd.arange(5, dtype=zd.uint8) * 2, np.arange(5) * 2, zd.uint8)
    assert_close(zd.arange(300, dtype=zd.uint8), np.arange(300).astype(np.uint8), zd.uint8)  # wraps: not an iota


def test_indexing_errors():
    x = zd.ones((3, 4))
    with pytest.raises(IndexError):
        x[3]
    with pytest.raises(IndexError):
        x[0, 0, 0]
    with pytest.raises(IndexError):
        x[[0, 3]]
    with pytest.raises(IndexError):
        x[:, -5]


def test_setitem_raises_type_error():
    x = zd.ones((3, 4))
    with pytest.raises(TypeError, match="(?i)immutable|not support"):
        x[0] = 1
    with pytest.raises(TypeError):
        x[:, 1] = zd.zeros(3)
    assert_close(x, np.ones((3, 4)), zd.float32)


def test_indexing_of_computed_and_realized():
    a = data((6, 8), np.float32)
    x = zd.tensor(a)
    y = (x * 2 + 1).realize()
    assert_close(y[::-1, 2:7:2], (a * 2 + 1)[::-1, 2:7:2], zd.float32)
    assert_close((x * 2)[1:, [0, 7]] + 1, (a * 2)[1:, [0, 7]] + 1, zd.float32)
    assert_close(x.T[3][::2], a.T[3][::2], zd.float32)
