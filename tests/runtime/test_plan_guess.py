"""Guessed plans (engine/templates.replay_guess, fuse/plan_cache.PlanCache.guess): a structure whose plan was
replayed before is replayed again from the entry its fingerprint names, before its key is checked, and the key
is checked while the workers run it. The session turns this on only where a GPU runs the kernels (where the
check then costs no wall time); here it is turned on for the session's devices, for every graph size. A right
guess gives exactly a planned run's results; a wrong one is undone (its buffers freed, nothing attached) and
the realize plans as it would have, and its fingerprint is not guessed from again. The plan-template tests of
test_replay.py run here again with guessing on (but two that need structures never planned before)."""

from __future__ import annotations

import numpy as np
import pytest
import test_replay
from test_replay import in_use, rng, session, two_devices  # noqa: F401 -- the fixture, for the replay tests

import zyx_dist as zd
from zyx_dist.fuse import plan_cache

# the replay tests that need a structure no test planned before (their first realize must plan), which the
# same tests in test_replay.py are then no more
FRESH_ONLY = {"test_replays_skip_kernel_timing_unless_traced", "test_inputs_on_another_device_are_planned_again"}
for _name in dir(test_replay):  # every other replay test again, guessing (collected here as this module's own)
    if _name.startswith("test_") and _name not in FRESH_ONLY:
        globals()[_name] = getattr(test_replay, _name)


def test_in_process_one_worker_replays_are_one_direct_call_with_the_queued_frees():
    """test_replay's, guessing (named here so that the Ray tier, which counts no in-process calls, can leave it
    out by name)."""
    test_replay.test_in_process_one_worker_replays_are_one_direct_call_with_the_queued_frees()


def test_uploads_go_with_the_direct_call_up_to_the_backends_limit():
    """test_replay's, guessing (named here for the same reason)."""
    test_replay.test_uploads_go_with_the_direct_call_up_to_the_backends_limit()


@pytest.fixture(autouse=True)
def guessing(monkeypatch):
    monkeypatch.setenv("ZYX_DIST_PLAN_GUESSES", "all")  # for a session a test makes
    s = session()
    monkeypatch.setattr(s, "guess_plans", True)
    monkeypatch.setattr(plan_cache, "GUESS_MIN_NODES", 0)
    return s


def test_guessing_is_on_by_default_only_with_a_gpu(monkeypatch):
    from zyx_dist.engine import templates

    monkeypatch.delenv("ZYX_DIST_PLAN_GUESSES")
    assert templates.guesses_enabled(True) and not templates.guesses_enabled(False)
    for off in ("0", "off", "false"):
        monkeypatch.setenv("ZYX_DIST_PLAN_GUESSES", off)
        assert not templates.guesses_enabled(True)
    monkeypatch.setenv("ZYX_DIST_PLAN_GUESSES", "all")
    assert templates.guesses_enabled(False)


def test_a_repeated_structure_is_guessed_with_numpy_results(guessing):
    """A training-step-like loop: a new host batch each step, the same weights; the plan is guessed from the
    third step on (the first plans, the second keeps the template and the fingerprint)."""
    w_host, b_host = rng((32, 16), 21, 0.3), rng((16,), 22)
    w, b = zd.tensor(w_host).realize(), zd.tensor(b_host).realize()
    guessed, wrong = guessing.plans.guessed, guessing.plans.mispredicted
    for i in range(6):
        x_host = rng((8, 32), 30 + i)
        y = zd.relu(zd.tensor(x_host) @ w + b).realize()
        want = np.maximum(x_host.astype(np.float64) @ w_host + b_host, 0)
        np.testing.assert_allclose(y.numpy(), want, rtol=1e-5, atol=1e-6)
    assert guessing.plans.guessed - guessed >= 3
    assert guessing.plans.mispredicted == wrong


