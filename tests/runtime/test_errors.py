"""Runtime tests of the errors of API.md section 8: each is raised when the op is called (before any
realize), names the culprit (the shapes, the dtype, the device, the config key), subclasses `zd.ZyxError`
and the documented builtin (ValueError, TypeError, RuntimeError, MemoryError), and leaves the session
usable."""

from __future__ import annotations

import re

import numpy as np
import pytest
from helpers import assert_close

import zyx_dist as zd
from zyx_dist.engine import session as zsession


@pytest.mark.parametrize("cls,builtin", [(zd.ShapeError, ValueError), (zd.DTypeError, TypeError),
                                         (zd.DeviceError, RuntimeError), (zd.OutOfMemoryError, MemoryError),
                                         (zd.CompileError, RuntimeError), (zd.WorkerLostError, RuntimeError),
                                         (zd.ConfigError, ValueError)])
def test_error_hierarchy(cls, builtin):
    assert issubclass(cls, zd.ZyxError) and issubclass(cls, builtin)
    assert issubclass(zd.ZyxError, Exception)


def shapes_named(msg: str, *shapes: tuple) -> bool:
    flat = msg.replace(" ", "")
    return all(str(s).replace(" ", "") in flat for s in shapes)


def raises_at_call(cls, fn, *shapes):
    """fn() must raise cls at once (nothing realized) with every shape in the message."""
    zd.reset_stats()
    with pytest.raises(cls) as info:
        fn()
    assert zd.stats()["kernels_launched"] == 0
    assert shapes_named(str(info.value), *shapes), f"{str(info.value)!r} does not name {shapes}"
    return info.value


A = (3, 4)
B = (5,)


@pytest.mark.parametrize("op", [lambda x, y: x + y, lambda x, y: x * y, lambda x, y: zd.maximum(x, y),
                                lambda x, y: x < y, lambda x, y: zd.where(x > 0, x, y), lambda x, y: y - x,
                                lambda x, y: zd.logical_and(x, y)],
                         ids=["add", "mul", "maximum", "less", "where", "rsub", "logical_and"])
def test_not_broadcastable(op):
    x, y = zd.ones(A), zd.ones(B)
    err = raises_at_call(zd.ShapeError, lambda: op(x, y), A, B)
    assert isinstance(err, ValueError)


def test_not_broadcastable_views_and_arrays():
    x = zd.ones((2, 3, 4))
    raises_at_call(zd.ShapeError, lambda: x + np.ones((3, 3)), (2, 3, 4), (3, 3))
    raises_at_call(zd.ShapeError, lambda: x.T + x, (4, 3, 2), (2, 3, 4))
    raises_at_call(zd.ShapeError, lambda: zd.broadcast_to(x, (2, 5, 4)), (2, 3, 4), (2, 5, 4))
    raises_at_call(zd.ShapeError, lambda: x.expand(3, 4), (2, 3, 4))
    raises_at_call(zd.ShapeError, lambda: zd.where(zd.ones((2,)) > 0, x, 1.0), (2,))


@pytest.mark.parametrize("shape", [(5, 3), (13,), (5, -1), (-1, -1), (2, -2), (0, -1), (25,)], ids=str)
def test_bad_reshape(shape):
    x = zd.ones(A)
    err = raises_at_call(zd.ShapeError, lambda: x.reshape(shape), A)
    assert isinstance(err, ValueError)
    raises_at_call(zd.ShapeError, lambda: zd.reshape(x, shape), A)


@pytest.mark.parametrize("fn", [
    lambda x: x.sum(axis=2), lambda x: x.sum(axis=-3), lambda x: zd.max(x, axis=(0, 5)), lambda x: x.mean(3),
    lambda x: x.argmax(axis=2), lambda x: zd.softmax(x, axis=2), lambda x: zd.flip(x, 2),
    lambda x: zd.expand_dims(x, 4), lambda x: zd.concat([x, x], axis=2), lambda x: zd.stack([x, x], axis=4),
    lambda x: zd.split(x, 2, axis=-3), lambda x: x.any(axis=9), lambda x: zd.logsumexp(x, axis=-5),
    lambda x: x.var(axis=2), lambda x: zd.repeat(x, 2, axis=3), lambda x: zd.squeeze(x, 4),
], ids=["sum", "sum-neg", "max-tuple", "mean", "argmax", "softmax", "flip", "expand_dims", "concat", "stack", "split",
        "any", "logsumexp", "var", "repeat", "squeeze"])
