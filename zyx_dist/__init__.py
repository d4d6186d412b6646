"""zyx_dist: lazy NumPy-like tensors, fused into OpenCL/CUDA kernels and run on device workers.

Driver side, the public API of API.md: `import zyx_dist as zd`. Nothing runs until a tensor is read
or realized; the first op that needs a device starts the runtime with defaults (`zd.init()`).
"""

from __future__ import annotations

import math

from . import linalg, optim
from .dtypes import (
    DType,
    bfloat16,
    dtype,
    float16,
    float32,
    float64,
    int8,
    int16,
    int32,
    int64,
    uint8,
    uint16,
    uint32,
    uint64,
)
from .dtypes import (
    bool_ as bool,
)
from .engine.explain import Plan, explain
from .engine.jit import jit
from .engine.session import DeviceInfo, Session, devices, init, reset_stats, shutdown, stats
from .engine.trace import trace
from .errors import (
    CompileError,
    ConfigError,
    DeviceError,
    DTypeError,
    OutOfMemoryError,
    ShapeError,
    WorkerLostError,
    ZyxError,
)
from .frontend import *
from .frontend import __all__ as _ops_all
from .frontend.tensor import Tensor, realize

# The Python array API standard (API.md section 10): this module is its namespace.
__array_api_version__ = "2023.12"
e = math.e
pi = math.pi
inf = math.inf
nan = math.nan
newaxis = None

__all__ = ["DType", "Tensor", "Session", "DeviceInfo", "Plan", "init", "shutdown", "devices", "realize",
           "explain", "jit", "trace", "optim", "stats", "reset_stats", "dtype", "bool", "int8", "int16", "int32", "int64",
           "uint8", "uint16", "uint32", "uint64", "float16", "bfloat16", "float32", "float64", "ZyxError",
           "ShapeError", "DTypeError", "DeviceError", "OutOfMemoryError", "CompileError", "WorkerLostError",
           "ConfigError", "linalg", "e", "pi", "inf", "nan", "newaxis"] + list(_ops_all)
