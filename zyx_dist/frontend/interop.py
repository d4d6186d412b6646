"""Driver side: interoperability (API.md section 10): DLPack both ways (`zd.from_dlpack`,
`x.__dlpack__`, `x.__dlpack_device__`), `zd.from_numpy`, and NumPy's protocols on `Tensor`
(`__array__` with NumPy 2's `copy=`, `__array_ufunc__` and `__array_function__`, NEP 13 and 18). It
takes arrays of other libraries and NumPy calls on tensors and gives Tensors (lazy where zyx_dist has
the function) or arrays. Zero-copy is the session's job (`context.session().export/adopt`: the workers
own the memory); when the memory is out of reach (a Ray worker, another device) the data takes one host
copy. Pure: imports no runtime module.
"""

from __future__ import annotations

import inspect
import sys
from collections.abc import Callable
from typing import Any

import numpy as np

from .. import context, dtypes
from ..errors import DTypeError
from ..graph import ir as graph
from .tensor import Tensor

__all__ = ["from_dlpack", "from_numpy"]

_KDL_CPU = 1


def from_numpy(a: np.ndarray, /, *, device: str | None = None) -> Tensor:
    """`zd.tensor(a)` without the driver-side copy: the tensor's leaf is `a` itself until it is uploaded
    (at the first realize), so `a` must not change before then. A non-contiguous `a` is made contiguous
    (that one is a copy)."""
    if not isinstance(a, np.ndarray):
        raise TypeError(f"from_numpy takes a NumPy array, got {type(a).__name__}")
    dt = dtypes.dtype(a.dtype)
    arr = a if a.flags.c_contiguous else np.ascontiguousarray(a)
    dev = context.session().resolve_device(device) if device is not None else None
    return Tensor(graph.leaf(arr, dt, device=dev))


def _host_array(x: Any, copy: bool | None) -> np.ndarray:
    """A NumPy array of the DLPack producer `x` that is the tensor's own: a C-contiguous copy taken now
    (a view of CPU memory only for `copy=False`, which the caller refuses after this)."""
    dev = x.__dlpack_device__()[0] if hasattr(x, "__dlpack_device__") else _KDL_CPU
    if int(dev) == _KDL_CPU:
        view = np.from_dlpack(x)
        # copied at the call, not at the first upload: a leaf over the view would show the producer's later
        # writes (API.md section 10: "a host copy otherwise"). The view is copied here, not asked of the
        # producer, so legacy producers (no `copy=` in their `__dlpack__`) copy too.
        return view if copy is False else np.array(view, copy=True, order="C")
    if copy is False:
        raise BufferError(f"from_dlpack(copy=False): a {type(x).__name__} on DLPack device {dev} cannot reach "
                          "this session's devices without a copy")
    try:  # DLPack 1.0 producers copy to the host themselves
        return np.from_dlpack(x, device="cpu", copy=True)
    except (BufferError, TypeError, ValueError, RuntimeError):
        pass
    for getter in ("get", "cpu"):  # CuPy's .get(), torch's .cpu()
        f = getattr(x, getter, None)
        if f is not None:
            out = f()
            return out if isinstance(out, np.ndarray) else np.asarray(out.numpy() if hasattr(out, "numpy") else out)
    raise BufferError(f"from_dlpack: cannot bring a {type(x).__name__} on DLPack device {dev} to the host")


