"""Gradients (zd.grad, graph/autograd.py) as graphs: every gradient here is evaluated by the NumPy
interpreter of tests/reference.py (no device) and compared with central differences of the same forward
graph in float64 (tests/gradcheck.py), for every differentiable op of API.md section 5; plus the rules
of API.md section 11 (NumPy's first-maximum rule, zero gradients, higher order, the errors) and a
random-graph fuzzer over tests/fuzzgraph.py's programs.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import gradcheck
from fuzzgraph import _apply, program_from_seed
from reference import evaluate

import zyx_dist as zd
from zyx_dist.graph import autograd, companions, shard
from zyx_dist.graph.ir import Op, toposort


@pytest.fixture(scope="session")
def zd_session():
    """Overrides the conftest's device session: these tests never touch a device."""
    return


def ev(t: zd.Tensor) -> np.ndarray:
    return evaluate(t.node)


@pytest.mark.parametrize("name,f,arrays", gradcheck.CASES, ids=[c[0] for c in gradcheck.CASES])
def test_gradient_matches_central_differences(name, f, arrays):
    gradcheck.numeric_check(name, f, arrays, gradcheck.read_reference)


def test_every_section_5_op_has_a_case():
    names = {c[0].split("(")[0].split("-")[0] for c in gradcheck.CASES}
    ops = ["abs", "negative", "positive", "exp", "exp2", "log", "log2", "sqrt", "rsqrt", "square", "reciprocal",
           "sin", "cos", "tan", "tanh", "sigmoid", "relu", "floor", "ceil", "round", "sign", "add", "subtract",
           "multiply", "divide", "floor_divide", "remainder", "pow", "maximum", "minimum", "where", "clip", "sum",
           "prod", "max", "min", "mean", "var", "std", "logsumexp", "reshape", "permute", "transpose", "mT",
           "broadcast_to", "expand_dims", "squeeze", "flatten", "pad", "flip", "concat", "stack", "split", "tile",
           "repeat", "index", "slice", "gather", "matmul", "dot", "tensordot", "einsum", "softmax", "log_softmax",
           "layer_norm", "astype", "comparison"]
    assert not set(ops) - names, f"ops without a gradient case: {sorted(set(ops) - names)}"


# ---- the rules of API.md section 11 ------------------------------------------------------------------------

def test_max_ties_give_the_gradient_to_the_first_maximum():
    a = np.array([[1.0, 3.0, 3.0, 2.0], [5.0, 5.0, 5.0, 5.0], [0.0, -1.0, 0.0, 0.0]])
    x = zd.tensor(a)
    (g,) = zd.grad(zd.max(x, axis=1).sum(), [x])
    np.testing.assert_array_equal(ev(g), [[0, 1, 0, 0], [1, 0, 0, 0], [1, 0, 0, 0]])
    (g,) = zd.grad(zd.min(x, axis=0).sum(), [x])
    np.testing.assert_array_equal(ev(g), [[0, 0, 0, 0], [0, 0, 0, 0], [1, 1, 1, 1]])
    (g,) = zd.grad(zd.max(x), [x])  # over every axis: the first in row-major order
    np.testing.assert_array_equal(ev(g), np.eye(1, 12, 4).reshape(3, 4))
    (g,) = zd.grad(zd.max(x, axis=(0, 1), keepdims=True).sum() * 2, [x])
    np.testing.assert_array_equal(ev(g), 2 * np.eye(1, 12, 4).reshape(3, 4))


def test_max_with_nan_gives_the_gradient_to_the_first_nan():
    x = zd.tensor(np.array([1.0, np.nan, 7.0, np.nan]))
    (g,) = zd.grad(zd.max(x), [x])
    np.testing.assert_array_equal(ev(g), [0, 1, 0, 0])


def test_maximum_minimum_ties_give_the_gradient_to_the_first_operand():
    a, b = zd.tensor(np.array([1.0, 2.0, 3.0])), zd.tensor(np.array([1.0, 5.0, 0.0]))
    ga, gb = zd.grad(zd.maximum(a, b).sum(), [a, b])
    np.testing.assert_array_equal(ev(ga), [1, 0, 1])
    np.testing.assert_array_equal(ev(gb), [0, 1, 0])
    ga, gb = zd.grad(zd.minimum(a, b).sum(), [a, b])
    np.testing.assert_array_equal(ev(ga), [1, 1, 0])
    np.testing.assert_array_equal(ev(gb), [0, 0, 1])
    x = zd.tensor(np.array([0.0, -1.0, 2.0]))
    (g,) = zd.grad(zd.relu(x).sum(), [x])  # relu = maximum(x, 0): at 0, x is the first maximal operand
    np.testing.assert_array_equal(ev(g), [1, 0, 1])
    (g,) = zd.grad(zd.clip(x, 0.0, 2.0).sum(), [x])
    np.testing.assert_array_equal(ev(g), [1, 0, 1])


