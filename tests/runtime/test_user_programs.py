"""Runtime regressions found by writing the programs a NumPy user writes (MLP and attention training,
NumPy functions on tensors, data-parallel steps), each checked against NumPy on the in-process session
of tests/conftest.py. One test per defect, named after what the user called."""

from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest

import zyx_dist as zd


def test_round_with_decimals_as_numpy():
    """np.round(x, 1), x.round(2), zd.round(x, decimals=-1) as NumPy's (np.round(x, 1) raised a TypeError
    from inside zd.round, which took no decimals)."""
    f = np.array([1.005, 2.675, -0.125, 1234.5678, 0.5, 1.5, 2.5, -2.5, 1250.0, 1350.0], np.float32)
    for d in (0, 1, 2, 3, -1, -2):
        np.testing.assert_array_equal(np.round(zd.tensor(f), d).numpy(), np.round(f, d))
        np.testing.assert_array_equal(zd.tensor(f).round(d).numpy(), f.round(d))
        np.testing.assert_array_equal(zd.round(zd.tensor(f), decimals=d).numpy(), np.round(f, d))
    ints = np.array([15, 25, -15, -25, 14, -16, 7, 127, 5, 0, 95, 105])
    for dt in (np.int8, np.int32, np.int64, np.uint8):
        a = (np.abs(ints) if dt is np.uint8 else ints).astype(dt)
        for d in (0, 1, -1, -2, -20):
            got, want = np.round(zd.tensor(a), d).numpy(), np.round(a, d)
            assert got.dtype == want.dtype
            np.testing.assert_array_equal(got, want)


def test_python_builtins_round_divmod_copy_pickle():
    """round(x), divmod(x, 5), copy.deepcopy(params) and pickle of tensors, as for NumPy arrays (each raised a
    TypeError: no __round__, no __divmod__, and deepcopy/pickle failed on the graph's Node)."""
    a_np = np.arange(12, dtype=np.float32).reshape(3, 4) - 5.5
    a = zd.tensor(a_np)
    np.testing.assert_array_equal(round(a).numpy(), np.round(a_np))
    np.testing.assert_array_equal(round(a, 1).numpy(), np.round(a_np, 1))
    for got, want in zip(divmod(a, 5), divmod(a_np, 5)):
        np.testing.assert_array_equal(got.numpy(), want)
    for got, want in zip(divmod(7, zd.tensor([2, -3])), divmod(7, np.array([2, -3], np.int32))):
        np.testing.assert_array_equal(got.numpy(), want)
    params = {"w": a * 2, "mask": a > 0, "h": a.astype(zd.bfloat16)}
    assert all(copy.deepcopy(params)[k] is v for k, v in params.items())  # immutable: the copy is the tensor
    back = pickle.loads(pickle.dumps(params))
    for k, v in params.items():
        assert back[k].dtype == v.dtype and back[k].shape == v.shape
        np.testing.assert_array_equal(back[k].numpy(), v.numpy())
    np.testing.assert_array_equal((back["w"] + 1).numpy(), a_np * 2 + 1)


def test_jit_error_names_the_argument_as_the_user_passed_it():
    """A NumPy array passed to a jitted step is refused naming it as args[2] or kwargs['y'] (the message said
    args[0][2], the position inside the call's internal (args, kwargs) pair)."""
    step = zd.jit(lambda w, opt, x, *, y=None: w * 2)
    for call, where in ((lambda: step(zd.ones(2), None, np.ones(2)), "args[2] "),
                        (lambda: step([zd.ones(2), {"a": np.ones(2)}], None, 1), "args[0][1]['a'] "),
                        (lambda: step(zd.ones(2), None, 1, y=np.ones(2)), "kwargs['y'] ")):
        with pytest.raises(TypeError) as info:
            call()
        assert f"zd.jit: {where}is a ndarray" in str(info.value)


def test_true_division_of_an_int_tensor_by_any_python_int():
    """uint8 / -2 and int8 / 1000 divide in float as NumPy's do (they raised OverflowError: the int was checked
    against the tensor's dtype, which true division never computes in); + and // still raise as NumPy's."""
    a, b = np.array([1, 2, 200], np.uint8), np.array([1, -2, 100], np.int8)
    for got, want in ((zd.tensor(a) / -2, a / -2), (zd.tensor(b) / 1000, b / 1000), (1000 / zd.tensor(b), 1000 / b),
                      (-3 / zd.tensor(a), -3 / a), (zd.divide(zd.tensor(a), -(2**40)), a / -(2**40))):
        assert got.dtype == zd.float32
        np.testing.assert_allclose(got.numpy(), want.astype(np.float32), rtol=1e-6)
    for op in (lambda t: t + -2, lambda t: t // 300):
        with pytest.raises(OverflowError):
            op(zd.tensor(a))
