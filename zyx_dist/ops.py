"""Driver side: every public op of API.md sections 3 and 5 in one namespace (`from .ops import *` in the
package). The functions live in `creation` and the `ops_*` modules, grouped by job; this module only
re-exports them."""

from __future__ import annotations

from . import creation, ops_elementwise, ops_linalg, ops_movement, ops_reduce
from .creation import *
from .ops_elementwise import *
from .ops_linalg import *
from .ops_movement import *
from .ops_reduce import *

__all__ = creation.__all__ + ops_elementwise.__all__ + ops_reduce.__all__ + ops_movement.__all__
__all__ += ops_linalg.__all__