def test_prod_with_zeros():
    a = np.array([[2.0, 0.0, 3.0], [0.0, 0.0, 4.0], [1.5, 2.0, -1.0]])
    x = zd.tensor(a)
    (g,) = zd.grad(zd.prod(x, axis=1).sum(), [x])
    np.testing.assert_allclose(ev(g), [[0, 6, 0], [0, 0, 0], [-2, -1.5, 3]])


def test_sigmoid_gradient_is_finite_where_exp_overflows():
    """sigmoid = 1 / (1 + exp(-x)): walked through, exp(-x) = inf met a zero gradient (0 * inf = NaN) for x below
    -88 in float32 (-709 in float64); its rule p * (1 - p) has none, to second order."""
    a = np.array([-100.0, -800.0, -3.0, 0.0, 2.5, 40.0, 800.0])
    e = np.exp(-np.abs(a))
    d1 = e / (1 + e) ** 2  # p (1 - p), even in x
    d2 = d1 * np.sign(-a) * (1 - e) / (1 + e)  # p (1 - p) (1 - 2p)
    for dtype in (np.float32, np.float64):
        x = zd.tensor(a.astype(dtype))
        (g,) = zd.grad(zd.sigmoid(x).sum(), [x])
        (gg,) = zd.grad(g.sum(), [x])
        assert g.dtype == x.dtype
        np.testing.assert_allclose(ev(g), d1.astype(dtype), rtol=1e-5, atol=1e-30)
        np.testing.assert_allclose(ev(gg), d2.astype(dtype), rtol=1e-5, atol=1e-30)


def test_pow_second_order_at_a_zero_base_or_exponent():
    """a ** b: the masks that keep 0^0 and log(0) out of the first derivative must keep them out of the second
    too (it reached the masked terms with zero gradients: 0 * inf = NaN), and not mask d/db of b a^(b-1) at
    b == 0 (1/a) where a != 0."""
    a, b = np.array([0.0, 0.0, 2.0, 3.0]), np.array([0.0, 2.0, 0.0, 0.0])
    x, e = zd.tensor(a), zd.tensor(b)
    ga, _ = zd.grad((x ** e).sum(), [x, e])
    haa, hab = zd.grad(ga.sum(), [x, e])
    np.testing.assert_array_equal(ev(ga), [0.0, 0.0, 0.0, 0.0])
    np.testing.assert_array_equal(ev(haa), [0.0, 2.0, 0.0, 0.0])  # b (b - 1) a^(b-2)
    np.testing.assert_allclose(ev(hab), [0.0, 0.0, 0.5, 1 / 3])  # a^(b-1) (1 + b log a)
    z = zd.tensor(np.array([0.0, 1.0, -2.0]))
    (g,) = zd.grad((z ** 0).sum(), [z])
    (gg,) = zd.grad(g.sum(), [z])
    np.testing.assert_array_equal(ev(gg), np.zeros(3))


def test_prod_second_order_with_one_zero_in_a_slice():
    """d2 prod / dx_i dx_j is the product of the others but i and j. With one zero in a slice the first derivative
    divided a masked p by it (a second derivative gave 0 * inf, NaN), and the elements that are not the zero had a
    constant 0 there (their derivative to the zero was lost)."""
    for a in ([0.0, 2.0, 3.0], [2.0, 0.0, 5.0, 7.0], [-1.5, 4.0, 0.0], [1.0, 2.0, 3.0]):
        a = np.array(a)
        x = zd.tensor(a)
        (g,) = zd.grad(zd.prod(x), [x])
        others = [np.prod(np.delete(a, i)) for i in range(a.size)]
        np.testing.assert_allclose(ev(g), others)
        for i in range(a.size):
            (h,) = zd.grad(g[i], [x])
            want = [0.0 if j == i else np.prod(np.delete(a, [i, j])) for j in range(a.size)]
            np.testing.assert_allclose(ev(h), want)


