"""Runtime tests of API.md section 10's interoperability on PoCL (in-process): DLPack both ways with
NumPy (zero-copy through the CPU OpenCL worker: the tensor's buffer is the array's memory and the
export is the buffer's memory, read-only), `zd.from_numpy`, `np.asarray(x, copy=...)` as NumPy 2
defines it, and NumPy's protocols (NEP 13 `__array_ufunc__`, NEP 18 `__array_function__`) giving lazy
tensors, with TypeError naming a function zyx_dist lacks."""

from __future__ import annotations

import gc

import ml_dtypes
import numpy as np
import pytest

import zyx_dist as zd
from zyx_dist.engine import session as zsession


def _in_process_only() -> None:
    """Zero-copy needs the worker's memory in this process (API.md section 10); through Ray every path
    is a host copy, which the value checks of the other tests cover."""
    if type(zsession.running().backend).__name__ != "InProcessBackend":
        pytest.skip("zero-copy DLPack needs in-process workers; Ray workers give host copies")


def test_from_dlpack_numpy_round_trip_values_and_dtypes():
    for dt in (np.float32, np.float64, np.int32, np.int64, np.uint8, np.int8, np.bool_, np.float16):
        a = (np.arange(24) % 7).astype(dt).reshape(4, 6)
        t = zd.from_dlpack(a)
        assert t.dtype == dt and t.shape == (4, 6)
        np.testing.assert_array_equal((t + 0).numpy() if dt is not np.bool_ else (t | False).numpy(), a)
        back = np.from_dlpack(t)
        np.testing.assert_array_equal(back, a)


def _page_aligned(n: int) -> np.ndarray:
    """A float32 array on a 4096-byte boundary: every CPU OpenCL runtime uses such memory in place
    (Intel's copies less aligned memory when the buffer is made; PoCL uses any memory in place)."""
    raw = np.zeros(n * 4 + 4096, np.uint8)
    off = (-raw.ctypes.data) % 4096
    return raw[off:off + n * 4].view(np.float32)


def test_from_dlpack_is_zero_copy_on_the_cpu_worker():
    """The adopted tensor reads the NumPy array's memory in place: a write to the array before the
    tensor's first use is what the kernel sees (DLPack shares memory), and the export is that memory."""
    _in_process_only()
    a = _page_aligned(1 << 12)
    a[:] = np.arange(1 << 12)
    t = zd.from_dlpack(a)
    assert t.device is not None  # realized at once: the buffer is the array
    a[7] = 1000.0
    assert float((t * 2)[7]) == 2000.0
    view = np.from_dlpack(t)
    if view.ctypes.data == a.ctypes.data:  # the export maps the very same memory back
        assert not view.flags.writeable
    np.testing.assert_array_equal(view, a)


def test_export_of_a_computed_tensor_is_read_only_and_stays_valid():
    """A zero-copy view of a computed buffer: read-only (tensors are immutable), and it keeps the buffer
    alive after the tensor is gone (no reuse by the pool while the view lives)."""
    _in_process_only()
    x = zd.arange(1000, dtype=zd.float32) * 3
    view = np.from_dlpack(x)
    assert not view.flags.writeable
    with pytest.raises(ValueError):
        view[0] = 1.0
    del x
    gc.collect()
    junk = [zd.full((1000,), 7.0).realize() for _ in range(4)]  # would reuse a freed buffer
    np.testing.assert_array_equal(view, np.arange(1000, dtype=np.float32) * 3)
    del junk


def test_asarray_copy_semantics():
    _in_process_only()
    x = zd.arange(10, dtype=zd.int32) + 1
    fresh = np.asarray(x)
    assert fresh.flags.writeable
    fresh[0] = 99  # a copy: the tensor does not change
    assert int(x[0]) == 1
    np.testing.assert_array_equal(np.asarray(x, copy=True), np.arange(1, 11))
    view = np.asarray(x, copy=False)  # CPU worker: the buffer itself, read-only
    assert not view.flags.writeable
    np.testing.assert_array_equal(view, np.arange(1, 11))
    assert np.asarray(x, dtype=np.float64).dtype == np.float64


