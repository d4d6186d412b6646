"""The compile cache's parallel builds (`ProgramCache.build_many`, used by CUDA workers for a plan's programs and a
batch's new ones): the builds run side by side, each program is built once, and a build that fails there is built
again by its compile, which reports the `CompileError` it would have been."""

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


def test_builds_run_side_by_side_once():
    cache, builder = ProgramCache("test:0", "test build"), Builder(0.2)
    cache.kernel("k0", "f", "", builder.build, entry)  # already cached: not built again
    sources = [(f"k{i}", "") for i in range(6)] + [("k1", "")]
    start = time.perf_counter()
    cache.build_many(sources, builder.build, threads=6)
    elapsed = time.perf_counter() - start
    assert sorted(builder.built) == ["k0", "k1", "k2", "k3", "k4", "k5"]  # k0 once (before), k1 once
    assert builder.most >= 2 and elapsed < 0.2 * 5 * 0.8  # five builds took clearly less than five builds' time
    for i in range(6):
        assert cache.kernel(f"k{i}", "f", "", builder.build, entry) == (("program", f"k{i}"), "f")
    assert len(builder.built) == 6  # the compiles found every program built


def test_a_failed_build_is_reported_by_its_compile():
    cache, builder = ProgramCache("test:0", "test build"), Builder(0.0)
    cache.build_many([("good", ""), ("bad", ""), ("also good", "")], builder.build, threads=3)
    assert cache.kernel("good", "f", "", builder.build, entry)[0] == ("program", "good")
    with pytest.raises(CompileError, match="test:0: test build of kernel 'f' failed") as info:
        cache.kernel("bad", "f", "", builder.build, entry)
    assert "error in bad" in info.value.log
    assert builder.built.count("bad") == 2 and builder.built.count("good") == 1


def test_one_thread_or_one_program_builds_nothing_ahead():
    cache, builder = ProgramCache("test:0", "test build"), Builder(0.0)
    cache.build_many([("a", ""), ("b", "")], builder.build, threads=1)
    cache.build_many([("c", "")], builder.build, threads=8)
    assert builder.built == []


def test_a_worker_hands_builds_to_a_device_that_builds_side_by_side():
    """A Build's sources, and a batch's several Compiles, go to the device's build_many before the batch's
    commands run (the reference device stands in, its build_many recorded); a Build elsewhere does nothing."""
    import numpy as np

    import zyx_dist as zd
    from zyx_dist.codegen.kernel_ops import kernel_ops
    from zyx_dist.codegen.render import render_kernel
    from zyx_dist.fuse.kernelize import kernelize
    from zyx_dist.protocol import Build, Compile, Done
    from zyx_dist.runtime.worker import Worker

    progs = []
    for c in (1.0, 2.0):
        k, = kernelize([(zd.tensor(np.zeros(8, np.float32)) + c).node])
        progs.append((render_kernel(k, "opencl"), kernel_ops(k)))
    compiles = [Compile(i, p.source, p.name, ops) for i, (p, ops) in enumerate(progs)]
    with Worker("reference:0") as w:
        assert all(isinstance(r, Done) for r in w.run([Build(("a", "b"))]).results)  # no build_many: nothing
        seen = []
        w._build_many = seen.append
        res = w.run([Build(("x", "y")), *compiles])
        assert all(isinstance(r, Done) for r in res.results)
        assert seen == [[(p.source, "") for p, _ in progs], [("x", ""), ("y", "")]]