def test_zero_gradient_ops_are_exactly_zero():
    x = zd.tensor(np.array([0.3, -1.7, 2.5]))
    for f in (zd.floor, zd.ceil, zd.round, zd.sign, lambda t: t // 0.7, lambda t: (t > 0).astype(zd.float64),
              lambda t: t.astype(zd.int32).astype(zd.float64), lambda t: zd.argmax(t).astype(zd.float64)):
        (g,) = zd.grad(f(x).sum(), [x])
        got = ev(g)
        assert got.dtype == np.float64 and got.shape == (3,)
        np.testing.assert_array_equal(got, np.zeros(3))


def test_gradient_through_a_float32_cast_keeps_the_input_dtype():
    x = zd.tensor(np.array([0.25, -1.5]))
    (g,) = zd.grad((x.astype(zd.float32) * 3).sum(), [x])
    assert g.dtype == zd.float64
    np.testing.assert_array_equal(ev(g), [3.0, 3.0])
    h = zd.tensor(np.array([0.5, 2.0], np.float16))
    (g,) = zd.grad((h * h).sum(), [h])
    assert g.dtype == zd.float16
    np.testing.assert_array_equal(ev(g), np.array([1.0, 4.0], np.float16))


def test_unrelated_input_gets_zeros_of_its_shape_and_dtype():
    x, z = zd.tensor(np.ones(3)), zd.tensor(np.ones((2, 2), np.float32))
    gx, gz = zd.grad((x * 2).sum(), [x, z])
    assert gz.shape == (2, 2) and gz.dtype == zd.float32
    np.testing.assert_array_equal(ev(gz), np.zeros((2, 2), np.float32))
    np.testing.assert_array_equal(ev(gx), [2, 2, 2])
    # reachable only through an integer path: no gradient either
    (g,) = zd.grad((x.astype(zd.int32) * 2).sum().astype(zd.float64), [x])
    np.testing.assert_array_equal(ev(g), np.zeros(3))


def test_input_used_twice_and_listed_twice():
    x = zd.tensor(np.array([1.0, 2.0]))
    g1, g2 = zd.grad((x * x + x).sum(), [x, x])
    np.testing.assert_array_equal(ev(g1), [3.0, 5.0])
    np.testing.assert_array_equal(ev(g2), [3.0, 5.0])


def test_gradient_with_respect_to_an_intermediate():
    x = zd.tensor(np.array([1.0, 2.0]))
    h = x * 3
    gh, gx = zd.grad((h * h).sum(), [h, x])
    np.testing.assert_array_equal(ev(gh), [6.0, 12.0])
    np.testing.assert_array_equal(ev(gx), [18.0, 36.0])
    (gy,) = zd.grad(h, [h], grad_output=np.array([0.5, 2.0]))
    np.testing.assert_array_equal(ev(gy), [0.5, 2.0])


def test_parameters_made_by_zeros_ones_full_get_their_gradient():
    """Constants are folded through movement ops; the gradient still finds its way to them."""
    x = zd.tensor(np.arange(6.0).reshape(2, 3))
    b, s, f = zd.zeros(3, dtype=zd.float64), zd.ones((2, 1), dtype=zd.float64), zd.full((3,), 2.0, dtype=zd.float64)
    y = ((x + b) * s + zd.flip(f.reshape(1, 3), 1) * x.T.T).sum() + zd.pad(b, (1, 0), value=3.0)[1:].sum()
    gb, gs, gf = zd.grad(y, [b, s, f])
    np.testing.assert_array_equal(ev(gb), [3.0, 3.0, 3.0])
    np.testing.assert_array_equal(ev(gs), [[3.0], [12.0]])
    np.testing.assert_array_equal(ev(gf), [7.0, 5.0, 3.0])  # the column sums of x, flipped


def test_higher_order_gradients():
    a = np.array([0.3, -1.2, 2.0])
    x = zd.tensor(a)
    (g,) = zd.grad((x ** 3).sum(), [x])
    (gg,) = zd.grad(g.sum(), [x])
    (ggg,) = zd.grad(gg.sum(), [x])
    np.testing.assert_allclose(ev(g), 3 * a ** 2)
    np.testing.assert_allclose(ev(gg), 6 * a)
    np.testing.assert_allclose(ev(ggg), [6.0, 6.0, 6.0])
    # a Hessian-vector product of a softmax cross entropy, against central differences of the gradient
    w = np.array([0.4, -0.3, 1.1])
    v = np.array([0.2, 0.5, -0.7])

    def grad_at(vals):
        t = zd.tensor(vals)
        (gt,) = zd.grad(-(zd.log_softmax(t * zd.tensor(w)) * zd.tensor(np.array([0.0, 1.0, 0.0]))).sum(), [t])
        return t, gt

    t, gt = grad_at(a)
    (hv,) = zd.grad(gt, [t], grad_output=v)
    h = 1e-6
    numeric = (ev(grad_at(a + h * v)[1]) - ev(grad_at(a - h * v)[1])) / (2 * h)
    np.testing.assert_allclose(ev(hv), numeric, rtol=1e-6, atol=1e-8)


