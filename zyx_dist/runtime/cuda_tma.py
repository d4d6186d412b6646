"""Actor side: the tensor maps (TMA descriptors) of the CUDA backend's kernels. Takes a kernel source's
`// zyx_dist: tensor map` lines (codegen/gemm_tma.py writes them: the argument read, its dtype, byte offset,
dims, byte strides and box) and, per launch, the device addresses of the kernel's buffer arguments; gives the
kernel's parameter block: the buffers' pointers followed by one 128-byte CUtensorMap per line, encoded by
the driver's `cuTensorMapEncodeTiled` (through ctypes: CuPy does not wrap it) with 128-byte swizzle and
zeros past the tensor's edges. A descriptor holds an address, so blocks are cached per tuple of addresses
(a replayed plan meets the same few again and again); a CUDA graph captured from such a launch keeps its
own copy of the parameters, so the cache may drop entries freely.
"""

from __future__ import annotations

import ctypes
import functools
from collections import OrderedDict
from typing import NamedTuple

import numpy as np

MARK = "// zyx_dist: tensor map "
_DTYPES = {"f16": 6, "bf16": 9}  # CU_TENSOR_MAP_DATA_TYPE_FLOAT16, _BFLOAT16
_SWIZZLE_128B, _L2_256B, _INTERLEAVE_NONE, _OOB_ZERO = 3, 3, 0, 0
CACHED_BLOCKS = 64  # parameter blocks kept per kernel


class MapSpec(NamedTuple):
    arg: int  # which buffer argument
    dtype: int  # the driver's data type
    offset: int  # bytes past the buffer's address
    dims: tuple[int, ...]
    strides: tuple[int, ...]  # bytes, of dims[1:]
    box: tuple[int, ...]


def parse(source: str) -> tuple[MapSpec, ...]:
    """Every tensor map a kernel source declares, in its parameters' order. Raises ValueError on a bad line."""
    out = []
    for line in source.splitlines():
        if not line.startswith(MARK):
            continue
        words = line[len(MARK):].split()
        try:
            arg, kind, offset, rank = int(words[0]), words[1], int(words[2]), int(words[3])
            nums = [int(w) for w in words[4:]]
            if kind not in _DTYPES or not 1 <= rank <= 5 or len(nums) != 3 * rank - 1:
                raise ValueError
        except (ValueError, IndexError):
            raise ValueError(f"a malformed tensor map line in a kernel source: {line!r}") from None
        out.append(MapSpec(arg, _DTYPES[kind], offset, tuple(nums[:rank]), tuple(nums[rank:2 * rank - 1]),
                           tuple(nums[2 * rank - 1:])))
    return tuple(out)


@functools.cache
def _driver():
    """The driver's cuTensorMapEncodeTiled, loaded once (cached: no module state to rebind)."""
    lib = ctypes.CDLL("libcuda.so.1")
    f = lib.cuTensorMapEncodeTiled
    u32p, u64p = ctypes.POINTER(ctypes.c_uint32), ctypes.POINTER(ctypes.c_uint64)
    f.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32, ctypes.c_void_p, u64p, u64p, u32p, u32p,
                  ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_int]
    f.restype = ctypes.c_int
    return f


def encode(spec: MapSpec, address: int, out: np.ndarray) -> None:
    """Write the descriptor of `spec` over the buffer at device `address` into `out` (16 uint64, 64-byte
    aligned). Raises ValueError with the driver's error code when it refuses."""
    rank = len(spec.dims)
    dims = (ctypes.c_uint64 * rank)(*spec.dims)
    strides = (ctypes.c_uint64 * max(rank - 1, 1))(*spec.strides)
    box = (ctypes.c_uint32 * rank)(*spec.box)
    ones = (ctypes.c_uint32 * rank)(*([1] * rank))
    err = _driver()(out.ctypes.data, spec.dtype, rank, ctypes.c_void_p(address + spec.offset), dims, strides, box,
                    ones, _INTERLEAVE_NONE, _SWIZZLE_128B, _L2_256B, _OOB_ZERO)
    if err:
        raise ValueError(f"cuTensorMapEncodeTiled refused a tensor map (CUresult {err}): dims {spec.dims}, "
                         f"byte strides {spec.strides}, box {spec.box}, address {address + spec.offset:#x}")


class Params:
    """The parameter blocks of one kernel with tensor maps: `block(pointers)` gives the address of an array of
    pointers to each parameter (what cuLaunchKernel takes) and keeps what it points to alive."""

    __slots__ = ("blocks", "specs")

    def __init__(self, specs: tuple[MapSpec, ...]) -> None:
        self.specs = specs
        self.blocks: OrderedDict[tuple[int, ...], tuple[np.ndarray, np.ndarray]] = OrderedDict()

    def block(self, pointers: tuple[int, ...]) -> int:
        hit = self.blocks.get(pointers)
        if hit is None:
            hit = self._make(pointers)
            self.blocks[pointers] = hit
            if len(self.blocks) > CACHED_BLOCKS:
                self.blocks.popitem(last=False)
        return int(hit[1].ctypes.data)

    def _make(self, pointers: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
        n = len(pointers)
        maps_at = -(-n // 8) * 8 + 8  # in uint64 words, past the pointers, with room to align to 64 bytes
        data = np.zeros(maps_at + 16 * len(self.specs), dtype=np.uint64)
        data[:n] = pointers
        skew = (-(data.ctypes.data + 8 * (maps_at - 8)) % 64) // 8
        first = maps_at - 8 + skew  # the first map's word, 64-byte aligned
        for i, spec in enumerate(self.specs):
            if spec.arg >= n:
                raise ValueError(f"a tensor map reads argument {spec.arg} of a kernel with {n}")
            encode(spec, pointers[spec.arg], data[first + 16 * i:first + 16 * (i + 1)])
        base = data.ctypes.data
        addrs = [base + 8 * i for i in range(n)] + [base + 8 * (first + 16 * i) for i in range(len(self.specs))]
        return data, np.array(addrs, dtype=np.uint64)
