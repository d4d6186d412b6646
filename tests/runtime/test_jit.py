"""`zd.jit` on PoCL (engine/jit.py): a captured step replays the plan of its first calls without running the
function, and gives what running it gives. The small-step loop and an MLP trained with SGD and Adam
against the same loop without the jit and against NumPy; the optimizer's state kept current by replays;
what must not be replayed (a changed closure tensor, a stateful optimizer that is not an argument, a value
read inside the function) runs the function every time after one warning; new constants, learning rates
and shapes trace again; bad arguments and results are refused by name.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from fuzzgraph import detached_session
from training import NpAdam, NpSGD, init_params, train_np, train_zd

import zyx_dist as zd

pytestmark = pytest.mark.usefixtures("tuning_off")


@pytest.fixture(autouse=True)
def warnings_are_errors():
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        yield


@pytest.fixture
def in_process_only(zd_session):
    if zd_session is not None and type(zd_session.backend).__name__ == "RayBackend":
        pytest.skip("starts in-process sessions of its own")


def _layer(y, w, b):
    return zd.maximum(y @ w + b, 0.0)


def _rng_arrays(*shapes, seed=0):
    rng = np.random.default_rng(seed)
    return [(rng.standard_normal(s) * 0.3).astype(np.float32) for s in shapes]


def test_small_step_loop_replays_and_matches_numpy():
    W, B, Y = _rng_arrays((16, 16), (16,), (8, 16))
    w, b, y = zd.tensor(W), zd.tensor(B), zd.tensor(Y)
    f = zd.jit(_layer)
    ref = Y.astype(np.float64)
    zd.reset_stats()
    for i in range(8):
        y = f(y, w, b)
        assert y.node.realized  # a jitted function returns its results realized
        ref = np.maximum(ref @ W + B, 0)
        np.testing.assert_allclose(y.numpy(), ref, rtol=1e-4, atol=1e-5, err_msg=f"call {i}")
    assert f.runs <= 3 and f.runs + f.replays == 8
    assert zd.stats()["plan_replays"] >= f.replays


def test_a_replay_that_fails_leaves_the_mirror_and_the_counts_as_they_were():
    """A replay updates the driver's mirror while the worker runs it; when the run then fails (the device full
    behind the driver's back), the mirror, the counts and the device's memory are as before, and the next call
    replays again with NumPy's results."""
    from test_replay import cap_memory, in_use, session

    W, B, Y = _rng_arrays((16, 16), (16,), (8, 16), seed=3)
    w, b, y = zd.tensor(W).realize(), zd.tensor(B).realize(), zd.tensor(Y).realize()
    f = zd.jit(_layer)
    for _ in range(4):
        f(y, w, b)
    dev, mirror = y.device, session().state
    base, replays = in_use(dev), zd.stats()["plan_replays"]
    used, known = mirror.used[dev], set(mirror.buffers)
    cap_memory(dev, in_use(dev))
    try:
        with pytest.raises(zd.OutOfMemoryError):
            f(y, w, b)
    finally:
        cap_memory(dev, None)
    assert zd.stats()["plan_replays"] == replays
    assert mirror.used[dev] == used and set(mirror.buffers) <= known
    assert in_use(dev) == base
    out = f(y, w, b)
    np.testing.assert_allclose(out.numpy(), np.maximum(Y @ W + B, 0), rtol=1e-5, atol=1e-6)
    assert zd.stats()["plan_replays"] == replays + 1


@pytest.mark.parametrize("name", ["sgd", "sgd-momentum", "adam"])
def test_jitted_training_is_the_training_without_it(name):
    factories = {
        "sgd": (lambda ps: zd.optim.SGD(ps, lr=0.3), lambda ps: NpSGD(ps, 0.3)),
        "sgd-momentum": (lambda ps: zd.optim.SGD(ps, lr=0.2, momentum=0.9), lambda ps: NpSGD(ps, 0.2, 0.9)),
        "adam": (lambda ps: zd.optim.Adam(ps, lr=0.05), lambda ps: NpAdam(ps, 0.05)),
    }
    ours, theirs = factories[name]
    steps = 7
    plain, plain_losses, _ = train_zd(ours, steps)
    jitted, jit_losses, f = train_zd(ours, steps, jit=True)
    assert f.replays >= steps - 4, (f.runs, f.replays)  # Adam's first step has a graph of its own
    np.testing.assert_array_equal(jit_losses, plain_losses)
    for a, b in zip(jitted, plain):
        np.testing.assert_array_equal(a, b)
    want, want_losses = train_np(theirs(init_params()), steps)
    np.testing.assert_allclose(jit_losses, want_losses, rtol=1e-10)
    for a, w in zip(jitted, want):
        np.testing.assert_allclose(a, w, rtol=1e-9, atol=1e-12)