def test_axis_out_of_range(fn):
    x = zd.ones(A)
    err = raises_at_call(zd.ShapeError, lambda: fn(x), A)
    assert isinstance(err, ValueError)


@pytest.mark.parametrize("fn", [lambda x: x.sum(axis=(0, 0)), lambda x: x.max(axis=(1, -1)),
                                lambda x: zd.mean(x, axis=[0, -2]), lambda x: zd.flip(x, (1, 1)),
                                lambda x: x.permute(0, 0), lambda x: zd.permute_dims(x, (1, -1))],
                         ids=["sum", "max-neg", "mean-list", "flip", "permute", "permute-neg"])
def test_repeated_axis(fn):
    x = zd.ones(A)
    raises_at_call(zd.ShapeError, lambda: fn(x), A)


@pytest.mark.parametrize("axes", [(0,), (0, 1, 2), (0, 2), (2, 1), ()], ids=str)
def test_bad_permutation(axes):
    x = zd.ones(A)
    err = raises_at_call(zd.ShapeError, lambda: x.permute(*axes) if axes else zd.permute_dims(x, axes), A)
    assert isinstance(err, ValueError)


@pytest.mark.parametrize("sa,sb", [((3, 4), (5, 6)), ((4,), (5,)), ((2, 3, 4), (3, 4, 5)), ((3, 4), (3,)),
                                   ((7,), (6, 2))], ids=str)
def test_matmul_inner_dims_differ(sa, sb):
    x, y = zd.ones(sa), zd.ones(sb)
    err = raises_at_call(zd.ShapeError, lambda: x @ y, sa, sb)
    assert isinstance(err, ValueError)
    raises_at_call(zd.ShapeError, lambda: zd.matmul(x, y), sa, sb)


def test_other_shape_errors():
    x = zd.ones(A)
    raises_at_call(zd.ShapeError, lambda: zd.concat([x, zd.ones((3, 5))]), A, (3, 5))
    raises_at_call(zd.ShapeError, lambda: zd.stack([x, zd.ones((4, 3))]), A, (4, 3))
    raises_at_call(zd.ShapeError, lambda: zd.split(x, 3, axis=1), A)
    raises_at_call(zd.ShapeError, lambda: zd.tensordot(x, zd.ones((5, 2)), axes=1), A, (5, 2))
    raises_at_call(zd.ShapeError, lambda: x.squeeze(1), A)
    raises_at_call(zd.ShapeError, lambda: x.mT @ zd.ones((4, 2)), (4, 3), (4, 2))
    raises_at_call(zd.ShapeError, lambda: zd.zeros((2, -3)))
    with pytest.raises(ValueError):
        zd.pad(x, ((1, 2), (3, 4), (5, 6)))
    with pytest.raises(ValueError):
        zd.pad(x, -1)


@pytest.mark.parametrize("op", [lambda x, y: x & y, lambda x, y: x | y, lambda x, y: x ^ y,
                                lambda x, y: zd.bitwise_and(x, y), lambda x, y: zd.bitwise_or(y, x),
                                lambda x, y: zd.bitwise_xor(x, 3), lambda x, y: 1 & x, lambda x, y: ~x],
                         ids=["and", "or", "xor", "bitwise_and", "bitwise_or-int-float", "bitwise_xor-scalar",
                              "rand", "invert"])
@pytest.mark.parametrize("fdtype", [zd.float32, zd.float16], ids=["float32", "float16"])
def test_bitwise_on_floats(op, fdtype):
    x = zd.ones(A, dtype=fdtype)
    y = zd.ones(A, dtype=zd.int32)
    zd.reset_stats()
    with pytest.raises(zd.DTypeError) as info:
        op(x, y)
    assert isinstance(info.value, TypeError)
    assert "float" in str(info.value)
    assert zd.stats()["kernels_launched"] == 0


def test_other_dtype_errors():
    b = zd.tensor([True, False])
    with pytest.raises(zd.DTypeError):
        b - b  # NumPy refuses boolean subtract too
    with pytest.raises(zd.DTypeError):
        zd.rand(3, dtype=zd.int32)
    with pytest.raises(zd.DTypeError):
        zd.ones(3).astype("complex64")
    with pytest.raises(zd.DTypeError):
        zd.tensor(np.array(["a", "b"]))


@pytest.mark.parametrize("make", [lambda d: zd.tensor([1, 2], device=d), lambda d: zd.zeros(3, device=d),
                                  lambda d: zd.ones(2).to(d), lambda d: zd.arange(4, device=d),
                                  lambda d: zd.rand(2, seed=0, device=d)],
                         ids=["tensor", "zeros", "to", "arange", "rand"])
