"""The on-disk caches (issue 17 item 5): the default directory follows the platform (XDG_CACHE_HOME on Linux),
read-modify-writes of a shared cache file hold a file lock and merge (two processes never lose each other's
entries), and every key carries a format version, the autotuner's also the renderer's version, so a file of
another format or a winner timed on other renderer code is never reused."""

from __future__ import annotations

import dataclasses
import json
import multiprocessing
import os
import time
from pathlib import Path

import numpy as np
import pytest

import zyx_dist as zd
from zyx_dist import _util
from zyx_dist.codegen import autotune, options
from zyx_dist.codegen.render import facts
from zyx_dist.config import Config, default_cache_dir, load_config
from zyx_dist.engine import probe
from zyx_dist.fuse.kernelize import kernelize
from zyx_dist.protocol import BatchResult

TARGET = autotune.Target("opencl|cache-test|vendor|1.0", "opencl", False, 1024, "opencl:0", 10.0, 5.0)


@pytest.fixture(autouse=True)
def clean_env(monkeypatch):
    for var in ("ZYX_DIST_CONFIG", "ZYX_DIST_DEVICES", "ZYX_DIST_DEBUG"):
        monkeypatch.delenv(var, raising=False)


def test_default_cache_dir_follows_xdg(monkeypatch, tmp_path):
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    assert load_config(None).autotune.cache_dir == os.path.expanduser("~/.cache/zyx_dist")  # API.md's example
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert default_cache_dir() == str(tmp_path / "xdg" / "zyx_dist")
    assert load_config(None).autotune.cache_dir == str(tmp_path / "xdg" / "zyx_dist")
    assert Config().autotune.cache_dir == str(tmp_path / "xdg" / "zyx_dist")
    assert load_config({"autotune": {"cache_dir": "~/pinned"}}).autotune.cache_dir == os.path.expanduser("~/pinned")


def _hold_then_add(path: str, started, key: str) -> None:
    started.set()
    _util.update_json(Path(path), lambda d: {**(d or {}), key: os.getpid()})


def test_update_waits_for_the_lock_and_merges(tmp_path):
    """A second process's read-modify-write waits while the first holds the lock, then sees what the first
    wrote: neither entry is lost."""
    path = tmp_path / "shared.json"
    ctx = multiprocessing.get_context("fork")
    started = ctx.Event()
    with _util.locked(path) as have_lock:
        assert have_lock and _util.lock_path(path).exists()
        child = ctx.Process(target=_hold_then_add, args=(str(path), started, "child"))
        child.start()
        assert started.wait(30)
        time.sleep(0.5)
        assert not path.exists() and child.is_alive()  # blocked on the lock
        _util.write_json(path, {"parent": 1})  # our own read-modify-write, inside the lock
    child.join(30)
    assert child.exitcode == 0
    assert json.loads(path.read_text()).keys() == {"parent", "child"}


def _many_updates(path: str, tag: int, n: int) -> None:
    for i in range(n):
        _util.update_json(Path(path), lambda d, i=i: {**(d or {}), f"{tag}-{i}": i})


