"""Fuzzing on the shared Ray session with 3 OpenCL CPU workers (issue 7, item 4): the random programs of
tests/fuzzgraph.py against NumPy, as tests/runtime/test_fuzz.py does in-process, and a determinism check:
the same seeded programs (inputs from `zd.uniform(seed=...)` too) give the same result bits on the 3 Ray
workers and on a 1-worker in-process session (run next to the Ray session, which stays up).

`ZYX_DIST_FUZZ_EXAMPLES` (the nightly size of the in-process run) scales this run too: a third of it,
at least 40 examples.
"""

from __future__ import annotations

import os

from fuzzgraph import check_against_numpy, detached_session, program_from_seed, programs, result_bits
from hypothesis import HealthCheck, given, settings

import zyx_dist as zd

EXAMPLES = max(40, int(os.environ.get("ZYX_DIST_FUZZ_EXAMPLES", "0")) // 3)
DETERMINISM_SEEDS = max(20, EXAMPLES // 2)
RUNS = {"numpy": 0, "determinism": 0}


@settings(max_examples=EXAMPLES, deadline=None, print_blob=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much,
                                 HealthCheck.function_scoped_fixture])
@given(prog=programs(rand_inputs=True))
def test_fuzz_on_ray_matches_numpy(ray_session, prog):
    RUNS["numpy"] += 1
    check_against_numpy(prog)


def test_same_bits_on_3_ray_workers_and_1_in_process_worker(ray_session):
    assert len(zd.devices()) == 3
    seeds = range(2000, 2000 + DETERMINISM_SEEDS)
    progs = [program_from_seed(s, rand_inputs=True) for s in seeds]
    on_ray = [result_bits(p) for p in progs]
    with detached_session():
        zd.init(ray=False, devices={"opencl-cpu": 1})
        in_process = [result_bits(p) for p in progs]
    RUNS["determinism"] += len(progs)
    for seed, p, a, b in zip(seeds, progs, on_ray, in_process):
        assert a == b, f"seed {seed}: different result bits on 3 Ray workers and 1 in-process worker: {p!r}"


def teardown_module():
    print(f"\nzyx_dist fuzz (Ray, 3 workers): {RUNS['numpy']} programs against NumPy, {RUNS['determinism']} "
          f"programs on 3 Ray workers and 1 in-process worker")
