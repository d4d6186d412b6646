"""Driver side: the operators and methods of `Tensor` (API.md sections 4-5 with the tensor first). They are
written here, not in tensor.py, because they call the op modules, which build Tensors: the op modules
import tensor.py, this module imports both, and `install()` puts the methods on the class once, so the
imports form no cycle. Takes nothing at call time beyond the operands; gives new lazy Tensors.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from typing import Any

from .. import dtypes
from ..graph import ir as graph
from ..graph.ir import BinaryOp
from . import elementwise as ew
from . import elementwise_std as ews
from . import linalg, movement, reduce, scan
from .tensor import _OPERANDS, Tensor, is_operand

_ADD, _SUB, _MUL, _DIV = BinaryOp.ADD, BinaryOp.SUB, BinaryOp.MUL, BinaryOp.DIV


class _Methods:
    """The method table copied onto Tensor by `install` (never instantiated)."""

    # ---- indexing ------------------------------------------------------------------------------------

    def __getitem__(self, key: Any) -> Tensor:
        return movement.getitem(self, key)

    def __setitem__(self, key: Any, value: Any) -> None:
        raise TypeError("zyx_dist tensors are immutable and do not support item assignment; "
                        "build a new tensor instead, e.g. with zd.where(mask, value, x) or zd.concat")

    def __iter__(self) -> Iterator[Tensor]:
        if not self.shape:
            raise TypeError("iteration over a 0-d tensor")
        return (self[i] for i in range(self.shape[0]))

    # ---- operators -----------------------------------------------------------------------------------

    # (the four arithmetic operators straight to ew._binary, the C form where built: they are most of a model)
    def __add__(self, o): return ew._binary(_ADD, self, o) if isinstance(o, _OPERANDS) else NotImplemented
    def __radd__(self, o): return ew._binary(_ADD, o, self) if isinstance(o, _OPERANDS) else NotImplemented
    def __sub__(self, o): return ew._binary(_SUB, self, o) if isinstance(o, _OPERANDS) else NotImplemented
    def __rsub__(self, o): return ew._binary(_SUB, o, self) if isinstance(o, _OPERANDS) else NotImplemented
    def __mul__(self, o): return ew._binary(_MUL, self, o) if isinstance(o, _OPERANDS) else NotImplemented
    def __rmul__(self, o): return ew._binary(_MUL, o, self) if isinstance(o, _OPERANDS) else NotImplemented
    def __truediv__(self, o):
        return ew._binary(_DIV, self, o, ew._to_float) if isinstance(o, _OPERANDS) else NotImplemented

    def __rtruediv__(self, o):
        return ew._binary(_DIV, o, self, ew._to_float) if isinstance(o, _OPERANDS) else NotImplemented

    def __floordiv__(self, o): return ew.floor_divide(self, o) if is_operand(o) else NotImplemented
    def __rfloordiv__(self, o): return ew.floor_divide(o, self) if is_operand(o) else NotImplemented
    def __mod__(self, o): return ew.remainder(self, o) if is_operand(o) else NotImplemented
    def __rmod__(self, o): return ew.remainder(o, self) if is_operand(o) else NotImplemented
    def __pow__(self, o): return ew.pow(self, o) if is_operand(o) else NotImplemented
    def __divmod__(self, o):
        return (ew.floor_divide(self, o), ew.remainder(self, o)) if is_operand(o) else NotImplemented
    def __rdivmod__(self, o):
        return (ew.floor_divide(o, self), ew.remainder(o, self)) if is_operand(o) else NotImplemented
    def __round__(self, ndigits=None): return ew.round(self, decimals=0 if ndigits is None else ndigits)
    def __rpow__(self, o): return ew.pow(o, self) if is_operand(o) else NotImplemented
    def __matmul__(self, o): return linalg.matmul(self, o) if is_operand(o) else NotImplemented
    def __rmatmul__(self, o): return linalg.matmul(o, self) if is_operand(o) else NotImplemented
    def __and__(self, o): return ew.bitwise_and(self, o) if is_operand(o) else NotImplemented
    def __rand__(self, o): return ew.bitwise_and(o, self) if is_operand(o) else NotImplemented
    def __or__(self, o): return ew.bitwise_or(self, o) if is_operand(o) else NotImplemented
    def __ror__(self, o): return ew.bitwise_or(o, self) if is_operand(o) else NotImplemented
    def __xor__(self, o): return ew.bitwise_xor(self, o) if is_operand(o) else NotImplemented
    def __rxor__(self, o): return ew.bitwise_xor(o, self) if is_operand(o) else NotImplemented
    # == and != with a non-operand (None, a str, any object) compare unequal elementwise, as NumPy 2's do:
    # API.md 5 says == on tensors is never a Python bool. (zd.equal(x, None) still raises DTypeError.)
    def __eq__(self, o):  # type: ignore[override]
        return ew.equal(self, o) if is_operand(o) else _filled(self, False)

    def __ne__(self, o):  # type: ignore[override]
        return ew.not_equal(self, o) if is_operand(o) else _filled(self, True)

    def __lt__(self, o): return ew.less(self, o) if is_operand(o) else NotImplemented
    def __le__(self, o): return ew.less_equal(self, o) if is_operand(o) else NotImplemented
    def __gt__(self, o): return ew.greater(self, o) if is_operand(o) else NotImplemented
    def __ge__(self, o): return ew.greater_equal(self, o) if is_operand(o) else NotImplemented
    def __lshift__(self, o): return ews.bitwise_left_shift(self, o) if is_operand(o) else NotImplemented
    def __rlshift__(self, o): return ews.bitwise_left_shift(o, self) if is_operand(o) else NotImplemented
    def __rshift__(self, o): return ews.bitwise_right_shift(self, o) if is_operand(o) else NotImplemented
    def __rrshift__(self, o): return ews.bitwise_right_shift(o, self) if is_operand(o) else NotImplemented
    def __neg__(self): return ew.negative(self)
    def __pos__(self): return ew.positive(self)
    def __abs__(self): return ew.abs(self)
    def __invert__(self): return ew.invert(self)

    # ---- the array API standard's array object --------------------------------------------------------

    def __array_namespace__(self, /, *, api_version: str | None = None) -> Any:
        """The `zyx_dist` module (standard version 2023.12; 2021.12 and 2022.12 are subsets of it)."""
        if api_version not in (None, "2021.12", "2022.12", "2023.12"):
            raise ValueError(f"zyx_dist implements the array API standard 2023.12, not {api_version!r}")
        return sys.modules["zyx_dist"]

    def __index__(self) -> int:
        """A size-1 integer tensor as a Python int (so it can index a list or a shape)."""
        if not self.dtype.is_int:
            raise TypeError(f"only integer tensors can be used as an index, got {self.dtype}")
        return int(self._scalar())

    def __complex__(self) -> complex:
        return complex(self._scalar())

    def to_device(self, device: str | None, /, *, stream: Any = None) -> Tensor:
        """The standard's name for `x.to(device)`."""
        return movement.to_device(self, device)

    # ---- methods (the functions of API.md section 5 with the tensor first) ---------------------------

    def astype(self, dtype: Any, copy: bool = True, device: str | None = None) -> Tensor:
        return ew.astype(self, dtype, copy=copy, device=device)
    cast = astype
    def abs(self): return ew.abs(self)
    def negative(self): return ew.negative(self)
    def positive(self): return ew.positive(self)
    def exp(self): return ew.exp(self)
    def exp2(self): return ew.exp2(self)
    def log(self): return ew.log(self)
    def log2(self): return ew.log2(self)
    def sqrt(self): return ew.sqrt(self)
    def rsqrt(self): return ew.rsqrt(self)
    def square(self): return ew.square(self)
    def reciprocal(self): return ew.reciprocal(self)
    def sin(self): return ew.sin(self)
    def cos(self): return ew.cos(self)
    def tan(self): return ew.tan(self)
    def tanh(self): return ew.tanh(self)
    def sigmoid(self): return ew.sigmoid(self)
    def relu(self): return ew.relu(self)
    def floor(self): return ew.floor(self)
    def ceil(self): return ew.ceil(self)
    def round(self, decimals=0): return ew.round(self, decimals=decimals)
    def sign(self): return ew.sign(self)
    def logical_not(self): return ew.logical_not(self)
    def isnan(self): return ew.isnan(self)
    def isinf(self): return ew.isinf(self)
    def maximum(self, o): return ew.maximum(self, o)
    def minimum(self, o): return ew.minimum(self, o)
    def clip(self, min=None, max=None, *, lo=None, hi=None): return ew.clip(self, min, max, lo=lo, hi=hi)

    def sum(self, axis=None, keepdims=False, *, dtype=None): return reduce.sum(self, axis, keepdims, dtype=dtype)
    def prod(self, axis=None, keepdims=False, *, dtype=None): return reduce.prod(self, axis, keepdims, dtype=dtype)
    def max(self, axis=None, keepdims=False): return reduce.max(self, axis, keepdims)
    def min(self, axis=None, keepdims=False): return reduce.min(self, axis, keepdims)
    def mean(self, axis=None, keepdims=False): return reduce.mean(self, axis, keepdims)
    def var(self, axis=None, keepdims=False, correction=0): return reduce.var(self, axis, keepdims, correction)
    def std(self, axis=None, keepdims=False, correction=0): return reduce.std(self, axis, keepdims, correction)
    def argmax(self, axis=None, keepdims=False): return reduce.argmax(self, axis, keepdims)
    def argmin(self, axis=None, keepdims=False): return reduce.argmin(self, axis, keepdims)
    def any(self, axis=None, keepdims=False): return reduce.any(self, axis, keepdims)
    def all(self, axis=None, keepdims=False): return reduce.all(self, axis, keepdims)
    def logsumexp(self, axis=None, keepdims=False): return reduce.logsumexp(self, axis, keepdims)
    def cumsum(self, axis=None): return scan.cumsum(self, axis)

    def reshape(self, *dims: Any, shape: Any = None, copy: bool | None = None) -> Tensor:
        """`x.reshape(2, -1)`, `x.reshape((2, -1))` or `x.reshape(shape=(2, -1))` (NumPy 2.1's keyword)."""
        if shape is not None:
            if dims:
                raise TypeError("reshape() got the shape both by position and as shape=")
        else:
            shape = dims[0] if len(dims) == 1 else dims
        return movement.reshape(self, shape, copy=copy)

    def permute(self, *axes) -> Tensor:
        return movement.permute_dims(self, axes[0] if len(axes) == 1 and not isinstance(axes[0], int) else axes)

    def transpose(self, *axes) -> Tensor:
        """No arguments reverses the axes (NumPy); else as `permute`."""
        return self.permute(*axes) if axes else movement.permute_dims(self, tuple(reversed(range(self.ndim))))

    @property
    def T(self) -> Tensor:
        return self.transpose()

    @property
    def mT(self) -> Tensor:
        return movement.matrix_transpose(self)

    def expand(self, *shape) -> Tensor:
        return movement.broadcast_to(self, shape[0] if len(shape) == 1 else shape)

    def broadcast_to(self, shape) -> Tensor: return movement.broadcast_to(self, shape)
    def expand_dims(self, axis=0) -> Tensor: return movement.expand_dims(self, axis)
    def squeeze(self, axis=None) -> Tensor: return movement.squeeze(self, axis)
    def flatten(self) -> Tensor: return movement.flatten(self)
    def flip(self, axis=None) -> Tensor: return movement.flip(self, axis)
    def pad(self, pad_width, value=0) -> Tensor: return movement.pad(self, pad_width, value)
    def repeat(self, repeats, axis=None) -> Tensor: return movement.repeat(self, repeats, axis)
    def tile(self, reps) -> Tensor: return movement.tile(self, reps)
    def split(self, n_or_sizes, axis=0) -> list[Tensor]: return movement.split(self, n_or_sizes, axis)

    def matmul(self, o) -> Tensor: return linalg.matmul(self, o)
    def dot(self, o) -> Tensor: return linalg.dot(self, o)
    def softmax(self, axis=-1) -> Tensor: return linalg.softmax(self, axis)
    def log_softmax(self, axis=-1) -> Tensor: return linalg.log_softmax(self, axis)
    def layer_norm(self, axis=-1, eps=1e-5) -> Tensor: return linalg.layer_norm(self, axis, eps)

    # ---- copying and pickling ------------------------------------------------------------------------

    def __copy__(self) -> Tensor:
        return self  # tensors are immutable: a copy could never differ from the original

    def __deepcopy__(self, memo: dict) -> Tensor:
        return self

    def __reduce__(self) -> tuple:
        """pickle (a checkpoint, an argument of a Ray task the user starts) keeps the values: the tensor is
        realized and pickled as its NumPy array, and unpickles as a new tensor of that array (its placement
        and lineage are not kept)."""
        return (_unpickle, (self.numpy(),))

    # ---- placement -----------------------------------------------------------------------------------

    def to(self, device: str | None) -> Tensor:
        """A tensor whose buffer will live on `device` (a lazy transfer). An unknown name raises DeviceError."""
        return movement.to_device(self, device)

    def shard(self, devices: list[str], axis: int = 0) -> Tensor:
        """Split along `axis` into len(devices) nearly equal pieces (np.array_split sizes), one per device.

        Each piece is pinned to its device; ops on the result run per shard when realized (graph/shard.py),
        and a reduction over the sharded axis combines the shards' partial results in device order."""
        return movement.shard(self, devices, axis)


def _unpickle(array: Any) -> Tensor:
    """The tensor of a pickled tensor's values (`_Methods.__reduce__`)."""
    return Tensor(graph.leaf(array, dtypes.dtype(array.dtype)))


def _filled(x: Tensor, value: bool) -> Tensor:
    """A bool constant of x's shape (no memory): what == and != give for an object that is not an operand."""
    return Tensor(graph.const(value, x.shape, dtypes.bool_))


# class-body bookkeeping of _Methods, not methods (its __hash__ is None because it defines __eq__; Tensor
# keeps its identity hash)
_NOT_METHODS = frozenset(("__module__", "__qualname__", "__doc__", "__dict__", "__weakref__", "__hash__",
                          "__firstlineno__", "__static_attributes__"))


def install() -> None:
    """Put every method of `_Methods` on `Tensor` (idempotent)."""
    for name, value in vars(_Methods).items():
        if name not in _NOT_METHODS:
            setattr(Tensor, name, value)


install()
