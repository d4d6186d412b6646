"""zyx_dist.config: defaults, YAML files, dicts, environment overrides, sizes, and a ConfigError that
names the key for every bad value."""

from __future__ import annotations

import dataclasses
import os
import re
from pathlib import Path

import pytest

from zyx_dist.config import (
    AutotuneConfig,
    Config,
    RayConfig,
    SchedulerConfig,
    WorkloadConfig,
    load_config,
    parse_devices,
    parse_devices_string,
    parse_size,
)
from zyx_dist.errors import ConfigError, ZyxError

FULL_YAML = """\
devices: ["cuda:0", "opencl:1"]
memory_limit: 2GiB
scheduler:
  policy: round_robin
autotune:
  enabled: false
  budget: 7
  cache_dir: ~/zyx-cache
ray:
  address: "ray://head:10001"
  namespace: mine
  max_restarts: 0
debug: 5
benchmark:
  workloads:
    - {name: matmul, sizes: [256, 512]}
"""


@pytest.fixture(autouse=True)
def clean_env(monkeypatch):
    for var in ("ZYX_DIST_CONFIG", "ZYX_DIST_DEVICES", "ZYX_DIST_DEBUG"):
        monkeypatch.delenv(var, raising=False)


def write(tmp_path: Path, text: str, name: str = "cfg.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def error_of(config) -> str:
    with pytest.raises(ConfigError) as info:
        load_config(config)
    msg = str(info.value)
    assert "\n" not in msg, f"message is not one line: {msg!r}"
    return msg


# ------------------------------------------------------------------------------------------ defaults


def test_defaults():
    cfg = load_config(None)
    assert cfg == Config()
    assert cfg.devices == "auto"
    assert cfg.memory_limit is None
    assert cfg.scheduler == SchedulerConfig(policy="heft")
    assert cfg.autotune.enabled is True
    assert cfg.autotune.budget == 20
    assert cfg.autotune.cache_dir == os.path.expanduser("~/.cache/zyx_dist")
    assert not cfg.autotune.cache_dir.startswith("~")
    assert cfg.ray == RayConfig(address=None, namespace="zyx_dist", max_restarts=3)
    assert cfg.debug == 0
    assert cfg.benchmark is None


def test_no_argument_and_empty_dict_are_defaults():
    assert load_config() == Config()
    assert load_config({}) == Config()


def test_config_is_frozen():
    cfg = load_config({})
    with pytest.raises(dataclasses.FrozenInstanceError):
        cfg.debug = 3  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        cfg.scheduler.policy = "single"  # type: ignore[misc]


def test_config_instance_passes_through():
    cfg = load_config({"debug": 2})
    assert load_config(cfg) is cfg


def test_config_error_is_a_zyx_and_value_error():
    with pytest.raises(ZyxError):
        load_config({"debug": -1})
    with pytest.raises(ValueError):
        load_config({"debug": -1})


# ------------------------------------------------------------------------------------- files and dicts


def test_full_yaml_file(tmp_path):
    cfg = load_config(write(tmp_path, FULL_YAML))
    assert cfg.devices == ("cuda:0", "opencl:1")
    assert cfg.memory_limit == 2 * 2**30
    assert cfg.scheduler.policy == "round_robin"
    assert cfg.autotune == AutotuneConfig(enabled=False, budget=7, cache_dir=os.path.expanduser("~/zyx-cache"))
    assert cfg.ray == RayConfig(address="ray://head:10001", namespace="mine", max_restarts=0)
    assert cfg.debug == 5
    assert cfg.benchmark.workloads == (WorkloadConfig("matmul", (256, 512), ("float32",)),)


def test_path_as_str_and_pathlike(tmp_path):
    path = write(tmp_path, "debug: 3\n")
    assert load_config(str(path)).debug == 3
    assert load_config(path).debug == 3


def test_empty_yaml_file_is_defaults(tmp_path):
    assert load_config(write(tmp_path, "")) == Config()
    assert load_config(write(tmp_path, "# only a comment\n", "c.yaml")) == Config()


def test_yaml_example_of_api_md(tmp_path):
    text = """\
devices: auto            # or a list ["cuda:0", "opencl:1"], or {"opencl-cpu": 3}
memory_limit: null       # per-device cap
scheduler:
  policy: heft           # heft | round_robin | single
autotune:
  enabled: true
  budget: 20             # candidate variants timed per new kernel
  cache_dir: ~/.cache/zyx_dist
ray:
  address: null          # as zd.init(address=...)
  namespace: zyx_dist
  max_restarts: 3        # worker restarts before zd.WorkerLostError
debug: 0                 # as ZYX_DIST_DEBUG
"""
    assert load_config(write(tmp_path, text)) == Config()


def test_dict_partial_sections_keep_defaults():
    cfg = load_config({"autotune": {"budget": 3}, "ray": {"namespace": "x"}})
    assert cfg.autotune.budget == 3
    assert cfg.autotune.enabled is True
    assert cfg.ray.namespace == "x"
    assert cfg.ray.max_restarts == 3
    assert cfg.scheduler.policy == "heft"


def test_null_sections_are_defaults(tmp_path):
    cfg = load_config(write(tmp_path, "scheduler:\nautotune:\nray:\n"))
    assert cfg == Config()


def test_dict_is_not_mutated():
    data = {"devices": ["opencl:0"], "benchmark": {"workloads": [{"name": "sum", "sizes": [1, 2]}]}}
    cfg = load_config(data)
    assert data == {"devices": ["opencl:0"], "benchmark": {"workloads": [{"name": "sum", "sizes": [1, 2]}]}}
    cfg.to_dict()["benchmark"]["workloads"][0]["sizes"].append(3)
    assert data["benchmark"]["workloads"][0]["sizes"] == [1, 2]
    assert cfg.benchmark.workloads[0].sizes == (1, 2)


def test_devices_forms():
    assert load_config({"devices": "auto"}).devices == "auto"
    assert load_config({"devices": ["opencl:0"]}).devices == ("opencl:0",)
    assert load_config({"devices": ("cuda:0", "cuda:1")}).devices == ("cuda:0", "cuda:1")
    assert load_config({"devices": {"opencl-cpu": 3}}).devices == {"opencl-cpu": 3}


def test_to_dict_round_trip(tmp_path):
    for cfg in (load_config({}), load_config(write(tmp_path, FULL_YAML)), load_config({"devices": {"opencl-cpu": 2}})):
        assert load_config(cfg.to_dict()) == cfg


def test_ray_address_values():
    for address in ("auto", "ray://host:10001", "host:6379"):
        assert load_config({"ray": {"address": address}}).ray.address == address
    assert load_config({"ray": {"address": None}}).ray.address is None


def test_memory_limit_forms():
    assert load_config({"memory_limit": 1024}).memory_limit == 1024
    assert load_config({"memory_limit": "512MiB"}).memory_limit == 512 * 2**20
    assert load_config({"memory_limit": None}).memory_limit is None


# ------------------------------------------------------------------------------------------- sizes


@pytest.mark.parametrize(
    ("text", "nbytes"),
    [
        (1, 1),
        (4096, 4096),
        ("4096", 4096),
        ("100B", 100),
        ("1KB", 1000),
        ("1kb", 1000),
        ("1KiB", 1024),
        ("1kib", 1024),
        ("512MiB", 512 * 2**20),
        ("512 MiB", 512 * 2**20),
        ("2GiB", 2 * 2**30),
        ("2gib", 2 * 2**30),
        ("1.5GB", 1_500_000_000),
        ("1.5GiB", 3 * 2**29),
        ("3MB", 3_000_000),
        ("1TiB", 2**40),
        ("0.5KiB", 512),
        (" 8 GB ", 8 * 10**9),
        (2.0**20, 2**20),
    ],
)
def test_parse_size(text, nbytes):
    assert parse_size(text, "memory_limit") == nbytes


@pytest.mark.parametrize(
    "bad", ["2 gigs", "", "GiB", "1.2.3GB", "-1GB", "1 XB", "1e9", 0, -5, "0MiB", True, False, 1.5, None, [1], {}]
)
def test_parse_size_rejects(bad):
    with pytest.raises(ConfigError, match=r"^memory_limit: "):
        parse_size(bad, "memory_limit")


def test_size_error_message():
    assert error_of({"memory_limit": "2 gigs"}) == (
        "memory_limit: '2 gigs' is not a size (use bytes or e.g. '512MiB', '2GiB', '1.5GB')"
    )


def test_parse_size_default_key():
    with pytest.raises(ConfigError, match=r"^size: "):
        parse_size("lots")
    with pytest.raises(ConfigError, match=r"^benchmark\.max_bytes: "):
        parse_size("lots", "benchmark.max_bytes")


# ------------------------------------------------------------------------------------ error messages


def test_policy_error_message():
    assert error_of({"scheduler": {"policy": "fastest"}}) == (
        "scheduler.policy: 'fastest' is not one of heft, round_robin, single"
    )


@pytest.mark.parametrize("policy", ["heft", "round_robin", "single"])
def test_every_policy(policy):
    assert load_config({"scheduler": {"policy": policy}}).scheduler.policy == policy


def test_unknown_top_level_key_suggests_close_match():
    msg = error_of({"shceduler": {"policy": "heft"}})
    assert msg.startswith("unknown key 'shceduler' (allowed: devices, memory_limit, scheduler, autotune, ray, debug")
    assert "did you mean 'scheduler'?" in msg


def test_unknown_key_without_close_match():
    msg = error_of({"zzzzzz": 1})
    assert msg.startswith("unknown key 'zzzzzz' (allowed: ")
    assert "did you mean" not in msg


@pytest.mark.parametrize(
    ("data", "dotted", "suggestion"),
    [
        ({"scheduler": {"polcy": "heft"}}, "scheduler.polcy", "scheduler.policy"),
        ({"autotune": {"budgt": 3}}, "autotune.budgt", "autotune.budget"),
        ({"autotune": {"cachedir": "/tmp"}}, "autotune.cachedir", "autotune.cache_dir"),
        ({"ray": {"adress": "auto"}}, "ray.adress", "ray.address"),
        ({"ray": {"max_restart": 1}}, "ray.max_restart", "ray.max_restarts"),
        ({"devices": {"opencl_cpu": 2}}, "devices.opencl_cpu", "devices.opencl-cpu"),
    ],
)
def test_unknown_nested_keys(data, dotted, suggestion):
    msg = error_of(data)
    assert msg.startswith(f"unknown key {dotted!r} (allowed: ")
    assert f"did you mean {suggestion!r}?" in msg


def test_unknown_key_in_file_names_file(tmp_path):
    path = write(tmp_path, "scheduler:\n  policy: heft\n  extra: 1\n")
    msg = error_of(path)
    assert "unknown key 'scheduler.extra'" in msg
    assert str(path) in msg


def test_benchmark_section_is_validated():
    # its schema (configs/README.md) is tested in tests/unit/test_bench_config.py
    with pytest.raises(ConfigError, match=r"^unknown key 'benchmark\.anything'"):
        load_config({"benchmark": {"anything": {"goes": [1, 2]}, "here": None}})


@pytest.mark.parametrize(
    ("data", "key"),
    [
        ({"devices": "cuda:0"}, "devices"),
        ({"devices": "gpu"}, "devices"),
        ({"devices": []}, "devices"),
        ({"devices": {}}, "devices"),
        ({"devices": 3}, "devices"),
        ({"devices": None}, "devices"),
        ({"devices": ["cuda0"]}, "devices[0]"),
        ({"devices": ["opencl:0", "vulkan:0"]}, "devices[1]"),
        ({"devices": ["opencl:0", 1]}, "devices[1]"),
        ({"devices": ["cuda:0", "cuda:0"]}, "devices[1]"),
        ({"devices": {"opencl-cpu": 0}}, "devices.opencl-cpu"),
        ({"devices": {"opencl-cpu": "3"}}, "devices.opencl-cpu"),
        ({"devices": {"opencl-cpu": 2.0}}, "devices.opencl-cpu"),
        ({"devices": {"opencl-cpu": True}}, "devices.opencl-cpu"),
        ({"memory_limit": "2 gigs"}, "memory_limit"),
        ({"memory_limit": -1}, "memory_limit"),
        ({"memory_limit": [1]}, "memory_limit"),
        ({"scheduler": "heft"}, "scheduler"),
        ({"scheduler": {"policy": None}}, "scheduler.policy"),
        ({"scheduler": {"policy": "HEFT"}}, "scheduler.policy"),
        ({"autotune": ["enabled"]}, "autotune"),
        ({"autotune": {"enabled": "yes"}}, "autotune.enabled"),
        ({"autotune": {"enabled": "true"}}, "autotune.enabled"),
        ({"autotune": {"enabled": 1}}, "autotune.enabled"),
        ({"autotune": {"enabled": None}}, "autotune.enabled"),
        ({"autotune": {"budget": 0}}, "autotune.budget"),
        ({"autotune": {"budget": "20"}}, "autotune.budget"),
        ({"autotune": {"budget": 2.5}}, "autotune.budget"),
        ({"autotune": {"budget": True}}, "autotune.budget"),
        ({"autotune": {"cache_dir": 3}}, "autotune.cache_dir"),
        ({"autotune": {"cache_dir": ""}}, "autotune.cache_dir"),
        ({"autotune": {"cache_dir": None}}, "autotune.cache_dir"),
        ({"ray": 1}, "ray"),
        ({"ray": {"address": 6379}}, "ray.address"),
        ({"ray": {"address": ""}}, "ray.address"),
        ({"ray": {"namespace": None}}, "ray.namespace"),
        ({"ray": {"namespace": ""}}, "ray.namespace"),
        ({"ray": {"max_restarts": -1}}, "ray.max_restarts"),
        ({"ray": {"max_restarts": "3"}}, "ray.max_restarts"),
        ({"debug": -1}, "debug"),
        ({"debug": "1"}, "debug"),
        ({"debug": 1.0}, "debug"),
        ({"debug": False}, "debug"),
        ({"debug": None}, "debug"),
        ({"benchmark": [1, 2]}, "benchmark"),
        ({"benchmark": "matmul"}, "benchmark"),
    ],
)
def test_bad_values_name_their_key(data, key):
    msg = error_of(data)
    assert msg.startswith(f"{key}: "), msg
    assert "(" in msg or "not one of" in msg, f"message does not say what is allowed: {msg}"


def test_bad_value_from_file_names_key_and_file(tmp_path):
    path = write(tmp_path, "autotune:\n  budget: 0\n")
    msg = error_of(path)
    assert msg.startswith("autotune.budget: 0 is too small")
    assert str(path) in msg


@pytest.mark.parametrize("top", ["[1, 2]", "just a string", "42"])
def test_top_level_must_be_mapping(tmp_path, top):
    msg = error_of(write(tmp_path, top + "\n"))
    assert msg.startswith("config: ") and "is not a mapping (use a mapping with keys devices, " in msg


@pytest.mark.parametrize("bad", [42, 1.5, ["debug"], b"cfg.yaml"])
def test_bad_config_argument(bad):
    assert error_of(bad).startswith("config: ")


# --------------------------------------------------------------------------------------- file errors


def test_missing_file(tmp_path):
    path = tmp_path / "nope.yaml"
    msg = error_of(path)
    assert str(path) in msg
    assert "does not exist" in msg


def test_directory_is_not_a_file(tmp_path):
    msg = error_of(tmp_path)
    assert str(tmp_path) in msg
    assert "directory" in msg


def test_invalid_yaml_names_file_and_line(tmp_path):
    path = write(tmp_path, "scheduler:\n  policy: [heft\ndebug: 1\n")
    msg = error_of(path)
    assert str(path) in msg
    assert "not valid YAML" in msg
    assert re.search(r"line \d+", msg)


def test_yaml_tab_indent_is_config_error(tmp_path):
    path = write(tmp_path, "scheduler:\n\tpolicy: heft\n")
    assert "not valid YAML" in error_of(path)


def test_a_key_given_twice_is_refused(tmp_path):
    """safe_load keeps the last of two values silently: a policy set twice (a merge gone wrong) is refused, naming
    the key and its line; the same key in two mappings is fine."""
    msg = error_of(write(tmp_path, "devices: auto\nscheduler:\n  policy: heft\n  policy: single\n"))
    assert "'policy' is given twice" in msg and "line 4" in msg
    assert "given twice" in error_of(write(tmp_path, "debug: 1\ndebug: 2\n", "top.yaml"))
    cfg = load_config(write(tmp_path, "scheduler: {policy: single}\nray: {namespace: a}\nautotune: {budget: 3}\n",
                            "ok.yaml"))
    assert cfg.scheduler.policy == "single"


def test_unsafe_yaml_tags_are_refused(tmp_path):
    path = write(tmp_path, "debug: !!python/object/apply:os.system ['echo pwned']\n")
    assert "not valid YAML" in error_of(path)


# ---------------------------------------------------------------------------------------- environment


def test_env_config_file_used_when_config_is_none(tmp_path, monkeypatch):
    monkeypatch.setenv("ZYX_DIST_CONFIG", str(write(tmp_path, "debug: 4\nscheduler: {policy: single}\n")))
    cfg = load_config(None)
    assert cfg.debug == 4
    assert cfg.scheduler.policy == "single"


def test_explicit_config_beats_env_config_file(tmp_path, monkeypatch):
    monkeypatch.setenv("ZYX_DIST_CONFIG", str(write(tmp_path, "debug: 4\n")))
    assert load_config({"scheduler": {"policy": "single"}}).debug == 0
    other = write(tmp_path, "debug: 9\n", "other.yaml")
    assert load_config(other).debug == 9


def test_env_config_file_ignored_for_explicit_config_even_if_missing(tmp_path, monkeypatch):
    monkeypatch.setenv("ZYX_DIST_CONFIG", str(tmp_path / "missing.yaml"))
    assert load_config({}) == Config()


def test_env_config_missing_file(tmp_path, monkeypatch):
    path = tmp_path / "missing.yaml"
    monkeypatch.setenv("ZYX_DIST_CONFIG", str(path))
    msg = error_of(None)
    assert str(path) in msg
    assert "ZYX_DIST_CONFIG" in msg


def test_env_config_bad_value_names_file(tmp_path, monkeypatch):
    path = write(tmp_path, "scheduler: {policy: fastest}\n")
    monkeypatch.setenv("ZYX_DIST_CONFIG", str(path))
    msg = error_of(None)
    assert msg.startswith("scheduler.policy: 'fastest' is not one of heft, round_robin, single")
    assert str(path) in msg


@pytest.mark.parametrize(
    ("value", "devices"),
    [
        ("auto", "auto"),
        ("opencl:0", ("opencl:0",)),
        ("opencl:0,opencl:1", ("opencl:0", "opencl:1")),
        (" cuda:0 , cuda:1 ", ("cuda:0", "cuda:1")),
        ("opencl-cpu:3", {"opencl-cpu": 3}),
        ("opencl-cpu:1", {"opencl-cpu": 1}),
    ],
)
def test_env_devices(monkeypatch, value, devices):
    monkeypatch.setenv("ZYX_DIST_DEVICES", value)
    assert load_config(None).devices == devices


def test_env_devices_and_debug_override_file_and_dict(tmp_path, monkeypatch):
    monkeypatch.setenv("ZYX_DIST_DEVICES", "opencl-cpu:2")
    monkeypatch.setenv("ZYX_DIST_DEBUG", "64")
    path = write(tmp_path, "devices: [cuda:0]\ndebug: 1\nscheduler: {policy: single}\n")
    for source in (path, {"devices": ["cuda:0"], "debug": 1, "scheduler": {"policy": "single"}}):
        cfg = load_config(source)
        assert cfg.devices == {"opencl-cpu": 2}
        assert cfg.debug == 64
        assert cfg.scheduler.policy == "single"
    monkeypatch.setenv("ZYX_DIST_CONFIG", str(path))
    cfg = load_config(None)
    assert (cfg.devices, cfg.debug, cfg.scheduler.policy) == ({"opencl-cpu": 2}, 64, "single")


def test_env_debug_forms(monkeypatch):
    for text, value in (("0", 0), ("7", 7), (" 16 ", 16), ("0x7f", 127)):
        monkeypatch.setenv("ZYX_DIST_DEBUG", text)
        assert load_config(None).debug == value


def test_empty_env_vars_are_unset(monkeypatch):
    for var in ("ZYX_DIST_CONFIG", "ZYX_DIST_DEVICES", "ZYX_DIST_DEBUG"):
        monkeypatch.setenv(var, "")
    assert load_config(None) == Config()


@pytest.mark.parametrize("value", ["gpu", "opencl:x", "opencl:0,,opencl:1", "opencl-cpu:0", "opencl-cpu:many", "cuda"])
def test_env_devices_errors(monkeypatch, value):
    monkeypatch.setenv("ZYX_DIST_DEVICES", value)
    assert error_of(None).startswith("ZYX_DIST_DEVICES")


@pytest.mark.parametrize("value", ["-1", "lots", "1.5"])
def test_env_debug_errors(monkeypatch, value):
    monkeypatch.setenv("ZYX_DIST_DEBUG", value)
    assert error_of(None).startswith("ZYX_DIST_DEBUG: ")


def test_env_overrides_validated_even_with_explicit_dict(monkeypatch):
    monkeypatch.setenv("ZYX_DIST_DEBUG", "nope")
    with pytest.raises(ConfigError, match="ZYX_DIST_DEBUG"):
        load_config({})


# -------------------------------------------------------------------------------------- parse_devices


def test_parse_devices_direct():
    assert parse_devices(["opencl:0", "opencl:1"]) == ("opencl:0", "opencl:1")
    assert parse_devices({"opencl-cpu": 3}) == {"opencl-cpu": 3}
    assert parse_devices("auto") == "auto"
    with pytest.raises(ConfigError, match=r"^devices\[0\]: "):
        parse_devices(["tpu:0"])


def test_parse_devices_string_names_its_key():
    assert parse_devices_string("opencl:0,opencl:1", "--devices") == ("opencl:0", "opencl:1")
    assert parse_devices_string("opencl-cpu:2", "--devices") == {"opencl-cpu": 2}
    with pytest.raises(ConfigError, match=r"^--devices: 'gpu' is not allowed"):
        parse_devices_string("gpu", "--devices")
