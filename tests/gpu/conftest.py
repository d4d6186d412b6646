"""Set-up of the GPU tier (marker `gpu`): CUDA workers through CuPy, NCCL between them, and the NVIDIA
OpenCL platform. Every test here is marked `gpu` and skips cleanly where cupy, a CUDA GPU, a second GPU,
Ray or an NVIDIA OpenCL device is missing, so `python3 -m pytest -m gpu tests/gpu -q` runs everything the
machine can run. The root conftest's in-process PoCL session (`zd_session`) is overridden: each module
starts the session it needs (`zd.init(ray=False, devices=["cuda:0"])`, Ray with two CUDA workers, ...)
and shuts it down at its end.

ZYX_DIST_GPU_SUITE=0 leaves out the runs of the whole runtime suite on each GPU backend (subprocesses,
the slowest part: a few minutes each).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
for p in (str(HERE), str(ROOT / "tests"), str(ROOT)):
    if p not in sys.path:
        sys.path.insert(0, p)


# modules whose tests are independent of each other (no shared session): pytest-xdist may spread them
SPREAD = {"test_autotune_gpu"}


def pytest_collection_modifyitems(config, items):
    """Marks every test here `gpu`. Under `pytest -n N --dist loadgroup` each module stays on one xdist worker
    (its module-scoped session is started once), except the SPREAD ones, whose tests go wherever is free."""
    for item in items:
        path = Path(str(item.fspath)).resolve()
        if path.parent == HERE:
            item.add_marker(pytest.mark.gpu)
            if path.stem not in SPREAD:
                item.add_marker(pytest.mark.xdist_group(path.stem))


@pytest.fixture(scope="module")
def cuda_worker():
    """A zyx_dist worker on cuda:0, without a session, for tests that run kernels they render themselves."""
    from zyx_dist.runtime.worker import Worker

    with Worker("cuda:0") as w:
        yield w


@pytest.fixture(scope="module", autouse=True)
def zd_session():
    """Overrides the root conftest's in-process PoCL session: each GPU module starts its own. An
    in-process session that was running before the module is started again after it, so tests outside
    tests/gpu that run later in the same pytest run still find one."""
    import zyx_dist as zd
    from zyx_dist.engine import session as zsession

    running = zsession.running()
    restore = running is not None and type(running.backend).__name__ == "InProcessBackend"
    zd.shutdown()
    yield None
    zd.shutdown()
    if restore:
        zd.init(ray=False)