def from_dlpack(x: Any, /, *, device: str | None = None, copy: bool | None = None) -> Tensor:
    """A tensor from any DLPack producer (NumPy, CuPy, torch, another Tensor). Zero-copy where a worker in
    this process can use the memory: a CPU OpenCL worker adopts host memory (NumPy, torch CPU), a CUDA
    worker adopts memory of its own GPU (CuPy, torch CUDA); the producer must then not be written while
    the tensor lives (a CPU runtime may still copy memory that is not aligned as it needs: Intel's wants
    4096 bytes, PoCL takes any). Otherwise one host copy, uploaded lazily. `copy=True` always copies; `copy=False`
    raises BufferError when a copy is needed."""
    if isinstance(x, Tensor):
        if device is not None and device != x.device:  # another device asked for: moved there, as DLPack does
            return x.to(device).realize()
        return Tensor(x.node) if copy else x
    if not hasattr(x, "__dlpack__"):
        raise TypeError(f"from_dlpack needs an object with __dlpack__ (a NumPy, CuPy or torch array), "
                        f"got {type(x).__name__}")
    if copy is not True:
        node = context.session().adopt(x, device)
        if node is not None:
            return Tensor(node)
    arr = _host_array(x, copy)
    if copy is False:
        raise BufferError(f"from_dlpack(copy=False): no worker of this session can use the memory of this "
                          f"{type(x).__name__} in place (it would need an upload)")
    if arr.dtype.kind == "c":
        raise DTypeError(f"from_dlpack: zyx_dist has no complex dtypes (got {arr.dtype})")
    return from_numpy(arr, device=device)  # `arr` is the tensor's own copy: from_numpy's no-copy is safe


# ---- the Tensor's side of DLPack and NumPy's protocols ------------------------------------------------

def _export(t: Tensor) -> Any:
    """A zero-copy array view of the realized tensor, or None. An empty tensor's is an empty host array: there is
    nothing to copy (and nothing to write, so it needs no read-only flag, which legacy DLPack cannot carry)."""
    if t.size == 0:
        return np.empty(t.shape, t.dtype.np_dtype)
    t.realize()
    return context.session().export(t.node)


def _dlpack(self: Tensor, *, stream: Any = None, max_version: tuple[int, int] | None = None,
            dl_device: tuple[int, int] | None = None, copy: bool | None = None) -> Any:
    """DLPack export (realizes first): a view of the device memory where it is in this process (a CPU
    OpenCL buffer, mapped read-only: consumers that know DLPack 1.0 get a read-only array, older ones a
    copy; a CUDA buffer of an in-process CUDA worker), a host copy otherwise. A consumer that knows only
    DLPack below 1.0 (no `max_version`, or one of major 0) gets the legacy capsule."""
    view = None if copy else _export(self)
    if view is not None and dl_device is not None and tuple(dl_device) != tuple(view.__dlpack_device__()):
        view = None
    if view is not None:
        # a legacy capsule has no read-only flag: such consumers get a copy (or BufferError for copy=False)
        legacy = max_version is None or int(max_version[0]) < 1
        legacy_readonly = isinstance(view, np.ndarray) and not view.flags.writeable and legacy
        if not legacy_readonly or copy is False:  # NumPy raises BufferError itself for copy=False then
            kwargs = {"max_version": max_version} if max_version is not None else {}
            if dl_device is not None:
                kwargs["dl_device"] = dl_device
            if copy is not None:
                kwargs["copy"] = copy
            return view.__dlpack__(stream=stream, **kwargs) if stream is not None else view.__dlpack__(**kwargs)
    if copy is False:
        raise BufferError("x.__dlpack__(copy=False): this tensor's buffer is not in this process's reach "
                          "(a Ray worker, a GPU OpenCL device or a spilled buffer): it needs a copy")
    if dl_device is not None and int(dl_device[0]) != _KDL_CPU:
        raise BufferError(f"x.__dlpack__: cannot export to DLPack device {tuple(dl_device)} (host copies only)")
    host = self.numpy()
    kwargs = {"max_version": max_version} if max_version is not None else {}
    return host.__dlpack__(**kwargs)


def _dlpack_device(self: Tensor) -> tuple[int, int]:
    """(device type, id) of what `__dlpack__` gives: kDLCUDA for an in-process CUDA worker, else kDLCPU."""
    if self.size:
        self.realize()
        got = context.session().export_device(self.node)
        if got is not None:
            return tuple(got)  # type: ignore[return-value]
    return (_KDL_CPU, 0)


