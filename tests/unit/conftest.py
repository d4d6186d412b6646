"""The unit tier's session: two NumPy reference devices (`reference:0`, `reference:1`, runtime/reference.py)
in this process, so every unit test that realizes a tensor gets real results, interpreted from the kernels'
op lists, with no OpenCL or CUDA at all (`ZYX_DIST_NO_OPENCL=1` proves it: see tests/conftest.py). Whatever
runs on a real device belongs to tests/runtime."""

from __future__ import annotations

import pytest

UNIT_DEVICES = ["reference:0", "reference:1"]


@pytest.fixture(scope="session", autouse=True)
def zd_session():
    import zyx_dist as zd

    zd.shutdown()  # the runtime tier's session, when the tiers run in one process
    session = zd.init(ray=False, devices=UNIT_DEVICES)
    yield session
    zd.shutdown()