def test_a_wrong_guess_is_undone_and_never_made_again(guessing):
    """x * 3 + 1 has x * 2 + 1's fingerprint (the same nodes, leaves and targets; another constant): its
    first realize replays x * 2 + 1's plan, finds the key differs, frees what that run made and plans."""
    a = rng((512,), seed=23)
    x = zd.tensor(a).realize()
    dev = x.device
    for _ in range(4):
        np.testing.assert_array_equal((x * 2 + 1).realize().numpy(), a * 2 + 1)
    base = in_use(dev)
    guessed, wrong = guessing.plans.guessed, guessing.plans.mispredicted
    replays = zd.stats()["plan_replays"]
    y = (x * 3 + 1).realize()
    np.testing.assert_array_equal(y.numpy(), a * 3 + 1)
    assert guessing.plans.mispredicted == wrong + 1 and guessing.plans.guessed == guessed
    assert zd.stats()["plan_replays"] == replays  # the undone run is not counted
    del y
    assert in_use(dev) == base  # the wrong run's result went with it
    for _ in range(3):  # both structures still replay, through the full key now
        np.testing.assert_array_equal((x * 2 + 1).realize().numpy(), a * 2 + 1)
        np.testing.assert_array_equal((x * 3 + 1).realize().numpy(), a * 3 + 1)
    assert guessing.plans.guessed == guessed and guessing.plans.mispredicted == wrong + 1
    assert zd.stats()["plan_replays"] >= replays + 4
    np.testing.assert_array_equal(x.numpy(), a)


def test_a_wrong_guess_with_a_host_leaf_keeps_its_data_on_the_host(guessing):
    """The wrong guess's run uploaded the new host leaf: undone, the leaf keeps its host data, and the plan
    that follows uploads it again."""
    a = rng((300,), seed=24)
    x = zd.tensor(a).realize()
    for i in range(4):
        s = np.float32(i + 1)
        np.testing.assert_array_equal((x * zd.tensor(s) - 1).realize().numpy(), a * s - 1)
    wrong = guessing.plans.mispredicted
    s = zd.tensor(np.float32(7))
    y = (x * s + 1).realize()  # `+ 1` where the guessed plan has `- 1`: the same fingerprint
    np.testing.assert_array_equal(y.numpy(), a * np.float32(7) + 1)
    assert guessing.plans.mispredicted == wrong + 1
    np.testing.assert_array_equal(s.numpy(), np.float32(7))


def test_targets_never_guessed_are_not_walked_for_a_guess(guessing, monkeypatch):
    """The fingerprint's walk runs only for targets whose ops and shapes some guess has: other graphs pay
    nothing for guessing."""
    walks = []
    real = plan_cache.walk
    monkeypatch.setattr(plan_cache, "walk", lambda targets, *heads: walks.append(1) or real(targets, *heads))
    x = zd.tensor(rng((7, 13), seed=25)).realize()
    y = (x.sum(axis=1) * 5).realize()  # targets of a shape nothing here was guessed from
    assert y.shape == (7,) and not walks


def test_a_small_graph_is_guessed_only_where_its_kernels_outlast_its_check(guessing, monkeypatch):
    """Below GUESS_MIN_NODES a structure is guessed only when its replay's wait for the workers (its plan's
    measured device time, and any round trip to them) is at least GUESS_WAIT_OVER_CHECK times its check (as
    long as its lookup took: the check then hides behind that wait); otherwise it is keyed before it runs, as without guessing. The same realizes give NumPy's results
    either way."""
    monkeypatch.setattr(plan_cache, "GUESS_MIN_NODES", 64)
    # no device time is long enough / any is (each with a structure of its own: remember() decides once for each)
    for ratio, guesses, cols in ((1e9, False, 256), (0.0, True, 384)):
        monkeypatch.setattr(plan_cache, "GUESS_WAIT_OVER_CHECK", ratio)
        a = rng((64, cols), seed=31)
        x = zd.tensor(a).realize()
        want = (a - a.mean(axis=-1, keepdims=True)) / np.sqrt(a.var(axis=-1, keepdims=True) + 1e-5)
        guessed = guessing.plans.guessed
        for _ in range(6):  # plan (and compile), plan and keep the template, replay and decide, guess or key
            np.testing.assert_allclose(zd.layer_norm(x, axis=-1).realize().numpy(), want, rtol=1e-4, atol=1e-5)
        assert guessing.plans.guessed - guessed >= 2 if guesses else guessing.plans.guessed == guessed


