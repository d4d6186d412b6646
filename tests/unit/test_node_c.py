"""The graph's node and its usual constructors in C (graph/_node.c) against the Python forms they stand for
(graph/node.py and graph/ir.py keep them as the reference), and the broadcast of two shapes and the tensors'
binary op against the frontend's: the same fields, the same nodes, graphs or shapes from the same arguments, the
same errors, on random arguments; and a node's life (weak references, cycles, a 100,000-node chain's release)."""

from __future__ import annotations

import gc
import os
import subprocess
import sys
import weakref

import numpy as np
import pytest

from zyx_dist import dtypes as dt
from zyx_dist.errors import DTypeError, ShapeError
from zyx_dist.graph import ir as g


@pytest.fixture
def c_nodes():
    if not g.c_nodes_enabled():
        pytest.skip("graph/_node.c is not built here (no C compiler at install), or ZYX_DIST_C_NODES=0")
    return g._c_node


FIELDS = ("op", "srcs", "arg", "shape", "dtype", "guards", "size", "buffer", "host", "device", "lineage", "origin",
          "weight")


def fields(n) -> tuple:
    return tuple(getattr(n, f) for f in FIELDS)


def test_a_c_node_has_the_fields_of_a_python_node(c_nodes):
    a = g.PyNode(g.Op.LEAF, (), None, (2, 3), dt.float32, host=np.zeros((2, 3), np.float32), device="cuda:1")
    b = g.Node(g.Op.LEAF, (), None, (2, 3), dt.float32, host=a.host, device="cuda:1")
    assert isinstance(b, c_nodes.NodeBase) and fields(a) == fields(b) and b.id > a.id
    big = (1 << 40, 1 << 40)  # a size past 64 bits: Python ints, as math.prod gives
    assert g.Node(g.Op.CONST, (), 0, big, dt.float32).size == 1 << 80 == g.PyNode(g.Op.CONST, (), 0, big, dt.float32).size
    assert g.Node(g.Op.CONST, (), 0, (), dt.int8).size == 1 and g.Node(g.Op.CONST, (), 0, (3, 0), dt.int8).size == 0
    # guards are merged from the sources, each once, in order, as the Python class does
    x, y = g.Node(g.Op.LEAF, (), None, (4,), dt.float32), g.Node(g.Op.LEAF, (), None, (4,), dt.float32)
    x.guards, y.guards = ("a", "b"), ("b", "c")
    s = g.Node(g.Op.BINARY, (x, y), g.BinaryOp.ADD, (4,), dt.float32)
    assert s.guards == ("a", "b", "c") and g.Node(g.Op.UNARY, (x,), g.UnaryOp.NEG, (4,), dt.float32).guards is x.guards
    # ids come from the one counter the Python class draws from
    ids = [g.Node(g.Op.CONST, (), 0, (1,), dt.int8).id, g.PyNode(g.Op.CONST, (), 0, (1,), dt.int8).id,
           next(g._ids), g.Node(g.Op.CONST, (), 0, (1,), dt.int8).id]
    assert ids == sorted(ids) and len(set(ids)) == 4


def test_a_c_node_refuses_bad_fields_with_a_clear_error(c_nodes):
    with pytest.raises(TypeError, match="sources must be a tuple"):
        g.Node(g.Op.UNARY, [g.Node(g.Op.CONST, (), 0, (1,), dt.int8)], g.UnaryOp.NEG, (1,), dt.int8)
    with pytest.raises(TypeError, match="sources must be nodes"):
        g.Node(g.Op.UNARY, (object(),), g.UnaryOp.NEG, (1,), dt.int8)
    with pytest.raises(TypeError, match="shape must be a tuple"):
        g.Node(g.Op.CONST, (), 0, [1], dt.int8)
    with pytest.raises(TypeError):
        g.Node(g.Op.CONST, (), 0, (1,))
    with pytest.raises(AttributeError):
        g.Node(g.Op.CONST, (), 0, (1,), dt.int8).colour = 1  # (no __dict__: the fields only)


