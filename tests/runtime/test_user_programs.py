"""Runtime regressions found by writing the programs a NumPy user writes (MLP and attention training,
NumPy functions on tensors, data-parallel steps), each checked against NumPy on the in-process session
of tests/conftest.py. One test per defect, named after what the user called."""

from __future__ import annotations

import numpy as np

import zyx_dist as zd


def test_round_with_decimals_as_numpy():
    """np.round(x, 1), x.round(2), zd.round(x, decimals=-1) as NumPy's (np.round(x, 1) raised a TypeError
    from inside zd.round, which took no decimals)."""
    f = np.array([1.005, 2.675, -0.125, 1234.5678, 0.5, 1.5, 2.5, -2.5, 1250.0, 1350.0], np.float32)
    for d in (0, 1, 2, 3, -1, -2):
        np.testing.assert_array_equal(np.round(zd.tensor(f), d).numpy(), np.round(f, d))
        np.testing.assert_array_equal(zd.tensor(f).round(d).numpy(), f.round(d))
        np.testing.assert_array_equal(zd.round(zd.tensor(f), decimals=d).numpy(), np.round(f, d))
    ints = np.array([15, 25, -15, -25, 14, -16, 7, 127, 5, 0, 95, 105])
    for dt in (np.int8, np.int32, np.int64, np.uint8):
        a = (np.abs(ints) if dt is np.uint8 else ints).astype(dt)
        for d in (0, 1, -1, -2, -20):
            got, want = np.round(zd.tensor(a), d).numpy(), np.round(a, d)
            assert got.dtype == want.dtype
            np.testing.assert_array_equal(got, want)
