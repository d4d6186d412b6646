"""Fixtures shared by runtime-tier modules: `tuning_off`, the session's autotuner off for a test (modules
whose many small kernels would otherwise each be tuned: `pytestmark = pytest.mark.usefixtures("tuning_off")`)."""

from __future__ import annotations

import pytest

from zyx_dist.engine import session as zsession


@pytest.fixture
def tuning_off(zd_session):
    s = zd_session if zd_session is not None else zsession.running()
    old = s.tuner.enabled
    s.tuner.enabled = False
    yield
    s.tuner.enabled = old
