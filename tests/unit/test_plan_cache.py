"""The plan cache (`zyx_dist.fuse.plan_cache`): a repeated graph structure skips the kernelizer and maps the
stored kernels onto the new nodes; anything that changes the kernels (a constant, a shape, a pin) misses."""

import numpy as np
import pytest

from zyx_dist import dtypes as dt
from zyx_dist.fuse.kernelize import kernelize
from zyx_dist.fuse.plan_cache import PlanCache, structure
from zyx_dist.graph import ir as g


def leaf(*shape):
    return g.leaf(np.ones(shape, np.float32), dt.float32)


def softmax(x):
    """Softmax down the columns (axis 0): three kernels."""
    m = g.reduce(g.ReduceOp.MAX, x, (0,))
    e = g.unary(g.UnaryOp.EXP, g.binary(g.BinaryOp.SUB, x, g.expand(m, x.shape)))
    return g.binary(g.BinaryOp.DIV, e, g.expand(g.reduce(g.ReduceOp.SUM, e, (0,)), x.shape))


def scaled(x, c):
    return g.binary(g.BinaryOp.MUL, x, g.const(c, x.shape, dt.float32))


def test_repeated_structure_hits_and_maps_onto_the_new_nodes():
    cache, rendered = PlanCache(), []
    first = softmax(leaf(4, 8))
    cache.kernels([first], lambda ks: [rendered.append(k) or {"opencl": len(rendered)} for k in ks])
    x = leaf(4, 8)
    second = softmax(x)
    k2, progs = cache.kernels([second], lambda ks: [rendered.append(k) or {} for k in ks])
    assert cache.hits == 1 and len(rendered) == 3 and progs == [{"opencl": 1}, {"opencl": 2}, {"opencl": 3}]
    fresh = kernelize([second])
    assert [[o.id for o in k.outputs] for k in k2] == [[o.id for o in k.outputs] for k in fresh]
    assert [[i.id for i in k.inputs] for k in k2] == [[i.id for i in k.inputs] for k in fresh]
    assert [[f.id for f in k.frees_after] for k in k2] == [[f.id for f in k.frees_after] for k in fresh]
    assert k2[-1].outputs[0] is second and x in k2[0].inputs


def test_what_changes_the_kernels_misses():
    x = leaf(4, 8)
    key = structure([scaled(x, 0.0)])[0]
    assert structure([scaled(leaf(4, 8), 0.0)])[0] == key
    assert structure([scaled(x, -0.0)])[0] != key  # the constant is baked into the kernel
    assert structure([scaled(leaf(4, 9), 0.0)])[0] != key
    pinned = g.leaf(np.ones((4, 8), np.float32), dt.float32, device="opencl:1")
    assert structure([scaled(pinned, 0.0)])[0] != key
    assert structure([scaled(x, float("nan"))])[0] == structure([scaled(x, float("nan"))])[0]


def test_identically_built_graphs_share_a_key_and_the_targets_come_first():
    key, order = structure([softmax(leaf(4, 8))])
    assert structure([softmax(leaf(4, 8))])[0] == key
    assert len({n.id for n in order}) == len(order) and key[1] == (0,)  # the target is the first position
    assert order[0].op is g.Op.BINARY and sum(n.op is g.Op.LEAF for n in order) == 1


def test_sharing_is_part_of_the_key():
    """x + x and x + y are alike node by node; the key tells them apart (one input or two)."""
    x, y = leaf(4, 8), leaf(4, 8)
    same = structure([g.binary(g.BinaryOp.ADD, x, x)])[0]
    assert same != structure([g.binary(g.BinaryOp.ADD, x, y)])[0]
    assert same == structure([g.binary(g.BinaryOp.ADD, y, y)])[0]
    # deeper: (x*c) shared by both sides of a sum against two separate products
    c = g.const(2.0, (4, 8), dt.float32)
    shared = scaled(x, 2.0)
    one = structure([g.binary(g.BinaryOp.ADD, shared, shared)])[0]
    two = structure([g.binary(g.BinaryOp.ADD, g.binary(g.BinaryOp.MUL, x, c), g.binary(g.BinaryOp.MUL, x, c))])[0]
    assert one != two
    assert structure([shared, g.unary(g.UnaryOp.NEG, shared)])[0] != \
        structure([scaled(x, 2.0), g.unary(g.UnaryOp.NEG, scaled(x, 2.0))])[0]


