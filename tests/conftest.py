"""Shared pytest set-up: one in-process zyx_dist session (no Ray) for the whole test run.

The runtime tier talks to PoCL's OpenCL CPU device through the in-process backend. The session is
started once (`zd.init(ray=False)`) and shut down at the end; tests that need a differently configured
session (tests/runtime/test_memory.py) shut it down, re-init, and restore the default in a `finally`.
The unit tier overrides the fixture with NumPy reference devices (tests/unit/conftest.py).
"""

from __future__ import annotations

import os
import sys

import pytest

# tests/helpers.py is imported as `helpers` whatever pytest's import mode.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

# ZYX_DIST_NO_OPENCL=1: pyopencl cannot be imported (as on a machine without it), which the unit tier must
# not notice: `ZYX_DIST_NO_OPENCL=1 python -m pytest -q tests/unit` passes.
if os.environ.get("ZYX_DIST_NO_OPENCL") == "1":
    sys.modules["pyopencl"] = None  # type: ignore[assignment] -- `import pyopencl` raises ImportError


@pytest.fixture(scope="session", autouse=True)
def zd_session():
    import zyx_dist as zd

    zd.shutdown()  # in case something started an implicit session at import time
    session = zd.init(ray=False)
    yield session
    zd.shutdown()


@pytest.fixture
def tuning_off(zd_session):
    """The session's autotuner off for a test: modules whose many small kernels would each be tuned use it
    (`pytestmark = pytest.mark.usefixtures("tuning_off")`)."""
    from zyx_dist.engine import session as zsession

    s = zd_session if zd_session is not None else zsession.running()
    old = s.tuner.enabled
    s.tuner.enabled = False
    yield
    s.tuner.enabled = old