def test_a_c_node_lives_and_dies_as_a_python_object(c_nodes):
    n = g.Node(g.Op.CONST, (), 0, (1,), dt.int8)
    r = weakref.ref(n)
    n.lineage = n  # a cycle through a field: the collector must see it
    del n
    gc.collect()
    assert r() is None
    x = head = g.Node(g.Op.LEAF, (), None, (4,), dt.float32)
    for _ in range(100_000):  # releasing a chain far past any recursion limit must not nest that deep
        x = g.unary(g.UnaryOp.NEG, x)
    tail = weakref.ref(head)
    del head, x
    gc.collect()
    assert tail() is None
    m = g.binary(g.BinaryOp.ADD, g.leaf(np.ones(3, np.float32), dt.float32), g.leaf(np.ones(3, np.float32), dt.float32))
    m.become_leaf("buffer")
    assert m.op is g.Op.LEAF and m.srcs == () and m.realized and repr(m).startswith(f"Node#{m.id}(leaf")


# ---- the constructors, on random arguments -------------------------------------------------------------------

DTYPES = (dt.float32, dt.bfloat16, dt.int32, dt.uint8, dt.bool_)


def _nodes(rng) -> list:
    """A pool of nodes of every op a constructor folds or looks through: leaves, constants, views of views."""
    pool = []
    for _ in range(24):
        shape = tuple(int(d) for d in rng.choice([0, 1, 1, 2, 3, 4], size=rng.integers(0, 4)))
        dtype = DTYPES[rng.integers(len(DTYPES))]
        kind = rng.integers(5)
        if kind == 0:
            n = g.const(1, shape, dtype)
        else:
            n = g.Node(g.Op.LEAF, (), None, shape, dtype)
            if kind >= 2 and shape:  # one view under it, made by the Python forms
                if kind == 2:
                    n = g.python_reshape(n, (*shape, 1))
                elif kind == 3:
                    n = g.python_permute(n, tuple(reversed(range(len(shape)))))
                else:
                    n = g.python_expand(g.python_reshape(n, (1, *shape)), (2, *shape))
        pool.append(n)
    return pool


def _shapes_for(rng, n) -> list:
    """Shapes to try on `n`: its own, reshapes of its size, broadcasts, bad ones, not-quite-int ones."""
    s = n.shape
    out = [s, tuple(reversed(s)), (n.size,), (1, *s), (*s, 1), (2, *s), (-1,), (n.size + 1,),
           tuple(d * 2 or 1 for d in s), tuple(2 if d == 1 else d for d in s), tuple(0 for _ in s)]
    out.append(tuple(np.int64(d) for d in s))  # NumPy ints: the Python form converts them
    out.append(list(s))  # a list: likewise
    if s:
        out.append((True,) + s[1:])  # a bool is no exact int: Python decides
    return out


def _axes_for(rng, n) -> list:
    k = len(n.shape)
    return [tuple(rng.permutation(k).tolist()) for _ in range(3)] + [tuple(range(k)), tuple(range(k + 1)),
                                                                       (0,) * k, [*range(k)][::-1], (-1,) * k]


def _same(c_out, py_out, inputs) -> None:
    """The C constructor's result is the Python one's: the same existing node, or a new node of the same fields."""
    if not isinstance(py_out, g.PyNode | g.Node):  # (a shape)
        assert c_out == py_out and type(c_out) is type(py_out)
        return
    if any(c_out is x for x in inputs) or any(py_out is x for x in inputs):
        assert c_out is py_out
        return
    assert fields(c_out) == fields(py_out) and type(c_out) is type(py_out)


def _both(c_fn, py_fn, *args) -> None:
    try:
        want = py_fn(*args)
    except (ShapeError, DTypeError, TypeError, ValueError) as e:
        with pytest.raises(type(e), match=None) as got:
            c_fn(*args)
        assert str(got.value) == str(e)
        return
    inputs = [a for a in args if isinstance(a, g.Node)]
    for a in inputs:
        inputs.extend(a.srcs)
    _same(c_fn(*args), want, inputs)


def _random_shape(rng, dims: list[int], least: int, most: int) -> tuple[int, ...]:
    """A shape of `least` to `most` dims drawn from `dims` (exact ints)."""
    return tuple(int(d) for d in rng.choice(dims, size=rng.integers(least, most + 1)))


def _same_graph(c_out, py_out) -> None:
    """Two results of one construction are the same graph: the same key, and node by node the same fields (the
    leaves, which both read, the same objects)."""
    from zyx_dist.fuse.plan_cache import python_structure

    key, order = python_structure([py_out])
    c_key, c_order = python_structure([c_out])
    assert c_key == key and len(order) == len(c_order)
    for a, b in zip(order, c_order):  # every node's fields (the key leaves some out); repr: NaN args, and -0.0
        assert (a.op, repr(a.arg), a.shape, a.dtype, a.size, a.guards) == (b.op, repr(b.arg), b.shape, b.dtype, b.size,
                                                                            b.guards)
        assert a is b or a.op is not g.Op.LEAF


