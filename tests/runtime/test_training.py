"""Training on PoCL (API.md section 11): the optimizers against NumPy reimplementations of torch's update
rules, a small MLP classifier trained with zd.grad + zd.optim against the same MLP, gradient and
optimizer written out in NumPy, the fused update kernels (one per parameter), the state realized along
with the parameters, and data parallelism: the same training on 1 and on 3 in-process workers with the
batch sharded (the same weights up to the rounding of the fixed-order gradient sum), each shard's
forward and backward placed on its own device.
"""

from __future__ import annotations

import numpy as np
import pytest
from fuzzgraph import detached_session
from training import NpAdam, NpSGD, init_params, make_data, np_loss_and_grads, train_np, train_zd, zd_loss

import zyx_dist as zd

pytestmark = pytest.mark.usefixtures("tuning_off")


# ---- tests --------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["sgd", "sgd-momentum", "adam"])
def test_training_matches_numpy(name):
    steps = 6
    factories = {
        "sgd": (lambda ps: zd.optim.SGD(ps, lr=0.3), lambda ps: NpSGD(ps, 0.3)),
        "sgd-momentum": (lambda ps: zd.optim.SGD(ps, lr=0.2, momentum=0.9), lambda ps: NpSGD(ps, 0.2, 0.9)),
        "adam": (lambda ps: zd.optim.Adam(ps, lr=0.05), lambda ps: NpAdam(ps, 0.05)),
    }
    ours, theirs = factories[name]
    got, losses, _ = train_zd(ours, steps)
    want, want_losses = train_np(theirs(init_params()), steps)
    np.testing.assert_allclose(losses, want_losses, rtol=1e-10)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-9, atol=1e-12)
    assert losses[-1] < losses[0]


def test_mlp_learns_in_float32():
    _, labels, _ = make_data()
    params, losses, _ = train_zd(lambda ps: zd.optim.Adam(ps, lr=0.05), 25, dtype=np.float32)
    x, labels, _ = make_data()
    w1, b1, w2, b2 = params
    accuracy = ((np.tanh(x @ w1 + b1) @ w2 + b2).argmax(axis=1) == labels).mean()
    assert losses[-1] < 0.5 * losses[0] and accuracy >= 0.9, (losses, accuracy)


def test_optimizer_state_is_tensors_realized_with_the_parameters():
    ps = [zd.tensor(np.ones((4, 3), np.float32)), zd.tensor(np.ones(3, np.float32))]
    opt = zd.optim.Adam(ps, lr=0.1)
    for _ in range(3):
        new = opt.step([zd.tensor(np.full((4, 3), 0.5, np.float32)), zd.tensor(np.full(3, -1.0, np.float32))])
        zd.realize(*new)
        assert all(isinstance(m, zd.Tensor) and m.node.realized for m in opt.m + opt.v)
    np.testing.assert_allclose(opt.m[1].numpy(), -(1 - 0.9 ** 3) * np.ones(3), rtol=1e-6)
    sgd = zd.optim.SGD(ps, lr=0.1, momentum=0.5)
    new = sgd.step([zd.tensor(np.ones((4, 3), np.float32)), zd.tensor(np.ones(3, np.float32))])
    new[0].numpy()  # reading one parameter realizes its velocity with it
    assert sgd.velocity[0].node.realized


@pytest.mark.parametrize("make", [lambda ps: zd.optim.SGD(ps, lr=0.1), lambda ps: zd.optim.SGD(ps, 0.1, momentum=0.9),
                                  lambda ps: zd.optim.Adam(ps, lr=0.01)], ids=["sgd", "momentum", "adam"])
