"""Deep programs on Ray (3 PoCL workers): a 10,000-op chain and a wide sum realize through the Ray
backend, where every realized tensor also gets a lineage recipe of its whole history; then the worker
holding them is killed, and reading them again recomputes them from those recipes on the restarted
worker. The module runs its own session (`ray.max_restarts` high enough for its kills)."""

from __future__ import annotations

import time

import numpy as np
import pytest
from helpers import deep_chain

import zyx_dist as zd

ray = pytest.importorskip("ray")

pytestmark = pytest.mark.own_session

VICTIM = "opencl:1"


@pytest.fixture(scope="module")
def ray_session():
    zd.shutdown()
    s = zd.init(config={"ray": {"max_restarts": 5}}, devices={"opencl-cpu": 3})
    try:
        yield s
    finally:
        zd.shutdown()


def kill(dev: str) -> None:
    """Kill the worker's actor and return once Ray restarted it (a new, empty process)."""
    actor = ray.get_actor(f"zyx_dist/worker/{dev}", namespace="zyx_dist")
    old = ray.get(actor.incarnation.remote(), timeout=60)
    ray.kill(actor, no_restart=False)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if ray.get(actor.incarnation.remote(), timeout=10) != old:
                return
        except (ray.exceptions.RayActorError, ray.exceptions.GetTimeoutError):
            pass
        time.sleep(0.1)
    raise AssertionError(f"{dev} was not restarted")


def test_deep_tensors_are_recomputed_from_their_lineage(ray_session):
    a = np.linspace(-2, 2, 4, dtype=np.float32)
    b = np.random.default_rng(1).standard_normal((4, 4)).astype(np.float32)
    deep = deep_chain(zd.tensor(a, device=VICTIM), 10_000).realize()
    rows = deep_chain(zd.tensor(b, device=VICTIM), 1000, row_max_every=10).realize()
    arrays = [np.full(3, i, np.float32) for i in range(600)]
    wide = zd.tensor(arrays[0], device=VICTIM)
    for x in arrays[1:]:
        wide = wide + zd.tensor(x, device=VICTIM)
    wide = wide.realize()
    assert VICTIM in (deep.device, rows.device, wide.device)
    before = zd.stats()["recoveries"]
    kill(VICTIM)
    np.testing.assert_allclose(deep.numpy(), deep_chain(a, 10_000), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(rows.numpy(), deep_chain(b, 1000, row_max_every=10), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(wide.numpy(), np.sum(arrays, axis=0), rtol=1e-6)
    assert zd.stats()["recoveries"] > before
    # and the recomputed tensors go on: a further deep step on them, then another loss
    more = deep_chain(deep, 2000).realize()
    kill(more.device)
    np.testing.assert_allclose(more.numpy(), deep_chain(deep_chain(a, 10_000), 2000), rtol=1e-4, atol=1e-5)