def test_concurrent_writers_keep_every_entry(tmp_path):
    path = tmp_path / "many.json"
    ctx = multiprocessing.get_context("fork")
    procs = [ctx.Process(target=_many_updates, args=(str(path), tag, 25)) for tag in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    assert len(json.loads(path.read_text())) == 100


def test_unwritable_directory_only_costs_the_cache(tmp_path):
    path = tmp_path / "file-not-dir" / "x.json"
    (tmp_path / "file-not-dir").write_text("a file where a directory should be")
    assert _util.update_json(path, lambda d: {"a": 1}) == {"a": 1}  # no lock, no write, no error
    assert _util.read_json(path) is None


def _kernel():
    k, = kernelize([(zd.tensor(np.zeros(65539, np.float32)) * 2 + 1).node])
    return k


def _second_candidate(k) -> options.KernelOpts:
    cands = options.candidates(facts(k, "opencl", False))
    assert len(cands) > 1
    return cands[1]


def test_two_tuners_saving_at_once_keep_both_winners(tmp_path):
    a, b = autotune.Tuner(True, 4, str(tmp_path)), autotune.Tuner(True, 4, str(tmp_path))
    a._entries(TARGET), b._entries(TARGET)  # both read the (empty) file before either saves
    a._save(TARGET, "kernel-a", options.KernelOpts(lws=64))
    b._save(TARGET, "kernel-b", options.KernelOpts(lws=128))
    data = json.loads(a._file(TARGET).read_text())
    assert data["format"] == autotune.AUTOTUNE_FORMAT and data["device"] == TARGET.key
    assert set(data["kernels"]) == {"kernel-a", "kernel-b"}
    assert data["kernels"]["kernel-a"]["renderer"] == autotune.renderer_version()
    assert set(b._entries(TARGET)) == {"kernel-a", "kernel-b"}  # b now knows a's winner too


def test_a_winner_of_other_renderer_code_is_not_reused(tmp_path, monkeypatch):
    k = _kernel()
    chosen = _second_candidate(k)
    autotune.Tuner(True, 4, str(tmp_path))._save(TARGET, autotune.kernel_hash(k), chosen)
    no_timing = (k, TARGET, None, 1 << 30, iter(range(1, 100)).__next__)
    assert autotune.Tuner(True, 4, str(tmp_path)).program(*no_timing).opts == chosen  # same code: reused
    monkeypatch.setattr(autotune, "renderer_version", lambda: "0123456789ab")  # the renderer changed
    assert autotune.Tuner(True, 4, str(tmp_path)).program(*no_timing).opts != chosen  # not reused


def test_renderer_version_is_a_digest_of_the_codegen_sources():
    v = autotune.renderer_version()
    assert len(v) == 12 and int(v, 16) >= 0 and v == autotune.renderer_version()
    assert autotune.kernel_hash(_kernel()) == autotune.kernel_hash(_kernel())  # same structure, same key


def test_autotune_files_of_another_format_are_ignored(tmp_path):
    k = _kernel()
    chosen, h = _second_candidate(k), autotune.kernel_hash(k)
    tuner = autotune.Tuner(True, 4, str(tmp_path))
    path = tuner._file(TARGET)
    assert path.name.startswith(f"autotune-v{autotune.AUTOTUNE_FORMAT}-")
    entry = {"opts": dataclasses.asdict(chosen)}
    for data in ({"device": TARGET.key, "kernels": {h: entry}},  # the format before versions
                 {"format": autotune.AUTOTUNE_FORMAT + 1, "device": TARGET.key, "kernels": {h: entry}}):
        path.write_text(json.dumps(data))
        assert autotune.Tuner(True, 4, str(tmp_path)).program(k, TARGET, None, 1 << 30, iter(range(99)).__next__) \
            .opts != chosen


def _fail_run(batch):
    raise AssertionError("the probe ran although its figures were cached")


def test_probe_reads_only_its_own_format(tmp_path):
    key = f"opencl|probe-test-{time.monotonic_ns()}|v|1"
    (tmp_path / "probe.json").write_text(json.dumps({key: [1.0, 2.0]}))  # the old layout: not read
    calls = []

    def nothing(batch):  # a probe that times nothing: nominal figures, not cached
        calls.append(batch)
        return BatchResult((), "i", 0, ())

    assert probe.measure(nothing, key, str(tmp_path)) == probe._NOMINAL["opencl"] and calls
    path = tmp_path / f"probe-v{probe.PROBE_FORMAT}.json"
    path.write_text(json.dumps({"format": probe.PROBE_FORMAT, "peaks": {key: [3.0, 4.0]}}))
    assert probe.measure(_fail_run, key, str(tmp_path)) == (3.0, 4.0)
    probe._memory.pop(key)


def test_probe_saves_merge_with_other_models(tmp_path):
    key = f"opencl|probe-merge-{time.monotonic_ns()}|v|1"
    path = tmp_path / f"probe-v{probe.PROBE_FORMAT}.json"
    path.write_text(json.dumps({"format": probe.PROBE_FORMAT, "peaks": {"another model": [5.0, 6.0],
                                                                        "damaged": ["x", 1]}}))

    def timed(batch):
        return BatchResult((), "i", 0, (1e-3,) * 6)

    gflops, gbps = probe.measure(timed, key, str(tmp_path))
    probe._memory.pop(key)
    peaks = json.loads(path.read_text())["peaks"]
    assert peaks == {"another model": [5.0, 6.0], key: [gflops, gbps]}