def test_one_fused_update_kernel_per_parameter(make):
    rng = np.random.default_rng(0)
    shapes = [(32, 16), (16,), (16, 4)]
    ps = [zd.tensor(rng.standard_normal(s).astype(np.float32)).realize() for s in shapes]
    gs = [zd.tensor(rng.standard_normal(s).astype(np.float32)).realize() for s in shapes]
    opt = make(ps)
    for step in range(3):  # from the second step on, the same kernels: step-dependent scalars are data
        new = opt.step(gs)
        zd.reset_stats()
        zd.realize(*new)
        st = zd.stats()
        assert st["kernels_launched"] == len(shapes), st
        if step == 2:
            assert st["kernel_cache_hits"] == len(shapes), st


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_precision_parameters_update_in_float32(dtype):
    """Adam's eps (1e-8) and a small squared gradient underflow in float16: the update and the state are float32."""
    dt = zd.dtype(dtype)
    npd = np.dtype(dt)
    p = zd.tensor(np.array([1.0, -2.0, 0.5]).astype(npd))
    opt = zd.optim.Adam([p], lr=0.1)
    g = zd.tensor(np.array([0.0, 1e-3, -4.0]).astype(npd))
    for _ in range(2):
        (p,) = opt.step([g])
        p.realize()
    assert p.dtype == dt and opt.v[0].dtype == zd.float32
    want = NpAdam([np.array([1.0, -2.0, 0.5])], 0.1)
    for _ in range(2):
        (w,) = want.step([np.array([0.0, 1e-3, -4.0]).astype(npd).astype(np.float64)])
    np.testing.assert_allclose(p.numpy().astype(np.float64), w, rtol=1e-2 if dtype == "bfloat16" else 2e-3)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_precision_gradients(dtype):
    """The gradient graph of a half-precision layer computes in float32 inside kernels, rounds on store."""
    dt = zd.dtype(dtype)
    rng = np.random.default_rng(3)
    a, w = rng.standard_normal((32, 16)), rng.standard_normal((16, 24)) * 0.25
    x, wt = zd.tensor(a).astype(dt), zd.tensor(w).astype(dt)
    gx, gw = zd.grad(zd.tanh(x @ wt).sum(), [x, wt])
    assert gx.dtype == dt and gw.dtype == dt
    ar, wr = x.numpy().astype(np.float64), wt.numpy().astype(np.float64)
    gh = 1 - np.tanh(ar @ wr) ** 2
    tol = 5e-2 if dtype == "bfloat16" else 1e-2
    np.testing.assert_allclose(gx.numpy().astype(np.float64), gh @ wr.T, rtol=tol, atol=tol)
    np.testing.assert_allclose(gw.numpy().astype(np.float64), ar.T @ gh, rtol=tol, atol=tol * 4)


def test_optimizer_errors():
    p = zd.tensor(np.ones(3, np.float32))
    with pytest.raises(zd.DTypeError):
        zd.optim.SGD([zd.tensor(np.ones(3, np.int32))], lr=0.1)
    opt = zd.optim.Adam([p], lr=0.1)
    with pytest.raises(zd.ShapeError):
        opt.step([zd.tensor(np.ones(4, np.float32))])
    with pytest.raises(zd.ShapeError):
        opt.step([])
    with pytest.raises(ValueError):
        zd.optim.Adam([p], lr=0.1, betas=(1.5, 0.9))


# ---- data parallelism ----------------------------------------------------------------------------------------

@pytest.fixture
def in_process_only(zd_session):
    if zd_session is not None and type(zd_session.backend).__name__ == "RayBackend":
        pytest.skip("starts in-process sessions of its own: tests/cluster/test_training_ray.py is the Ray run")


def test_sharded_training_on_3_workers_matches_1_worker(in_process_only):
    steps = 4
    make = (lambda ps: zd.optim.SGD(ps, lr=0.2, momentum=0.9))
    with detached_session():
        zd.init({"autotune": {"enabled": False}}, ray=False, devices={"opencl-cpu": 1})
        one, one_losses, _ = train_zd(make, steps)
    with detached_session():
        zd.init({"autotune": {"enabled": False}}, ray=False, devices={"opencl-cpu": 3})
        devs = [d.name for d in zd.devices()]
        three, three_losses, _ = train_zd(make, steps, shard_devices=devs)
        assert zd.stats()["transfers"] > 0
    want, want_losses = train_np(NpSGD(init_params(), 0.2, 0.9), steps)
    np.testing.assert_allclose(three_losses, one_losses, rtol=1e-12)
    np.testing.assert_allclose(three_losses, want_losses, rtol=1e-10)
    for a, b, w in zip(three, one, want):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)  # only the order of the batch sum differs
        np.testing.assert_allclose(a, w, rtol=1e-9, atol=1e-12)


def test_each_shard_runs_on_its_device(in_process_only):
    with detached_session():
        zd.init({"autotune": {"enabled": False}}, ray=False, devices={"opencl-cpu": 3})
        devs = [d.name for d in zd.devices()]
        x, _, onehot = make_data()
        params = [zd.tensor(p) for p in init_params()]
        xt, ot = zd.tensor(x).shard(devs), zd.tensor(onehot).shard(devs)
        loss = zd_loss(params, xt, ot)
        grads = zd.grad(loss, params)
        plan = zd.explain(loss, *grads)
        pinned = [k for k in plan.kernels if k.reason == "pinned"]
        by_device = {d: sum(k.device == d for k in pinned) for d in devs}
        # every shard's forward and backward kernels run on its own device, the same number on each
        assert len(set(by_device.values())) == 1 and by_device[devs[0]] >= 4, (by_device, plan)
        assert len(plan.kernels) - len(pinned) <= 6, plan  # the fixed-order combines (and the loss)
        zd.realize(loss, *grads)
        want_loss, want_grads = np_loss_and_grads(init_params(), x, onehot)
        np.testing.assert_allclose(loss.numpy(), want_loss, rtol=1e-12)
        for g, w in zip(grads, want_grads):
            np.testing.assert_allclose(g.numpy(), w, rtol=1e-10, atol=1e-13)