def test_optimizer_state_stays_current_through_replays():
    """After replayed steps the optimizer (params, momenta, step count) is where running the steps leaves
    it: stepping it on without the jit continues the same training."""
    x, onehot = (np.asarray(a, np.float64) for a in _rng_arrays((12, 5), (12, 3), seed=3))
    xt, ot = zd.tensor(x), zd.tensor(onehot)
    from training import zd_loss

    def step(params, opt, xt, ot):
        loss = zd_loss(params, xt, ot)
        return loss, opt.step(zd.grad(loss, params))

    results = []
    for use_jit in (True, False):
        params = [zd.tensor(p) for p in init_params()]
        opt = zd.optim.Adam(params, lr=0.05)
        f = zd.jit(step) if use_jit else step
        for _ in range(6):
            loss, params = f(params, opt, xt, ot)
            zd.realize(loss, *params)  # (the jit's results are realized already)
        if use_jit:
            assert f.replays >= 2 and opt.steps == 6
        for _ in range(2):  # on without the jit, from the optimizer's own state
            params = opt.step(zd.grad(zd_loss(opt.params, xt, ot), opt.params))
        zd.realize(*params)
        results.append(([p.numpy() for p in params], [m.numpy() for m in opt.m], opt.steps))
    (pa, ma, sa), (pb, mb, sb) = results
    assert sa == sb == 8
    for a, b in zip(pa + ma, pb + mb):
        np.testing.assert_array_equal(a, b)


def test_closure_constants_and_host_data_replay():
    W, Y = _rng_arrays((8, 8), (4, 8), seed=5)
    w = zd.tensor(W).realize()
    scale = np.arange(8, dtype=np.float32) / 8

    def f(y):
        return _layer(y, w, zd.tensor(scale)) * 0.5  # w captured by value, host data made on every call

    g = zd.jit(f)
    y, ref = zd.tensor(Y), Y.astype(np.float64)
    for _ in range(6):
        y = g(y)
        ref = np.maximum(ref @ W + scale, 0) * 0.5
        np.testing.assert_allclose(y.numpy(), ref, rtol=1e-4, atol=1e-6)
    assert g.replays >= 3


def test_results_keep_their_containers():
    a, b = (zd.tensor(v) for v in _rng_arrays((3, 4), (3, 4), seed=7))

    @zd.jit
    def f(a, b, k):
        return {"sum": a + b, "pair": (a * k, None), "same": a, "list": [b - a]}

    for _ in range(4):
        out = f(a, b, 2.0)
    assert f.replays >= 1
    assert set(out) == {"sum", "pair", "same", "list"} and out["pair"][1] is None and out["same"] is a
    np.testing.assert_allclose(out["sum"].numpy(), a.numpy() + b.numpy(), rtol=1e-6)
    np.testing.assert_allclose(out["pair"][0].numpy(), a.numpy() * 2, rtol=1e-6)
    np.testing.assert_allclose(out["list"][0].numpy(), b.numpy() - a.numpy(), rtol=1e-6)


def test_new_constants_shapes_and_learning_rates_trace_again():
    f = zd.jit(lambda x, k: x * k + 1)
    x = zd.tensor(np.arange(6, dtype=np.float32))
    replays = []
    for k in (2.0,) * 4 + (3.0,) * 4:
        np.testing.assert_allclose(f(x, k).numpy(), np.arange(6) * k + 1)
        replays.append(f.replays)
    assert replays[3] >= 1 and replays[7] >= replays[3] + 1, replays  # each constant captured in turn
    y = zd.tensor(np.arange(10, dtype=np.float32))
    runs = f.runs
    np.testing.assert_allclose(f(y, 2.0).numpy(), np.arange(10) * 2.0 + 1)
    assert f.runs == runs + 1  # a new shape runs the function

    p = zd.tensor(np.ones(4))
    opt = zd.optim.SGD([p], lr=0.5)
    step = zd.jit(lambda opt, g: opt.step([g]))
    g = zd.tensor(np.full(4, 2.0))
    want = 1.0
    for lr in (0.5,) * 4 + (0.25,) * 4:
        opt.lr = lr
        (p,) = step(opt, g)
        want -= lr * 2
        np.testing.assert_allclose(p.numpy(), want)
    assert step.replays >= 2 and opt.steps == 8


