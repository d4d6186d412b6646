"""Representative ops for the GPU tier, each checked against NumPy on whatever session is current:
elementwise math in float32/float16/float64, integer and bool arithmetic with C-vs-NumPy corner cases,
casts, reductions (long ones too), matmul, softmax, pads with NaN, views. Shared by test_cuda.py and
test_nvidia_opencl.py, which parametrize over `CASES`."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from helpers import assert_close, data

import zyx_dist as zd


@dataclass(frozen=True)
class Case:
    name: str
    inputs: Callable[[], list[np.ndarray]]
    ours: Callable  # on zd tensors
    ref: Callable  # on NumPy arrays
    loose: float = 1.0


def _sig(x):
    return 1 / (1 + np.exp(-x))


def _softmax(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def _f(shape, dtype=np.float32, kind="any", seed=0):
    return lambda: [data(shape, dtype, kind, seed)]


def _ff(shape, dtype=np.float32, kind="any"):
    return lambda: [data(shape, dtype, kind, 1), data(shape, dtype, "nonzero", 2)]


def _nan_inputs():
    x = data((33, 17), np.float32)
    x[3, 4], x[7, :] = np.nan, np.inf
    return [x]


CASES = [
    Case("exp_f32", _f((1000,)), zd.exp, np.exp, 2),
    Case("log_f32", _f((1000,), kind="pos"), zd.log, np.log, 2),
    Case("sqrt_rsqrt_f32", _f((1000,), kind="pos"), lambda x: zd.sqrt(x) + zd.rsqrt(x),
         lambda x: np.sqrt(x) + 1 / np.sqrt(x), 2),
    Case("trig_f32", _f((1000,)), lambda x: zd.sin(x) * zd.cos(x) + zd.tanh(x), lambda x: np.sin(x) * np.cos(x)
         + np.tanh(x), 4),
    Case("ew_chain_f32", _f((4097,)), lambda x: zd.relu(x * 2 + 1) * zd.sigmoid(x),
         lambda x: np.maximum(x * 2 + 1, 0) * _sig(x), 2),
    Case("round_floor_ceil_f32", _f((999,), kind="small"), lambda x: zd.round(x) + zd.floor(x) * 10 + zd.ceil(x) * 100,
         lambda x: np.round(x) + np.floor(x) * 10 + np.ceil(x) * 100),
    Case("exp2_log2_f64", _f((500,), np.float64, "pos"), lambda x: zd.exp2(x) + zd.log2(x),
         lambda x: np.exp2(x) + np.log2(x), 10),
    Case("arith_f16", _ff((64, 33), np.float16), lambda a, b: a * b + a / b - a, lambda a, b: a * b + a / b - a, 2),
    Case("exp_f16", _f((2000,), np.float16, "unit"), zd.exp, np.exp, 2),
    Case("cast_f32_f16", _f((1000,)), lambda x: zd.astype(x * 1000.3, zd.float16),
         lambda x: (x * np.float32(1000.3)).astype(np.float16)),
    Case("cast_f64_f16", _f((1000,), np.float64), lambda x: zd.astype(x * 1000.3, zd.float16),
         lambda x: (x * 1000.3).astype(np.float16)),
    Case("casts_to_int", _f((1000,), kind="any"), lambda x: zd.astype(x * 30, zd.int8) + zd.astype(x * 9, zd.int32),
         lambda x: (x * 30).astype(np.int8).astype(np.int32) + (x * 9).astype(np.int32)),
    Case("floordiv_mod_i32", lambda: [data((500,), np.int32), data((500,), np.int32, "nonzero", 3)],
         lambda a, b: zd.floor_divide(a, b) * 1000 + zd.remainder(a, b), lambda a, b: (a // b) * 1000 + a % b),
    Case("floordiv_mod_f32", _ff((500,)), lambda a, b: zd.floor_divide(a, b) + zd.remainder(a, b) * 10,
         lambda a, b: np.floor_divide(a, b) + np.remainder(a, b) * 10),
    Case("pow_i32", lambda: [data((200,), np.int32, "small"), np.abs(data((200,), np.int32, "small", 4))],
         zd.pow, np.power),
    Case("bitwise_i32", _ff((300,), np.int32), lambda a, b: (a & b) ^ (a | 5), lambda a, b: (a & b) ^ (a | 5)),
    Case("int64_big", lambda: [np.arange(-500, 500, dtype=np.int64) * 3_000_000_007],
         lambda x: x * 3 + 1, lambda x: x * 3 + 1),
    Case("uint8_wrap", _ff((300,), np.uint8), lambda a, b: a * b + 200, lambda a, b: a * b + np.uint8(200)),
    Case("uint32", _ff((300,), np.uint32), lambda a, b: a * 4_000_000 - b, lambda a, b: a * np.uint32(4_000_000) - b),
    Case("int8_sum", _f((4, 300), np.int8), lambda x: zd.sum(x, axis=1), lambda x: x.sum(axis=1)),
    Case("compare_bool", _ff((300,)), lambda a, b: zd.logical_xor(a < b, a >= 0.5) | (a == b),
         lambda a, b: np.logical_xor(a < b, a >= 0.5) | (a == b)),
    Case("any_all", _f((8, 40), np.bool_), lambda x: zd.any(x, axis=1) & ~zd.all(x, axis=1),
         lambda x: x.any(axis=1) & ~x.all(axis=1)),
    Case("where_nan", _nan_inputs, lambda x: zd.where(zd.isnan(x), 0.0, x) + zd.astype(zd.isinf(x), zd.float32),
         lambda x: np.where(np.isnan(x), 0.0, x) + np.isinf(x)),
    Case("maximum_nan", _nan_inputs, lambda x: zd.maximum(x, 0.5) + zd.max(x, axis=1, keepdims=True),
         lambda x: np.maximum(x, 0.5) + x.max(axis=1, keepdims=True)),
    Case("sum_rows_f32", _f((64, 1000)), lambda x: zd.sum(x, axis=1), lambda x: x.sum(axis=1), 10),
    Case("sum_long_f32", _f((1 << 20,), kind="unit"), zd.sum, lambda x: x.astype(np.float64).sum(), 100),
    Case("max_min_axis0", _f((300, 70)), lambda x: zd.max(x, axis=0) - zd.min(x, axis=0),
         lambda x: x.max(axis=0) - x.min(axis=0)),
    Case("mean_var_f32", _f((50, 200)), lambda x: zd.mean(x, axis=1) + zd.var(x, axis=1),
         lambda x: x.mean(axis=1) + x.var(axis=1), 10),
    Case("prod_f64", _f((20, 30), np.float64, "unit"), lambda x: zd.prod(x, axis=1), lambda x: x.prod(axis=1)),
    Case("argmax_i64", _f((40, 77)), lambda x: zd.argmax(x, axis=1), lambda x: x.argmax(axis=1)),
    Case("sum_f16", _f((16, 256), np.float16, "unit"), lambda x: zd.sum(x, axis=1), lambda x: x.sum(axis=1), 5),
    Case("sum_f64", _f((1 << 16,), np.float64), zd.sum, np.sum),
    Case("matmul_f32", lambda: [data((64, 96), np.float32, seed=5), data((96, 48), np.float32, seed=6)],
         lambda a, b: a @ b, lambda a, b: a @ b, 10),
    Case("matmul_f16", lambda: [data((32, 40), np.float16, "unit", 5), data((40, 24), np.float16, "unit", 6)],
         lambda a, b: a @ b, lambda a, b: (a.astype(np.float32) @ b.astype(np.float32)).astype(np.float16), 5),
    Case("matmul_f64", lambda: [data((30, 20), np.float64, seed=5), data((20, 10), np.float64, seed=6)],
         lambda a, b: a @ b, lambda a, b: a @ b, 100),
    Case("relu_matmul_bias", lambda: [data((32, 64), np.float32, seed=7), data((64, 16), np.float32, seed=8),
                                      data((16,), np.float32, seed=9)],
         lambda a, b, c: zd.relu(a @ b + c), lambda a, b, c: np.maximum(a @ b + c, 0), 10),
    Case("softmax_rows", _f((128, 300)), lambda x: zd.softmax(x, axis=1), lambda x: _softmax(x, 1), 5),
    Case("log_softmax_logsumexp", _f((20, 50)), lambda x: zd.log_softmax(x, axis=1) + zd.logsumexp(x, axis=1,
                                                                                                   keepdims=True),
         lambda x: np.log(_softmax(x, 1)) + np.log(np.exp(x).sum(axis=1, keepdims=True)), 10),
    Case("pad_nan", _f((5, 7)), lambda x: zd.pad(x, ((1, 2), (3, 0)), float("nan")) * 2,
         lambda x: np.pad(x, ((1, 2), (3, 0)), constant_values=np.nan) * 2),
    Case("views", _f((6, 10)), lambda x: zd.flip(x, axis=0)[1:5, ::3] + zd.matrix_transpose(x)[::3, 1:5],
         lambda x: x[::-1][1:5, ::3] + x.T[::3, 1:5]),
    Case("concat_tile", _f((4, 5)), lambda x: zd.concat([x, zd.tile(x, (1, 2))[:, 3:8]], axis=0),
         lambda x: np.concatenate([x, np.tile(x, (1, 2))[:, 3:8]], axis=0)),
]


def check(case: Case) -> None:
    arrays = case.inputs()
    got = case.ours(*[zd.tensor(a) for a in arrays])
    with np.errstate(all="ignore"):
        want = np.asarray(case.ref(*arrays))
    assert_close(got, want, loose=case.loose)
