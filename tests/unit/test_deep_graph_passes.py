"""Programs of any size, in the pure parts (no device): the graph, kernelizer, kernel keys, renderer,
lineage and symbolic algebra handle chains far deeper than Python's recursion limit; kernels are split
to fit a device's argument space and a bound on their size; and index arithmetic through long chains of
movement ops stays as small as the views' rank allows (a reshape that strides can express adds nothing,
one they cannot adds one flat-index line)."""

from __future__ import annotations

import random
import sys
import weakref

import numpy as np
import pytest
from helpers import leaf

from zyx_dist.codegen import symbolic as s
from zyx_dist.codegen import views
from zyx_dist.codegen.render import kernel_key, render_kernel
from zyx_dist.fuse.kernelize import DEFAULT_LIMITS, ROW_PASSES, Limits, kernelize
from zyx_dist.fuse.plan_cache import structure
from zyx_dist.graph import ir as g
from zyx_dist.graph import lineage

DEEP = 10_000
assert DEEP > 5 * sys.getrecursionlimit()  # deep enough that any recursion on depth would fail


def chain(x: g.Node, n: int, row_max_every: int = 0) -> g.Node:
    """n elementwise ops (alternately * and +); with row_max_every, every k-th op subtracts the row max."""
    for i in range(n):
        if row_max_every and i % row_max_every == row_max_every - 1:
            m = g.reduce(g.ReduceOp.MAX, x, (len(x.shape) - 1,))
            x = g.binary(g.BinaryOp.SUB, x, g.expand(m, x.shape))
        else:
            op = g.BinaryOp.MUL if i % 2 == 0 else g.BinaryOp.ADD
            x = g.binary(op, x, g.const(0.999 if i % 2 == 0 else 0.001, x.shape, x.dtype))
    return x


def computed(k) -> int:
    """Nodes a kernel computes (everything between its inputs and outputs, constants aside)."""
    inputs = {x.id for x in k.inputs}
    return sum(1 for n in g.toposort(k.outputs, stop=lambda n: n.id in inputs)
               if n.id not in inputs and n.op is not g.Op.CONST)


# ---- graph passes ---------------------------------------------------------------------------------------