def test_asarray_no_copy_view_of_bfloat16_keeps_the_dtype():
    """The zero-copy view of a bfloat16 buffer is ml_dtypes' bfloat16, as the copy is, not raw bytes."""
    _in_process_only()
    a = np.array([1.5, -2.0, 3.25, 0.0], np.float32)
    x = zd.tensor(a).astype(zd.bfloat16) * 2
    want = (a * 2).astype(ml_dtypes.bfloat16)
    for view in (np.asarray(x, copy=False), np.array(x, copy=False), x.__array__(copy=False)):
        assert view.dtype == np.dtype(ml_dtypes.bfloat16) == np.asarray(x).dtype
        assert not view.flags.writeable
        np.testing.assert_array_equal(view.astype(np.float32), want.astype(np.float32))
    assert np.asarray(x, dtype=ml_dtypes.bfloat16, copy=False).dtype == np.dtype(ml_dtypes.bfloat16)


def test_legacy_dlpack_consumer_gets_a_copy_not_a_writable_alias():
    _in_process_only()
    x = zd.arange(5, dtype=zd.float32) + 1
    cap = x.__dlpack__()  # no max_version: a consumer that cannot see a read-only flag
    assert type(cap).__name__ == "PyCapsule"
    with pytest.raises(BufferError):
        x.__dlpack__(copy=False)  # the zero-copy view is read-only, which legacy DLPack cannot say
    cap = x.__dlpack__(max_version=(1, 0), copy=False)
    assert type(cap).__name__ == "PyCapsule"
    assert x.__dlpack_device__() == (1, 0)


def _capsule_name(cap: object) -> bytes:
    import ctypes

    get = ctypes.pythonapi.PyCapsule_GetName
    get.restype, get.argtypes = ctypes.c_char_p, [ctypes.py_object]
    return get(cap)


def test_dlpack_below_1_0_gives_the_legacy_capsule():
    """A consumer asking for a DLPack version below 1.0 gets what `__dlpack__()` gives (the legacy
    "dltensor" capsule, a copy where the buffer is a read-only view), not BufferError."""
    x = zd.arange(5, dtype=zd.float32) + 1
    for kwargs in ({}, {"max_version": (0, 8)}, {"max_version": (0, 0)}):
        assert _capsule_name(x.__dlpack__(**kwargs)) == b"dltensor"
    assert _capsule_name(x.__dlpack__(max_version=(1, 0))) == b"dltensor_versioned"

    class OldProducer:  # hands NumPy the capsule a pre-1.0 consumer asked for
        def __dlpack__(self, stream=None):
            return x.__dlpack__(max_version=(0, 8))

        def __dlpack_device__(self):
            return x.__dlpack_device__()

    np.testing.assert_array_equal(np.from_dlpack(OldProducer()), np.arange(1, 6, dtype=np.float32))
    if type(zsession.running().backend).__name__ == "InProcessBackend":
        with pytest.raises(BufferError):  # the read-only view itself cannot go out as a legacy capsule
            x.__dlpack__(max_version=(0, 8), copy=False)


def test_from_dlpack_copy_flags():
    _in_process_only()
    a = np.arange(6, dtype=np.float32)
    t = zd.from_dlpack(a, copy=True)  # a private copy: later writes to a do not show
    a[0] = 50
    assert float(t[0]) == 0.0
    b = _page_aligned(6)
    b[:] = np.arange(6)
    t2 = zd.from_dlpack(b, copy=False)
    b[1] = 60
    assert float(t2[1] + 0) == 60.0
    same = zd.from_dlpack(t2)
    assert same is t2
    with pytest.raises(TypeError):
        zd.from_dlpack([1, 2, 3])


