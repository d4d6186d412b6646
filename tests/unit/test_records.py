"""Honest benchmark records (zyx_dist/tools/records.py, issue 17 item 5): every timed case keeps all its rounds
as min / median / quartiles / IQR, rows carry the commit, the package versions and the devices with their
drivers, and `--compare` flags a regression only when a median falls by more than max(threshold, k x the
rounds' relative IQR), so a figure that moves 10-30% from run to run inside its own spread is not one."""

from __future__ import annotations

import subprocess
from importlib import metadata
from pathlib import Path

import pytest

from zyx_dist.tools import cli, records

ROOT = Path(__file__).resolve().parents[2]
ENV = {"date": "2026-12-01", "machine": "m", "commit": "abc", "versions": {"python": "3"}, "host": {"cpu": "x"}}


def test_summary_of_rounds():
    s = records.summary([0.005, 0.001, 0.004, 0.002, 0.003])  # seconds, in any order
    assert s == {"rounds": 5, "min_ms": 1.0, "median_ms": 3.0, "q1_ms": 2.0, "q3_ms": 4.0, "iqr_ms": 2.0,
                 "max_ms": 5.0}
    assert records.summary([0.25]) == {"rounds": 1, "min_ms": 250.0, "median_ms": 250.0, "q1_ms": 250.0,
                                       "q3_ms": 250.0, "iqr_ms": 0.0, "max_ms": 250.0}
    with pytest.raises(ValueError):
        records.summary([])


def test_time_rounds_runs_warmup_then_each_round():
    calls = []
    rounds = records.time_rounds(lambda: calls.append(1), warmup=2, repeats=4)
    assert len(calls) == 6 and len(rounds) == 4 and all(t >= 0 for t in rounds)


def test_row_keeps_the_spread_devices_and_environment():
    hw = [{"name": "opencl:0", "backend": "opencl", "device": "pthread", "driver": "3.0"}]
    r = records.row(ENV, "zyx_dist/x", "sum", 1.5, "GB/s", [0.002, 0.001, 0.003], hw, size=8)
    assert r["value"] == 1.5 and r["size"] == 8 and r["rounds"] == 3 and r["median_ms"] == 2.0
    assert r["hardware"] == hw and r["commit"] == "abc" and r["versions"] == {"python": "3"}
    assert records.relative_iqr(r) == pytest.approx(1.0 / 2.0)


def test_commit_of_the_checkout_and_its_override(monkeypatch):
    monkeypatch.delenv("ZYX_DIST_COMMIT", raising=False)
    try:
        head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout")
    commit = records.git_commit()
    assert commit in (head, head + "+dirty")
    monkeypatch.setenv("ZYX_DIST_COMMIT", "deadbeef")  # a copy without .git (the GPU machine)
    assert records.git_commit() == "deadbeef"
    assert records.git_commit(ROOT / "no-such-dir") == "deadbeef"
    monkeypatch.delenv("ZYX_DIST_COMMIT")
    assert records.git_commit("/") is None


def test_versions_of_the_packages_present():
    v = records.package_versions()
    assert v["numpy"] == metadata.version("numpy") and v["python"]
    for name, version in v.items():
        if name != "python":
            assert metadata.version(name) == version
    for absent in ("torch", "cupy"):
        try:
            metadata.version(absent)
        except metadata.PackageNotFoundError:
            assert absent not in v


def _case(value, **stats):
    return dict({"system": "zyx_dist/c", "workload": "sum", "size": 8, "dtype": "float32", "unit": "GB/s",
                 "value": value}, **stats)


def test_regression_needs_the_drop_to_exceed_the_noise():
    quiet = {"median_ms": 10.0, "iqr_ms": 0.2}  # 2% spread: the 10% threshold decides
    noisy = {"median_ms": 10.0, "iqr_ms": 1.0}  # 10% spread: 2 IQRs slower is a drop of 1 - 1/1.2 = 16.7%
    assert records.regression(_case(88.0, **quiet), _case(100.0, **quiet), 10)[2]
    change, limit, regressed = records.regression(_case(85.0, **noisy), _case(100.0, **quiet), 10)
    assert change == pytest.approx(-15.0) and limit == pytest.approx(100 / 6) and not regressed
    assert records.regression(_case(75.0, **noisy), _case(100.0, **quiet), 10)[2]
    assert not records.regression(_case(75.0, **noisy), _case(100.0, **quiet), 10, noise=4)[2]  # limit 28.6%
    assert not records.regression(_case(130.0, **noisy), _case(100.0, **quiet), 10)[2]  # faster is never one
    wild = {"median_ms": 10.0, "iqr_ms": 20.0}  # a spread of 200%: the limit stays below 100% ...
    assert records.regression(_case(5.0, **wild), _case(100.0, **wild), 10)[2]  # ... so 20x slower is still one
    assert records.noise_limit(2.0) == pytest.approx(80.0)


def test_old_files_without_medians_are_compared_on_the_best_round():
    old = _case(100.0)  # a best-of-N row of the format before medians
    new = _case(80.0, median_ms=10.0, iqr_ms=0.1, best_value=97.0)
    change, _, regressed = records.regression(new, old, 10)
    assert change == pytest.approx(-3.0) and not regressed


def test_compare_table_and_regressions():
    quiet = {"median_ms": 1.0, "iqr_ms": 0.01}
    noisy = {"median_ms": 1.0, "iqr_ms": 0.25}  # 2 IQRs: a drop of 1 - 1/1.5 = 33.3%
    old = [_case(100.0, **quiet), _case(100.0, workload="softmax", **quiet), _case(50.0, system="numpy")]
    new = [_case(70.0, **quiet), _case(70.0, workload="softmax", **noisy), _case(1.0, workload="matmul"),
           _case(1.0, system="numpy")]
    table, regressions = cli.compare_results(new, old, threshold=10)
    assert len(regressions) == 1 and regressions[0].startswith("zyx_dist/c sum n=8 float32: 100.000 -> 70.000")
    assert "-30.0%" in regressions[0] and "limit -10.0%" in regressions[0]
    lines = {line.split()[1]: line for line in table.splitlines()[2:]}
    assert "REGRESSION" in lines["sum"] and "REGRESSION" not in lines["softmax"] and "-33.3%" in lines["softmax"]
    assert lines["matmul"].endswith("new") and "numpy" not in table
