"""A worker's Reload that cannot allocate keeps the spilled host copy (tried again, it works)."""

from __future__ import annotations

import numpy as np

from zyx_dist.protocol import Alloc, CopyIn, CopyOut, Done, Failed, Free, Reload, Spill
from zyx_dist.runtime.worker import Worker


def test_reload_that_does_not_fit_keeps_the_host_copy():
    data = np.arange(1000, dtype=np.float32)
    with Worker("reference:0", memory_limit=6000) as w:
        res = w.run([Alloc(1, 4000), CopyIn(1, data), Spill(1), Alloc(2, 4000), Reload(1)])
        assert [type(r) for r in res.results] == [Done, Done, Done, Done, Failed]
        assert res.results[-1].error == "OutOfMemoryError"
        res = w.run([Free(2), Reload(1), CopyOut(1, "float32", (1000,)), Free(1)])
        assert all(type(r) is Done for r in res.results), res.results
        np.testing.assert_array_equal(res.results[2].value, data)