def test_what_cannot_be_replayed_runs_every_time_after_a_warning():
    Y, = _rng_arrays((4, 4), seed=9)
    state = {"t": zd.tensor(np.ones((4, 4), np.float32))}

    def changing(y):
        state["t"] = state["t"] * 2  # Python-side state, not an argument
        return y + state["t"]

    def reads(y):
        return y * float(y.sum().item())

    for fn, want in ((changing, lambda i: Y + 2.0 ** (i + 1)), (reads, lambda i: Y * Y.sum())):
        f = zd.jit(fn)
        y = zd.tensor(Y)
        with pytest.warns(RuntimeWarning, match="runs it on every call"):
            outs = [f(y) for _ in range(5)]
        for i, o in enumerate(outs):
            np.testing.assert_allclose(o.numpy(), want(i), rtol=1e-5)
        assert f.replays == 0 and f.runs == 5


def test_an_optimizer_closed_over_is_not_replayed():
    p = zd.tensor(np.ones(3))
    opt = zd.optim.Adam([p], lr=0.1)
    ref = NpAdam([np.ones(3)], 0.1)
    step = zd.jit(lambda g: opt.step([g]))  # its momenta change behind the jit's back
    g = zd.tensor(np.array([1.0, -2.0, 3.0]))
    with pytest.warns(RuntimeWarning, match="optimizer holding it"):
        results = [step(g) for _ in range(5)]
    for _ in results:
        ref.step([np.array([1.0, -2.0, 3.0])])
    (p,) = results[-1]
    np.testing.assert_allclose(p.numpy(), ref.p[0], rtol=1e-12)
    assert step.replays == 0


def test_bad_arguments_and_results_are_named():
    x = zd.tensor(np.ones(3, np.float32))
    with pytest.raises(TypeError, match=r"args\[1\] is a ndarray"):
        zd.jit(lambda x, a: x + 1)(x, np.ones(3))
    with pytest.raises(TypeError, match=r"returned a str at result\[1\]"):
        zd.jit(lambda x: (x + 1, "no"))(x)
    with pytest.raises(TypeError, match="takes a function"):
        zd.jit(3)


def test_a_new_session_forgets_the_capture(in_process_only):
    f = zd.jit(lambda x: x * 3)
    x = zd.tensor(np.ones(5, np.float32))
    for _ in range(3):
        f(x)
    assert f.replays == 1
    with detached_session():
        zd.init(ray=False).tuner.enabled = False
        y = zd.tensor(np.ones(5, np.float32))
        np.testing.assert_allclose(f(y).numpy(), 3.0)
        assert f.replays == 1 and f.runs == 3
    np.testing.assert_allclose(f(x).numpy(), 3.0)


def test_a_small_view_of_an_argument_follows_its_values():
    """A small view is read on the host in a plain realize; in a capture it must stay a view of the
    argument, or a replay would return the first call's values."""
    f = zd.jit(lambda x: x[1:3] * 2)
    for i in range(5):
        x = zd.tensor(np.arange(8, dtype=np.float32) + i)
        np.testing.assert_allclose(f(x).numpy(), (np.arange(8)[1:3] + i) * 2.0)
    assert f.replays >= 2


def test_a_new_sharded_batch_every_step_on_3_workers(in_process_only):
    """Data parallel through zd.jit: the pieces of a sharded argument are arguments of the step, so a new
    batch sharded over 3 in-process workers each step replays, with the plain loop's losses and weights."""
    from training import make_data, zd_loss

    def train(use_jit: bool):
        devs = [d.name for d in zd.devices()]
        x, _, onehot = make_data()
        params = [zd.tensor(p) for p in init_params()]
        opt = zd.optim.Adam(params, lr=0.05)

        def step(params, opt, xt, ot):
            loss = zd_loss(params, xt, ot)
            return loss, opt.step(zd.grad(loss, params))

        f = zd.jit(step) if use_jit else step
        losses = []
        for i in range(6):
            rows = np.roll(np.arange(len(x)), 5 * i)  # another batch every step
            xt, ot = zd.tensor(x[rows]).shard(devs), zd.tensor(onehot[rows]).shard(devs)
            loss, params = f(params, opt, xt, ot)
            zd.realize(loss, *params)
            losses.append(loss.item())
        return losses, [p.numpy() for p in params], f

    with detached_session():
        zd.init({"autotune": {"enabled": False}}, ray=False, devices={"opencl-cpu": 3})
        plain_losses, plain, _ = train(False)
        jit_losses, jitted, f = train(True)
    assert f.replays >= 2, (f.runs, f.replays)
    np.testing.assert_array_equal(jit_losses, plain_losses)
    for a, b in zip(jitted, plain):
        np.testing.assert_array_equal(a, b)


