"""Driver side: the array API standard's functions whose output shape depends on the data: `nonzero`
and the set functions `unique_all`, `unique_counts`, `unique_inverse`, `unique_values`. A lazy graph
needs every shape before it runs, so these realize their input, read it, and compute the (small) index
results with NumPy on the host; what they give are ordinary tensors (leaves) for later lazy ops. As
the standard says, NaNs are distinct from each other (each NaN is its own unique value) and -0.0
equals 0.0.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from .. import dtypes
from ..errors import ShapeError
from .common import as_tensor
from .creation import tensor
from .tensor import Tensor

__all__ = ["nonzero", "unique_all", "unique_counts", "unique_inverse", "unique_values"]


class UniqueAllResult(NamedTuple):
    values: Tensor
    indices: Tensor
    inverse_indices: Tensor
    counts: Tensor


class UniqueCountsResult(NamedTuple):
    values: Tensor
    counts: Tensor


class UniqueInverseResult(NamedTuple):
    values: Tensor
    inverse_indices: Tensor


def _index(a: np.ndarray) -> Tensor:
    return tensor(np.asarray(a, dtype=np.int64), dtypes.int64)


def nonzero(x: Any, /) -> tuple[Tensor, ...]:
    """The indices (int64, one tensor per axis) of the nonzero elements, in row-major order. Realizes x."""
    x = as_tensor(x)
    if x.ndim == 0:
        raise ShapeError("nonzero of a 0-d tensor is not defined (use x.reshape(1))")
    return tuple(_index(i) for i in np.nonzero(x.numpy()))


def _unique(x: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, Tensor]:
    """Sorted unique values of x (every NaN kept, after the numbers), the index of each one's first
    occurrence in the flattened x, the inverse (x's shape) and the counts."""
    x = as_tensor(x)
    a = x.numpy()
    flat = a.reshape(-1)
    vals, first, inverse, counts = np.unique(flat, return_index=True, return_inverse=True, return_counts=True,
                                             equal_nan=False)
    return vals, first, inverse.reshape(a.shape), counts, x


def unique_all(x: Any, /) -> UniqueAllResult:
    vals, first, inverse, counts, t = _unique(x)
    return UniqueAllResult(tensor(vals, t.dtype), _index(first), _index(inverse), _index(counts))


def unique_counts(x: Any, /) -> UniqueCountsResult:
    vals, _, _, counts, t = _unique(x)
    return UniqueCountsResult(tensor(vals, t.dtype), _index(counts))


def unique_inverse(x: Any, /) -> UniqueInverseResult:
    vals, _, inverse, _, t = _unique(x)
    return UniqueInverseResult(tensor(vals, t.dtype), _index(inverse))


def unique_values(x: Any, /) -> Tensor:
    vals, _, _, _, t = _unique(x)
    return tensor(vals, t.dtype)