def test_deep_elementwise_chain_is_split_into_kernels_that_fit():
    x = chain(leaf(4), DEEP)
    kernels = kernelize([x])
    assert len(kernels) == -(-DEEP // DEFAULT_LIMITS.nodes)
    assert all(computed(k) <= DEFAULT_LIMITS.nodes for k in kernels)
    assert kernels[-1].outputs == [x]
    # the pieces are alike: one kernel key (so one compile) serves all but the first and the last
    assert len({kernel_key(k) for k in kernels}) <= 3
    for k in kernels:
        assert "out0[gid]" in render_kernel(k).source
    key, order = structure([x])
    assert len(order) == 2 * DEEP + 1 and hash(key)  # the ops, their constants, the leaf


def test_size_limit_is_a_setting():
    x = chain(leaf(4), 300)
    assert len(kernelize([x])) == 1
    kernels = kernelize([x], Limits(nodes=100))
    assert len(kernels) == 3 and all(computed(k) <= 100 for k in kernels)


def test_deep_chain_with_row_reduces():
    x = chain(leaf(4, 4), 3000, row_max_every=10)
    kernels = kernelize([x])
    assert all(computed(k) <= DEFAULT_LIMITS.nodes for k in kernels)
    rows = [k for k in kernels if k.row]
    assert rows and all(k.row == 1 for k in rows)
    # a row kernel chains a few per-row reduces, not all 300: each would recompute the chain before it
    for k in kernels:
        reduces = sum(1 for n in g.toposort(k.outputs, stop=lambda n, k=k: n in k.inputs) if n.op is g.Op.REDUCE)
        assert reduces <= ROW_PASSES
    assert len({kernel_key(k) for k in kernels}) <= 6
    for k in {kernel_key(k): k for k in kernels}.values():
        render_kernel(k)


@pytest.mark.parametrize("buffers", [128, 512])
def test_wide_sum_is_split_to_fit_the_argument_space(buffers):
    xs = [leaf(3) for _ in range(2000)]
    total = xs[0]
    for x in xs[1:]:
        total = g.binary(g.BinaryOp.ADD, total, x)
    limits = Limits(param_bytes=buffers * 8)
    kernels = kernelize([total], limits)
    assert all(len(k.inputs) + len(k.outputs) <= buffers for k in kernels)
    assert len(kernels) == -(-1999 // (buffers - 2))  # each kernel after the first reads the partial sum too
    read = {x.id for k in kernels for x in k.inputs}
    assert all(x.id in read for x in xs)
    for k in kernels:
        assert render_kernel(k).source.count("__global const float*") == len(k.inputs)


def test_multi_output_kernel_that_would_overflow_is_split():
    xs = [leaf(3) for _ in range(100)]
    shared = xs[0]
    for x in xs[1:]:
        shared = g.binary(g.BinaryOp.ADD, shared, x)
    a = g.unary(g.UnaryOp.EXP, shared)
    b = g.unary(g.UnaryOp.SIN, shared)
    assert len(kernelize([a, b])) == 1  # one kernel computes the shared sum once
    kernels = kernelize([a, b], Limits(param_bytes=101 * 8))
    assert all(len(k.inputs) + len(k.outputs) <= 101 for k in kernels)
    assert {o.id for k in kernels for o in k.outputs} == {a.id, b.id}


def test_wide_reads_of_one_buffer_count_once():
    x = leaf(4)
    total = x
    for _ in range(500):
        total = g.binary(g.BinaryOp.ADD, total, x)
    assert len(kernelize([total], Limits(param_bytes=16, nodes=10_000))) == 1  # one input, one output


def test_deep_recipe_and_rebuild():
    x = leaf(4)
    x.buffer = object()  # as if realized
    y = chain(x, DEEP)
    x.lineage = g.leaf(np.zeros(4, np.float32), x.dtype)
    r = lineage.recipe(y, {})
    assert r is not None and r.weight == 2 * DEEP + 1  # the ops, their constants, the leaf
    rebuilt = lineage.rebuild(r, lambda n: True, {})
    assert rebuilt is not y and rebuilt.shape == y.shape
    depth, n = 0, rebuilt
    while n.srcs:
        n = n.srcs[0]
        depth += 1
    assert depth == DEEP and n.op is g.Op.LEAF and n.host is not None


def test_recipe_of_shared_history_counts_each_node_once():
    """`x - x.max()` reads x twice: counted per path, 300 such steps would weigh 2**300 nodes."""
    x = leaf(4, 4)
    x.lineage = g.leaf(np.zeros((4, 4), np.float32), x.dtype)
    y = chain(x, 3000, row_max_every=10)
    r = lineage.recipe(y, {})
    assert r is not None and r.weight < 4 * 3000


def test_rebuild_reuses_what_is_still_realized():
    x = leaf(4)
    x.lineage = g.leaf(np.zeros(4, np.float32), x.dtype)
    mid = chain(x, 50)
    top = chain(mid, 50)
    r = lineage.recipe(top, {})
    mid.become_leaf(type("Buf", (), {"device": "opencl:0"})())  # mid was realized and survives
    x.lineage.host = None  # while x's data is gone: recomputing from x would be impossible
    rebuilt = lineage.rebuild(r, lambda n: True, {})
    depth, n = 0, rebuilt
    while n.srcs:
        n = n.srcs[0]
        depth += 1
    assert n is mid and depth == 50
    with pytest.raises(KeyError):
        lineage.rebuild(r, lambda n: False, {})  # mid's worker is gone too


# ---- the symbolic algebra --------------------------------------------------------------------------------

def test_equal_expressions_are_one_object():
    i, j = s.Var("i", 0, 9), s.Var("j", 0, 3)
    a = s.add(s.mul(i, 4), j)
    b = s.add(s.mul(s.Var("i", 0, 9), 4), s.Var("j", 0, 3))
    assert a is b and s.Div(a, 3) is s.Div(b, 3)
    assert s.Var("i", 0, 8) is not i


def test_deep_expressions_hash_compare_and_render_without_recursion():
    x = s.Var("x", 0, 1 << 40)
    e: s.Expr = x
    for k in range(DEEP):
        e = s.Sum(((s.Mod(s.Div(e, 3), 1 << 30), 2), (x, 1)), k)
    again: s.Expr = x
    for k in range(DEEP):
        again = s.Sum(((s.Mod(s.Div(again, 3), 1 << 30), 2), (x, 1)), k)
    assert again is e and hash(again) == hash(e) and {e: 1}[again] == 1
    assert s.variables(e) == {"x"} and s.bounds(e)[0] >= 0
    text = s.render(e)
    assert text.count("/3") == DEEP
    assert not s.tangled(x) and s.tangled(e)


def test_expressions_are_freed_when_unused():
    e = s.add(s.mul(s.Var("only_here", 0, 9), 7), 3)
    ref = weakref.ref(e)
    del e
    assert ref() is None


def _ev(e: s.Expr, env: dict):
    """Value of e under floor semantics (its text evaluated by Python, whose // and % are floor division);
    env values may be NumPy arrays."""
    return eval(s.render(e).replace("/", "//"), {}, dict(env))


@pytest.mark.parametrize("seed", range(40))
def test_digits_split_and_merge_keep_values(seed):
    """Random sums of digits of a variable (with constants), divided, reduced and recombined: every rewrite
    keeps the value under floor semantics, and splitting a value into digits and adding them back gives
    the value."""
    rng = random.Random(seed)
    v = s.Var("v", 0, rng.choice([23, 59, 119, 719]))
    w = s.Var("w", 0, 5)
    parts = [s.mul(s.mod(s.div(v, rng.choice([1, 2, 3, 4, 6])), rng.choice([2, 3, 4, 5])), rng.choice([1, 2, 3, 4, 6, 8]))
             for _ in range(3)]
    e = s.add(*parts, s.mul(w, rng.choice([1, 4, 30])), rng.randrange(-3, 9))
    vv, ww = np.meshgrid(np.arange(v.hi + 1), np.arange(w.hi + 1))
    env = {"v": vv, "w": ww}
    val = _ev(e, env)
    for c in (2, 3, 4, 6, 8, 12):
        d, m = s.div(e, c), s.mod(e, c)
        back = s.add(s.mul(d, c), m)
        assert (_ev(d, env) == val // c).all() and (_ev(m, env) == val % c).all()
        assert (_ev(back, env) == val).all()


# ---- movement chains as views -------------------------------------------------------------------------

def offsets(n: g.Node, base: g.Node) -> list[int]:
    """The flat position in `base` of every element of n, through the views of the chain between them."""
    under, stack = views.chain(n, lambda x: x is base)
    assert under is base
    gid = s.Var("gid", 0, n.size - 1)
    from zyx_dist.codegen.cexpr import flat_index

    flat = stack[-1].index(flat_index(n.shape, gid))
    for v in reversed(stack[:-1]):
        flat = v.index(flat_index(v.shape, flat))
    return [int(v) for v in np.broadcast_to(_ev(flat, {"gid": np.arange(n.size)}), (n.size,))]


def movement_chain(rng: random.Random, steps: int, strided_only: bool):
    """A random chain of permutes, reshapes, flips, crops and expands over a (2, 3, 4) leaf, with the NumPy
    positions of its elements. `strided_only`: every reshape is one strides can express (NumPy gives a view)."""
    base = leaf(2, 3, 4)
    pos = np.arange(24).reshape(2, 3, 4)
    n = base
    for _ in range(steps):
        perm = list(range(len(n.shape)))
        rng.shuffle(perm)
        n, pos = g.permute(n, tuple(perm)), pos.transpose(perm)
        kind = rng.choice(["reshape", "reshape", "flip", "crop", "expand"])
        if kind == "flip":
            ax = rng.randrange(len(n.shape))
            n, pos = g.flip(n, (ax,)), np.flip(pos, ax)
        elif kind == "crop" and max(n.shape) > 2:
            ax = max(range(len(n.shape)), key=lambda a: n.shape[a])
            widths = tuple((-1, 0) if a == ax else (0, 0) for a in range(len(n.shape)))
            n, pos = g.pad(n, widths), pos[tuple(slice(1, None) if a == ax else slice(None) for a in range(len(n.shape)))]
        elif kind == "expand" and 1 in n.shape:
            shape = tuple(2 if d == 1 else d for d in n.shape)
            n, pos = g.expand(n, shape), np.broadcast_to(pos, shape)
        shape = reshape_target(rng, pos, strided_only)
        if shape is not None:
            n, pos = g.reshape(n, shape), pos.reshape(shape)
    return base, n, pos


def reshape_target(rng: random.Random, pos: np.ndarray, strided_only: bool):
    size = pos.size
    if not strided_only:
        dims = [d for d in range(2, size + 1) if size % d == 0]
        first = rng.choice(dims)
        return (first, size // first) if size // first > 1 else (first,)
    shape, st = list(pos.shape), [x // pos.itemsize for x in pos.strides]
    merges = [i for i in range(len(shape) - 1) if st[i] == st[i + 1] * shape[i + 1]]
    if merges and rng.random() < 0.6:
        i = rng.choice(merges)
        return tuple(shape[:i] + [shape[i] * shape[i + 1]] + shape[i + 2:])
    splits = [(i, f) for i, d in enumerate(shape) for f in range(2, d) if d % f == 0]
    if not splits:
        return None
    i, f = rng.choice(splits)
    return tuple(shape[:i] + [f, shape[i] // f] + shape[i + 1:])


@pytest.mark.parametrize("seed", range(30))
@pytest.mark.parametrize("strided_only", [True, False])
def test_views_give_numpys_positions(seed, strided_only):
    base, n, pos = movement_chain(random.Random(seed), 12, strided_only)
    assert offsets(n, base) == [int(p) for p in pos.reshape(-1)]
    if strided_only:  # one view: every reshape stayed strides over it
        assert len(views.chain(n, lambda x: x is base)[1]) == 1


def test_reshape_that_strides_cannot_express_starts_a_view():
    x = leaf(2, 3)
    t = g.reshape(g.permute(x, (1, 0)), (6,))  # a transpose flattened: no strides over x give it
    _, stack = views.chain(t, lambda n: n is x)
    assert len(stack) == 2
    back = g.reshape(g.permute(g.reshape(t, (3, 2)), (1, 0)), (2, 3))  # and back: a view of its own again
    assert offsets(back, x) == list(range(6))


def alternating(steps: int, strided: bool, seed: int = 0):
    """`steps` times a permute then a reshape of a (2, 3, 4) leaf (reshapes strides can express, or any)."""
    rng = random.Random(seed)
    x = leaf(2, 3, 4)
    n, pos, reshapes = x, np.arange(24).reshape(2, 3, 4), 0
    for _ in range(steps):
        for _try in range(50):  # a permutation after which a reshape of the kind asked for exists
            perm = list(range(len(n.shape)))
            while perm == sorted(perm) and len(perm) > 1:
                rng.shuffle(perm)
            shape = reshape_target(rng, pos.transpose(perm), strided)
            if shape is not None and shape != pos.transpose(perm).shape:
                break
        n, pos = g.permute(n, tuple(perm)), pos.transpose(perm)
        if shape is not None and shape != n.shape:
            n, pos, reshapes = g.reshape(n, shape), pos.reshape(shape), reshapes + 1
    return x, n, pos, reshapes


@pytest.mark.parametrize("strided", [True, False])
def test_thirty_permute_reshape_steps_render_small(strided):
    """30 alternating permute + reshape steps over 24 elements: reshapes strides can express add nothing,
    and one they cannot adds one line (its flat index), so the source stays small (it was ~4x longer per
    two steps: ~96 KB after 12)."""
    x, n, pos, reshapes = alternating(30, strided)
    assert reshapes >= 20
    assert offsets(n, x) == [int(p) for p in pos.reshape(-1)]
    (k,) = kernelize([g.unary(g.UnaryOp.NEG, n)])
    src = render_kernel(k).source
    if strided:
        assert len(src) < 1000 and "ix" not in src, src
    else:
        assert len(src) < 4000 and src.count("int ix") <= reshapes, src