@pytest.mark.parametrize("name", ["opencl:7", "cuda:0", "tpu:0"])
def test_unknown_device(make, name):
    with pytest.raises(zd.DeviceError) as info:
        make(name)
    assert isinstance(info.value, RuntimeError)
    assert name in str(info.value)


def test_init_twice_raises():
    with pytest.raises(zd.ZyxError) as info:
        zd.init(ray=False)
    assert re.search(r"(?i)init|shutdown", str(info.value))
    assert_close(zd.ones(2) + 1, np.full(2, 2.0), zd.float32)  # the running session is untouched


@pytest.mark.parametrize("config,key", [
    ({"bogus": 1}, "bogus"),
    ({"memory_limit": "lots"}, "memory_limit"),
    ({"memory_limit": -5}, "memory_limit"),
    ({"scheduler": {"policy": "magic"}}, "policy"),
    ({"scheduler": {"polcy": "heft"}}, "polcy"),
    ({"devices": ["gpu-zero"]}, "devices"),
    ({"autotune": {"budget": "many"}}, "budget"),
    ({"ray": {"max_restarts": -1}}, "max_restarts"),
    ({"debug": "loud"}, "debug"),
], ids=str)
def test_bad_config(config, key):
    zd.shutdown()
    try:
        with pytest.raises(zd.ConfigError) as info:
            zd.init(config, ray=False)
        assert isinstance(info.value, ValueError)
        assert key in str(info.value)
    finally:
        zd.shutdown()
        zd.init(ray=False)
    assert_close(zd.arange(3) * 2, np.array([0, 2, 4]), zd.int32)


def test_an_unknown_device_name_given_to_init_is_a_device_error():
    zd.shutdown()
    try:
        for name in ("tpu:0", "Reference:0"):
            with pytest.raises(zd.DeviceError, match=name) as info:
                zd.init(ray=False, devices=[name])
            assert isinstance(info.value, zd.ConfigError)  # (and a bad value of the devices key)
    finally:
        zd.shutdown()
        zd.init(ray=False)


def test_a_tensor_of_a_shut_down_session_is_refused_in_the_next_one():
    zd.shutdown()
    try:
        zd.init(ray=False, devices=["reference:0", "reference:1"])
        a = zd.tensor([1.0, 2.0, 3.0]).realize()
        b = (a * 2).realize()
        pinned = zd.ones(3, device="reference:1") * 2
        zd.shutdown()
        zd.init(ray=False, devices=["reference:0"])
        d = zd.tensor([10.0, 20.0, 30.0]).realize()  # (its buffer id once was a's: ids now run on across sessions)
        (d * 2).realize()
        for use in (lambda: a + 1, lambda: a * d, lambda: b + 1, lambda: a):
            with pytest.raises(zd.ZyxError, match="shutdown"):
                use().numpy()
        with pytest.raises(zd.DeviceError, match="reference:1"):
            pinned.numpy()
        assert_close(d + 1, np.array([11.0, 21.0, 31.0]), zd.float32)
    finally:
        zd.shutdown()
        zd.init(ray=False)


def test_a_read_after_shutdown_refuses_without_starting_a_session():
    a = (zd.ones(3) * 2).realize()
    lazy = a + 1
    zd.shutdown()
    try:
        for read in (a.numpy, lazy.numpy, lazy.realize, lambda: zd.realize(lazy), lambda: float(a[0])):
            with pytest.raises(zd.ZyxError, match="shutdown"):
                read()
            assert zsession.running() is None  # (the implicit init would have started Ray)
    finally:
        zd.init(ray=False)
    assert_close(zd.ones(2) + 1, np.full(2, 2.0), zd.float32)


def test_shutdown_twice_is_safe():
    zd.shutdown()
    zd.shutdown()
    zd.init(ray=False)
    assert_close(zd.ones(2), np.ones(2), zd.float32)


def test_errors_leave_session_usable():
    x = zd.tensor(np.arange(12, dtype=np.float32).reshape(A))
    for bad in (lambda: x + zd.ones(B), lambda: x.reshape(5, 5), lambda: x & 1, lambda: x.sum(7)):
        with pytest.raises(zd.ZyxError):
            bad()
    assert_close(x.sum(1), np.arange(12, dtype=np.float32).reshape(A).sum(1), zd.float32)