def test_the_c_constructors_give_what_the_python_ones_give(c_nodes):
    rng = np.random.default_rng(0)
    for _ in range(12):
        pool = _nodes(rng)
        for n in pool:
            for shape in _shapes_for(rng, n):
                _both(g.reshape, g.python_reshape, n, shape)
                _both(g.expand, g.python_expand, n, shape)
            for axes in _axes_for(rng, n):
                _both(g.permute, g.python_permute, n, axes)
            for dtype in DTYPES:
                _both(g.cast, g.python_cast, n, dtype)
            for op in g.UnaryOp:
                _both(g.unary, g.python_unary, op, n)
            for other in pool[:8] + [n]:
                for op in g.BinaryOp:
                    _both(g.binary, g.python_binary, op, n, other)
    assert g.reshape is c_nodes.reshape and g.binary is c_nodes.binary


def test_reduce_in_c_gives_what_python_gives_under_every_split_rule(c_nodes, monkeypatch):
    """One-axis reduces, the usual case, in C; every split rule (read from ir.py at each call, as sessions and tests
    set it) and every other case in Python: the same node, or an equal one, or the same error."""
    assert g.reduce is c_nodes.reduce
    rng = np.random.default_rng(3)
    pool = _nodes(rng) + [g.Node(g.Op.LEAF, (), None, (64, 48), dt.float32),
                          g.Node(g.Op.LEAF, (), None, (2, 4096, 3), dt.bfloat16)]
    axes_tries = [(0,), (1,), (2,), (-1,), (5,), (np.int64(0),), (0, 1), (), [1], (True,), (1 << 70,)]
    for split_k, k_at, reduce_at in [(False, 4096, 1 << 15), (True, 4096, 1 << 15), (True, 8, 64), (False, 2, 4)]:
        monkeypatch.setattr(g, "SPLIT_K", split_k)
        monkeypatch.setattr(g, "SPLIT_K_AT", k_at)
        monkeypatch.setattr(g, "SPLIT_REDUCE_AT", reduce_at)
        for n in pool:
            for axes in axes_tries:
                for op in g.ReduceOp:
                    try:
                        want = g.python_reduce(op, n, axes)
                    except (ShapeError, TypeError, ValueError) as e:
                        with pytest.raises(type(e)) as got:
                            g.reduce(op, n, axes)
                        assert str(got.value) == str(e)
                        continue
                    got = g.reduce(op, n, axes)
                    if want is n:
                        assert got is n
                    else:
                        _same_graph(got, want)
        # where a split rule applies, the graph is the rewritten one Python makes
        k = 1 << 16
        big = g.Node(g.Op.LEAF, (), None, (4, k), dt.float32)
        a, b = g.Node(g.Op.LEAF, (), None, (3, 1, k), dt.float32), g.Node(g.Op.LEAF, (), None, (1, 4, k), dt.float32)
        product = g.binary(g.BinaryOp.MUL, g.expand(a, (3, 4, k)), g.expand(b, (3, 4, k)))
        rows = g.Node(g.Op.LEAF, (), None, (8192, 64), dt.float32)  # a bias's gradient: split by columns
        for x, axes in [(big, (1,)), (big, (0,)), (product, (2,)), (rows, (0,))]:
            for op in (g.ReduceOp.SUM, g.ReduceOp.MAX):
                _same_graph(g.reduce(op, x, axes), g.python_reduce(op, x, axes))


def test_matmul_of_nodes_in_c_gives_what_python_gives(c_nodes):
    """linalg's matmul of two nodes in C: the same graph, node by node, or None where Python gives None."""
    from zyx_dist.frontend import linalg

    assert linalg._matmul_nodes is c_nodes.matmul_nodes
    rng = np.random.default_rng(4)
    dims = [0, 1, 1, 2, 3, 5]
    for _ in range(1500):
        xs, ys = _random_shape(rng, dims, 1, 4), _random_shape(rng, dims, 1, 4)
        if len(xs) >= 2 and len(ys) >= 2 and rng.random() < 0.7:  # mostly operands that contract
            ys = ys[:-2] + (xs[-1], ys[-1])
        dx = DTYPES[rng.integers(len(DTYPES))]
        dy = dx if rng.random() < 0.8 else DTYPES[rng.integers(len(DTYPES))]
        x, y = g.Node(g.Op.LEAF, (), None, xs, dx), g.Node(g.Op.LEAF, (), None, ys, dy)
        if rng.random() < 0.3:
            x = g.python_permute(g.python_reshape(x, (*xs, 1)), (len(xs), *range(len(xs))))  # a view under it
            x = g.python_reshape(x, xs)
        if rng.random() < 0.1:
            y = g.const(1.5, ys, dy)
        want, got = linalg.python_matmul_nodes(x, y), c_nodes.matmul_nodes(x, y)
        if want is None:
            assert got is None, (xs, ys, dx, dy)
        else:
            _same_graph(got, want)
    assert c_nodes.matmul_nodes(1, 2) is None
    with pytest.raises(TypeError, match="two nodes"):
        c_nodes.matmul_nodes(1)


