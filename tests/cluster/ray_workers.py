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
    deadline = time.monotonic() + 60
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
