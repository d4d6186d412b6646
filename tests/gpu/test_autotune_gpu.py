"""The kernel options and the autotuner on the GPU: every candidate the tuner may pick (as for a GPU) computes
what NumPy computes, on CUDA and on NVIDIA OpenCL, and a winner tuned on cuda:0 by one process is launched
by the next without timing anything."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest
from gpu_util import ROOT, need_cuda, nvidia_opencl_index
from helpers import option_graphs, run_kernels

from zyx_dist.codegen import options
from zyx_dist.codegen.render import facts
from zyx_dist.fuse.kernelize import kernelize

pytestmark = pytest.mark.gpu


def _device(backend: str) -> str:
    if backend == "cuda":
        need_cuda()
        return "cuda:0"
    index = nvidia_opencl_index()
    if index is None:
        pytest.skip("no NVIDIA OpenCL device")
    return f"opencl:{index}"


# one test per graph: each compiles every candidate (NVRTC, ~100 programs in all), so pytest-xdist can spread them
GRAPHS = [label for label, _, _ in option_graphs(np.random.default_rng(0))]


@pytest.mark.parametrize("graph", GRAPHS)
@pytest.mark.parametrize("backend", ["cuda", "opencl"])
def test_every_gpu_candidate_computes_what_numpy_does(backend, graph):
    from zyx_dist.runtime.worker import Worker

    worker = Worker(_device(backend))
    try:
        for label, build, expected in option_graphs(np.random.default_rng(0)):
            if label != graph:
                continue
            t = build()
            seen = {o for k in kernelize([t.node]) for o in options.candidates(facts(k, backend, True))}
            for opts in sorted(seen, key=lambda o: o.tag()):
                got = run_kernels(worker, t, lambda k, o=opts: o, backend)
                np.testing.assert_allclose(got, expected, rtol=2e-5, atol=2e-5, err_msg=f"{label} {opts.tag()}")
    finally:
        worker.close()


def test_a_second_process_launches_the_cuda_winner_at_once(tmp_path):
    need_cuda()
    code = f"""
import sys
import numpy as np, zyx_dist as zd
from zyx_dist.codegen import autotune
if sys.argv[1] == "tune":
    autotune.MIN_SECONDS = 0.0
s = zd.init({{"autotune": {{"cache_dir": {str(tmp_path)!r}}}}}, ray=False, devices=["cuda:0"])
x = zd.tensor(np.linspace(-3, 3, 1 << 22, dtype=np.float32)).realize()
y = (zd.relu(x * 2 + 1) * zd.sigmoid(x)).numpy()
X = x.numpy()
assert np.allclose(y, np.maximum(X * 2 + 1, 0) / (1 + np.exp(-X)), rtol=1e-5, atol=1e-6)
print(s.tuner.trials, sorted(p.opts.tag() for p in s.programs.values()))
"""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]))
    first, second = (subprocess.run([sys.executable, "-c", code, mode], capture_output=True, text=True, env=env,
                                    timeout=300, check=True).stdout.split(" ", 1) for mode in ("tune", "reuse"))
    assert int(first[0]) > 1 and second[0] == "0" and first[1] == second[1]