def test_an_unhashable_argument_plans_without_the_cache():
    x = leaf(4, 8)
    odd = g.Node(g.Op.RESHAPE, (x,), [4, 8], (4, 8), dt.float32)  # a list: no key
    assert PlanCache().lookup([g.unary(g.UnaryOp.NEG, odd)]) is None


def rewired(x, c):
    """scaled(x, c) behind an identity reshape, made as graph/shard.py leaves a rewritten target: the
    target node is older than the node it reads, so creation order is not producers first."""
    t = g.unary(g.UnaryOp.NEG, x)
    t.op, t.srcs, t.arg = g.Op.RESHAPE, (scaled(x, c),), t.shape
    return t


def check_plans(cache, target):
    got, _ = cache.kernels([target], lambda ks: [{} for _ in ks])
    fresh = kernelize([target])
    assert [[o.id for o in k.outputs] for k in got] == [[o.id for o in k.outputs] for k in fresh]
    assert [[i.id for i in k.inputs] for k in got] == [[i.id for i in k.inputs] for k in fresh]
    assert got[-1].outputs == [target]


def test_a_rewired_graph_keys_as_the_same_graph_built_in_order():
    t = rewired(leaf(4, 8), 2.0)
    assert t.id < t.srcs[0].id
    key, order = structure([t])
    assert [n.op for n in order] == [g.Op.RESHAPE, g.Op.BINARY, g.Op.LEAF, g.Op.CONST]  # walk order
    cache = PlanCache()
    check_plans(cache, t)
    check_plans(cache, rewired(leaf(4, 8), 2.0))  # the same walk again: a hit, mapped onto the new nodes
    assert cache.hits == 1
    # the same structure in creation order, the constant made before the leaf: the same key, a hit
    c = g.const(2.0, (4, 8), dt.float32)
    twin = g.Node(g.Op.RESHAPE, (g.binary(g.BinaryOp.MUL, leaf(4, 8), c),), (4, 8), (4, 8), dt.float32)
    assert structure([twin])[0] == key
    check_plans(cache, twin)
    assert cache.hits == 2 and len(cache.entries) == 1


# ---- the C walks (fuse/_structure.c) against the Python ones they replace -----------------------------------

def _c_walks():
    import pytest

    from zyx_dist.fuse import plan_cache

    if plan_cache._c_walks is None:
        pytest.skip("the C walks are not built here (no C compiler at install)")
    return plan_cache


def _same_walks(pc, targets):
    key, order = pc.python_structure(targets)
    c_key, c_order = pc._c_walks.structure(targets)
    assert c_key == key and len(c_order) == len(order) and all(a is b for a, b in zip(c_order, order))
    nodes, fingerprint = pc.python_walk(targets)
    c_nodes, c_leaves = pc._c_walks.walk(targets)
    assert c_leaves == fingerprint[2] and all(a is b for a, b in zip(c_nodes, nodes))


def test_c_walks_give_what_the_python_walks_give_on_random_programs():
    from tests.fuzzgraph import _apply, program_from_seed, zd_inputs

    pc = _c_walks()
    for seed in range(60):  # (built, not realized: no session needed)
        prog = program_from_seed(seed)
        vals = list(zd_inputs(prog))
        for step in prog.steps:
            vals.append(_apply(step, vals, "zd"))
        targets = [vals[o].node for o in prog.outputs]
        _same_walks(pc, targets + targets[:1])  # (a target named twice keeps its first position)