def test_the_guess_rule_reads_each_kernels_least_measured_time(guessing):
    """The device time a guess is decided on (`templates.hidden_seconds`) is each kernel's least measured time,
    never more than the cost model's moving average of the same runs (which keeps half of a first, cold
    launch), plus the backend's round trip (none in process, Ray's least through Ray)."""
    from zyx_dist.engine import templates

    a = rng((48, 40), seed=41)
    x = zd.tensor(a).realize()
    for _ in range(4):
        np.testing.assert_allclose(zd.softmax(x * 3, axis=-1).realize().numpy(),
                                   np.exp(3 * a - (3 * a).max(-1, keepdims=True)) /
                                   np.exp(3 * a - (3 * a).max(-1, keepdims=True)).sum(-1, keepdims=True),
                                   rtol=1e-5, atol=1e-6)
    s = guessing
    assert s.fastest and s.fastest.keys() <= s.state.measured.keys()
    assert all(0 < s.fastest[k] <= s.state.measured[k] for k in s.fastest)
    entry = next(e for e in s.plans.entries.values() if e.templates)
    t = next(iter(entry.templates.values()))
    assert templates.hidden_seconds(s, entry) == sum(s.fastest.get((p.kernel, p.device), 0.0)
                                                     for p in t.schedule.placements) + s.backend.round_trip_seconds


def test_a_small_graph_whose_check_outlasts_its_kernels_is_guessed_no_more(guessing, monkeypatch):
    """In process a guessed replay's check runs before its synchronize. Where that synchronize finds the device
    already idle (`InProcessBackend.idle_at_sync`: the check outlasted the kernels), GUESS_IDLE_LIMIT such
    replays of a small graph end its guesses, and its realizes key it before they launch again; where the
    kernels outlast the check, it stays guessed. NumPy's results either way."""
    if not hasattr(guessing.backend, "idle_at_sync"):
        pytest.skip("in process only: through Ray the round trip hides the check")
    monkeypatch.setattr(plan_cache, "GUESS_MIN_NODES", 64)
    monkeypatch.setattr(plan_cache, "GUESS_WAIT_OVER_CHECK", 0.0)  # every small graph is guessed at first
    for idle, cols in ((True, 200), (False, 216)):
        monkeypatch.setattr(type(guessing.backend), "idle_at_sync", lambda self, v=idle: v)
        a = rng((16, cols), seed=51)
        x = zd.tensor(a).realize()
        guessed = guessing.plans.guessed
        for _ in range(10):  # plan, plan and keep the template, replay and remember, then guess (or key)
            np.testing.assert_allclose((x * 2 + 1).realize().numpy(), a * 2 + 1, rtol=1e-6)
        made = guessing.plans.guessed - guessed
        assert made == (plan_cache.GUESS_IDLE_LIMIT if idle else 7), (idle, made)


def test_idle_synchronizes_end_guesses_only_in_a_row(guessing, monkeypatch):
    """On a busy host a check now and then outlasts kernels it usually ends before: idle synchronizes that are not
    GUESS_IDLE_LIMIT in a row keep a small graph guessed; that many in a row end its guesses."""
    if not hasattr(guessing.backend, "idle_at_sync"):
        pytest.skip("in process only: through Ray the round trip hides the check")
    monkeypatch.setattr(plan_cache, "GUESS_MIN_NODES", 64)
    monkeypatch.setattr(plan_cache, "GUESS_WAIT_OVER_CHECK", 0.0)
    limit = plan_cache.GUESS_IDLE_LIMIT
    pattern = ([True] * (limit - 1) + [False]) * 4 + [True] * limit + [True] * 3
    syncs = iter(pattern)
    monkeypatch.setattr(type(guessing.backend), "idle_at_sync", lambda self: next(syncs))
    a = rng((16, 232), seed=52)
    x = zd.tensor(a).realize()
    for _ in range(3):  # plan, plan and keep the template, replay and remember
        (x * 3 - 2).realize()
    guessed = guessing.plans.guessed
    for _ in range(len(pattern)):
        np.testing.assert_allclose((x * 3 - 2).realize().numpy(), a * 3 - 2, rtol=1e-6)
    # every replay of the four broken runs, then the run of `limit` in a row: guessed; the last 3 keyed first
    assert guessing.plans.guessed - guessed == 4 * limit + limit