def test_from_dlpack_host_copy_is_taken_at_the_call(monkeypatch):
    """Where no worker adopts the memory (forced here: PoCL adopts any host array, Intel's runtime only
    page-aligned ones), `from_dlpack` is "a host copy" (API.md section 10): taken at the call, so writes
    to the producer afterwards, before the first upload, do not reach the tensor."""
    monkeypatch.setattr(zsession.running(), "adopt", lambda obj, device: None)
    for dt in (np.float32, np.int64):
        src = np.zeros(3, dt)
        t = zd.from_dlpack(src)
        src[:] = 7
        np.testing.assert_array_equal(t.numpy(), np.zeros(3, dt))
    src = np.zeros((4, 5), np.float32)
    t = zd.from_dlpack(src[:, ::2])  # a non-contiguous view: one copy, the producer's writes still unseen
    src[:] = 1
    np.testing.assert_array_equal(t.numpy(), np.zeros((4, 3), np.float32))
    with pytest.raises(BufferError):  # no adoption and no copy allowed
        zd.from_dlpack(np.zeros(3, np.float32), copy=False)


def test_from_dlpack_non_contiguous_and_empty():
    a = np.arange(20, dtype=np.float32).reshape(4, 5)[:, ::2]
    np.testing.assert_array_equal(zd.from_dlpack(a).numpy(), a)
    e = np.zeros((0, 3), np.float32)
    assert zd.from_dlpack(e).shape == (0, 3)
    assert np.from_dlpack(zd.zeros((0, 3))).shape == (0, 3)


def test_from_numpy_skips_the_driver_copy():
    a = np.arange(12, dtype=np.int64).reshape(3, 4)
    t = zd.from_numpy(a)
    a[0, 0] = 42  # before the first upload: the tensor is the array
    np.testing.assert_array_equal(t.numpy(), a)
    with pytest.raises(TypeError):
        zd.from_numpy([1, 2])


def test_numpy_ufuncs_give_lazy_tensors():
    a = np.linspace(-2, 2, 12, dtype=np.float32).reshape(3, 4)
    x = zd.tensor(a)
    for got, want in ((np.exp(x), np.exp(a)), (np.add(x, 1), a + 1), (np.maximum(x, 0.5), np.maximum(a, 0.5)),
                      (np.arctan2(x, 2.0), np.arctan2(a, np.float32(2))), (np.negative(x), -a),
                      (a + x, a + a), (a * x, a * a), (np.add.reduce(x), a.sum(0)),
                      (np.maximum.reduce(x, axis=1), a.max(1)), (np.add.accumulate(x, axis=1), np.cumsum(a, 1))):
        assert isinstance(got, zd.Tensor)
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-5, atol=1e-6)
    assert isinstance(a == x, zd.Tensor)
    with pytest.raises(TypeError, match="out="):
        np.exp(x, out=np.empty_like(a))
    with pytest.raises(TypeError, match="numpy.fmod"):
        np.fmod(x, 2)


def test_numpy_functions_give_lazy_tensors():
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    x, y = zd.tensor(a), zd.tensor(a + 1)
    cases = [
        (np.sum(x, axis=0), a.sum(axis=0)), (np.sum(x), a.sum()), (np.mean(x, 1), a.mean(1)),
        (np.concatenate([x, y]), np.concatenate([a, a + 1])), (np.concatenate([x, a], axis=1), np.concatenate([a, a], 1)),
        (np.stack([x, y], axis=1), np.stack([a, a + 1], 1)), (np.transpose(x), a.T), (np.reshape(x, (4, 3)), a.reshape(4, 3)),
        (np.where(x > 5, x, 0), np.where(a > 5, a, 0)), (np.clip(x, 2, 8), np.clip(a, 2, 8)), (np.max(x, axis=1), a.max(1)),
        (np.std(x, ddof=1), a.std(ddof=1)), (np.sort(-x, axis=1), np.sort(-a, axis=1)), (np.argsort(-x), np.argsort(-a)),
        (np.flip(x, 0), np.flip(a, 0)), (np.roll(x, 2, axis=1), np.roll(a, 2, axis=1)), (np.diff(x, axis=1), np.diff(a, axis=1)),
        (np.cumsum(x, axis=1), np.cumsum(a, axis=1)), (np.tensordot(x, y.T, 1), np.tensordot(a, (a + 1).T, 1)),
    ]
    for got, want in cases:
        assert isinstance(got, zd.Tensor)
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-5)
    assert np.shape(x) == (3, 4)
    with pytest.raises(TypeError, match="numpy.histogram"):
        np.histogram(x)
    with pytest.raises(TypeError, match="out="):
        np.sum(x, out=np.empty(4, np.float32))


