"""Gradients realized on PoCL (API.md section 11): every differentiable op of section 5 against central
differences in float64 (tests/gradcheck.py: the gradient graph runs on the device, the central differences
come from the interpreter on the forward graph), a random-graph gradient fuzzer, and the fusion of
backward passes (the backward of an elementwise chain is one kernel).

The autotuner is off for this module: these are correctness checks of many small new kernels, and timing
each one's variants would cost more than the checks.
"""

from __future__ import annotations

import math
import os

import gradcheck
import numpy as np
import pytest
from fuzzgraph import _apply, program_from_seed

import zyx_dist as zd
from zyx_dist.codegen import gemm
from zyx_dist.engine import session as zsession

FUZZ_GRAPHS = int(os.environ.get("ZYX_DIST_GRAD_FUZZ_DEVICE", "60"))


pytestmark = pytest.mark.usefixtures("tuning_off")


def kernels_of(*ts) -> int:
    zd.reset_stats()
    zd.realize(*ts)
    return zd.stats()["kernels_launched"]


def _on_device(name: str) -> bool:
    """The cases run on the device: every op, at fewer shape and axis variants than the interpreter's sweep
    (tests/unit/test_autograd.py runs them all), since each new kernel costs a compile."""
    if name.startswith(("add", "subtract", "multiply", "divide", "maximum", "minimum")):
        return "(3,1)(1,4)" in name or "scalar-left" in name or "(1,)()" in name
    if "-axis" in name:
        return "axisNone-keepFalse" in name or "axis(0, 2)-keepTrue" in name
    if "(" in name and name.split("(")[0].isalpha() and not name.startswith(("pow", "matmul")):
        return "(3, 4)" in name or "(1,)" in name  # unary ops: a matrix and a unit shape
    return True


DEVICE_CASES = [c for c in gradcheck.CASES if _on_device(c[0])]


@pytest.fixture
def in_process_only(zd_session):
    if zd_session is not None and type(zd_session.backend).__name__ == "RayBackend":
        pytest.skip("run once, in-process: tests/cluster/test_training_ray.py checks gradients on Ray workers")


@pytest.mark.parametrize("name,f,arrays", DEVICE_CASES, ids=[c[0] for c in DEVICE_CASES])
def test_gradient_on_device_matches_central_differences(name, f, arrays, in_process_only):
    gradcheck.numeric_check(name, f, arrays, gradcheck.read_device)


def test_random_graph_gradients_on_device(in_process_only):
    """Fuzzed programs (tests/fuzzgraph.py, float64 inputs, casts left out), their gradients realized on
    the device, against central differences (ZYX_DIST_GRAD_FUZZ_DEVICE graphs; the interpreter checks 300
    more in tests/unit/test_autograd.py)."""
    checked = 0
    for seed in range(10_000, 10_000 + FUZZ_GRAPHS):
        prog = program_from_seed(seed, rand_inputs=True)
        arrays = [np.random.default_rng(s).uniform(-2.0, 2.0, shape) for shape, s, _ in prog.inputs]

        def f(*xs, prog=prog, seed=seed):
            vals = list(xs)
            for step in prog.steps:
                vals.append(vals[step[1]] if step[0] == "cast" else _apply(step, vals, "zd"))
            terms = [(vals[o] * zd.tensor(np.random.default_rng(seed + k).standard_normal(vals[o].shape))).sum()
                     for k, o in enumerate(prog.outputs) if vals[o].dtype.is_float and vals[o].size]
            total = xs[0].sum() * 0
            for t in terms:
                total = total + t
            return total

        gradcheck.numeric_check(f"fuzz seed {seed}: {prog!r}", f, arrays, gradcheck.read_device)
        checked += 1
    assert checked == FUZZ_GRAPHS


# ---- fusion of backward passes -----------------------------------------------------------------------------

def _f32(*shape, seed=0):
    return zd.tensor(np.random.default_rng(seed).standard_normal(shape).astype(np.float32)).realize()


