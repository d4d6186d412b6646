"""Set-up of the cluster tier: ONE local Ray instance with 3 PoCL OpenCL CPU workers
(`zd.init(devices={"opencl-cpu": 3})`, actors `zyx_dist/worker/opencl:0..2` in namespace `zyx_dist`, one
logical CPU each) shared by every test under tests/cluster.

How the session is switched:
- The root conftest's session fixture `zd_session` (an in-process session, `zd.init(ray=False)`) is
  overridden here by a function-scoped autouse fixture of the same name, so the cluster tier never starts
  the in-process session itself, and Ray starts only when a cluster test runs.
- Before each cluster test the fixture makes sure the shared Ray session is the current one: if some other
  session is running (the root conftest's in-process one, or one a test made for itself) it is shut down
  and the Ray session is started again (Ray start costs ~6 s, so tests that need their own session are
  grouped in modules of their own).
- Tests marked `own_session` manage the session themselves (they shut the shared one down, start what
  they need and shut it down in a `finally`); the fixture leaves them alone.
- After the last cluster test (the next test lies outside tests/cluster, or there is none) the Ray session
  is shut down (which stops the Ray instance `zd.init` started) and, if an in-process session was running
  when the cluster tier took over, an in-process session is started again (`zd.init(ray=False)`, what the
  root conftest gives the rest of the suite).

The runtime tier through Ray: tests/cluster/test_runtime_on_ray.py is collected by `RuntimeOnRay`, which
puts every module tests/runtime/test_*.py (except those in `RUNTIME_EXCLUDED`) under it as a sub-module,
e.g. `tests/cluster/test_runtime_on_ray.py::test_ops::test_arith[...]`. Each runtime module keeps its own
namespace, module fixtures and autouse fixtures (as if `from tests.runtime.test_ops import *` had been
written into a file of its own, without name clashes between modules), while its tests sit under
tests/cluster and so get this directory's fixtures: the shared Ray session. New runtime modules join
automatically. Single tests that cannot run here are listed in `RUNTIME_EXCLUDED_TESTS` with the reason.
"""

from __future__ import annotations

import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

import zyx_dist as zd
from zyx_dist.engine import session as zsession

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
if str(ROOT / "tests") not in sys.path:  # tests/helpers.py as `helpers` (the root conftest does the same)
    sys.path.insert(0, str(ROOT / "tests"))

RUNTIME_DIR = ROOT / "tests" / "runtime"
# modules of tests/runtime that do not go through the zyx_dist session at all
RUNTIME_EXCLUDED = {
    "test_worker.py": "tests the Worker class directly on a PoCL device, without a session or a backend",
    "test_worker_replay.py": "tests the Worker's batch templates directly on a PoCL device, without a session",
    "test_render_build.py": "builds the renderer's programs with pyopencl directly, without a session",
    "test_autotune_pocl.py": ("runs candidates on a Worker directly, and the tuner in in-process sessions of its own "
                              "(each would cost a Ray restart here) and in a second process"),
    "test_group_reduce_pocl.py": "runs in an in-process session of its own, with the cost model's options patched",
    "test_cli_smoke.py": "runs the real command in a subprocess with its own runtime: once (tests/runtime) is enough",
}
# single runtime tests left out here: (module file, test function name) -> reason
RUNTIME_EXCLUDED_TESTS = {
    ("test_memory.py", "test_out_of_memory_leaves_everything_usable"): (
        "shuts the session down and runs its own in-process one (`zd.init(ray=False, ...)`), restoring an in-process "
        "session at the end: through Ray it tests nothing more and costs two Ray restarts; the Ray equivalent is "
        "test_configured_sessions.py::test_ray_single_policy_session_and_shutdown"),
    ("test_errors.py", "test_bad_config"): (
        "checks config validation with `zd.init(config, ray=False)` after shutting the session down and restores an "
        "in-process session: nothing goes through Ray, and each of its 9 cases would cost a Ray restart"),
    ("test_errors.py", "test_shutdown_twice_is_safe"): (
        "shuts down and restarts an in-process session (`zd.init(ray=False)`); shutting the Ray session down twice "
        "is checked in test_configured_sessions.py::test_ray_single_policy_session_and_shutdown"),
    ("test_replay.py", "test_in_process_one_worker_replays_are_one_direct_call_with_the_queued_frees"): (
        "counts calls of the in-process workers' methods; through Ray a replay is a compiled graph's execution, "
        "checked in test_compiled_graphs.py"),
    ("test_plan_guess.py", "test_in_process_one_worker_replays_are_one_direct_call_with_the_queued_frees"): (
        "test_replay.py's, guessing: it counts calls of the in-process workers' methods"),
    ("test_replay.py", "test_uploads_go_with_the_direct_call_up_to_the_backends_limit"): (
        "watches the in-process workers' methods; through Ray the uploads inside the compact message are checked in "
        "test_compiled_graphs.py and test_replay_sockets.py"),
    ("test_plan_guess.py", "test_uploads_go_with_the_direct_call_up_to_the_backends_limit"): (
        "test_replay.py's, guessing: it watches the in-process workers' methods"),
}