def test_c_walks_read_every_row_field_as_python_does():
    pc = _c_walks()
    x = leaf(4, 8)
    pinned = g.Node(g.Op.LEAF, (), None, (4, 8), dt.float32, device="cuda:1")
    half = g.cast(g.binary(g.BinaryOp.ADD, x, x), dt.bfloat16)
    signs = [scaled(x, c) for c in (0.0, -0.0, float("nan"), float("inf"), 1e-300)]
    padded = g.pad(x, ((1, 0), (0, 2)), -0.0)
    iota = g.leaf(np.arange(4), dt.int64, iota=True)
    _same_walks(pc, [half, *signs, padded, pinned, iota, g.permute(x, (1, 0)), g.reduce(g.ReduceOp.MAX, x, (1,))])


def test_c_walks_go_as_deep_as_the_graph():
    pc = _c_walks()
    x = leaf(4)
    for _ in range(100_000):  # a chain far past any recursion limit
        x = g.unary(g.UnaryOp.NEG, x)
    _same_walks(pc, [x])


def test_c_walks_refuse_what_is_not_a_list_of_nodes():
    import pytest

    pc = _c_walks()
    with pytest.raises(TypeError, match="list of nodes"):
        pc._c_walks.structure((leaf(4),))
    with pytest.raises(AttributeError):
        pc._c_walks.walk([object()])
    with pytest.raises(AttributeError):
        pc._c_walks.structure([g.binary(g.BinaryOp.ADD, leaf(4), leaf(4)), object()])


def test_the_c_key_hashes_and_compares_as_the_python_key_does():
    import pytest

    pc = _c_walks()
    assert pc._Key is pc._c_walks.Key
    x = leaf(4)
    rows = pc.structure([g.binary(g.BinaryOp.ADD, x, x)])[0]
    same, other = pc.structure([g.binary(g.BinaryOp.ADD, x, x)])[0], pc.structure([g.binary(g.BinaryOp.MUL, x, x)])[0]
    for make in (pc._Key, pc.python_key):
        k = make(rows)
        assert k.rows is rows and k.hash == hash(rows) == hash(k)
        assert k == make(same) and (k != make(same)) is False and k != make(other)
        assert k != rows and {k: 1}.get(make(same)) == 1 and {k: 1}.get(make(other)) is None
        with pytest.raises(TypeError):
            make(([1],))  # rows that cannot be hashed
    with pytest.raises(TypeError):
        pc._Key(rows, rows)


def test_the_plan_cache_walks_in_c_unless_told_not_to():
    import subprocess
    import sys

    pc = _c_walks()
    assert pc.structure is pc._c_walks.structure
    code = "from zyx_dist.fuse import plan_cache as p; print(p.structure is p.python_structure)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**__import__("os").environ, "ZYX_DIST_C_WALKS": "0"}).stdout
    assert out.strip() == "True"


# ---- the C walks' numbering: a C node carries its walk mark (graph/_node.c), any other node takes a dict ----------

def _marked(pc, order):
    """Whether the last walk numbered `order` with the nodes' own marks: one stamp, each node at its position."""
    stamps = {n._walk_mark for n in order}
    return len(stamps) == 1 and 0 not in stamps and all(n._walk_pos == i for i, n in enumerate(order))


def test_c_walks_take_a_fresh_stamp_each_walk():
    pc = _c_walks()
    if not hasattr(g.Node, "_walk_mark"):
        pytest.skip("no C nodes (graph/_node.c not built, or ZYX_DIST_C_NODES=0): every node is numbered in a dict")
    x = leaf(4, 8)
    a = g.unary(g.UnaryOp.NEG, x)
    b = scaled(a, 3.0)
    one, two = g.binary(g.BinaryOp.ADD, a, b), g.binary(g.BinaryOp.MUL, b, x)
    for targets in ([one], [one], [two], [one, two], [two, one], [two], [a], [one]):  # shared nodes, other positions
        _same_walks(pc, targets)
        assert _marked(pc, pc._c_walks.walk(targets)[0]) and _marked(pc, pc._c_walks.structure(targets)[1])
    stamp = x._walk_mark
    pc._c_walks.walk([one])
    assert x._walk_mark > stamp  # a new stamp, so no position of an earlier walk is read as this one's
    # a walk that fails midway leaves stale marks only, and the marks to the next walk
    with pytest.raises(AttributeError):
        pc._c_walks.structure([one, object()])
    _same_walks(pc, [two])
    assert _marked(pc, pc._c_walks.walk([two])[0])