def _values(got):
    """NumPy's values of a dispatched result: a tensor, or a tuple/list (or named tuple) of tensors."""
    if isinstance(got, zd.Tensor):
        return got.numpy()
    assert isinstance(got, (tuple, list)) and all(isinstance(t, zd.Tensor) for t in got)
    return [t.numpy() for t in got]


def test_numpy_array_api_and_linalg_functions_dispatch_to_zyx_dist():
    """NEP 18 finds zyx_dist's array API functions of NumPy 2's names (np.cumulative_sum, np.unique_*,
    np.unstack) and numpy.linalg's in zd.linalg; the results stay lazy tensors with NumPy's values."""
    a = np.array([[4.0, 1.0, 2.0], [1.0, 3.0, 0.5], [2.0, 0.5, 5.0]], np.float32)  # symmetric positive definite
    v = np.array([3.0, 1.0, 3.0, 2.0], np.float32)
    x, w = zd.tensor(a), zd.tensor(v)
    cases = [
        (np.cumulative_sum(x, axis=1), np.cumulative_sum(a, axis=1)),
        (np.cumulative_sum(w, include_initial=True), np.cumulative_sum(v, include_initial=True)),
        (np.cumulative_prod(w), np.cumulative_prod(v)), (np.unique_values(w), np.unique_values(v)),
        (np.unique_counts(w), np.unique_counts(v)), (np.unique_inverse(w), np.unique_inverse(v)),
        (np.unique_all(w), np.unique_all(v)), (np.unstack(x, axis=1), np.unstack(a, axis=1)),
        (np.linalg.vector_norm(x, axis=0), np.linalg.vector_norm(a, axis=0)),
        (np.linalg.vector_norm(w, ord=1), np.linalg.vector_norm(v, ord=1)),
        (np.linalg.matrix_norm(x), np.linalg.matrix_norm(a)), (np.linalg.matmul(x, x), np.linalg.matmul(a, a)),
        (np.linalg.inv(x), np.linalg.inv(a)), (np.linalg.det(x), np.linalg.det(a)),
        (np.linalg.solve(x, x[:, :1]), np.linalg.solve(a, a[:, :1])), (np.linalg.cholesky(x), np.linalg.cholesky(a)),
        (np.linalg.matrix_transpose(x), np.linalg.matrix_transpose(a)), (np.linalg.outer(w, w), np.linalg.outer(v, v)),
        (np.linalg.trace(x, offset=1), np.linalg.trace(a, offset=1)), (np.linalg.diagonal(x), np.linalg.diagonal(a)),
        (np.linalg.vecdot(x, x), np.linalg.vecdot(a, a)), (np.linalg.matrix_power(x, 2), np.linalg.matrix_power(a, 2)),
        (np.linalg.tensordot(x, x, axes=1), np.linalg.tensordot(a, a, axes=1)),
        (np.linalg.eigvalsh(x), np.linalg.eigvalsh(a)), (np.linalg.svdvals(x), np.linalg.svdvals(a)),
        (np.linalg.slogdet(x), np.linalg.slogdet(a)), (np.linalg.pinv(x), np.linalg.pinv(a)),
        (np.linalg.matrix_rank(x), np.linalg.matrix_rank(a)),
    ]
    for got, want in cases:
        got_v = _values(got)
        want_v = [np.asarray(t) for t in want] if isinstance(want, tuple) else np.asarray(want)
        if isinstance(got_v, list):
            assert len(got_v) == len(want_v)
            for g, wv in zip(got_v, want_v):
                np.testing.assert_allclose(g, wv, rtol=1e-4, atol=1e-5)
        else:
            np.testing.assert_allclose(got_v, want_v, rtol=1e-4, atol=1e-5)
    for got in (np.linalg.matmul(x, x), np.linalg.vector_norm(x), np.cumulative_sum(w)):
        assert isinstance(got, zd.Tensor) and not got.node.realized  # lazy: nothing ran yet
    assert isinstance(np.linalg.inv(x), zd.Tensor)  # (zd.linalg.inv computes on the host)


