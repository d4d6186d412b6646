"""The `zyx-dist` command: --help everywhere, one-line errors with status 2 for bad configs and options,
`info`, `bench` (results.json/.md/.png, baselines, --compare regressions), `explain` of a config and of a
script's build(), and `trace`. Commands run in this process through `cli.main` (with the suite's session
set aside around them), on NumPy reference devices; the real command on OpenCL, `bench configs/cpu-smoke.yaml`
in a subprocess, is tests/runtime/test_cli_smoke.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from zyx_dist.engine import session as zsession
from zyx_dist.tools import cli

ROOT = Path(__file__).resolve().parents[2]
TINY = """\
devices: [reference:0, reference:1]
benchmark:
  warmup: 1
  repeats: 2
  workloads:
    - {name: ew_chain, sizes: [1024]}
    - {name: matmul, sizes: [16], dtypes: [float32, float16]}
    - {name: branches, sizes: [16]}
"""


@pytest.fixture
def no_session(monkeypatch):
    """The CLI starts its own runtime: no session around it, the suite's one back afterwards."""
    for var in ("ZYX_DIST_CONFIG", "ZYX_DIST_DEVICES", "RAY_ADDRESS"):
        monkeypatch.delenv(var, raising=False)
    with zsession.set_aside():
        yield


@pytest.fixture
def tiny(tmp_path) -> Path:
    path = tmp_path / "tiny.yaml"
    path.write_text(TINY)
    return path


def run(capsys, *argv) -> tuple[int, str, str]:
    code = cli.main([str(a) for a in argv])
    out, err = capsys.readouterr()
    assert zsession.running() is None, "the command left a session running"
    return code, out, err


@pytest.mark.parametrize("command", [[], ["info"], ["bench"], ["explain"], ["trace"]])
def test_help_on_every_subcommand(capsys, command):
    with pytest.raises(SystemExit) as e:
        cli.main([*command, "--help"])
    assert e.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: zyx-dist")
    for word in {"info": ["--devices", "--ray"], "bench": ["--out", "--baseline", "--compare", "--threshold"],
                 "explain": ["build()", "SCRIPT_OR_CONFIG"], "trace": ["--out", "perfetto"]}.get(
                     command[0] if command else "", ["info", "bench", "explain", "trace"]):
        assert word.lower() in out.lower(), word


def test_no_command_prints_help_and_fails(capsys):
    assert cli.main([]) == 2
    assert "usage: zyx-dist" in capsys.readouterr().out


@pytest.mark.parametrize("command", ["bench", "explain", "trace"])
def test_wrong_config_is_one_line_with_status_2(capsys, no_session, tmp_path, command):
    bad = tmp_path / "bad.yaml"
    bad.write_text("benchmark:\n  workloads:\n    - {name: softmax, sizes: [8]}\n    - {name: foo, sizes: [8]}\n")
    code, out, err = run(capsys, command, bad)
    assert code == 2
    assert err.count("\n") == 1 and "Traceback" not in err + out
    assert err.startswith("zyx-dist: error: benchmark.workloads[1].name: 'foo' is not one of ew_chain, softmax, ")
    assert str(bad) in err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["bench", "{tmp}/none.yaml"], "does not exist"),
        (["bench", "{root}/configs/default.yaml"], "no benchmark: section"),
        (["bench", "{tiny}", "--baseline", "jax"], "--baseline: 'jax' is not one of numpy, cupy, torch"),
        (["bench", "{tiny}", "--compare", "{tmp}/old.json"], "--compare: cannot read"),
        (["bench", "{tiny}", "--threshold", "-5"], "--threshold: -5 is not a percentage"),
        (["bench", "{tiny}", "--threshold", "nan"], "--threshold: nan is not a percentage"),
        (["bench", "{tiny}", "--noise", "nan"], "--noise: nan is not a multiple"),
        (["bench", "{tiny}", "--out", "{tiny}"], "--out {tiny}: cannot make that directory"),
        (["trace", "{tiny}", "--out", "{tmp}/none/t.json"], "not a file in an existing directory"),
        (["trace", "{tiny}", "--out", "{tmp}"], "not a file in an existing directory"),
        (["explain", "{tmp}/none.py"], "is not a file"),
        (["explain", "{tiny}", "--config", "{tmp}/none.yaml"], "--config {tmp}/none.yaml: no such file"),
        (["--config", "{tiny}", "bench", "{tiny}"], "--config is not read by `bench`"),
        (["info", "--devices", "gpu:7"], "--devices: 'gpu:7' is not allowed"),
        (["info", "--address", "auto"], "give --ray with it"),
    ],
)
def test_bad_options_are_one_line_errors(capsys, no_session, tmp_path, tiny, argv, message):
    argv = [a.format(tmp=tmp_path, root=ROOT, tiny=tiny) for a in argv]
    message = message.format(tmp=tmp_path, tiny=tiny)
    code, out, err = run(capsys, *argv)
    assert code == 2, out + err
    assert err.startswith("zyx-dist: error: ") and err.count("\n") == 1 and message in err, err


