"""Fuzzing against NumPy on the in-process backend (issue 7, item 4): random multi-op programs from
tests/fuzzgraph.py (broadcasting, movement, reductions, casts, shared subexpressions, several outputs
realized together) must give NumPy's shapes and dtypes and its values (bit for bit where every step is
exact, else within the error bound tracked while drawing).

`ZYX_DIST_FUZZ_EXAMPLES` sets the number of examples (default 80; nightly e.g. 5000). The determinism
check runs the same seeded programs (inputs from `zd.uniform(seed=...)` too) on an in-process session with
1 worker and on one with 3 workers (round_robin, so kernels really spread and data moves between workers)
and wants the same result bits.

When tests/cluster/test_runtime_on_ray.py runs this module again on the Ray session, the tests skip:
tests/cluster/test_fuzz_ray.py is the Ray run.
"""

from __future__ import annotations

import os

import pytest
from fuzzgraph import check_against_numpy, detached_session, program_from_seed, programs, result_bits
from hypothesis import HealthCheck, given, settings

import zyx_dist as zd
from zyx_dist.engine import session as zsession

EXAMPLES = int(os.environ.get("ZYX_DIST_FUZZ_EXAMPLES", "80"))
DETERMINISM_SEEDS = max(12, EXAMPLES // 4)
RUNS = {"numpy": 0, "determinism": 0}


@pytest.fixture(autouse=True)
def in_process_only():
    s = zsession.running()
    if s is not None and type(s.backend).__name__ == "RayBackend":
        pytest.skip("the Ray run of the fuzzer is tests/cluster/test_fuzz_ray.py")


@settings(max_examples=EXAMPLES, deadline=None, print_blob=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much])
@given(programs())
def test_fuzz_matches_numpy(prog):
    RUNS["numpy"] += 1
    check_against_numpy(prog)


@settings(max_examples=max(10, EXAMPLES // 8), deadline=None, print_blob=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(programs(rand_inputs=True))
def test_fuzz_with_random_inputs_matches_numpy(prog):
    """Inputs from zd.uniform (read back for NumPy): values off the grid, never exact."""
    RUNS["numpy"] += 1
    check_against_numpy(prog)


def test_same_bits_with_1_and_3_workers():
    seeds = range(1000, 1000 + DETERMINISM_SEEDS)
    progs = [program_from_seed(s, rand_inputs=True) for s in seeds]
    results = {}
    for label, config, devices in [("1 worker", None, {"opencl-cpu": 1}),
                                   ("3 workers heft", None, {"opencl-cpu": 3}),
                                   ("3 workers round_robin", {"scheduler": {"policy": "round_robin"}},
                                    {"opencl-cpu": 3})]:
        with detached_session():
            zd.init(config, ray=False, devices=devices)
            results[label] = [result_bits(p) for p in progs]
            if label.endswith("round_robin"):
                assert zd.stats()["transfers"] > 0, "round_robin moved no data: the check would not mean much"
    RUNS["determinism"] += len(progs)
    one = results.pop("1 worker")
    for label, other in results.items():
        for seed, p, a, b in zip(seeds, progs, one, other):
            assert a == b, f"seed {seed}: different result bits with 1 worker and {label}: {p!r}"


def teardown_module():
    print(f"\nzyx_dist fuzz (in-process): {RUNS['numpy']} programs against NumPy, {RUNS['determinism']} "
          f"programs on 1 and 3 workers")