def test_a_node_becomes_a_leaf_in_c_as_in_python(c_nodes):
    x = g.Node(g.Op.LEAF, (), None, (3,), dt.float32)
    made = [g.unary(g.UnaryOp.NEG, x), g.PyNode(g.Op.UNARY, (g.PyNode(g.Op.LEAF, (), None, (3,), dt.float32),),
                                               g.UnaryOp.NEG, (3,), dt.float32)]
    made[0].guards = made[1].guards = ("g",)
    made[0].host = made[1].host = np.zeros(3, np.float32)
    for n in made:
        n.become_leaf("buffer")
    assert fields(made[0]) == fields(made[1]) and made[0].op is g.Op.LEAF and made[0].buffer == "buffer"
    assert g.Node.become_leaf is c_nodes.NodeBase.become_leaf


def test_the_c_constructors_compose_views_as_python_does(c_nodes):
    x = g.Node(g.Op.LEAF, (), None, (2, 3, 4), dt.float32)
    p = g.permute(x, (2, 0, 1))
    undone = g.permute(p, (1, 2, 0))  # two permutes that undo each other: an identity reshape recording them
    assert undone.op is g.Op.RESHAPE and undone.srcs == (x,) and undone.merged == (g.Op.PERMUTE, (1, 2, 0), p)
    pp = g.permute(p, (0, 2, 1))
    assert pp.srcs == (x,) and pp.arg == (2, 1, 0) and pp.shape == (4, 3, 2) and pp.merged[2] is p
    r = g.reshape(x, (6, 4))
    back = g.reshape(r, (2, 3, 4))
    assert back.srcs == (x,) and back.shape == x.shape and g.reshape(r, (24,)).srcs == (x,)
    e = g.expand(g.reshape(x, (1, 2, 3, 4)), (5, 2, 3, 4))
    assert g.expand(e, (5, 2, 3, 4)) is e
    with pytest.raises(ShapeError, match="cannot reshape"):
        g.reshape(x, (5, 5))
    with pytest.raises(DTypeError, match="needs a float tensor"):
        g.unary(g.UnaryOp.EXP, g.Node(g.Op.LEAF, (), None, (2,), dt.int32))


def test_two_shapes_broadcast_in_c_as_in_python(c_nodes):
    from zyx_dist.frontend import common

    assert common.broadcast_shapes is c_nodes.broadcast_shapes
    rng = np.random.default_rng(1)
    dims = [0, 1, 1, 2, 3, 7]
    for _ in range(3000):
        a, b = _random_shape(rng, dims, 0, 4), _random_shape(rng, dims, 0, 4)
        if rng.random() < 0.3:  # mostly broadcastable pairs: b from a with dims set to 1 or dropped
            b = tuple(1 if rng.random() < 0.4 else d for d in a[int(rng.integers(0, len(a) + 1)):])
        _both(common.broadcast_shapes, common.python_broadcast_shapes, a, b)
    for args in [((2, 3), (3,), (1, 1, 3)), ((2,),), ((np.int64(2), 3), (3,)), ([2, 3], (3,)), ((-1,), (2,))]:
        _both(common.broadcast_shapes, common.python_broadcast_shapes, *args)