# ---- what a capture must not confuse (an audit of zd.jit) ---------------------------------------------------

def test_a_tensor_given_twice_does_not_replay_for_two_different_tensors():
    w, b = zd.tensor([1.0, 2.0, 3.0]).realize(), zd.tensor([10.0, 20.0, 30.0]).realize()

    @zd.jit
    def g(x, y):
        return x * 2 + y

    for _ in range(3):
        np.testing.assert_allclose(g(w, w).numpy(), [3.0, 6.0, 9.0])
    np.testing.assert_allclose(g(w, b).numpy(), [12.0, 24.0, 36.0])  # (was b * 2 + b: one leaf bound for both)
    np.testing.assert_allclose(g(x=w, y=b).numpy(), [12.0, 24.0, 36.0])


def test_a_tensor_read_from_outside_and_also_given_runs_every_call():
    w, b = zd.tensor([1.0, 2.0, 3.0]).realize(), zd.tensor([10.0, 20.0, 30.0]).realize()

    def f(x):
        return x + w

    jf = zd.jit(f)
    with pytest.warns(RuntimeWarning, match="also one of its arguments"):
        jf(w)
    jf(w)
    jf(w)
    np.testing.assert_allclose(jf(b).numpy(), [11.0, 22.0, 33.0])  # (was b + b)


def test_a_tensor_read_from_outside_that_is_reassigned_is_read_anew():
    scale = [zd.tensor([1.0, 1.0, 1.0]).realize()]
    x = zd.tensor([1.0, 2.0, 3.0]).realize()
    w = scale[0]

    def make():
        def predict(v):
            return v * w
        return predict

    predict = zd.jit(make())
    for _ in range(3):
        np.testing.assert_allclose(predict(x).numpy(), [1.0, 2.0, 3.0])
    assert predict.replays >= 1
    cells = predict.fn.__closure__
    assert cells is not None and cells[0].cell_contents is w
    w = zd.tensor([5.0, 5.0, 5.0]).realize()  # the closure's cell now holds another tensor
    del scale
    np.testing.assert_allclose(predict(x).numpy(), [5.0, 10.0, 15.0])  # (the captured one was replayed)


def test_negative_zero_is_a_constant_of_its_own():
    w = zd.tensor([1.0, 2.0, 3.0]).realize()

    @zd.jit
    def h(x, c):
        return 1.0 / (x * c)

    for _ in range(3):
        assert np.isposinf(h(w, 0.0).numpy()).all()
    assert np.isneginf(h(w, -0.0).numpy()).all()


@pytest.mark.parametrize("jitted", [False, True])
@pytest.mark.parametrize("make", [lambda ps: zd.optim.SGD(ps, lr=0.1, momentum=0.9), lambda ps: zd.optim.Adam(ps, 0.05)],
                         ids=["sgd", "adam"])
def test_a_failed_step_leaves_the_optimizer_as_it_was(jitted, make):
    e0 = np.random.default_rng(0).standard_normal((6, 3)).astype(np.float32)
    y = zd.tensor(np.ones((2, 3), np.float32))

    def step(params, opt, idx):
        loss = ((params[0][idx] - y) ** 2).mean()
        return loss, opt.step(zd.grad(loss, params))

    def train(batches):
        params = [zd.tensor(e0)]
        opt = make(params)
        f = zd.jit(step) if jitted else step
        for idx in batches:
            try:
                loss, new = f(params, opt, zd.tensor(np.array(idx)))
                zd.realize(loss, *new)
                params = new
            except IndexError:
                pass
        return params[0].numpy(), opt.steps

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        got, steps = train([[1, 2], [0, 5], [2, 9], [3, 4], [1, 1]])  # 9: out of range of 6 rows
        want, want_steps = train([[1, 2], [0, 5], [3, 4], [1, 1]])
    assert steps == want_steps == 4
    np.testing.assert_allclose(got, want, rtol=1e-6)
