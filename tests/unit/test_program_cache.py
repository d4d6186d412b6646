"""The compile cache's builds ahead (`ProgramCache.build_ahead`, used by CUDA workers for a plan's programs and a
batch's new ones): the builds run side by side while the caller goes on, each program is built once, a compile
waits for its program's build, and a build that fails there is built again by its compile, which reports the
`CompileError` it would have been."""

from __future__ import annotations

import threading
import time

import pytest

from zyx_dist.errors import CompileError
from zyx_dist.runtime.device import BuildError, ProgramCache


class Builder:
    """A compiler stand-in that takes `seconds` per program, counts its builds and fails sources with 'bad'."""

    def __init__(self, seconds: float) -> None:
        self.seconds, self.built, self.running, self.most = seconds, [], 0, 0
        self.lock = threading.Lock()

    def build(self, source: str, options: str) -> object:
        with self.lock:
            self.running += 1
            self.most = max(self.most, self.running)
        time.sleep(self.seconds)
        with self.lock:
            self.running -= 1
            self.built.append(source)
        if "bad" in source:
            raise BuildError(f"error in {source}")
        return ("program", source)


def entry(program: object, name: str) -> object:
    return (program, name)


def test_builds_ahead_run_side_by_side_once_and_return_at_once():
    cache, builder = ProgramCache("test:0", "test build"), Builder(0.2)
    cache.kernel("k0", "f", "", builder.build, entry)  # already cached: not built again
    sources = [(f"k{i}", "") for i in range(6)] + [("k1", "")]
    start = time.perf_counter()
    cache.build_ahead(sources, builder.build, threads=6)
    cache.build_ahead(sources, builder.build, threads=6)  # already building: nothing new starts
    assert time.perf_counter() - start < 0.1  # the caller goes on while they build
    for i in range(6):
        assert cache.kernel(f"k{i}", "f", "", builder.build, entry) == (("program", f"k{i}"), "f")
    elapsed = time.perf_counter() - start
    assert sorted(builder.built) == ["k0", "k1", "k2", "k3", "k4", "k5"]  # k0 once (before), k1 once
    assert builder.most >= 2 and elapsed < 0.2 * 5 * 0.8  # five builds took clearly less than five builds' time
    cache.clear()


def test_a_build_that_failed_ahead_is_reported_by_its_compile():
    cache, builder = ProgramCache("test:0", "test build"), Builder(0.0)
    cache.build_ahead([("good", ""), ("bad", ""), ("also good", "")], builder.build, threads=3)
    assert cache.kernel("good", "f", "", builder.build, entry)[0] == ("program", "good")
    with pytest.raises(CompileError, match="test:0: test build of kernel 'f' failed") as info:
        cache.kernel("bad", "f", "", builder.build, entry)
    assert "error in bad" in info.value.log
    assert builder.built.count("bad") == 2 and builder.built.count("good") == 1
    cache.clear()


def test_one_thread_builds_nothing_ahead_and_clear_drops_running_builds():
    cache, builder = ProgramCache("test:0", "test build"), Builder(0.05)
    cache.build_ahead([("a", ""), ("b", "")], builder.build, threads=1)
    assert builder.built == [] and not cache._pending
    cache.build_ahead([("c", ""), ("d", "")], builder.build, threads=2)
    cache.clear()  # waits for the running builds and forgets them: a later compile builds again
    assert cache.kernel("c", "f", "", builder.build, entry)[0] == ("program", "c")
    assert builder.built.count("c") == 2