def _array(self: Tensor, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
    """`np.asarray(x)`: a fresh array read from the device (realizes first). `copy=False` (NumPy 2: never
    copy) gives the zero-copy read-only view of a CPU OpenCL buffer, and raises ValueError where the data
    is elsewhere."""
    if copy is False:
        view = _export(self)
        if view is None or not isinstance(view, np.ndarray):
            raise ValueError("np.asarray(x, copy=False): this tensor's data is on a device (or in another "
                             "process) and cannot be read without a copy")
        if dtype is not None and np.dtype(dtype) != view.dtype:
            raise ValueError(f"np.asarray(x, dtype={np.dtype(dtype)}, copy=False): casting needs a copy")
        return view
    arr = self.numpy()
    return arr if dtype is None else arr.astype(dtype, copy=False)


# NumPy ufunc name -> zyx_dist function name, where they differ (the rest share their names)
_UFUNC_NAMES = {
    "absolute": "abs", "power": "pow", "true_divide": "divide", "invert": "bitwise_invert",
    "left_shift": "bitwise_left_shift", "right_shift": "bitwise_right_shift", "arcsin": "asin", "arccos": "acos",
    "arctan": "atan", "arctan2": "atan2", "arcsinh": "asinh", "arccosh": "acosh", "arctanh": "atanh",
    "rint": "round", "conjugate": "conj", "fmax": None, "fmin": None,
}
_UFUNC_REDUCE = {"add": "sum", "multiply": "prod", "maximum": "max", "minimum": "min", "logical_and": "all",
                 "logical_or": "any"}
_UFUNC_ACCUMULATE = {"add": "cumulative_sum", "multiply": "cumulative_prod"}
# a reduction's identity (what a where= mask puts in place of an element), and how initial= joins its result
_UFUNC_IDENTITY = {"add": 0, "multiply": 1, "logical_and": True, "logical_or": False}
_UFUNC_COMBINE = {"add": "add", "multiply": "multiply", "maximum": "maximum", "minimum": "minimum",
                  "logical_and": "logical_and", "logical_or": "logical_or"}
# ufunc keywords at the defaults NumPy passes or a caller may spell out: nothing to do
_UFUNC_DEFAULTS = {"casting": "same_kind", "order": "K", "subok": True, "initial": np._NoValue, "where": True}


def _ufunc_default(key: str, value: Any) -> bool:
    """Whether ufunc keyword `key` is at its default (a where= mask, an array, never is)."""
    if key not in _UFUNC_DEFAULTS:
        return False
    default = _UFUNC_DEFAULTS[key]
    if isinstance(value, (bool, np.bool_)):
        return default is True and bool(value)
    return value is default or (isinstance(value, str) and value == default)


def _namespace() -> Any:
    return sys.modules["zyx_dist"]


def _array_ufunc(self: Tensor, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
    """NEP 13: `np.exp(x)`, `np.add(x, 1)`, `a + x` with a NumPy array `a`, `np.add.reduce(x)` give lazy
    tensors; a ufunc zyx_dist lacks raises TypeError naming it."""
    zd = _namespace()
    name = ufunc.__name__
    if kwargs.get("out") is not None:
        raise TypeError(f"numpy.{name}(..., out=...) is not supported: zyx_dist tensors are immutable")
    # keywords at NumPy's defaults mean nothing here; a where= mask and initial= are applied by reductions
    extra = {k: v for k, v in kwargs.items() if k != "out" and v is not None and not _ufunc_default(k, v)}
    dtype = extra.pop("dtype", None)
    if method == "__call__":
        fname = _UFUNC_NAMES.get(name, name)
        f = getattr(zd, fname, None) if fname else None
        passed = {k: extra.pop(k) for k in ("axis", "axes", "keepdims") if k in extra}  # (gufuncs': np.vecdot)
        if f is None or extra:
            raise TypeError(f"zyx_dist does not implement numpy.{name}"
                            + (f" with {sorted(extra)}" if f is not None else ""))
        out = f(*inputs, **passed)
        return out if dtype is None else out.astype(dtype)
    table = {"reduce": _UFUNC_REDUCE, "accumulate": _UFUNC_ACCUMULATE}.get(method, {})
    fname = table.get(name)
    allowed = {"axis", "keepdims", "initial", "where"} if method == "reduce" else {"axis"}
    if fname is None or len(inputs) != 1 or extra.keys() - allowed:
        raise TypeError(f"zyx_dist does not implement numpy.{name}.{method}"
                        + (f" with {sorted(extra.keys() - allowed)}" if fname is not None else ""))
    x, axis = inputs[0], kwargs.get("axis", 0)
    if method == "accumulate":
        out = getattr(zd, fname)(x, axis=axis)
        return out if dtype is None else out.astype(dtype)
    initial, where = extra.get("initial", np._NoValue), extra.get("where")
    if dtype is not None:  # (the reduction's dtype: NumPy accumulates in it)
        x = zd.asarray(x).astype(dtype)
    if where is not None:  # masked-out elements are the reduction's identity (max/min have none: initial stands in)
        identity = _UFUNC_IDENTITY.get(name, initial)
        if identity is np._NoValue:
            raise ValueError(f"reduction operation '{name}' does not have an identity, so to use a where mask one "
                             "has to specify 'initial'")
        x = zd.where(zd.asarray(where), x, identity)
    out = getattr(zd, fname)(x, axis=axis, keepdims=bool(kwargs.get("keepdims", False)))
    if initial is not np._NoValue:
        out = getattr(zd, _UFUNC_COMBINE[name])(out, initial)
    return out


# NumPy function -> (zyx_dist function, {NumPy parameter: zyx_dist keyword}, how many leading parameters
# are passed by position). NumPy's own signature binds the call, so positional and keyword uses both map.
_SAME = {}
_FUNCTIONS: dict[str, tuple[str, dict[str, str], int]] = {
    "sum": ("sum", _SAME, 1), "prod": ("prod", _SAME, 1), "mean": ("mean", _SAME, 1),
    "max": ("max", _SAME, 1), "amax": ("max", _SAME, 1), "min": ("min", _SAME, 1), "amin": ("min", _SAME, 1),
    "std": ("std", {"ddof": "correction"}, 1), "var": ("var", {"ddof": "correction"}, 1),
    "argmax": ("argmax", _SAME, 1), "argmin": ("argmin", _SAME, 1), "all": ("all", _SAME, 1),
    "any": ("any", _SAME, 1), "cumsum": ("cumsum", _SAME, 1), "concatenate": ("concat", _SAME, 1),
    "concat": ("concat", _SAME, 1), "stack": ("stack", _SAME, 1), "reshape": ("reshape", _SAME, 2),
    "transpose": ("_transpose", _SAME, 1), "permute_dims": ("permute_dims", _SAME, 2),
    "squeeze": ("squeeze", _SAME, 1), "expand_dims": ("expand_dims", _SAME, 2), "flip": ("flip", _SAME, 1),
    "moveaxis": ("moveaxis", _SAME, 3), "roll": ("roll", _SAME, 2), "tile": ("tile", {"A": "x"}, 2),
    "repeat": ("repeat", _SAME, 2), "where": ("_np_where", _SAME, 3), "clip": ("clip", {"a_min": "min", "a_max": "max"}, 1),
    "sort": ("_np_sort", _SAME, 1), "argsort": ("_np_argsort", _SAME, 1), "searchsorted": ("_np_searchsorted", _SAME, 2),
    "dot": ("dot", _SAME, 2), "tensordot": ("tensordot", _SAME, 2), "einsum": ("einsum", _SAME, 0),
    "broadcast_to": ("broadcast_to", _SAME, 2), "broadcast_arrays": ("broadcast_arrays", _SAME, 0),
    "diff": ("_np_diff", _SAME, 1), "count_nonzero": ("count_nonzero", _SAME, 1), "nonzero": ("nonzero", _SAME, 1),
    "take": ("_np_take", _SAME, 2), "tril": ("_np_tril", _SAME, 1), "triu": ("_np_triu", _SAME, 1),
    "meshgrid": ("meshgrid", _SAME, 0), "zeros_like": ("zeros_like", _SAME, 1), "ones_like": ("ones_like", _SAME, 1),
    "full_like": ("full_like", _SAME, 2), "empty_like": ("empty_like", _SAME, 1), "round": ("round", _SAME, 1),
    "around": ("round", _SAME, 1), "split": ("split", _SAME, 2), "pad": ("pad", {"constant_values": "value"}, 2),
    "outer": ("_outer", _SAME, 2), "trace": ("_trace", _SAME, 1), "diagonal": ("_diagonal", _SAME, 1),
    "cross": ("_cross", _SAME, 2), "astype": ("astype", _SAME, 2), "shape": ("_shape", _SAME, 1),
    "ndim": ("_ndim", _SAME, 1), "size": ("_size", _SAME, 1), "logsumexp": ("logsumexp", _SAME, 1),
    "matrix_transpose": ("matrix_transpose", _SAME, 1), "vecdot": ("vecdot", _SAME, 2),
    "cumulative_sum": ("cumulative_sum", _SAME, 1), "cumulative_prod": ("cumulative_prod", _SAME, 1),
    "unique_values": ("unique_values", _SAME, 1), "unique_counts": ("unique_counts", _SAME, 1),
    "unique_inverse": ("unique_inverse", _SAME, 1), "unique_all": ("unique_all", _SAME, 1),
    "unstack": ("unstack", _SAME, 1),
}
# numpy.linalg's functions -> zd.linalg's (the same table's form). NumPy's names (np.trace, np.cross, ...)
# can mean other functions at the top level, so these are looked up by module, not by name alone.
_LINALG_FUNCTIONS: dict[str, tuple[str, dict[str, str], int]] = {
    "cholesky": ("cholesky", _SAME, 1), "cross": ("cross", _SAME, 2), "det": ("det", _SAME, 1),
    "diagonal": ("diagonal", _SAME, 1), "eigh": ("eigh", _SAME, 1), "eigvalsh": ("eigvalsh", _SAME, 1),
    "inv": ("inv", _SAME, 1), "matmul": ("matmul", _SAME, 2), "matrix_norm": ("matrix_norm", _SAME, 1),
    "matrix_power": ("matrix_power", _SAME, 2), "matrix_rank": ("matrix_rank", _SAME, 1),
    "matrix_transpose": ("matrix_transpose", _SAME, 1), "outer": ("outer", _SAME, 2),
    "pinv": ("pinv", {"rcond": "rtol"}, 1), "qr": ("qr", _SAME, 1), "slogdet": ("slogdet", _SAME, 1),
    "solve": ("solve", _SAME, 2), "svd": ("svd", _SAME, 1), "svdvals": ("svdvals", _SAME, 1),
    "tensordot": ("tensordot", _SAME, 2), "trace": ("trace", _SAME, 1), "vecdot": ("vecdot", _SAME, 2),
    "vector_norm": ("vector_norm", _SAME, 1),
}
# NumPy keywords that only mean something for NumPy arrays (or that zyx_dist's function always does at
# their defaults: eigh reads the lower triangle, svd computes u and vh): ignored at their defaults,
# refused otherwise
_IGNORED_DEFAULTS = {"out": None, "where": True, "order": "C", "casting": "same_kind", "subok": True,
                     "initial": np._NoValue, "UPLO": "L", "hermitian": False, "compute_uv": True, "tol": None}
# the same, for one function's own keyword (np.pad's mode: only "constant" is padding zyx_dist does)
_IGNORED_FOR = {"pad": {"mode": "constant"}}


def _adapters() -> dict[str, Callable[..., Any]]:
    """NumPy functions whose parameters differ from the zyx_dist ones by more than a name."""
    zd = _namespace()

    def transpose(a: Any, axes: Any = None) -> Tensor:
        t = zd.asarray(a)
        return t.transpose() if axes is None else zd.permute_dims(t, tuple(axes))

    def sort_kind(kind: Any, fname: str) -> None:
        """zyx_dist sorts stably, which every NumPy kind allows (sort's values do not depend on the kind;
        argsort's ties are ordered as NumPy's stable kinds order them, one valid answer for quicksort and
        heapsort); a kind NumPy itself rejects is a ValueError as there (NumPy reads the first letter)."""
        if kind is None or (isinstance(kind, str) and kind[:1].lower() in ("q", "h", "m", "s")):
            return
        raise ValueError(f"numpy.{fname}: sort kind must be one of 'quick', 'heap', or 'stable' (got {kind!r})")

    def np_sort(a: Any, axis: Any = -1, kind: Any = None, stable: Any = None) -> Tensor:
        sort_kind(kind, "sort")
        t = zd.asarray(a)
        return zd.sort(t.reshape(-1) if axis is None else t, axis=-1 if axis is None else axis)

    def np_argsort(a: Any, axis: Any = -1, kind: Any = None, stable: Any = None) -> Tensor:
        sort_kind(kind, "argsort")
        t = zd.asarray(a)
        return zd.argsort(t.reshape(-1) if axis is None else t, axis=-1 if axis is None else axis)

    def np_searchsorted(a: Any, v: Any, side: str = "left", sorter: Any = None) -> Tensor:
        return zd.searchsorted(a, v, side=side, sorter=sorter)

    def last_two(a: Any, axis1: int, axis2: int) -> Tensor:
        """NumPy's axis1 and axis2 (the diagonal's, 0 and 1 by default) moved last, where zd.linalg reads it."""
        t = zd.asarray(a)
        return zd.moveaxis(t, (axis1, axis2), (-2, -1))

    def np_trace(a: Any, offset: int = 0, axis1: int = 0, axis2: int = 1, dtype: Any = None) -> Tensor:
        return zd.linalg.trace(last_two(a, axis1, axis2), offset=offset, dtype=dtype)

    def np_diagonal(a: Any, offset: int = 0, axis1: int = 0, axis2: int = 1) -> Tensor:
        return zd.linalg.diagonal(last_two(a, axis1, axis2), offset=offset)

    def np_take(a: Any, indices: Any, axis: Any = None, mode: str = "raise") -> Tensor:
        """NumPy's take: from the flattened array without an axis; mode 'raise' (an index out of range is an
        IndexError at the realize), 'wrap' or 'clip'."""
        t = zd.asarray(a)
        if axis is None:
            t, axis = t.reshape(-1), 0
        if mode not in ("raise", "wrap", "clip"):
            raise ValueError(f"numpy.take: mode must be 'raise', 'wrap' or 'clip', got {mode!r}")
        idx = zd.asarray(indices)
        n = t.shape[axis]
        if mode == "wrap":
            idx = idx % n
        elif mode == "clip":
            idx = zd.clip(idx, 0, n - 1)
        return zd.take(t, idx.reshape(-1), axis=axis).reshape(
            t.shape[:axis % t.ndim] + tuple(idx.shape) + t.shape[axis % t.ndim + 1:])

    def np_where(condition: Any, x: Any = None, y: Any = None) -> Any:
        if x is None and y is None:  # NumPy's one-argument where is nonzero
            return zd.nonzero(condition)
        if x is None or y is None:
            raise ValueError("numpy.where: either both or neither of x and y should be given")
        return zd.where(condition, x, y)

    def square(m: Any) -> Tensor:
        """NumPy's tril and triu take a 1-D array as the rows of a square matrix."""
        t = zd.asarray(m)
        return zd.broadcast_to(t, (t.shape[0], t.shape[0])) if t.ndim == 1 else t

    def np_diff(a: Any, n: int = 1, axis: int = -1, prepend: Any = np._NoValue, append: Any = np._NoValue) -> Tensor:
        return zd.diff(a, n=n, axis=axis, prepend=None if prepend is np._NoValue else prepend,
                       append=None if append is np._NoValue else append)

    return {
        "_transpose": transpose, "_np_sort": np_sort, "_np_argsort": np_argsort, "_np_searchsorted": np_searchsorted,
        "_np_diff": np_diff, "_outer": lambda a, b: zd.linalg.outer(zd.asarray(a).reshape(-1), zd.asarray(b).reshape(-1)),
        "_trace": np_trace, "_diagonal": np_diagonal, "_np_take": np_take, "_np_where": np_where,
        "_np_tril": lambda m, k=0: zd.tril(square(m), k=k), "_np_triu": lambda m, k=0: zd.triu(square(m), k=k),
        "_cross": lambda a, b, axis=-1: zd.linalg.cross(a, b, axis=axis),
        "_shape": lambda a: zd.asarray(a).shape, "_ndim": lambda a: zd.asarray(a).ndim,
        "_size": lambda a, axis=None: zd.asarray(a).size if axis is None else zd.asarray(a).shape[axis],
    }


def _array_function(self: Tensor, func: Any, types: Any, args: tuple, kwargs: dict) -> Any:
    """NEP 18: NumPy functions called on tensors (`np.sum(x, axis=0)`, `np.concatenate([x, y])`,
    `np.linalg.inv(x)`) run the zyx_dist function of the same meaning (`zd.linalg`'s for numpy.linalg's)
    and give lazy tensors; NumPy arrays among the arguments become tensors. A function zyx_dist lacks
    raises TypeError naming it."""
    name = func.__name__
    zd = _namespace()
    # the function itself must be the one of that name in the module: np.char.split is not np.split
    if func.__module__ == "numpy.linalg" and getattr(np.linalg, name, None) is func:
        qual, entry, ns = f"numpy.linalg.{name}", _LINALG_FUNCTIONS.get(name), zd.linalg
    else:
        on_top = func.__module__ == "numpy" and getattr(np, name, None) is func
        qual, entry, ns = f"{func.__module__}.{name}", _FUNCTIONS.get(name) if on_top else None, zd
    if entry is None:
        raise TypeError(f"zyx_dist does not implement {qual} (call it on x.numpy() to run it in NumPy)")
    fname, renames, n_pos = entry
    own = _IGNORED_FOR.get(name, {}) if ns is zd else {}
    try:
        bound = inspect.signature(func).bind(*args, **kwargs)
    except (TypeError, ValueError):
        bound = None
    if bound is None:
        call_args, call_kwargs = list(args), dict(kwargs)
    else:
        params = bound.signature.parameters
        order = list(params)
        call_args, call_kwargs = [], {}
        for i, (k, v) in enumerate(bound.arguments.items()):
            kind = params[k].kind
            # NumPy's `*operands`, `*xi`, `*args` are zyx_dist's `*xs`, `*arrays`: by position, whatever the
            # table's count (a name for them would be an unknown keyword); `**kwargs` are keywords one by one
            if kind is inspect.Parameter.VAR_POSITIONAL or (i < n_pos and order.index(k) == i):
                call_args.extend(v if kind is inspect.Parameter.VAR_POSITIONAL else [v])
                continue
            for kk, vv in (v.items() if kind is inspect.Parameter.VAR_KEYWORD else [(k, v)]):
                if kk in _IGNORED_DEFAULTS or kk in own:
                    default = own.get(kk, _IGNORED_DEFAULTS.get(kk))
                    if vv is default or (isinstance(vv, str) and vv == default) or (vv is None and kk != "where"):
                        continue
                    raise TypeError(f"{qual}(..., {kk}={vv!r}) is not supported on zyx_dist tensors")
                if kk == "dtype" and vv is None:
                    continue
                call_kwargs[renames.get(kk, kk)] = vv
    f = _adapters().get(fname) or getattr(ns, fname)
    return f(*call_args, **call_kwargs)


def install() -> None:
    """Put DLPack and NumPy's protocols on Tensor (idempotent)."""
    Tensor.__dlpack__ = _dlpack
    Tensor.__dlpack_device__ = _dlpack_device
    Tensor.__array__ = _array
    Tensor.__array_ufunc__ = _array_ufunc
    Tensor.__array_function__ = _array_function


install()