def test_numpy_variadic_functions_pass_their_arrays_by_position():
    """NumPy's `*operands` (einsum), `*xi` (meshgrid), `*args` (broadcast_arrays) go to zyx_dist's
    variadic parameters by position, not as keywords of NumPy's names."""
    m = np.arange(6, dtype=np.float32).reshape(2, 3)
    v = np.array([1.0, -2.0, 0.5], np.float32)
    x, y = zd.tensor(m), zd.tensor(v)
    got = np.einsum("ij->j", x)
    assert isinstance(got, zd.Tensor)
    np.testing.assert_allclose(got.numpy(), np.einsum("ij->j", m))
    np.testing.assert_allclose(np.einsum("ij,j->i", x, y).numpy(), np.einsum("ij,j->i", m, v), rtol=1e-6)
    for got, want in ((np.meshgrid(y, y), np.meshgrid(v, v)), (np.meshgrid(y, x[0], indexing="ij"),
                                                                 np.meshgrid(v, m[0], indexing="ij")),
                      (np.broadcast_arrays(x, y), np.broadcast_arrays(m, v))):
        assert len(got) == len(want)
        for g, wv in zip(got, want):
            assert isinstance(g, zd.Tensor)
            np.testing.assert_array_equal(g.numpy(), wv)


def test_numpy_functions_zyx_dist_lacks_raise_naming_them():
    x = zd.tensor(np.eye(3, dtype=np.float32))
    for call, name in ((lambda: np.linalg.eig(x), "numpy.linalg.eig"), (lambda: np.linalg.norm(x), "numpy.linalg.norm"),
                       (lambda: np.linalg.lstsq(x, x), "numpy.linalg.lstsq"), (lambda: np.histogram(x), "numpy.histogram"),
                       (lambda: np.fft.fft(x), "numpy.fft.fft")):
        with pytest.raises(TypeError, match=name.replace(".", r"\.")):
            call()
    with pytest.raises(TypeError, match="UPLO"):  # zyx_dist's eigh does what NumPy's default 'L' does only
        np.linalg.eigh(x, UPLO="U")
    np.testing.assert_allclose(np.linalg.eigvalsh(x, UPLO="L").numpy(), np.ones(3))


def test_linalg_dispatch_table_covers_zd_linalg():
    """Every function zd.linalg shares with numpy.linalg is dispatched there (a new one needs a row)."""
    from zyx_dist.frontend import interop

    shared = {n for n in dir(zd.linalg) if not n.startswith("_") and callable(getattr(zd.linalg, n))
              and callable(getattr(np.linalg, n, None))}
    assert shared <= set(interop._LINALG_FUNCTIONS)
    assert {"vector_norm", "matrix_norm", "matmul", "inv", "det"} <= shared


def test_numpy_sort_and_argsort_accept_numpy_kinds():
    """zyx_dist's sort is stable: NumPy's kinds all allow that answer (argsort's ties in NumPy's stable
    order); a kind NumPy rejects is a ValueError as in NumPy."""
    a = np.array([[3.0, 1.0, 3.0, 2.0, 1.0], [0.0, 0.0, -1.0, 5.0, 0.0]], np.float32)
    x = zd.tensor(a)
    for kind in (None, "stable", "mergesort", "quicksort", "heapsort"):
        got = np.sort(x, kind=kind)
        assert isinstance(got, zd.Tensor)
        np.testing.assert_array_equal(got.numpy(), np.sort(a, kind=kind))
        np.testing.assert_array_equal(np.argsort(x, axis=1, kind=kind).numpy(), np.argsort(a, axis=1, kind="stable"))
    np.testing.assert_array_equal(np.sort(x, None, "stable").numpy(), np.sort(a, None, "stable"))
    np.testing.assert_array_equal(np.argsort(x, axis=0, stable=True).numpy(), np.argsort(a, axis=0, stable=True))
    with pytest.raises(ValueError, match="sort kind"):
        np.sort(x, kind="bogus")
    with pytest.raises(ValueError, match="sort kind"):
        np.argsort(x, kind="bogus")