# runtime tests that fail through Ray because of a library bug: (module file, test name) -> reason
RUNTIME_XFAIL: dict = {}  # (module, test) -> reason, for runtime tests that fail only on Ray (none now)

RAY_DEVICES = {"opencl-cpu": 3}
WORKERS = [f"opencl:{i}" for i in range(3)]

_shared: dict = {"session": None, "restore": False}


def _is_ray(s) -> bool:
    return s is not None and type(s.backend).__name__ == "RayBackend"


def shared_ray_session() -> zd.Session:
    """The shared Ray session with 3 OpenCL CPU workers, started (again) if it is not the current one."""
    s = zsession.running()
    if s is not None and s is _shared["session"] and not s.closed:
        return s
    if s is not None and not _is_ray(s) and _shared["session"] is None:
        _shared["restore"] = True  # the rest of the suite runs on an in-process session: give it back later
    zd.shutdown()
    _shared["session"] = zd.init(devices=RAY_DEVICES)
    return _shared["session"]


def leave_cluster_tier(restore: bool) -> None:
    """Shut the Ray session down; start the in-process session again if the rest of the suite had one."""
    s = zsession.running()
    if s is not None and (s is _shared["session"] or _is_ray(s)):
        zd.shutdown()
    _shared["session"] = None
    if restore and _shared["restore"] and zsession.running() is None:
        zd.init(ray=False)
    _shared["restore"] = False


@pytest.fixture(autouse=True)
def zd_session(request):
    """Overrides the root conftest's in-process session: the shared Ray session, unless the test is marked
    `own_session`."""
    if request.node.get_closest_marker("own_session") is not None:
        yield None
        return
    yield shared_ray_session()


@pytest.fixture
def ray_session(zd_session):
    """The shared Ray session (for tests that use it by name)."""
    assert zd_session is not None and _is_ray(zd_session)
    return zd_session


@pytest.fixture(scope="session")
def cluster():
    """This tier's constants and helpers, for tests (a test module cannot import this conftest reliably)."""
    return SimpleNamespace(devices=RAY_DEVICES, workers=WORKERS, runtime_dir=RUNTIME_DIR,
                           runtime_modules=runtime_modules, excluded=RUNTIME_EXCLUDED,
                           excluded_tests=RUNTIME_EXCLUDED_TESTS, xfail=RUNTIME_XFAIL,
                           shared_ray_session=shared_ray_session, is_ray=_is_ray)


def runtime_modules() -> list[Path]:
    """The runtime test modules that run again through Ray."""
    return [p for p in sorted(RUNTIME_DIR.glob("test_*.py")) if p.name not in RUNTIME_EXCLUDED]


class RuntimeOnRay(pytest.Module):
    """tests/cluster/test_runtime_on_ray.py: its own tests, then each runtime module as a sub-module."""

    submodules: list[str]

    def collect(self):
        yield from super().collect()
        self.submodules = []
        for path in runtime_modules():
            self.submodules.append(path.stem)
            yield RuntimeModule.from_parent(self, path=path, name=path.stem, nodeid=f"{self.nodeid}::{path.stem}")


class RuntimeModule(pytest.Module):
    """One runtime module collected under test_runtime_on_ray.py, minus its `RUNTIME_EXCLUDED_TESTS`."""

    def collect(self):
        for node in super().collect():
            key = (self.path.name, getattr(node, "originalname", node.name))
            if key in RUNTIME_EXCLUDED_TESTS:
                continue
            if key in RUNTIME_XFAIL:
                node.add_marker(pytest.mark.xfail(strict=True, reason=RUNTIME_XFAIL[key]))
            yield node


def pytest_pycollect_makemodule(module_path, parent):
    if module_path.name == "test_runtime_on_ray.py":
        return RuntimeOnRay.from_parent(parent, path=module_path)
    return None


class _LeaveClusterTier:
    """A global plugin (not a conftest hook, which pytest would call only for items whose file lies under
    tests/cluster; the runtime tests collected here live in tests/runtime): after the last test of the
    cluster tier, shut the Ray session down and give the rest of the suite its in-process session back."""

    def __init__(self, prefix: str):
        self.prefix = prefix  # node ids of this tier start with it

    def in_tier(self, item) -> bool:
        return item is not None and item.nodeid.startswith(self.prefix)

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_teardown(self, item, nextitem):
        yield  # the item's fixtures are torn down first
        if self.in_tier(item) and not self.in_tier(nextitem):
            leave_cluster_tier(restore=nextitem is not None)

    def pytest_sessionfinish(self, session, exitstatus):
        if _shared["session"] is not None:
            leave_cluster_tier(restore=False)


def pytest_configure(config):
    config.addinivalue_line("markers", "own_session: the test starts and shuts down its own zyx_dist session")
    try:
        prefix = HERE.relative_to(config.rootpath).as_posix() + "/"
    except ValueError:
        prefix = HERE.name + "/"
    if not config.pluginmanager.has_plugin("zyx-dist-cluster-tier"):
        config.pluginmanager.register(_LeaveClusterTier(prefix), "zyx-dist-cluster-tier")
