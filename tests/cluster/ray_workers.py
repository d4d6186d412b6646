"""Helpers of the cluster tests that kill, inspect and load Ray workers (test_compiled_graphs.py,
test_replay_sockets.py): the named actors of the running session, restarts awaited, memory in use, data."""

from __future__ import annotations

import gc
import time

import numpy as np
import pytest
import ray

import zyx_dist as zd
from zyx_dist.engine import session as zsession

NAMESPACE = "zyx_dist"


def rng(shape, seed=0, scale=1.0) -> np.ndarray:
    return (np.random.default_rng(seed).uniform(-1, 1, shape) * scale).astype(np.float32)


def backend():
    return zsession.current().backend


def actor(dev: str):
    return ray.get_actor(f"zyx_dist/worker/{dev}", namespace=NAMESPACE)


def incarnation(dev: str, timeout: float = 60.0) -> str:
    return ray.get(actor(dev).incarnation.remote(), timeout=timeout)


def kill(dev: str, how: str) -> None:
    """Kill worker `dev` and return once Ray has restarted it (a new, empty process)."""
    old = incarnation(dev)
    h = actor(dev)
    if how == "ray.kill":
        ray.kill(h, no_restart=False)
    else:
        with pytest.raises(ray.exceptions.RayActorError):
            ray.get(h.crash.remote(), timeout=60)
    await_restart(dev, old)


def await_restart(dev: str, old: str, seconds: float = 60.0) -> None:
    """Return once worker `dev` answers from an incarnation other than `old` (Ray restarted it)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            if incarnation(dev, timeout=10) != old:
                return
        except (ray.exceptions.RayActorError, ray.exceptions.GetTimeoutError):
            pass
        time.sleep(0.1)
    raise AssertionError(f"{dev} was not restarted")


def in_use(dev: str) -> int:
    gc.collect()
    (zd.zeros(1, device=dev) + 1).numpy()  # a batch on dev after the frees, so the figure is fresh
    gc.collect()
    return zd.stats()["bytes_in_use"][dev]


def chain(x, wt, a: np.ndarray, w: np.ndarray, n: int):
    ref = a.astype(np.float64)
    for _ in range(n):
        x = zd.tanh(x @ wt)
        ref = np.tanh(ref @ w)
    return x, ref


def failure_inside_a_replay(dev: str, runs) -> None:
    """A replay that fails on worker `dev` (its memory fuller than the driver knows) raises the planned run's
    error twice over, each time through the path `runs()` counts, leaves nothing behind, and the next replay
    works."""
    a = rng((8192,), seed=6)
    x = zd.tensor(a, device=dev).realize()
    for _ in range(3):
        keep = (x + 7).realize()
    del keep
    base, replays, before = in_use(dev), zd.stats()["plan_replays"], runs()
    ray.get(actor(dev).limit_memory.remote(base))
    try:
        for _ in range(2):  # repeated failures leave nothing behind either
            with pytest.raises(zd.OutOfMemoryError, match="out of memory"):
                (x + 7).realize()
    finally:
        ray.get(actor(dev).limit_memory.remote(None))
    assert runs() == before + 2  # the failures went this way
    assert zd.stats()["plan_replays"] == replays
    assert in_use(dev) == base
    replays = zd.stats()["plan_replays"]  # (in_use's own graph may be a replay too)
    y = (x + 7).realize()
    np.testing.assert_array_equal(y.numpy(), a + 7)
    assert zd.stats()["plan_replays"] == replays + 1 and zd.stats()["recoveries"] == 0


def steps_across_a_kill(dev: str, how: str, before_kill=None) -> None:
    """A repeated step on worker `dev`, the worker killed (`kill`) between two of its replays: the next
    realize recovers and recomputes from lineage, and the results and inputs come out right.
    `before_kill()` runs just before the kill."""
    a, b = rng((64, 64), seed=7), rng((64, 64), seed=8, scale=0.2)
    x, w = zd.tensor(a, device=dev).realize(), zd.tensor(b, device=dev).realize()
    y = x
    want = a.astype(np.float64)
    for _ in range(4):
        y = zd.relu(y @ w + 0.5).realize()
        want = np.maximum(want @ b + 0.5, 0)
    assert zd.stats()["plan_replays"] >= 1
    before = zd.stats()["recoveries"]
    if before_kill is not None:
        before_kill()
    kill(dev, how)
    for _ in range(4):  # the first finds the worker gone, recovers, recomputes y from lineage; then replays
        y = zd.relu(y @ w + 0.5).realize()
        want = np.maximum(want @ b + 0.5, 0)
    np.testing.assert_allclose(y.numpy(), want, rtol=1e-4, atol=1e-5)
    np.testing.assert_array_equal(x.numpy(), a)
    assert zd.stats()["recoveries"] > before
