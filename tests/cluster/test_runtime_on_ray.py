"""The whole runtime tier (tests/runtime/test_*.py except test_worker.py) again, through Ray with the 3
OpenCL CPU workers of the shared cluster session.

The runtime modules are collected as sub-modules of this one by `RuntimeOnRay` in tests/cluster/conftest.py
(e.g. `tests/cluster/test_runtime_on_ray.py::test_ops::test_arith[...]`): each keeps its own namespace and
fixtures, as `from tests.runtime.test_ops import *` in a file of its own would, and every test gets the
cluster tier's session fixture, so it runs on the Ray workers. The tests below check that this set-up
holds: the session is the Ray one, every runtime module is collected, and every exclusion still names a
real test.
"""

from __future__ import annotations

import ast

import ray

import zyx_dist as zd
from zyx_dist.engine import session as zsession


def test_runtime_tests_here_run_on_the_shared_ray_session(request, cluster, zd_session):
    assert type(request.node.parent).__name__ == "RuntimeOnRay"
    assert zsession.running() is zd_session and cluster.is_ray(zd_session)
    assert zd_session.device_names == cluster.workers
    assert ray.is_initialized()
    x = (zd.arange(6) * 2).realize()
    assert x.device in cluster.workers and x.tolist() == [0, 2, 4, 6, 8, 10]


def test_every_runtime_module_is_collected_here(request, cluster):
    on_disk = {p.name for p in cluster.runtime_dir.glob("test_*.py")}
    assert {p.name for p in cluster.runtime_modules()} == on_disk - set(cluster.excluded)
    assert request.node.parent.submodules == [p.stem for p in cluster.runtime_modules()]


def test_every_excluded_or_xfailed_runtime_test_still_exists(cluster):
    for (module, name), reason in [*cluster.excluded_tests.items(), *cluster.xfail.items()]:
        assert reason
        tree = ast.parse((cluster.runtime_dir / module).read_text())
        names = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
        assert name in names, f"{module}::{name} is excluded or xfailed in the Ray run but no longer exists"