def test_c_walks_number_nodes_of_another_type_in_a_dict():
    """Python-form nodes (graph/node.py's PyNode) among the C ones, each sharing sources with the other kind."""
    pc = _c_walks()
    x = leaf(4, 8)
    a = g.unary(g.UnaryOp.NEG, x)
    p = g.PyNode(g.Op.BINARY, (a, x), g.BinaryOp.ADD, (4, 8), dt.float32)
    q = g.PyNode(g.Op.UNARY, (p,), g.UnaryOp.EXP, (4, 8), dt.float32)
    c = g.unary(g.UnaryOp.NEG, a)
    c.srcs = (q,)  # a C node reading a Python one
    mixed = [g.binary(g.BinaryOp.ADD, c, a), g.PyNode(g.Op.BINARY, (p, c), g.BinaryOp.MUL, (4, 8), dt.float32), q]
    for targets in (mixed, mixed[::-1], [mixed[1]], [p, x]):
        _same_walks(pc, targets)
    # the walks configured with a class that has no marks: every node in the dict
    try:
        pc._c_walks.configure(g.PyNode, g.Op.LEAF, g.Op.CAST, g.Op.CONST, g.Op.PAD)
        for targets in (mixed, [mixed[0]]):
            _same_walks(pc, targets)
    finally:
        pc._c_walks.configure(g.Node, g.Op.LEAF, g.Op.CAST, g.Op.CONST, g.Op.PAD)


def test_c_walks_nested_in_a_walk_keep_both_right():
    """A constant's repr (which `structure` calls) walks another graph sharing the outer one's nodes: the inner
    walk must not renumber the nodes the outer one has met."""
    pc = _c_walks()
    x = leaf(4, 8)
    a = g.unary(g.UnaryOp.NEG, x)
    b = g.binary(g.BinaryOp.ADD, a, x)
    inner_targets = [g.unary(g.UnaryOp.EXP, b), b, x]
    seen = []

    class Walking:
        def __repr__(self):
            seen.append((pc._c_walks.structure(inner_targets), pc._c_walks.walk(inner_targets)))
            return "Walking()"

    odd = g.Node(g.Op.CONST, (), Walking(), (4, 8), dt.float32)
    outer = [g.binary(g.BinaryOp.MUL, g.binary(g.BinaryOp.ADD, b, odd), g.binary(g.BinaryOp.SUB, a, x)), a]
    key, order = pc.python_structure(outer)
    c_key, c_order = pc._c_walks.structure(outer)
    assert len(seen) == 2  # (the Python walk's repr, then the C walk's)
    assert c_key == key and len(c_order) == len(order) and all(m is n for m, n in zip(c_order, order))
    want_key, want_order = pc.python_structure(inner_targets)
    want_nodes, want_fingerprint = pc.python_walk(inner_targets)
    for (i_key, i_order), (i_nodes, i_leaves) in seen:
        assert i_key == want_key and all(m is n for m, n in zip(i_order, want_order))
        assert i_leaves == want_fingerprint[2] and all(m is n for m, n in zip(i_nodes, want_nodes))
    _same_walks(pc, outer)
    # nor can it change the class whose marks the outer walk reads
    refused = []

    class Configuring:
        def __repr__(self):
            try:
                pc._c_walks.configure(g.Node, g.Op.LEAF, g.Op.CAST, g.Op.CONST, g.Op.PAD)  # (as it is)
            except RuntimeError as e:
                refused.append(str(e))
            return "Configuring()"

    _same_walks(pc, [g.binary(g.BinaryOp.ADD, a, g.Node(g.Op.CONST, (), Configuring(), (4, 8), dt.float32))])
    if hasattr(g.Node, "_walk_mark"):
        assert refused == ["configure() during a walk"]  # (the C structure's repr; the Python one's may configure)