def test_info_lists_devices_with_memory_peaks_and_node(capsys, no_session):
    code, out, err = run(capsys, "info", "--devices", "reference:0,reference:1")
    assert code == 0, err
    lines = out.splitlines()
    for col in ("name", "backend", "node", "memory", "free", "peak GFLOP/s", "peak GB/s"):
        assert col in lines[0]
    rows = [line for line in lines[2:] if line.startswith("reference:")]
    assert [r.split()[0] for r in rows] == ["reference:0", "reference:1"]
    assert all(" local " in r and "GiB" in r for r in rows)
    assert "in-process" in out


def test_bench_writes_json_markdown_plot_and_compares(capsys, no_session, tmp_path, tiny):
    out_dir = tmp_path / "res"
    code, out, err = run(capsys, "bench", tiny, "--out", out_dir, "--baseline", "numpy,torch,cupy", "-q")
    assert code == 0, err
    rows = json.loads((out_dir / "results.json").read_text())
    keys = {"date", "machine", "system", "workload", "size", "dtype", "value", "unit", "ms", "best_value", "rounds",
            "min_ms", "median_ms", "q1_ms", "q3_ms", "iqr_ms", "max_ms", "hardware", "commit", "versions", "host"}
    assert all(keys <= set(r) for r in rows)
    assert all(r["rounds"] == 2 and r["ms"] == r["median_ms"] and r["min_ms"] <= r["median_ms"] <= r["max_ms"]
               and r["best_value"] >= r["value"] for r in rows)  # value: the median round; best_value: the best
    assert all(r["versions"]["numpy"] and r["hardware"] for r in rows)
    ours = [r for r in rows if r["system"] == "zyx_dist/tiny"]
    assert [(r["workload"], r["size"], r["dtype"]) for r in ours] == [
        ("ew_chain", 1024, "float32"), ("matmul", 16, "float32"), ("matmul", 16, "float16"),
        ("branches", 16, "float32")]
    assert all(r["value"] > 0 and r["ms"] > 0 and r.get("ok", True) for r in ours)
    assert all([h["name"] for h in r["hardware"]] == r["devices"] == ["reference:0", "reference:1"] and
               all(h["driver"] and h["device"] for h in r["hardware"]) for r in ours)  # device and driver
    assert {r["unit"] for r in ours} == {"GB/s", "GFLOP/s"}
    assert len([r for r in rows if r["system"] == "numpy"]) == 4
    for lib in ("torch", "cupy"):  # run beside ours when installed, else skipped with a note
        ran = any(r["system"].startswith(lib) for r in rows)
        assert ran or f"baseline {lib} skipped" in err
    md = (out_dir / "results.md").read_text()
    assert "| workload | size | dtype | unit | zyx_dist/tiny | numpy |" in md
    assert md.count("\n| matmul |") == 2 and "zyx_dist/tiny / numpy" in md
    assert (out_dir / "results.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert md in out

    # --compare: an old run 100 times as fast on one workload is a regression (status 1) ...
    old = [dict(r) for r in rows]
    for r in old:
        if r["system"] == "zyx_dist/tiny" and r["workload"] == "matmul" and r["dtype"] == "float32":
            r["value"] *= 100
    (tmp_path / "old.json").write_text(json.dumps(old))
    code, out, err = run(capsys, "bench", tiny, "--out", out_dir, "--compare", tmp_path / "old.json", "-q",
                         "--threshold", "40")
    assert code == 1
    assert "REGRESSION" in out and "matmul n=16 float32" in err
    # ... and not with a threshold above the drop; a slower old run is never one
    for r in old:
        r["value"] = r["value"] / 1000
    (tmp_path / "old.json").write_text(json.dumps(old))
    code, out, err = run(capsys, "bench", tiny, "--out", out_dir, "--compare", tmp_path / "old.json", "-q")
    assert code == 0, out + err
    assert "REGRESSION" not in out and "change" in out


def test_compare_results_logic():
    row = {"system": "zyx_dist/c", "workload": "sum", "size": 8, "dtype": "float32", "unit": "GB/s"}
    new = [dict(row, value=90.0), dict(row, size=16, value=1.0), dict(row, system="numpy", value=1.0)]
    old = [dict(row, value=100.0), dict(row, system="numpy", value=1000.0)]
    table, regressions = cli.compare_results(new, old, threshold=5)
    assert len(regressions) == 1 and "-10.0%" in regressions[0]
    assert "new" in table  # size 16 has no old value
    assert cli.compare_results(new, old, threshold=10)[1] == []  # exactly at the threshold is not beyond it


def test_explain_of_a_config_and_of_a_script(capsys, no_session, tmp_path, tiny):
    code, out, err = run(capsys, "explain", tiny)
    assert code == 0, err
    assert out.count("== ") == 4 and "== matmul n=16 float16" in out
    assert out.count("Plan: ") == 4 and "on reference:" in out
    script = tmp_path / "s.py"
    script.write_text("import zyx_dist as zd\nRAN = []\n\ndef build():\n    x = zd.arange(8) * 2\n"
                      "    return [x + 1, x.sum()]\n\nif __name__ == '__main__':\n    raise SystemExit('main ran')\n")
    code, out, err = run(capsys, "explain", script, "--devices", "reference:0")
    assert code == 0, err
    assert out.startswith("Plan: ") and "kernels" in out
    script.write_text("x = 1\n")
    code, out, err = run(capsys, "explain", script, "--devices", "reference:0")
    assert code == 2 and "defines no build() function" in err and err.count("\n") == 1


def test_trace_writes_perfetto_json(capsys, no_session, tmp_path, tiny):
    path = tmp_path / "t.json"
    code, out, err = run(capsys, "trace", tiny, "--out", path)
    assert code == 0, err
    assert f"wrote {path}" in out
    events = json.loads(path.read_text())["traceEvents"]
    names = {e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "thread_name"}
    assert names == {"driver", "reference:0", "reference:1"}
    kernels = [e for e in events if e.get("cat") == "kernel" and e["ph"] == "X"]
    assert len(kernels) >= 4 and all(e["dur"] >= 0 and e["tid"] in (1, 2) for e in kernels)
    assert {e["name"] for e in events if e.get("tid") == 0 and e["ph"] == "X"} >= {"realize", "dispatch", "schedule"}


@pytest.mark.parametrize("name", ["launcher-aws-gpu.yaml", "launcher-onprem.yaml"])
def test_cluster_launchers_are_valid_with_token_auth(name):
    import yaml

    jsonschema = pytest.importorskip("jsonschema")
    import ray.autoscaler

    cfg = yaml.safe_load((ROOT / "cluster" / name).read_text())
    schema = json.loads((Path(ray.autoscaler.__file__).parent / "ray-schema.json").read_text())
    jsonschema.validate(cfg, schema)  # what `ray up` checks first
    starts = [c for key in ("head_start_ray_commands", "worker_start_ray_commands") for c in cfg[key]
              if " start " in c]
    assert len(starts) == 2 and all("RAY_AUTH_MODE=token" in c for c in starts)
    assert cfg["file_mounts"]["~/.ray/auth_token"] == "~/.ray/auth_token"
    assert any("zyx_dist[cuda12" in c for c in cfg["setup_commands"])  # from the checkout: tests/unit/test_install.py
    assert cfg["provider"]["type"] == ("aws" if "aws" in name else "local")


@pytest.mark.parametrize(("source", "message"), [("def build(:\n", "line 1"),
                                                 ("import zyx_dist as zd\nzd.init(ray=False)\n", "explain starts")])
def test_explain_of_a_broken_script_is_one_line(capsys, no_session, tmp_path, source, message):
    script = tmp_path / "s.py"
    script.write_text(source)
    code, _out, err = run(capsys, "explain", script)
    assert code == 2 and err.startswith("zyx-dist: error: ") and err.count("\n") == 1 and message in err, err
