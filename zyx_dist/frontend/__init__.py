"""Driver side: the front end, every public op of API.md sections 3-5 and 10 in one namespace (the
package re-exports it). The functions live in `creation` and the op modules, grouped by job (the array
API standard's extra functions in `elementwise_std`, `manipulation`, `sorting`, `scan`, `setops`,
`linalg_ext`, `dtype_info`; DLPack and NumPy's protocols in `interop`); `methods` and `interop` put the
operators, methods and protocols on `Tensor`. Pure: builds graph nodes only, and reaches the runtime
through `zyx_dist.context` when a tensor is read.
"""

from __future__ import annotations

from . import (  # noqa: F401 -- methods and interop install themselves on Tensor
    autodiff,
    creation,
    dtype_info,
    elementwise,
    elementwise_std,
    interop,
    linalg,
    linalg_ext,
    manipulation,
    methods,
    movement,
    reduce,
    scan,
    setops,
    sorting,
)
from .autodiff import *
from .creation import *
from .dtype_info import *
from .elementwise import *
from .elementwise_std import *
from .interop import *
from .linalg import *
from .linalg_ext import *
from .manipulation import *
from .movement import *
from .reduce import *
from .scan import *
from .setops import *
from .sorting import *
from .tensor import Tensor, realize  # noqa: F401 -- re-exported by the package

__all__ = (autodiff.__all__ + creation.__all__ + elementwise.__all__ + reduce.__all__ + movement.__all__
           + linalg.__all__ + dtype_info.__all__ + elementwise_std.__all__ + manipulation.__all__ + sorting.__all__
           + scan.__all__ + setops.__all__ + linalg_ext.__all__ + interop.__all__)
