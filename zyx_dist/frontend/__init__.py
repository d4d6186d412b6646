"""Driver side: the front end, every public op of API.md sections 3-5 in one namespace (the package
re-exports it). The functions live in `creation` and the op modules, grouped by job; `methods` puts the
operators and methods on `Tensor`. Pure: builds graph nodes only, and reaches the runtime through
`zyx_dist.context` when a tensor is read.
"""

from __future__ import annotations

from . import autodiff, creation, elementwise, linalg, methods, movement, reduce  # noqa: F401 -- methods installs itself
from .autodiff import *
from .creation import *
from .elementwise import *
from .linalg import *
from .movement import *
from .reduce import *
from .tensor import Tensor, realize  # noqa: F401 -- re-exported by the package

__all__ = autodiff.__all__ + creation.__all__ + elementwise.__all__ + reduce.__all__ + movement.__all__ + linalg.__all__
