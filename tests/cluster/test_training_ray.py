"""Gradients and data-parallel training on the shared Ray session (3 PoCL workers `opencl:0..2` as Ray
actors): gradients realized on Ray workers against central differences, the MLP of tests/training.py
trained with its batch sharded over the 3 workers against the same training unsharded and against NumPy
(the same weights up to the rounding of the fixed-order sum of the shards' gradients), each shard's
forward and backward kernels placed on its own worker and the shards' partial gradients moved between
workers through the object store.
"""

from __future__ import annotations

import gradcheck
import numpy as np
import pytest
from training import NpAdam, init_params, make_data, np_loss_and_grads, train_np, train_zd, zd_loss

import zyx_dist as zd

WORKERS = ["opencl:0", "opencl:1", "opencl:2"]
CASES = {c[0]: c for c in gradcheck.CASES}


@pytest.fixture(autouse=True)
def no_tuning(ray_session):
    old = ray_session.tuner.enabled
    ray_session.tuner.enabled = False
    yield
    ray_session.tuner.enabled = old


@pytest.mark.parametrize("name", ["mlp", "cross-entropy", "matmul-batched", "softmax", "layer_norm", "max-axis0-keepFalse",
                                  "gather-axis1-negative", "slice-negative-step", "prod-with-one-zero"])
def test_gradients_on_ray_workers(name):
    _, f, arrays = CASES[name]
    gradcheck.numeric_check(name, f, arrays, gradcheck.read_device)


def test_sharded_training_over_3_ray_workers_matches_unsharded_and_numpy():
    steps = 4
    make = (lambda ps: zd.optim.Adam(ps, lr=0.05))
    one, one_losses, _ = train_zd(make, steps)
    zd.reset_stats()
    three, three_losses, _ = train_zd(make, steps, shard_devices=WORKERS)
    moved = zd.stats()
    want, want_losses = train_np(NpAdam(init_params(), 0.05), steps)
    np.testing.assert_allclose(three_losses, one_losses, rtol=1e-12)
    np.testing.assert_allclose(three_losses, want_losses, rtol=1e-10)
    for a, b, w in zip(three, one, want):
        np.testing.assert_allclose(a, b, rtol=1e-11, atol=1e-14)
        np.testing.assert_allclose(a, w, rtol=1e-9, atol=1e-12)
    assert moved["transfers"] > 0 and moved["bytes_transferred"] > 0, moved


def test_shards_run_on_their_workers():
    x, _, onehot = make_data()
    params = [zd.tensor(p) for p in init_params()]
    xt, ot = zd.tensor(x).shard(WORKERS), zd.tensor(onehot).shard(WORKERS)
    loss = zd_loss(params, xt, ot)
    grads = zd.grad(loss, params)
    plan = zd.explain(loss, *grads)
    pinned = [k for k in plan.kernels if k.reason == "pinned"]
    counts = {w: sum(k.device == w for k in pinned) for w in WORKERS}
    assert len(set(counts.values())) == 1 and counts[WORKERS[0]] >= 4, (counts, plan)
    assert plan.transfers, plan  # the shards' partial sums meet on one worker (and the weights go out)
    zd.realize(loss, *grads)
    want_loss, want_grads = np_loss_and_grads(init_params(), x, onehot)
    np.testing.assert_allclose(loss.numpy(), want_loss, rtol=1e-12)
    for g, w in zip(grads, want_grads):
        np.testing.assert_allclose(g.numpy(), w, rtol=1e-10, atol=1e-13)


def test_jitted_sharded_training_on_ray_workers_matches_the_plain_loop():
    """zd.jit through Ray: the sharded step of the test above replayed (each replay one compiled run of the
    plan's template on the 3 actors) gives the plain loop's losses and weights bit for bit."""
    steps = 6
    make = (lambda ps: zd.optim.Adam(ps, lr=0.05))
    plain, plain_losses, _ = train_zd(make, steps, shard_devices=WORKERS)
    jitted, jit_losses, f = train_zd(make, steps, shard_devices=WORKERS, jit=True)
    assert f.replays >= 2, (f.runs, f.replays)
    np.testing.assert_array_equal(jit_losses, plain_losses)
    for a, b in zip(jitted, plain):
        np.testing.assert_array_equal(a, b)