def test_errors():
    x = zd.tensor(np.ones((2, 3)))
    with pytest.raises(zd.ShapeError, match=r"\(2, 3\).*grad_output"):
        zd.grad(x * 2, [x])
    with pytest.raises(zd.ShapeError, match=r"grad_output has shape \(3,\)"):
        zd.grad(x * 2, [x], grad_output=np.ones(3))
    i = zd.tensor(np.ones(3, np.int32))
    with pytest.raises(zd.DTypeError, match="int32"):
        zd.grad(i.sum().astype(zd.float32), [i])
    with pytest.raises(zd.DTypeError, match="bool"):
        zd.grad(x.sum(), [x > 0])
    with pytest.raises(TypeError):
        zd.grad(x.sum(), [np.ones(3)])
    # size 1 of any rank needs no grad_output
    (g,) = zd.grad(x.sum(axis=(0, 1), keepdims=True), [x])
    np.testing.assert_array_equal(ev(g), np.ones((2, 3)))


def test_integer_y_gives_zeros():
    x = zd.tensor(np.array([1.5, 2.5]))
    (g,) = zd.grad(zd.argmax(x), [x])
    assert g.dtype == zd.float64
    np.testing.assert_array_equal(ev(g), [0.0, 0.0])


def test_deep_graph_is_walked_without_recursion():
    x = zd.tensor(np.array([1.0]))
    y = x
    for _ in range(20_000):
        y = y * 1.0001 + 0.0
    (g,) = zd.grad(y.sum(), [x])
    assert len(toposort([g.node])) > 20_000
    assert g.node.op is not Op.CONST


def test_backward_graph_uses_only_the_opset():
    x, w = zd.tensor(np.ones((3, 4))), zd.tensor(np.ones((4, 2)))
    gs = zd.grad(zd.log_softmax(x @ w).max(axis=1).sum(), [x, w])
    ops = {n.op for g in gs for n in toposort([g.node])}
    assert ops <= set(Op)


# ---- random graphs -----------------------------------------------------------------------------------------

FUZZ_GRAPHS = int(os.environ.get("ZYX_DIST_GRAD_FUZZ", "300"))


def fuzz_case(seed: int):
    """A fuzzgraph program on float64 inputs (values off any grid, so no ties), casts left out (a float16 or
    int32 round trip has no useful central difference), differentiated as sum(w * output) over its outputs."""
    prog = program_from_seed(seed, rand_inputs=True)
    arrays = [np.random.default_rng(s).uniform(-2.0, 2.0, shape) for shape, s, _ in prog.inputs]

    def f(*xs):
        vals = list(xs)
        for step in prog.steps:
            vals.append(vals[step[1]] if step[0] == "cast" else _apply(step, vals, "zd"))
        total = None
        for k, o in enumerate(prog.outputs):
            out = vals[o]
            if not out.dtype.is_float or out.size == 0:
                continue
            w = zd.tensor(np.random.default_rng(seed * 7 + k).standard_normal(out.shape))
            term = (out * w).sum()
            total = term if total is None else total + term
        return total if total is not None else xs[0].sum() * 0
    return prog, f, arrays


@pytest.mark.parametrize("block", range(10))
def test_random_graph_gradients(block):
    per = -(-FUZZ_GRAPHS // 10)
    for seed in range(block * per, min(FUZZ_GRAPHS, (block + 1) * per)):
        prog, f, arrays = fuzz_case(seed)
        gradcheck.numeric_check(f"fuzz seed {seed}: {prog!r}", f, arrays, gradcheck.read_reference, tol=1e-6)


def test_gradient_modules_are_pure():
    for mod in (autograd, shard, companions):
        src = Path(mod.__file__).read_text()
        for banned in ("engine", "runtime", "import ray", "cupy", "pyopencl"):
            assert f"import {banned}" not in src and f".{banned} import" not in src, (mod.__name__, banned)
