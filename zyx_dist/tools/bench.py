"""Driver side: the benchmark workloads of `zyx-dist bench` / `explain` / `trace` and the code that times them.

Takes a workload name from the registry (`WORKLOADS`), a size and a dtype; `make_case` gives a `Case`: the
NumPy inputs, how to build the lazy zyx_dist graph from them, the same computation for NumPy/CuPy (one
array-API function, `xp` is the module) and for PyTorch, and the bytes or flops of one run (for GB/s or
GFLOP/s). `run_case` times zyx_dist (wall clock of `zd.realize`, which blocks until the results exist on the
devices) and a `Baseline` the same computation in the same process, each as the seconds of `repeats` timed
rounds after `warmup` untimed ones (reported as their median and spread, `tools/records.py`). Every workload
is documented in configs/README.md.
"""

from __future__ import annotations

import importlib
import math
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..config import BENCHMARK_WORKLOADS
from .records import cpu_model, time_rounds

ATTENTION_DIM = 64  # head dimension of the attention workload
BRANCHES = 4  # independent branches of the branches workload


@dataclass(frozen=True)
class Workload:
    name: str
    doc: str  # what it computes; `n` is the size from the config
    inputs: Callable[[int], dict[str, tuple[int, ...]]]  # input name -> shape, for size n
    ours: Callable[[Any, dict], list]  # (zd, input tensors) -> output tensors
    ref: Callable[[Any, dict], list]  # (numpy or cupy module, input arrays) -> output arrays
    torch: Callable[[Any, dict], list]  # (torch module, input tensors) -> output tensors
    work: Callable[[int, int], tuple[str, int]]  # (n, itemsize) -> ("GB/s", bytes) or ("GFLOP/s", flops)


def _softmax(xp, x):
    e = xp.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _layernorm(xp, x, eps=1e-5):
    mu = x.mean(axis=-1, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)
    return (x - mu) / xp.sqrt(var + eps)


def _ew(xp, x):
    return xp.maximum(x * 2 + 1, 0) * (1 / (1 + xp.exp(-x)))


def _attention_ref(xp, a):
    s = (a["q"] @ a["k"].T) * (1.0 / math.sqrt(a["q"].shape[-1]))
    return [_softmax(xp, s) @ a["v"]]


def _attention_ours(zd, t):
    s = (t["q"] @ t["k"].T) * (1.0 / math.sqrt(t["q"].shape[-1]))
    return [zd.softmax(s, axis=-1) @ t["v"]]


def _attention_torch(torch, t):
    s = (t["q"] @ t["k"].T) * (1.0 / math.sqrt(t["q"].shape[-1]))
    return [torch.softmax(s, dim=-1) @ t["v"]]


def _mlp(xp_relu, t):
    return [xp_relu(t["x"] @ t["w1"] + t["b1"]) @ t["w2"] + t["b2"]]


def _branches(relu, t):
    return [relu(t["x"] @ t[f"w{i}"]) for i in range(BRANCHES)]


def _np_relu(xp):
    return lambda v: xp.maximum(v, 0)


