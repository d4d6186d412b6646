"""Bad input (issue 7, item 3): a table of bad calls across API.md, each raising the documented error AT THE
CALL (nothing is realized or read while it runs: `Session._realize` and `Session._read` are made to fail the
test) with a message naming the culprit, and leaving the session usable.

Each row is (callable, expected exception class, substring the message must contain). Rows where zyx_dist
raises the wrong class or an unhelpful message are kept as strict xfails with the reason (library bugs).
Config rows call `zd.init` on a side session slot (`fuzzgraph.detached_session`: the running session is put
aside and restored, nothing is started because the config is refused first), so this module costs no
session restart, also when tests/cluster/test_runtime_on_ray.py runs it again on the Ray session.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from fuzzgraph import detached_session

import zyx_dist as zd
from zyx_dist.engine import session as zsession

NAN, INF = float("nan"), float("inf")


def x34(dtype=zd.float32):
    return zd.ones((3, 4), dtype=dtype)


def init_bad(config=None, **kw):
    """zd.init with a bad config or devices, on a side slot so the running session stays."""
    with detached_session():
        zd.init(config, ray=kw.pop("ray", False), **kw)


def setitem():
    x = x34()
    x[0] = 1




def row(id_, fn, exc, text, marks=()):
    return pytest.param(fn, exc, text, id=id_, marks=marks)


ROWS = [
    # ---- sizes and shapes of creation functions (API.md 3) ------------------------------------------------
    row("zeros-nan", lambda: zd.zeros(NAN), zd.ShapeError, "nan"),
    row("ones-inf", lambda: zd.ones((2, INF)), zd.ShapeError, "inf"),
    row("full-inf", lambda: zd.full((INF,), 1.0), zd.ShapeError, "inf"),
    row("randn-nan", lambda: zd.randn(NAN), zd.ShapeError, "nan"),
    row("zeros-negative", lambda: zd.zeros(-1), zd.ShapeError, "-1"),
    row("full-negative", lambda: zd.full((2, -2), 1.0), zd.ShapeError, "-2"),
    row("rand-negative", lambda: zd.rand(-2), zd.ShapeError, "-2"),
    row("zeros-float-size", lambda: zd.zeros(2.5), zd.ShapeError, "2.5"),
    row("ones-str-size", lambda: zd.ones((2, "3")), zd.ShapeError, "'3'"),
    row("ones-none-shape", lambda: zd.ones(None), zd.ShapeError, "None"),
    row("arange-step-0", lambda: zd.arange(0, 10, 0), zd.ShapeError, "step"),
    row("arange-nan", lambda: zd.arange(0, NAN), zd.ShapeError, "nan"),
    row("arange-inf", lambda: zd.arange(0, INF), zd.ShapeError, "inf"),
    row("arange-1e30", lambda: zd.arange(0, 1e30), zd.ShapeError, "1e+30"),
    row("eye-negative", lambda: zd.eye(-1), zd.ShapeError, "-1"),
    row("eye-m-negative", lambda: zd.eye(2, -3), zd.ShapeError, "-3"),
    row("eye-float", lambda: zd.eye(2.5), zd.ShapeError, "2.5"),
    row("linspace-negative", lambda: zd.linspace(0, 1, -3), zd.ShapeError, "-3"),
    row("linspace-nan-count", lambda: zd.linspace(0, 1, NAN), zd.ShapeError, "nan"),
    row("uniform-high-below-low", lambda: zd.uniform((2,), low=1.0, high=0.0), ValueError, "high"),
    # ---- wrong types and dtypes of data (API.md 2, 3) ----------------------------------------------------
    row("tensor-object", lambda: zd.tensor(object()), zd.DTypeError, "object"),
    row("tensor-dict", lambda: zd.tensor({"a": 1}), zd.DTypeError, "object"),
    row("tensor-str", lambda: zd.tensor("abc"), zd.DTypeError, "U3"),
    row("tensor-mixed-list", lambda: zd.tensor([1, "a"]), zd.DTypeError, "U21"),
    row("tensor-complex-dtype", lambda: zd.tensor([1, 2], dtype="complex64"), zd.DTypeError, "complex64"),
    row("tensor-bogus-dtype", lambda: zd.tensor([1, 2], dtype="floaty"), zd.DTypeError, "floaty"),
    row("zeros-bogus-dtype", lambda: zd.zeros(3, dtype="bogus"), zd.DTypeError, "bogus"),
    row("rand-int-dtype", lambda: zd.rand(3, dtype=zd.int32), zd.DTypeError, "int32"),
    row("full-str-value", lambda: zd.full((2,), "a"), zd.DTypeError, "'a'"),
    row("rand-float-seed", lambda: zd.rand(3, seed=1.5), TypeError, "1.5"),
    row("tensor-ragged", lambda: zd.tensor([[1, 2], [3]]), zd.ShapeError, "inhomogeneous"),
    row("tensor-int-beyond-uint64", lambda: zd.tensor([2 ** 70]), zd.DTypeError, str(2 ** 70)),
    # a Python int outside the dtype asked for: NumPy 2's OverflowError, naming the value and the dtype
    row("tensor-int-beyond-uint8", lambda: zd.tensor([1, 300], dtype=zd.uint8), OverflowError,
        "300 out of bounds for uint8"),
    row("tensor-negative-uint32", lambda: zd.tensor([[1], [-1]], dtype=zd.uint32), OverflowError,
        "-1 out of bounds for uint32"),
    row("tensor-int-beyond-int64", lambda: zd.tensor([1, 2 ** 70], dtype=zd.int64), OverflowError,
        f"{2 ** 70} out of bounds for int64"),
    row("full-int-beyond-uint8", lambda: zd.full(2, 300, dtype=zd.uint8), OverflowError, "300 out of bounds for uint8"),
    row("full-int-below-int8", lambda: zd.full((2, 2), -129, dtype=zd.int8), OverflowError,
        "-129 out of bounds for int8"),
    row("full_like-int-beyond-uint8", lambda: zd.full_like(x34(zd.uint8), 300), OverflowError,
        "300 out of bounds for uint8"),
    # ---- operator and function arguments of the wrong type (API.md 5) -----------------------------------
    row("add-str", lambda: x34() + "s", TypeError, "str"),
    row("radd-str", lambda: "s" + x34(), TypeError, "str"),
    row("add-none", lambda: x34() + None, TypeError, "NoneType"),
    row("mul-object-list", lambda: x34() * [object()], zd.DTypeError, "object"),
    row("clip-str", lambda: zd.clip(x34(), "a", 1), zd.DTypeError, "U1"),
    row("layer_norm-str-eps", lambda: zd.layer_norm(x34(), eps="a"), TypeError, "str"),
    row("astype-bogus", lambda: x34().astype("bogus"), zd.DTypeError, "bogus"),
    row("astype-complex", lambda: x34().astype(np.complex64), zd.DTypeError, "complex64"),
    row("astype-object", lambda: x34().astype(object), zd.DTypeError, "object"),
    row("dtype-bogus", lambda: zd.dtype("bogus"), zd.DTypeError, "bogus"),
    row("realize-non-tensor", lambda: zd.realize(3), TypeError, "int"),
    row("explain-non-tensor", lambda: zd.explain("a"), TypeError, "str"),
    # ---- dtypes an op does not support (API.md 8: DTypeError at the call) -------------------------------
    row("bitwise-and-float", lambda: x34() & x34(), zd.DTypeError, "float32"),
    row("bitwise-or-float16", lambda: x34(zd.float16) | x34(zd.float16), zd.DTypeError, "float16"),
    row("bitwise-or-float16-int", lambda: x34(zd.float16) | x34(zd.int32), zd.DTypeError, "float16"),
    row("bitwise-xor-float-scalar", lambda: zd.bitwise_xor(x34(), 3), zd.DTypeError, "float32"),
    row("invert-float", lambda: ~x34(), zd.DTypeError, "float32"),
    row("subtract-bool", lambda: zd.tensor([True]) - zd.tensor([False]), zd.DTypeError, "bool"),
    # ---- shapes (API.md 8: ShapeError at the call, naming the shapes) -----------------------------------
    row("broadcast", lambda: x34() + zd.ones(5), zd.ShapeError, "(5,)"),
    row("broadcast_to", lambda: zd.broadcast_to(x34(), (4,)), zd.ShapeError, "(3, 4)"),
    row("expand", lambda: x34().expand(5, 4), zd.ShapeError, "(5, 4)"),
    row("where-shapes", lambda: zd.where(zd.ones(3) > 0, x34(), 1.0), zd.ShapeError, "(3,)"),
    row("reshape-str", lambda: zd.reshape(x34(), "3"), zd.ShapeError, "'3'"),
    row("reshape-float", lambda: x34().reshape(3, 4.0), zd.ShapeError, "4.0"),
    row("reshape-two-minus-one", lambda: x34().reshape(-1, -1), zd.ShapeError, "(-1, -1)"),
    row("reshape-size", lambda: x34().reshape(5, 3), zd.ShapeError, "(5, 3)"),
    row("matmul-0d", lambda: zd.tensor(1.0) @ zd.tensor(2.0), zd.ShapeError, "0-d"),
    row("matmul-1d-0d", lambda: zd.ones(3) @ zd.tensor(2.0), zd.ShapeError, "()"),
    row("matmul-inner", lambda: x34() @ x34(), zd.ShapeError, "(3, 4)"),
    row("tensordot-axes", lambda: zd.tensordot(x34(), x34(), axes=3), zd.ShapeError, "3 axes"),
    row("tensordot-axes-str", lambda: zd.tensordot(x34(), x34().T, axes="a"), TypeError, "'a'"),
    row("tensordot-repeated-axis", lambda: zd.tensordot(x34(), x34(), axes=([0, 0], [0, 1])), zd.ShapeError,
        "repeat an axis of a"),
    row("mT-1d", lambda: zd.ones(3).mT, zd.ShapeError, "(3,)"),
    row("squeeze-non-1", lambda: x34().squeeze(0), zd.ShapeError, "size 3"),
    row("split-not-dividing", lambda: zd.split(zd.ones(10), 3), zd.ShapeError, "3 equal sections"),
    row("split-into-0", lambda: zd.split(x34(), 0), zd.ShapeError, "0 equal sections"),
    row("split-float", lambda: zd.split(x34(), 1.5), TypeError, "1.5"),
    row("pad-negative", lambda: zd.pad(x34(), ((-1, 0), (0, 0))), zd.ShapeError, "negative"),
    row("pad-negative-int", lambda: zd.pad(x34(), -1), zd.ShapeError, "-1"),
    row("pad-too-many-axes", lambda: zd.pad(x34(), ((1, 1),) * 3), zd.ShapeError, "(3, 4)"),
    row("pad-str", lambda: zd.pad(x34(), "a"), TypeError, "'a'"),
    row("pad-value-str", lambda: zd.pad(x34(), 1, value="a"), TypeError, "value"),
    row("concat-empty", lambda: zd.concat([]), zd.ShapeError, "at least one"),
    row("concat-ranks", lambda: zd.concat([x34(), zd.ones(3)]), zd.ShapeError, "(3,)"),
    row("concat-non-tensor", lambda: zd.concat([x34(), "a"]), zd.DTypeError, "U1"),
    row("stack-shapes", lambda: zd.stack([x34(), zd.ones((4, 3))]), zd.ShapeError, "(4, 3)"),
    row("stack-empty", lambda: zd.stack([]), zd.ShapeError, "at least one"),
    row("tile-negative", lambda: zd.tile(x34(), -1), zd.ShapeError, "-1"),
    row("repeat-negative", lambda: zd.repeat(x34(), -1), zd.ShapeError, "-1"),
    row("repeat-float", lambda: zd.repeat(x34(), 1.5), TypeError, "1.5"),
    # ---- axes (API.md 5, 8) --------------------------------------------------------------------------------
    row("sum-axis-float", lambda: x34().sum(axis=1.5), zd.ShapeError, "1.5"),
    row("sum-axis-str", lambda: x34().sum(axis="0"), zd.ShapeError, "'0'"),
    row("sum-axis-out-of-range", lambda: x34().sum(axis=2), zd.ShapeError, "axis 2"),
    row("mean-axis-list-float", lambda: zd.mean(x34(), axis=[1.0]), zd.ShapeError, "1.0"),
    row("std-repeated-axis", lambda: x34().std(axis=(0, 0)), zd.ShapeError, "(0, 0)"),
    row("softmax-axis", lambda: zd.softmax(x34(), axis=2), zd.ShapeError, "axis 2"),
    row("layer_norm-axis", lambda: zd.layer_norm(x34(), axis=4), zd.ShapeError, "axis 4"),
    row("permute-out-of-range", lambda: x34().permute(0, 2), zd.ShapeError, "axis 2"),
    row("permute-repeated", lambda: x34().permute(0, 0), zd.ShapeError, "(0, 0)"),
    row("permute-float", lambda: x34().permute(0.0, 1.0), zd.ShapeError, "0.0"),
    row("flip-axis", lambda: zd.flip(x34(), 3), zd.ShapeError, "axis 3"),
    row("expand_dims-axis", lambda: zd.expand_dims(x34(), 5), zd.ShapeError, "axis 5"),
    row("concat-axis", lambda: zd.concat([x34(), x34()], axis=5), zd.ShapeError, "axis 5"),
    row("stack-axis", lambda: zd.stack([x34(), x34()], axis=-4), zd.ShapeError, "axis -4"),
    # ---- indexing (API.md 5) -------------------------------------------------------------------------------
    row("index-out-of-range", lambda: zd.ones(5)[10], IndexError, "10"),
    row("index-negative-out-of-range", lambda: zd.ones(5)[-6], IndexError, "-6"),
    row("index-two-ellipses", lambda: x34()[..., ..., 0], IndexError, "ellipsis"),
    row("index-too-many", lambda: x34()[0, 0, 0], IndexError, "too many indices"),
    row("index-float", lambda: x34()[1.5], IndexError, "1.5"),
    row("index-str", lambda: x34()["a"], IndexError, "'a'"),
    row("index-step-0", lambda: x34()[::0], ValueError, "step"),
    row("index-bool-mask-shape", lambda: x34()[np.ones((4, 3), bool)], IndexError, "(4, 3)"),
    row("index-arrays-not-broadcasting", lambda: x34()[np.ones(3, bool), [0, 1]], IndexError, "(3,) (2,)"),
    row("gather-out-of-range", lambda: zd.ones(5)[np.array([0, 7])], IndexError, "7"),
    row("gather-float-array", lambda: zd.ones(5)[np.array([0.5])], IndexError, "float64"),
    row("gather-two-arrays-out-of-bounds", lambda: x34()[np.array([0]), np.array([4])], IndexError, "out of bounds"),
    row("setitem", setitem, TypeError, "immutable"),
    # ---- scalars out of tensors (API.md 4) ---------------------------------------------------------------
    row("item-size-12", lambda: x34().item(), ValueError, "(3, 4)"),
    row("float-size-12", lambda: float(x34()), ValueError, "(3, 4)"),
    row("bool-size-12", lambda: bool(x34()), ValueError, "ambiguous"),
    row("len-0d", lambda: len(zd.tensor(1.0)), TypeError, "0-d"),
    # ---- devices (API.md 1, 6) -----------------------------------------------------------------------------
    row("device-unknown-index", lambda: zd.ones(3, device="opencl:9"), zd.DeviceError, "opencl:9"),
    row("device-garbage", lambda: zd.zeros(3, device="banana"), zd.DeviceError, "banana"),
    row("device-tensor", lambda: zd.tensor([1, 2], device="tpu:0"), zd.DeviceError, "tpu:0"),
    row("to-unknown", lambda: x34().to("cuda:5"), zd.DeviceError, "cuda:5"),
    row("to-int", lambda: x34().to(3), zd.DeviceError, "3"),
    row("shard-unknown", lambda: x34().shard(["opencl:5"]), zd.DeviceError, "opencl:5"),
    row("shard-axis", lambda: x34().shard([zsession.current().default_device], axis=3), zd.ShapeError, "axis 3"),
    # ---- session and config (API.md 1, 9) ------------------------------------------------------------------
    row("init-twice", lambda: zd.init(ray=False), zd.ZyxError, "shutdown"),
    row("config-unknown-key", lambda: init_bad({"bogus": 1}), zd.ConfigError, "bogus"),
    row("config-unknown-nested-key", lambda: init_bad({"ray": {"nope": 1}}), zd.ConfigError, "ray.nope"),
    row("config-bad-size", lambda: init_bad({"memory_limit": "lots"}), zd.ConfigError, "memory_limit"),
    row("config-negative-size", lambda: init_bad({"memory_limit": -5}), zd.ConfigError, "memory_limit"),
    row("config-nan-size", lambda: init_bad({"memory_limit": NAN}), zd.ConfigError, "memory_limit"),
    row("config-bad-unit", lambda: init_bad({"memory_limit": "1.5XB"}), zd.ConfigError, "1.5XB"),
    row("config-bad-policy", lambda: init_bad({"scheduler": {"policy": "magic"}}), zd.ConfigError,
        "scheduler.policy"),
    row("config-section-not-mapping", lambda: init_bad({"scheduler": "heft"}), zd.ConfigError, "scheduler"),
    row("config-negative-max-restarts", lambda: init_bad({"ray": {"max_restarts": -1}}), zd.ConfigError,
        "ray.max_restarts"),
    row("config-float-max-restarts", lambda: init_bad({"ray": {"max_restarts": 1.5}}), zd.ConfigError,
        "ray.max_restarts"),
    row("config-autotune-enabled-str", lambda: init_bad({"autotune": {"enabled": "yes"}}), zd.ConfigError,
        "autotune.enabled"),
    row("config-autotune-enabled-int", lambda: init_bad({"autotune": {"enabled": 1}}), zd.ConfigError,
        "autotune.enabled"),
    row("config-autotune-budget", lambda: init_bad({"autotune": {"budget": 0}}), zd.ConfigError, "autotune.budget"),
    row("config-debug", lambda: init_bad({"debug": "loud"}), zd.ConfigError, "debug"),
    row("config-debug-bits", lambda: init_bad({"debug": 1 << 20}), zd.ConfigError, "debug"),
    row("init-ray-str", lambda: init_bad(ray="no"), TypeError, "'no'"),
    row("config-namespace", lambda: init_bad({"ray": {"namespace": 5}}), zd.ConfigError, "ray.namespace"),
    row("config-device-name", lambda: init_bad({"devices": ["gpu-zero"]}), zd.ConfigError, "gpu-zero"),
    row("config-device-count", lambda: init_bad({"devices": {"opencl-cpu": 0}}), zd.ConfigError, "opencl-cpu"),
    row("config-not-a-mapping", lambda: init_bad(42), zd.ConfigError, "42"),
    row("config-missing-file", lambda: init_bad("/nonexistent/zyx.yaml"), zd.ConfigError, "/nonexistent/zyx.yaml"),
    row("init-devices-bad-count", lambda: init_bad(devices={"opencl-cpu": -2}), zd.ConfigError, "-2"),
    row("init-devices-unknown-key", lambda: init_bad(devices={"cuda": 2}), zd.ConfigError, "devices.cuda"),
    row("init-devices-missing-device", lambda: init_bad(devices=["opencl:99"]), zd.DeviceError, "opencl:99"),
]


@pytest.fixture
def at_the_call(monkeypatch):
    """While the bad call runs, nothing may be realized or read: it must fail at the call itself."""

    def refuse(*_a, **_k):
        raise AssertionError("the bad call reached a realize/read instead of failing at the call")

    monkeypatch.setattr(zsession.Session, "_realize", refuse)
    monkeypatch.setattr(zsession.Session, "_read", refuse)


@pytest.mark.parametrize("fn,exc,text", ROWS)
def test_bad_call_raises_at_the_call(at_the_call, fn, exc, text):
    running = zsession.running()
    launched = zd.stats()["kernels_launched"]
    with pytest.raises(exc) as info:
        fn()
    msg = str(info.value)
    assert text in msg, f"{type(info.value).__name__}: {msg!r} does not name {text!r}"
    if issubclass(exc, zd.ZyxError):
        assert isinstance(info.value, zd.ZyxError)
    assert zsession.running() is running, "the bad call changed the running session"
    assert zd.stats()["kernels_launched"] == launched


def test_table_size():
    assert len(ROWS) >= 45


def test_session_usable_after_every_bad_call():
    """Run the whole table again back to back, then compute something: no bad call leaves state behind."""
    failed = 0
    for p in ROWS:
        try:
            p.values[0]()
        except Exception:  # noqa: BLE001 -- only that the session survives them all matters here
            failed += 1
    assert failed == len(ROWS)
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    x = zd.tensor(a)
    np.testing.assert_allclose((x @ x.T + x.sum(0)[:3]).numpy(), a @ a.T + a.sum(0)[:3], rtol=1e-6)


def test_out_of_range_tensor_index_is_not_silently_wrong():
    """The index is lazy, so it is accepted at the call and raises at the realize (tests/runtime/
    test_index_checks.py has the rest)."""
    x = zd.arange(5) * 10
    idx = zd.tensor([0, 9])
    y = x[idx]  # lazy: accepted at the call
    with pytest.raises(IndexError, match="9"):
        y.numpy()


def test_float64_on_a_device_without_fp64():
    """API.md 2 and 8: float64 on a device without fp64 raises zd.DTypeError at realize. PoCL has fp64, so
    the device is made into one without it: a side in-process session whose scheduler model of opencl:0
    says fp64=False (what the probe reports for such a device)."""
    with detached_session():
        s = zd.init(ray=False)
        dev = s.default_device
        s.state.devices[dev] = dataclasses.replace(s.state.devices[dev], fp64=False)
        x = zd.ones(3, dtype=zd.float64) * 2  # lazy: accepted at the call
        with pytest.raises(zd.DTypeError) as info:
            x.realize()
        assert "float64" in str(info.value) and dev in str(info.value), str(info.value)
        np.testing.assert_array_equal((zd.ones(3) * 2).numpy(), np.full(3, 2, np.float32))