# ---- NumPy's protocols at their edges (an audit of API.md section 10) -----------------------------------------

def test_numpy_trace_and_diagonal_read_axes_0_and_1_as_numpy_does():
    a = np.arange(24.0).reshape(2, 3, 4)
    x = zd.asarray(a)
    np.testing.assert_allclose(np.trace(x).numpy(), np.trace(a))
    np.testing.assert_allclose(np.diagonal(x).numpy(), np.diagonal(a))
    np.testing.assert_allclose(np.trace(x, 1, axis1=1, axis2=2).numpy(), np.trace(a, 1, axis1=1, axis2=2))
    assert np.trace(zd.asarray(np.ones((3, 3), np.int32)), dtype=np.float32).dtype == zd.float32


def test_ufunc_reductions_apply_initial_and_where():
    b = np.arange(6.0).reshape(2, 3)
    y = zd.asarray(b)
    np.testing.assert_allclose(np.add.reduce(y, axis=1, initial=100.0).numpy(), [103.0, 112.0])
    assert float(np.maximum.reduce(zd.asarray([1.0, 2.0]), initial=10.0)) == 10.0
    mask = np.array([True, False, True])
    assert float(np.add.reduce(zd.asarray([1.0, 2.0, 4.0]), where=mask)) == 5.0
    assert float(np.maximum.reduce(zd.asarray([1.0, 2.0, 7.0]), where=~mask, initial=-5.0)) == 2.0
    with pytest.raises(ValueError, match="initial"):
        np.maximum.reduce(zd.asarray([1.0, 2.0]), where=mask[:2])
    assert np.exp(y, where=True).shape == (2, 3)  # (where=True is the default)
    with pytest.raises(TypeError, match="where"):
        np.exp(y, where=mask)


def test_numpy_take_where_tril_size_and_qr_modes():
    b = np.arange(6.0).reshape(2, 3)
    y = zd.asarray(b)
    np.testing.assert_array_equal(np.take(y, [[0, 5]]).numpy(), np.take(b, [[0, 5]]))  # flattened, without an axis
    np.testing.assert_array_equal(np.take(y, [4, -1], axis=1, mode="wrap").numpy(), np.take(b, [4, -1], 1, mode="wrap"))
    np.testing.assert_array_equal(np.take(y, [7], mode="clip").numpy(), np.take(b, [7], mode="clip"))
    (nz,) = np.where(zd.asarray([0, 1, 1]))
    np.testing.assert_array_equal(nz.numpy(), [1, 2])
    np.testing.assert_array_equal(np.tril(zd.asarray([1, 2, 3])).numpy(), np.tril(np.array([1, 2, 3])))
    assert np.size(y, 1) == 3
    q, r = np.linalg.qr(zd.eye(3), mode="reduced")
    np.testing.assert_allclose((q @ r).numpy(), np.eye(3), atol=1e-6)
    np.testing.assert_allclose(np.vecdot(y, y, axis=0).numpy(), (b * b).sum(0))
    assert np.pad(y, 1, mode="constant").shape == (4, 5)
    with pytest.raises(TypeError, match="mode='edge'"):
        np.pad(y, 1, mode="edge")


def test_empty_tensors_export_without_a_copy():
    e = zd.zeros((0, 3)) + 1
    assert np.from_dlpack(e, copy=False).shape == (0, 3)
    assert np.asarray(e, copy=False).shape == (0, 3)


def test_from_dlpack_of_a_tensor_to_a_device_is_there():
    x = zd.zeros((0,), dtype=zd.bool)
    dev = zd.tensor([1.0]).realize().device
    assert zd.from_dlpack(x, device=dev).device == dev
    y = zd.from_dlpack(zd.ones(3) + 1, device=dev)
    assert y.device == dev
    np.testing.assert_array_equal(y.numpy(), [2.0, 2.0, 2.0])