_WORKLOADS = [
    Workload(
        "ew_chain", "relu(x*2+1)*sigmoid(x) on a vector of n elements (one fused kernel); GB/s of 1 read + 1 write",
        lambda n: {"x": (n,)},
        lambda zd, t: [zd.relu(t["x"] * 2 + 1) * zd.sigmoid(t["x"])],
        lambda xp, a: [_ew(xp, a["x"])],
        lambda torch, t: [torch.relu(t["x"] * 2 + 1) * torch.sigmoid(t["x"])],
        lambda n, b: ("GB/s", 2 * n * b),
    ),
    Workload(
        "softmax", "softmax over the rows of an n x n matrix; GB/s of 1 read + 1 write",
        lambda n: {"x": (n, n)},
        lambda zd, t: [zd.softmax(t["x"], axis=-1)],
        lambda xp, a: [_softmax(xp, a["x"])],
        lambda torch, t: [torch.softmax(t["x"], dim=-1)],
        lambda n, b: ("GB/s", 2 * n * n * b),
    ),
    Workload(
        "layernorm", "layer_norm over the rows of an n x n matrix (eps 1e-5, no affine); GB/s of 1 read + 1 write",
        lambda n: {"x": (n, n)},
        lambda zd, t: [zd.layer_norm(t["x"], axis=-1, eps=1e-5)],
        lambda xp, a: [_layernorm(xp, a["x"])],
        lambda torch, t: [torch.nn.functional.layer_norm(t["x"], (t["x"].shape[-1],), eps=1e-5)],
        lambda n, b: ("GB/s", 2 * n * n * b),
    ),
    Workload(
        "sum", "sum of a vector of n elements; GB/s of 1 read",
        lambda n: {"x": (n,)},
        lambda zd, t: [t["x"].sum()],
        lambda xp, a: [a["x"].sum()],
        lambda torch, t: [t["x"].sum()],
        lambda n, b: ("GB/s", n * b),
    ),
    Workload(
        "matmul", "n x n @ n x n; GFLOP/s of 2n^3",
        lambda n: {"a": (n, n), "b": (n, n)},
        lambda zd, t: [t["a"] @ t["b"]],
        lambda xp, a: [a["a"] @ a["b"]],
        lambda torch, t: [t["a"] @ t["b"]],
        lambda n, b: ("GFLOP/s", 2 * n**3),
    ),
    Workload(
        "mlp", "relu(x @ w1 + b1) @ w2 + b2 with x, w1, w2 n x n; GFLOP/s of 4n^3",
        lambda n: {"x": (n, n), "w1": (n, n), "b1": (n,), "w2": (n, n), "b2": (n,)},
        lambda zd, t: _mlp(zd.relu, t),
        lambda xp, a: _mlp(_np_relu(xp), a),
        lambda torch, t: _mlp(torch.relu, t),
        lambda n, b: ("GFLOP/s", 4 * n**3),
    ),
    Workload(
        "attention", f"softmax(q @ k.T / sqrt(d)) @ v, q/k/v n x d with d = {ATTENTION_DIM}; GFLOP/s of 4 n^2 d",
        lambda n: {"q": (n, ATTENTION_DIM), "k": (n, ATTENTION_DIM), "v": (n, ATTENTION_DIM)},
        _attention_ours,
        _attention_ref,
        _attention_torch,
        lambda n, b: ("GFLOP/s", 4 * n * n * ATTENTION_DIM),
    ),
    Workload(
        "branches", f"{BRANCHES} independent branches relu(x @ w_i), x and w_i n x n, realized together (the "
        f"scheduler may place them on different devices); GFLOP/s of {BRANCHES} x 2n^3",
        lambda n: {"x": (n, n), **{f"w{i}": (n, n) for i in range(BRANCHES)}},
        lambda zd, t: _branches(zd.relu, t),
        lambda xp, a: _branches(_np_relu(xp), a),
        lambda torch, t: _branches(torch.relu, t),
        lambda n, b: ("GFLOP/s", BRANCHES * 2 * n**3),
    ),
]
WORKLOADS: dict[str, Workload] = {w.name: w for w in _WORKLOADS}
assert tuple(WORKLOADS) == BENCHMARK_WORKLOADS, "zyx_dist.config.BENCHMARK_WORKLOADS must list the registry"


@dataclass
class Case:
    """One (workload, size, dtype) with its inputs."""

    workload: Workload
    size: int
    dtype: str
    inputs: dict[str, np.ndarray]
    unit: str
    work: int  # bytes or flops of one run

    @property
    def label(self) -> str:
        return f"{self.workload.name} n={self.size} {self.dtype}"

    def build(self, tensors: dict | None = None) -> list:
        """The lazy zyx_dist outputs; from host inputs (nothing runs) unless `tensors` are given."""
        import zyx_dist as zd

        if tensors is None:
            tensors = {k: zd.tensor(v) for k, v in self.inputs.items()}
        return self.workload.ours(zd, tensors)

    def reference(self) -> list[np.ndarray]:
        """The result computed by NumPy in float64 (for checking ours)."""
        return [np.asarray(r) for r in self.workload.ref(np, {k: v.astype(np.float64) for k, v in self.inputs.items()})]


def make_case(name: str, size: int, dtype: str, seed: int = 0) -> Case:
    w = WORKLOADS[name]
    rng = np.random.default_rng(seed)
    dt = np.dtype(dtype)
    scale = {"matmul": 1 / math.sqrt(size), "mlp": 1 / math.sqrt(size), "branches": 1 / math.sqrt(size)}.get(name, 1.0)
    inputs = {}
    for key, shape in w.inputs(size).items():
        s = scale if key.startswith("w") else 1.0
        inputs[key] = (rng.standard_normal(shape) * s).astype(dt)
    unit, work = w.work(size, dt.itemsize)
    return Case(w, size, dtype, inputs, unit, work)


def _tolerance(dtype: str) -> float:
    return {"float16": 3e-2, "float32": 2e-3, "float64": 1e-8}[dtype]


def check(case: Case, got: Sequence[np.ndarray]) -> float | None:
    """None when `got` matches NumPy within the dtype's tolerance, else the largest error relative to the
    largest reference value."""
    worst = 0.0
    for g, r in zip(got, case.reference()):
        g = np.asarray(g, dtype=np.float64)
        scale = max(1.0, float(np.abs(r).max()) if r.size else 1.0)
        err = float(np.abs(g - r).max()) / scale if r.size else 0.0
        if g.shape != r.shape or not np.isfinite(err):
            return float("inf")
        worst = max(worst, err)
    return None if worst <= _tolerance(case.dtype) else worst


