"""The `benchmark:` section of a config (schema in configs/README.md) and the workload registry of
zyx_dist/bench.py: every shipped config loads, bad values name the dotted key and the allowed values, and
every workload's NumPy reference agrees with its byte/flop count and its PyTorch-free definition."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from zyx_dist.config import (
    BENCHMARK_DTYPES,
    BENCHMARK_WORKLOADS,
    BenchmarkConfig,
    WorkloadConfig,
    load_config,
)
from zyx_dist.errors import ConfigError
from zyx_dist.tools import bench

CONFIGS = Path(__file__).resolve().parents[2] / "configs"


@pytest.fixture(autouse=True)
def clean_env(monkeypatch):
    for var in ("ZYX_DIST_CONFIG", "ZYX_DIST_DEVICES", "ZYX_DIST_DEBUG"):
        monkeypatch.delenv(var, raising=False)


def bench_of(section) -> BenchmarkConfig:
    return load_config({"benchmark": section}).benchmark


def error_of(section) -> str:
    with pytest.raises(ConfigError) as info:
        load_config({"benchmark": section})
    msg = str(info.value)
    assert "\n" not in msg
    return msg


@pytest.mark.parametrize("name", ["cpu-smoke.yaml", "gpu-1.yaml", "gpu-2.yaml", "cluster.yaml"])
def test_shipped_bench_configs_load(name):
    cfg = load_config(CONFIGS / name)
    assert cfg.benchmark is not None and cfg.benchmark.workloads
    assert load_config(cfg.to_dict()) == cfg  # round trip


def test_shipped_configs_cover_every_workload():
    smoke = load_config(CONFIGS / "cpu-smoke.yaml")
    assert {w.name for w in smoke.benchmark.workloads} == set(BENCHMARK_WORKLOADS)
    assert smoke.benchmark.ray is False and smoke.devices == {"opencl-cpu": 2}
    cluster = load_config(CONFIGS / "cluster.yaml")
    assert cluster.benchmark.ray is True and cluster.devices == {"opencl-cpu": 3}
    assert load_config(CONFIGS / "gpu-2.yaml").devices == ("cuda:0", "cuda:1")


def test_defaults_and_normal_forms():
    b = bench_of({"workloads": [{"name": "sum", "sizes": 1024}]})
    assert b == BenchmarkConfig(workloads=(WorkloadConfig("sum", (1024,), ("float32",)),))
    assert (b.warmup, b.repeats, b.ray, b.baselines, b.check) == (1, 5, False, ("numpy",), True)
    b = bench_of({"workloads": [{"name": "matmul", "sizes": [64, 128], "dtypes": "float16"}], "warmup": 0,
                  "repeats": 2, "ray": True, "baselines": ["torch", "numpy", "torch"], "check": False})
    assert b.workloads[0] == WorkloadConfig("matmul", (64, 128), ("float16",))
    assert (b.warmup, b.repeats, b.ray, b.baselines, b.check) == (0, 2, True, ("torch", "numpy"), False)
    assert bench_of({"workloads": [{"name": "sum", "sizes": [1]}], "baselines": []}).baselines == ()


def test_cli_style_error_for_an_unknown_workload():
    msg = error_of({"workloads": [{"name": "sum", "sizes": [1]}, {"name": "foo", "sizes": [1]}]})
    assert msg == f"benchmark.workloads[1].name: 'foo' is not one of {', '.join(BENCHMARK_WORKLOADS)}"


@pytest.mark.parametrize(
    ("section", "start", "allowed"),
    [
        ({}, "benchmark.workloads: missing", "ew_chain"),
        ({"workloads": []}, "benchmark.workloads: [] is not allowed", "name one of"),
        ({"workloads": "sum"}, "benchmark.workloads: 'sum' is not allowed", "name one of"),
        ({"workloads": [5]}, "benchmark.workloads[0]: 5 is not a mapping", "name, sizes, dtypes"),
        ({"workloads": [{"sizes": [1]}]}, "benchmark.workloads[0].name: missing", "softmax"),
        ({"workloads": [{"name": "sum"}]}, "benchmark.workloads[0].sizes: missing", "integers >= 1"),
        ({"workloads": ["sum"]}, "benchmark.workloads[0]: 'sum' is a workload's name alone", "sizes"),
        ({"workloads": [{"name": "sum", "sizes": []}]}, "benchmark.workloads[0].sizes: [] is not allowed", ">= 1"),
        ({"workloads": [{"name": "sum", "sizes": [8, 0]}]}, "benchmark.workloads[0].sizes[1]: 0 is too small", ">= 1"),
        ({"workloads": [{"name": "sum", "sizes": ["big"]}]}, "benchmark.workloads[0].sizes[0]: 'big' is not an integer",
         ">= 1"),
        ({"workloads": [{"name": "sum", "sizes": [1], "dtypes": ["int4"]}]},
         "benchmark.workloads[0].dtypes[0]: 'int4' is not one of", ", ".join(BENCHMARK_DTYPES)),
        ({"workloads": [{"name": "sum", "sizes": [1], "dtype": "float32"}]},
         "unknown key 'benchmark.workloads[0].dtype'", "did you mean 'benchmark.workloads[0].dtypes'"),
        ({"workloads": [{"name": "sum", "sizes": [1]}], "repeats": 0}, "benchmark.repeats: 0 is too small", ">= 1"),
        ({"workloads": [{"name": "sum", "sizes": [1]}], "warmup": -1}, "benchmark.warmup: -1 is too small", ">= 0"),
        ({"workloads": [{"name": "sum", "sizes": [1]}], "ray": "yes"}, "benchmark.ray: 'yes' is not a boolean",
         "true or false"),
        ({"workloads": [{"name": "sum", "sizes": [1]}], "baselines": ["jax"]},
         "benchmark.baselines[0]: 'jax' is not one of", "numpy, cupy, torch"),
        ({"workloads": [{"name": "sum", "sizes": [1]}], "policy": "heft"}, "unknown key 'benchmark.policy'",
         "scheduler.policy"),
        ({"workloads": [{"name": "sum", "sizes": [1]}], "repeat": 3}, "unknown key 'benchmark.repeat'",
         "did you mean 'benchmark.repeats'"),
        ([1, 2], "benchmark: [1, 2] is not a mapping", "workloads"),
    ],
)
def test_bad_values_name_the_key_and_what_is_allowed(section, start, allowed):
    msg = error_of(section)
    assert msg.startswith(start), msg
    assert allowed in msg, msg


def test_error_from_a_file_names_the_file(tmp_path):
    path = tmp_path / "b.yaml"
    path.write_text("benchmark:\n  workloads:\n    - {name: softmax, sizes: [8]}\n    - {name: nope, sizes: [8]}\n")
    with pytest.raises(ConfigError, match=r"^benchmark\.workloads\[1\]\.name: 'nope' is not one of .*b\.yaml"):
        load_config(path)


# ---- the registry (no device needed: NumPy only) --------------------------------------------------------------


def test_registry_matches_the_config_schema():
    assert tuple(bench.WORKLOADS) == BENCHMARK_WORKLOADS
    for w in bench.WORKLOADS.values():
        assert w.doc and callable(w.ours) and callable(w.ref) and callable(w.torch)


@pytest.mark.parametrize("name", BENCHMARK_WORKLOADS)
@pytest.mark.parametrize("dtype", BENCHMARK_DTYPES)
def test_case_inputs_reference_and_work(name, dtype):
    n = 256 if name in ("ew_chain", "sum") else 16
    case = bench.make_case(name, n, dtype)
    assert all(a.dtype == np.dtype(dtype) for a in case.inputs.values())
    ref = case.reference()
    assert ref and all(np.isfinite(r).all() for r in ref)
    # the baseline in the case's own dtype agrees with the float64 reference
    got = case.workload.ref(np, case.inputs)
    assert bench.check(case, got) is None
    # a wrong answer is caught
    assert bench.check(case, [np.asarray(r) + 1.0 for r in ref]) is not None
    itemsize = np.dtype(dtype).itemsize
    expected = {"ew_chain": ("GB/s", 2 * n * itemsize), "softmax": ("GB/s", 2 * n * n * itemsize),
                "layernorm": ("GB/s", 2 * n * n * itemsize), "sum": ("GB/s", n * itemsize),
                "matmul": ("GFLOP/s", 2 * n**3), "mlp": ("GFLOP/s", 4 * n**3),
                "attention": ("GFLOP/s", 4 * n * n * bench.ATTENTION_DIM),
                "branches": ("GFLOP/s", bench.BRANCHES * 2 * n**3)}[name]
    assert (case.unit, case.work) == expected
    assert bench.rate(case, 0.5) == pytest.approx(case.work / 0.5 / 1e9)


def test_cases_are_reproducible():
    a, b = bench.make_case("mlp", 8, "float32"), bench.make_case("mlp", 8, "float32")
    assert all(np.array_equal(a.inputs[k], b.inputs[k]) for k in a.inputs)


def test_best_seconds_runs_warmup_and_repeats():
    calls = []
    t = bench.best_seconds(lambda: calls.append(1), warmup=2, repeats=3)
    assert len(calls) == 5 and t >= 0


def test_missing_baselines_say_why():
    assert bench.NumpyBaseline().available() is None
    for cls in (bench.CupyBaseline, bench.TorchBaseline):
        why = cls().available()
        assert why is None or isinstance(why, str) and why
