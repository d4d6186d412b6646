"""Regressions found by the second fuzzing round (matmul, scans, sorting, gathers, integer and mixed dtypes,
against NumPy on the OpenCL CPU device): each test is the minimised program of one bug, with NumPy's answer."""

from __future__ import annotations

import numpy as np
import pytest

import zyx_dist as zd

pytestmark = pytest.mark.usefixtures("tuning_off")

_COMPARISONS = ["equal", "not_equal", "less", "less_equal", "greater", "greater_equal"]


@pytest.mark.parametrize("name", _COMPARISONS)
@pytest.mark.parametrize("signed", [np.int64, np.int8])
def test_signed_against_uint64_compares_exact_values(name, signed):
    # int64 vs uint64 promotes to float64, where 2**53 + 1 == 2**53; NumPy 2 compares the exact values
    s = np.array([2**53 + 1, -1, 2**63 - 1, -2**63, 5], np.int64).astype(signed)
    u = np.array([2**53, 2**64 - 1, 2**63 - 1, 2**63, 5], np.uint64)
    f = getattr(zd, name)
    for x, y in [(s, u), (u, s)]:
        want = getattr(np, name)(x, y)
        for zx, zy in [(zd.tensor(x), zd.tensor(y)), (zd.tensor(x), y), (x, zd.tensor(y))]:
            np.testing.assert_array_equal(f(zx, zy).numpy(), want)