def test_backward_of_an_elementwise_chain_is_one_kernel():
    x, go = _f32(64, 32), _f32(64, 32, seed=1)
    y = ((x.sin() * 2 + x).exp() * 0.1).tanh()
    (g,) = zd.grad(y, [x], grad_output=go)
    assert kernels_of(g) == 1
    (g,) = zd.grad(y.sum(), [x])
    assert kernels_of(g) == 1
    a = x.numpy().astype(np.float64)
    t = np.tanh(np.exp(np.sin(a) * 2 + a) * 0.1)
    want = (1 - t * t) * 0.1 * np.exp(np.sin(a) * 2 + a) * (2 * np.cos(a) + 1)
    np.testing.assert_allclose(g.numpy(), want, rtol=2e-5, atol=1e-5)


def test_matmul_gradients_are_one_kernel_each():
    x, w = _f32(64, 32), _f32(32, 16, seed=2)
    gx, gw = zd.grad((x @ w).sum(), [x, w])
    assert kernels_of(gx, gw) == 2
    np.testing.assert_allclose(gw.numpy(), x.numpy().sum(axis=0)[:, None].repeat(16, axis=1), rtol=1e-5)


def test_softmax_and_layer_norm_backward_fuse_into_one_kernel():
    x = _f32(16, 64)
    (g,) = zd.grad(zd.softmax(x).max(axis=1).sum(), [x])
    assert kernels_of(g) == 1
    (g,) = zd.grad(zd.layer_norm(x).square().sum(), [x])
    assert kernels_of(g) == 1


def test_softmax_gradient_skips_its_row_max():
    """softmax and log_softmax take their gradient from their result, and logsumexp none through the max it
    subtracts: no first-maximum search over the row, and the gradients are exact, also where a row's maximum is
    tied. The training step's softmax is then one row kernel forward and one backward (reading p and its
    gradient only)."""
    from zyx_dist.graph.ir import Op, ReduceOp, toposort

    X = np.array([[1.0, 3.0, 3.0, -2.0], [0.5, 0.5, 0.5, 0.5], [-1.0, 2.0, 0.0, 2.0]], np.float32)
    W = np.random.default_rng(4).standard_normal(X.shape).astype(np.float32)
    x, w = zd.tensor(X), zd.tensor(W)
    e = np.exp(X - X.max(1, keepdims=True))
    p = e / e.sum(1, keepdims=True)
    cases = [(zd.softmax(x) * w, p * (W - (p * W).sum(1, keepdims=True))),
             (zd.log_softmax(x) * w, W - p * W.sum(1, keepdims=True)),
             (zd.logsumexp(x, axis=1) * w[:, 0], p * W[:, :1])]
    for y, want in cases:
        (g,) = zd.grad(y.sum(), [x])
        nodes = toposort([g.node])
        assert not any(n.op is Op.REDUCE and n.arg[0] is ReduceOp.MIN for n in nodes)  # (the max's first-maximum search)
        np.testing.assert_allclose(g.numpy(), want, rtol=1e-5, atol=1e-6)
    S, D = (np.random.default_rng(5).standard_normal((64, 96)).astype(np.float32) for _ in range(2))
    s = zd.tensor(S)
    p = zd.softmax(s)
    (gs,) = zd.grad((p * zd.tensor(D)).sum(), [s])
    assert kernels_of(p, gs) == 2  # the softmax row kernel, then its backward row kernel
    e = np.exp(S - S.max(1, keepdims=True))
    q = e / e.sum(1, keepdims=True)
    np.testing.assert_allclose(gs.numpy(), q * (D - (q * D).sum(1, keepdims=True)), rtol=1e-5, atol=1e-6)