def best_seconds(fn: Callable[[], Any], warmup: int, repeats: int) -> float:
    """The fastest of `repeats` timed rounds (records keep every round: `time_rounds`)."""
    return min(time_rounds(fn, warmup, repeats))


@dataclass
class Timing:
    rounds: list[float]  # seconds of each timed round
    error: float | None = None  # set when the result did not match NumPy

    @property
    def seconds(self) -> float:
        """The median round."""
        return statistics.median(self.rounds)


def run_case(case: Case, warmup: int, repeats: int, verify: bool = True) -> Timing:
    """Time zyx_dist on `case`: inputs are uploaded first; each run builds the graph and realizes it."""
    import zyx_dist as zd

    tensors = {k: zd.tensor(v) for k, v in case.inputs.items()}
    zd.realize(*tensors.values())
    error = None
    if verify:
        outs = zd.realize(*case.build(tensors))
        error = check(case, [o.numpy() for o in outs])
        warmup = max(0, warmup - 1)
    rounds = time_rounds(lambda: zd.realize(*case.build(tensors)), warmup, repeats)
    return Timing(rounds, error)


# ---- baselines (in this process, beside zyx_dist) ------------------------------------------------------------


class Baseline:
    """A library to compare with: `available()` says why not when it cannot run here."""

    name = ""

    def available(self) -> str | None:
        return None

    def system(self) -> str:
        return self.name

    def devices(self) -> list[dict]:
        """What it runs on, as result rows record it (name, backend, device, driver)."""
        return [{"name": "cpu", "backend": self.name, "device": cpu_model(), "driver": ""}]

    def time(self, case: Case, warmup: int, repeats: int) -> list[float]:
        """Seconds of each timed round."""
        raise NotImplementedError


class NumpyBaseline(Baseline):
    name = "numpy"

    def time(self, case: Case, warmup: int, repeats: int) -> list[float]:
        return time_rounds(lambda: case.workload.ref(np, case.inputs), warmup, repeats)


class CupyBaseline(Baseline):
    name = "cupy"

    def available(self) -> str | None:
        try:
            cp = importlib.import_module("cupy")
            if cp.cuda.runtime.getDeviceCount() < 1:
                return "cupy is installed but sees no CUDA device"
        except Exception as e:  # noqa: BLE001 -- any import or driver failure means "skip it"
            return f"cupy is not usable here ({type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''})"
        return None

    def devices(self) -> list[dict]:
        cp = importlib.import_module("cupy")
        props = cp.cuda.runtime.getDeviceProperties(cp.cuda.Device().id)
        name = props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"])
        return [{"name": f"cuda:{cp.cuda.Device().id}", "backend": "cupy", "device": name,
                 "driver": f"CUDA driver {cp.cuda.runtime.driverGetVersion()}, runtime "
                           f"{cp.cuda.runtime.runtimeGetVersion()}"}]

    def time(self, case: Case, warmup: int, repeats: int) -> list[float]:
        cp = importlib.import_module("cupy")
        arrays = {k: cp.asarray(v) for k, v in case.inputs.items()}

        def run():
            case.workload.ref(cp, arrays)
            cp.cuda.Device().synchronize()

        return time_rounds(run, warmup, repeats)


class TorchBaseline(Baseline):
    name = "torch"

    def available(self) -> str | None:
        try:
            importlib.import_module("torch")
        except Exception as e:  # noqa: BLE001
            return f"torch is not installed ({type(e).__name__})"
        return None

    def _device(self) -> str:
        torch = importlib.import_module("torch")
        return "cuda" if torch.cuda.is_available() else "cpu"

    def system(self) -> str:
        return f"torch-{self._device()}"

    def devices(self) -> list[dict]:
        torch = importlib.import_module("torch")
        if self._device() == "cuda":
            return [{"name": "cuda:0", "backend": "torch", "device": torch.cuda.get_device_name(0),
                     "driver": f"CUDA {torch.version.cuda}"}]
        return [{"name": "cpu", "backend": "torch", "device": cpu_model(), "driver": ""}]

    def time(self, case: Case, warmup: int, repeats: int) -> list[float]:
        torch = importlib.import_module("torch")
        dev = self._device()
        tensors = {k: torch.from_numpy(v).to(dev) for k, v in case.inputs.items()}

        def run():
            case.workload.torch(torch, tensors)
            if dev == "cuda":
                torch.cuda.synchronize()

        with torch.no_grad():
            return time_rounds(run, warmup, repeats)


BASELINES: dict[str, type[Baseline]] = {"numpy": NumpyBaseline, "cupy": CupyBaseline, "torch": TorchBaseline}


def rate(case: Case, seconds: float) -> float:
    """GB/s or GFLOP/s of one run that took `seconds`."""
    return case.work / seconds / 1e9 if seconds > 0 else float("inf")