def test_binary_ops_of_tensors_are_built_in_c_as_in_python(c_nodes):
    import zyx_dist as zd
    from zyx_dist.frontend import elementwise as ew

    assert ew._binary is c_nodes.tensor_binary
    rng = np.random.default_rng(2)
    tensors = []
    for shape in [(), (3,), (1, 3), (2, 3), (2, 1), (4, 2, 3), (0, 3)]:
        for dtype in ("float32", "bfloat16", "int32", "uint8", "bool"):
            data = rng.standard_normal(shape) * 3
            tensors.append(zd.tensor(data.astype(np.float32)).astype(dtype))
    tensors.append(zd.full((2, 3), 2.5))  # a constant: its views fold in Python
    tensors.append(zd.tensor(np.ones((2, 3), np.float32)).reshape(3, 2).mT)  # views under an operand
    scalars = [2, -1, 0, 300, 1 << 70, 2.5, 0.0, -0.0, float("nan"), float("inf"), True, np.float32(2), "x", None]
    dtype_fns = [None, ew._to_float, lambda d: dt.float32]
    ops = list(g.BinaryOp)

    def check(*args):
        try:
            want = ew.python_binary(*args)
        except Exception as e:  # noqa: BLE001 -- the same error, or none, from both
            with pytest.raises(type(e)) as got:
                c_nodes.tensor_binary(*args)
            assert str(got.value) == str(e)
            return
        got = c_nodes.tensor_binary(*args)
        assert type(got) is type(want)
        _same_graph(got.node, want.node)

    for _ in range(1500):
        op = ops[rng.integers(len(ops))]
        a = tensors[rng.integers(len(tensors))]
        b = tensors[rng.integers(len(tensors))] if rng.random() < 0.5 else scalars[rng.integers(len(scalars))]
        if rng.random() < 0.5:
            a, b = b, a
        fn = dtype_fns[rng.integers(len(dtype_fns))]
        check(op, a, b) if fn is None else check(op, a, b, fn)
    check(g.BinaryOp.ADD, tensors[0], tensors[0], None)
    got = c_nodes.tensor_binary(g.BinaryOp.ADD, tensors[5], 1.5)  # a keyword argument goes to Python
    assert c_nodes.tensor_binary(g.BinaryOp.ADD, tensors[5], 1.5, dtype=None).node.srcs[1] is got.node.srcs[1]


def test_building_in_c_leaves_no_references_behind(c_nodes):
    """The C paths, the fallbacks they hand over to and their errors, built many times: the objects they read and
    share (None, dtypes, ops, a source node, its shape, small ints) end with the references they had."""
    import sys

    import zyx_dist as zd
    from zyx_dist.frontend import elementwise as ew

    x = zd.tensor(np.ones((8, 4, 16), np.float32))
    y = zd.tensor(np.ones((16, 16), np.float32))
    xi = zd.tensor(np.ones((8, 4, 16), np.int32))
    bad = [lambda: g.reshape(x.node, (5, 5)), lambda: ew._binary(g.BinaryOp.ADD, x, y),
           lambda: g.binary(g.BinaryOp.SHL, x.node, x.node), lambda: g.expand(x.node, (2, 2)),
           lambda: g.permute(x.node, (0, 0, 1)), lambda: g.Node(g.Op.UNARY, (1,), None, (1,), dt.int8)]

    def build():
        made = [zd.layer_norm(x, axis=-1) * 2.5 + 1, (y @ y.mT) / 3, x[0, 1:3] - x[1, 2:4], xi + 2, xi < 2 * xi,
                1.5 - x, g.permute(g.permute(x.node, (2, 0, 1)), (1, 2, 0)), g.cast(x.node, dt.bfloat16),
                g.reshape(g.reshape(x.node, (32, 16)), (8, 64)), g.const(0.0, (2,), dt.float32)]
        for fn in bad:
            with pytest.raises((ShapeError, DTypeError, TypeError)):
                fn()
        return made

    watched = [None, True, 1, dt.float32, dt.bool_, g.BinaryOp.ADD, g.Op.RESHAPE, g.Op.BINARY, x.node,
               x.node.shape]
    for _ in range(200):
        build()
    gc.collect()
    before = [sys.getrefcount(o) for o in watched]
    for _ in range(2000):
        build()
    gc.collect()
    assert [sys.getrefcount(o) for o in watched] == before


def test_the_graph_is_built_in_python_when_told_to():
    code = ("from zyx_dist.graph import ir; from zyx_dist.frontend import common as c; "
            "from zyx_dist.frontend import elementwise as e; from zyx_dist.frontend import linalg as m; "
            "print(ir.Node is ir.PyNode, ir.reshape is ir.python_reshape, ir.reduce is ir.python_reduce, "
            "c.broadcast_shapes is c.python_broadcast_shapes, e._binary is e.python_binary, "
            "m._matmul_nodes is m.python_matmul_nodes)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**os.environ, "ZYX_DIST_C_NODES": "0"}).stdout
    assert out.split() == ["True"] * 6