def test_attention_backward_products_are_gemms():
    """The backward of softmax(q @ k.mT * c) @ v: dv, dp, dq and dk are each a GEMM (dq and dk read the same
    score gradient, and as one kernel of two products they were plain reduce loops), as is the recomputed p; the
    forward is one attention kernel, which also stores each row's log-sum-exp. Equal to NumPy's."""
    from zyx_dist.codegen import attention
    from zyx_dist.fuse.kernelize import _contraction, kernelize
    from zyx_dist.graph.ir import Op

    rng = np.random.default_rng(8)
    Q, K, V, G = (rng.standard_normal((2, 3, 40, 16)).astype(np.float32) for _ in range(4))
    q, k, v = zd.tensor(Q), zd.tensor(K), zd.tensor(V)
    o = zd.softmax(q @ k.mT * 0.25) @ v
    grads = zd.grad((o * zd.tensor(G)).sum(), [q, k, v])
    for kern in kernelize([x.node for x in grads]):
        inner = {x.id for x in kern.inputs}
        seen, stack, products = set(), list(kern.outputs), 0
        while stack:
            n = stack.pop()
            if n.id not in seen and n.id not in inner:
                seen.add(n.id)
                products += n.op is Op.REDUCE and _contraction(n)
                stack.extend(n.srcs)
        assert products == 0 or gemm.match(kern) is not None or attention.match(kern) is not None, kern.shape
    s = Q @ K.transpose(0, 1, 3, 2) * 0.25
    p = np.exp(s - s.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    dp = G @ V.transpose(0, 1, 3, 2)
    ds = p * (dp - (p * dp).sum(-1, keepdims=True)) * 0.25
    for got, want in zip(grads, (ds @ K, ds.transpose(0, 1, 3, 2) @ Q, p.transpose(0, 1, 3, 2) @ G)):
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_attention_backward_takes_its_row_sums_from_the_output(dtype):
    """softmax's backward p * (g - sum(g * p)) in an attention, where g = do @ v.T: the row sums are those of
    do * o over the head dim (flash attention's D), so no kernel reads the T x T gradient g row by row: the GEMM
    that computes g applies p * (g - D) as its epilogue. Also with the probabilities used twice (their gradient a
    sum: the plain rule) and with v broadcast over the heads (grouped-query). Equal to NumPy's."""
    import ml_dtypes

    np_dtype = np.float32 if dtype == "float32" else ml_dtypes.bfloat16
    rng = np.random.default_rng(9)
    B, H, T, D = 2, 3, 40, 16
    Q, K, G, W = (rng.standard_normal(s).astype(np_dtype) for s in ((B, H, T, D),) * 3 + ((B, H, T, T),))
    mask = np.triu(np.full((T, T), -1e9, np.float32), 1).astype(np_dtype)
    tol = {"rtol": 1e-4, "atol": 1e-5} if dtype == "float32" else {"rtol": 0.05, "atol": 0.05}
    for v_heads, twice in ((H, False), (H, True), (1, False)):
        V = rng.standard_normal((B, v_heads, T, D)).astype(np_dtype)
        q, k, v = zd.tensor(Q), zd.tensor(K), zd.tensor(V)
        p = zd.softmax(q @ k.mT * 0.25 + zd.tensor(mask), axis=-1)
        loss = ((p @ v) * zd.tensor(G)).sum() + ((p * zd.tensor(W)).sum() if twice else 0)
        grads = zd.grad(loss, [q, k, v])
        kernels, _, _ = zsession.current().plan([loss.node] + [g.node for g in grads])
        if v_heads == H and not twice:  # g is never stored: no kernel reads two T x T tensors, and p * (g - D)
            # is a GEMM's (reading p)
            assert not [k for k in kernels if sum(x.size == B * H * T * T for x in k.inputs) >= 2]
            assert any(gemm.match(k) is not None and k.outputs[0].size == B * H * T * T
                       and any(x.size == B * H * T * T for x in k.inputs) for k in kernels)
        f = [x.astype(np.float64) for x in (Q, K, V, G, W, mask)]
        s = f[0] @ f[1].transpose(0, 1, 3, 2) * 0.25 + f[5]
        pr = np.exp(s - s.max(-1, keepdims=True))
        pr /= pr.sum(-1, keepdims=True)
        dp = f[3] @ np.broadcast_to(f[2], (B, H, T, D)).transpose(0, 1, 3, 2) + (f[4] if twice else 0)
        ds = pr * (dp - (pr * dp).sum(-1, keepdims=True)) * 0.25
        dv = (pr.transpose(0, 1, 3, 2) @ f[3]).sum(1, keepdims=True) if v_heads == 1 else pr.transpose(0, 1, 3, 2) @ f[3]
        for got, want in zip(grads, (ds @ f[1], ds.transpose(0, 1, 3, 2) @ f[0], dv)):
            np.testing.assert_allclose(got.numpy().astype(np.float64), want, **tol)


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("mask", ["causal", "where", "per_batch"])
def test_attention_backward_recomputes_its_probabilities_from_row_statistics(dtype, mask, monkeypatch):
    """Training through softmax(q @ k.mT * c + mask) @ v (graph/recompute.py): the forward is one fused attention
    kernel that also stores each row's log-sum-exp (float32), nothing T x T is stored before the backward, whose
    GEMM of q @ k.mT recomputes p from it. Gradients equal NumPy's, also where the attention kernel cannot take
    the kernel (its outputs then computed apart, each over its own indices, `render_apart`)."""
    import ml_dtypes
    from helpers import ref_attention_grads

    from zyx_dist.codegen import attention
    from zyx_dist.codegen.render import render_kernel

    np_dtype = np.float32 if dtype == "float32" else ml_dtypes.bfloat16
    rng = np.random.default_rng(12)
    B, H, T, D = 2, 3, 70, 16
    Q, K, V, G = (rng.standard_normal((B, H, T, D)).astype(np_dtype) for _ in range(4))
    keep = np.tril(np.ones((T, T), bool))
    M = {"causal": np.where(keep, 0, -1e9), "where": np.where(keep, 0, -np.inf),
         "per_batch": rng.standard_normal((B, 1, T, T))}[mask].astype(np.float32).astype(np_dtype)
    tol = {"rtol": 1e-4, "atol": 1e-5} if dtype == "float32" else {"rtol": 0.05, "atol": 0.05}
    for apart, scale in ((False, 0.25), (True, 0.3)):  # (another scale: no kernel of the first run is reused)
        if apart:
            monkeypatch.setattr(attention, "match", lambda kernel: None)
        want = ref_attention_grads(Q, K, V, scale, M, G)
        q, k, v = (zd.tensor(x) for x in (Q, K, V))
        s = q @ k.mT * scale
        s = zd.where(zd.tensor(keep), s, -math.inf) if mask == "where" else s + zd.tensor(M)
        o = zd.softmax(s, axis=-1) @ v
        loss = (o * zd.tensor(G)).sum()
        grads = zd.grad(loss, [q, k, v])
        kernels, _, _ = zsession.current().plan([loss.node] + [g.node for g in grads])
        first = kernels[0]  # the forward: the attention's output and its rows' log-sum-exp
        assert [o.shape for o in first.outputs] == [(B, H, T, D, 1), (B, H, T, 1)], first.outputs
        assert first.outputs[1].dtype.name == "float32"
        stored = [x for kern in kernels for x in kern.outputs if x.size == B * H * T * T]
        assert len(stored) == 2, stored  # the recomputed p and the score gradient, both in the backward
        source = render_kernel(first).source
        assert ("if (gid < " in source) == apart and ("__local" in source) != apart
        zd.realize(loss, *grads)
        for got, exp in zip(grads, want):
            np.testing.assert_allclose(got.numpy().astype(np.float64), exp, **tol, err_msg=f"apart={apart}")


def test_attention_backward_recomputes_for_cross_attention_with_shared_keys_and_values():
    """Queries and keys of different lengths, k and v broadcast over the heads (grouped-query) and a mask per batch
    entry: still one forward kernel with its rows' log-sum-exp, and gradients (k's and v's summed back over the
    heads) equal NumPy's."""
    rng = np.random.default_rng(5)
    B, H, Tq, Tk, D = 2, 4, 24, 40, 8
    Q, G = (rng.standard_normal((B, H, Tq, D)).astype(np.float32) for _ in range(2))
    K, V = (rng.standard_normal((B, 1, Tk, D)).astype(np.float32) for _ in range(2))
    M = rng.standard_normal((B, 1, Tq, Tk)).astype(np.float32)
    q, k, v = (zd.tensor(x) for x in (Q, K, V))
    o = zd.softmax(q @ k.mT * 0.35 + zd.tensor(M), axis=-1) @ v
    loss = (o * zd.tensor(G)).sum()
    grads = zd.grad(loss, [q, k, v])
    kernels, _, _ = zsession.current().plan([loss.node] + [g.node for g in grads])
    assert [o.shape for o in kernels[0].outputs] == [(B, H, Tq, D, 1), (B, H, Tq, 1)]
    zd.realize(loss, *grads)
    f = [x.astype(np.float64) for x in (Q, K, V, G, M)]
    kb, vb = (np.broadcast_to(x, (B, H, Tk, D)) for x in f[1:3])
    s = f[0] @ kb.transpose(0, 1, 3, 2) * 0.35 + f[4]
    p = np.exp(s - s.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    dp = f[3] @ vb.transpose(0, 1, 3, 2)
    ds = p * (dp - (p * dp).sum(-1, keepdims=True)) * 0.35
    want = (ds @ kb, (ds.transpose(0, 1, 3, 2) @ f[0]).sum(1, keepdims=True),
            (p.transpose(0, 1, 3, 2) @ f[3]).sum(1, keepdims=True))
    for got, exp in zip(grads, want):
        np.testing.assert_allclose(got.numpy(), exp, rtol=1e-4, atol=1e-5)


def test_attention_whose_scores_are_read_elsewhere_is_not_fused_and_stays_right():
    """An attention whose scores something else reads (their row max, summed into the loss) cannot be one kernel:
    the scores are stored, so the backward reads p back rather than recomputing it (graph/recompute.py), and no
    kernel hands out row statistics. The loss and the gradients equal NumPy's."""
    from helpers import ref_attention_grads

    from zyx_dist.codegen import attention

    rng = np.random.default_rng(13)
    B, H, T, D = 1, 2, 24, 8
    Q, K, V, G = (rng.standard_normal((B, H, T, D)).astype(np.float32) for _ in range(4))
    q, k, v = (zd.tensor(x) for x in (Q, K, V))
    s = q @ k.mT * 0.5
    o = zd.softmax(s, axis=-1) @ v
    loss = (o * zd.tensor(G)).sum() + zd.max(s, axis=-1).sum() * 0.0
    grads = zd.grad(loss, [q, k, v])
    kernels, _, _ = zsession.current().plan([loss.node] + [g.node for g in grads])
    assert all(len({o.shape for o in kern.outputs}) == 1 for kern in kernels)  # no row statistics handed out
    assert not any(attention.match(kern) for kern in kernels)
    # s, p, the max's gradient (where the max is) and dS; p is not computed again
    assert sum(o.size == B * H * T * T for kern in kernels for o in kern.outputs) == 4
    zd.realize(loss, *grads)
    sn = Q @ K.transpose(0, 1, 3, 2) * 0.5
    p = np.exp(sn - sn.max(-1, keepdims=True))
    np.testing.assert_allclose(loss.numpy(), ((p / p.sum(-1, keepdims=True)) @ V * G).sum(), rtol=1e-4)
    # the max's gradient is 0 * 1 at each row's largest score: the same as without it
    for got, want in zip(grads, ref_attention_grads(Q, K, V, 0.5, None, G)):
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-4, atol=1e-5)


def test_forward_and_backward_of_a_layer():
    """The forward matmul, the loss, the output gradient (stored once), and the two backward matmuls,
    each a tiled GEMM (dW in w's layout: graph/autograd.py sums it in w's order)."""
    x, w = _f32(64, 32), _f32(32, 16, seed=3)
    loss = ((x @ w).relu() ** 2).mean()
    gx, gw = zd.grad(loss, [x, w])
    kernels, _, _ = zsession.current().plan([loss.node, gx.node, gw.node])
    assert sum(gemm.match(k) is not None for k in kernels) == 3, [k.shape for k in kernels]
    n = kernels_of(loss, gx, gw)
    assert n <= 6, f"{n} kernels for a one-layer forward + backward"
    h = x.numpy() @ w.numpy()
    np.testing.assert_allclose(loss.numpy(), (np.maximum(h, 0) ** 2).mean(), rtol=1e-5)
    gh = 2 * np.maximum(h, 0) / h.size
    np.testing.assert_allclose(gx.numpy(), gh @ w.numpy().T, rtol=1e-4, atol=1e-7)
    np.testing.assert_allclose(gw.numpy(), x.numpy().T @ gh, rtol=1e-4, atol=1e-7)