def test_elementwise_work_on_shards_runs_on_their_devices(in_process_only):
    """An op pushed through the shards runs per shard, on the shard's device, and only its result moves to be
    joined (before, the per-shard work was fused into the join's kernel on one device, which read every shard)."""
    with detached_session():
        zd.init({"autotune": {"enabled": False}}, ray=False, devices={"opencl-cpu": 2})
        devs = [d.name for d in zd.devices()]
        a = np.arange(4000, dtype=np.float32).reshape(1000, 4)
        x = zd.tensor(a).shard(devs)
        plan = zd.explain(x * 2)
        pinned = sorted(k.device for k in plan.kernels if k.reason == "pinned")
        assert pinned == sorted(devs), plan
        zd.reset_stats()
        r = ((x * 2 + 1).sum(axis=1)).realize()
        np.testing.assert_allclose(r.numpy(), (a * 2 + 1).sum(1))
        assert zd.stats()["bytes_transferred"] == 500 * 4  # the second shard's row sums, not its rows


def test_a_device_tensor_is_cut_where_it_lives_and_its_pieces_kept(in_process_only):
    with detached_session():
        zd.init({"autotune": {"enabled": False}}, ray=False, devices={"opencl-cpu": 2})
        devs = [d.name for d in zd.devices()]
        a = np.arange(4000, dtype=np.float32).reshape(1000, 4)
        w = zd.tensor(a, device=devs[0]).realize()
        ws = w.shard(devs)
        zd.reset_stats()
        ws.realize()
        moved = zd.stats()["bytes_transferred"]
        assert moved <= 2 * 8000, moved  # the second piece out, and back for the joined value: never all of w
        for i in range(3):  # the pieces stay realized: every op moves only its per-shard result
            zd.reset_stats()
            r = (ws + i).sum(axis=1).realize()
            np.testing.assert_allclose(r.numpy(), (a + i).sum(1))
            assert zd.stats()["bytes_transferred"] == 500 * 4


def test_sharded_ops_give_the_unsharded_results(in_process_only):
    """Ops pushed through the shards, and those that fall back to the joined value, against NumPy."""
    with detached_session():
        zd.init({"autotune": {"enabled": False}}, ray=False, devices={"opencl-cpu": 3})
        devs = [d.name for d in zd.devices()]
        rng = np.random.default_rng(5)
        a = rng.standard_normal((7, 4, 3))
        w = rng.standard_normal((3, 2))
        x = zd.tensor(a).shard(devs)
        cases = {
            "elementwise": (x * 2 + 1).exp(), "matmul": x @ zd.tensor(w), "reduce-other": x.sum(axis=2),
            "reduce-sharded": x.max(axis=0), "reduce-all": x.sum(), "mean": x.mean(axis=(0, 1)),
            "reshape": x.reshape(28, 3) * 3, "permute": x.permute(2, 0, 1) + 1, "flip": zd.flip(x, (0, 2)) * 1,
            "crop-fallback": x[1:5] * 2, "pad": zd.pad(x, ((0, 0), (1, 1), (0, 0))) + 0, "softmax": zd.softmax(x, 1),
            "prod": x.prod(axis=0), "argmax": zd.argmax(x, axis=0), "compare": (x > 0).any(axis=0),
            "split-reshape": x.reshape(7, 12)[:, ::2] * 1,
        }
        wants = {
            "elementwise": np.exp(a * 2 + 1), "matmul": a @ w, "reduce-other": a.sum(axis=2),
            "reduce-sharded": a.max(axis=0), "reduce-all": a.sum(), "mean": a.mean(axis=(0, 1)),
            "reshape": a.reshape(28, 3) * 3, "permute": a.transpose(2, 0, 1) + 1, "flip": np.flip(a, (0, 2)),
            "crop-fallback": a[1:5] * 2, "pad": np.pad(a, ((0, 0), (1, 1), (0, 0))),
            "softmax": np.exp(a) / np.exp(a).sum(axis=1, keepdims=True), "prod": a.prod(axis=0),
            "argmax": a.argmax(axis=0), "compare": (a > 0).any(axis=0), "split-reshape": a.reshape(7, 12)[:, ::2],
        }
        zd.realize(*cases.values())
        for name, t in cases.items():
            np.testing.assert_allclose(t.numpy(), wants[name], rtol=1e-12, atol=1e-12, err_msg=name)
