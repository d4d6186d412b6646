"""Driver side: which operands of a Hopper GEMM (gemm_wgmma.py) the tensor memory accelerator can load, and the
tensor map each needs. Takes a `gemm.GemmSpec` and one operand's side (or, through `affine_map`, any input's
element offset in two tile variables and the batch index: attention_tma.py's tiles); gives a `TensorMap` (plain data: the
input, its dims and strides as TMA sees them, the box one copy moves, and how the batch index splits into
coordinates) or None. A tensor map describes a strided box of up to five dims with a contiguous innermost
dim; an operand qualifies when its element offset is an affine sum of the row (or column) index, the k index
and digits of the batch index (`bz / d % m`, as permutes and reshapes of batch dims leave it), with positive
strides whose byte sizes are multiples of 16 and an offset of whole 16 bytes. The descriptor itself holds a
device address, so it is made on the worker (runtime/cuda_tma.py) from the kernel source's marker line
that `marker` writes. Also the PTX helpers the kernel calls: the copy of a box into shared memory, which
signals an mbarrier with the bytes it delivered, and the barrier's init, expect and wait.
"""

from __future__ import annotations

from dataclasses import dataclass

from . import symbolic as sym
from .gemm import GemmSpec

MARK = "// zyx_dist: tensor map "  # runtime/cuda_tma.py reads these lines
BOX_K = 64  # k per copy: 64 halves, one 128-byte swizzle row
MN_BLOCK = 64  # an MN-major operand's copies: 64 rows or columns (128 bytes) by BOX_K k-rows each
_KINDS = {"bfloat16": "bf16", "float16": "f16"}  # the marker's names of the dtypes maps read


@dataclass(frozen=True)
class TensorMap:
    pos: int  # the kernel input the map reads
    dtype: str  # "bf16" or "f16"
    offset: int  # elements from the buffer's start to the operand's first element
    dims: tuple[int, ...]  # elements per dim, innermost first: (k, rows) K-major, (rows, k) MN-major, then batch
    strides: tuple[int, ...]  # elements between neighbours of dims[1:]
    box: tuple[int, ...]  # elements one copy moves per dim
    digits: tuple[tuple[int, int], ...]  # per batch dim: (d, m), its coordinate `bz / d % m` (m = 0: no modulo)
    k_major: bool

    def marker(self) -> str:
        """The source line runtime/cuda_tma.py turns into a descriptor (byte offsets and strides)."""
        words = [self.pos, self.dtype, 2 * self.offset, len(self.dims), *self.dims,
                 *(2 * s for s in self.strides), *self.box]
        return MARK + " ".join(map(str, words))


def _digit(t: sym.Expr) -> tuple[int, int] | None:
    """(d, m) when `t` is bz, bz / d, bz % m or bz / d % m."""
    m = 0
    if isinstance(t, sym.Mod):
        t, m = t.x, t.c
    d = 1
    if isinstance(t, sym.Div):
        t, d = t.x, t.c
    if isinstance(t, sym.Var) and t.name == "bz" and t.names == {"bz"}:
        return d, m
    return None


def tensor_map(spec: GemmSpec, left: bool, mode: str, rows: int) -> TensorMap | None:
    """The map of the operand on the `left` (rows) or right (columns) side, read in `mode` ('k' or 'mn', as
    gemm_tc._mode chose), `rows` of it per tile; None when TMA cannot express it."""
    view = spec.a_view if left else spec.b_view
    if view is None or mode not in ("k", "mn") or view.dtype not in ("bfloat16", "float16"):
        return None
    me, size = ("gi", spec.M) if left else ("gj", spec.N)
    if mode == "k":
        return affine_map(view.pos, view.dtype, view.offset, ("gk", spec.K), (me, size), spec.B, (BOX_K, rows), True)
    return affine_map(view.pos, view.dtype, view.offset, (me, size), ("gk", spec.K), spec.B, (MN_BLOCK, BOX_K), False)


def affine_map(pos: int, dtype: str, offset: sym.Expr, inner: tuple[str, int], outer: tuple[str, int], batches: int,
               box: tuple[int, int], k_major: bool) -> TensorMap | None:
    """The map of input `pos` (of half type `dtype`) read at element `offset`, an expression in the variables `inner`
    (name, extent: the contiguous dim, coefficient 1) and `outer` (a positive coefficient) and in digits of
    the batch index bz < `batches`, `box` elements per copy along the two; None where TMA cannot read it
    (another variable or a negative coefficient, more than three batch digits, a stride or offset of no whole
    16 bytes)."""
    if dtype not in _KINDS:
        return None
    off = offset if isinstance(offset, sym.Sum) else sym.Sum(((offset, 1),), 0)
    coef: dict[str, int] = {}
    digits: list[tuple[int, int, int]] = []
    for t, c in off.terms:
        if c <= 0:
            return None  # a flipped dim walks backwards: TMA strides are positive
        if isinstance(t, sym.Var) and t.names == {t.name} and t.name in (inner[0], outer[0]):
            coef[t.name] = c
            continue
        d = _digit(t)
        if d is None:
            return None
        digits.append((*d, c))
    if set(coef) != {inner[0], outer[0]} or coef[inner[0]] != 1 or off.const < 0 or len(digits) > 3:
        return None
    dims, strides = [inner[1], outer[1]], [coef[outer[0]]]
    digits.sort()
    for d, m, c in digits:
        n = (batches - 1) // d + 1
        dims.append(min(m, n) if m else n)
        strides.append(c)
    if any((2 * s) % 16 or 2 * s >= 1 << 40 for s in strides) or (2 * off.const) % 16:
        return None
    if any(n >= 1 << 32 for n in dims):
        return None
    return TensorMap(pos, _KINDS[dtype], off.const, tuple(dims), tuple(strides), (*box, *([1] * len(digits))),
                     tuple((d, m) for d, m, _ in digits), k_major)


def coordinates(m: TensorMap, name: str) -> str:
    """C declarations of the batch coordinates of map `name` (`<name>_c0`, ...), from `bz`."""
    out = []
    for i, (d, mod) in enumerate(m.digits):
        e = "bz" if d == 1 else f"(bz / {d})"
        if mod:
            e = f"({e} % {mod})"
        out.append(f"const int {name}_c{i} = (int){e};")
    return " ".join(out)


def copies(m: TensorMap, name: str, dst: str, first: str, k0: str, bar: str, rows: int) -> list[str]:
    """The calls that copy one k-step of `rows` rows starting at row `first` into shared address `dst`."""
    batch = "".join(f", {name}_c{i}" for i in range(len(m.digits)))
    r = len(m.dims)
    if m.k_major:
        return [f"zd_tma{r}({dst}, &{name}, {bar}, (int)({k0}), (int)({first}){batch});"]
    return [f"zd_tma{r}({dst} + {j * MN_BLOCK * BOX_K * 2}u, &{name}, {bar}, (int)({first}) + {j * MN_BLOCK}, "
            f"(int)({k0}){batch});" for j in range(rows // MN_BLOCK)]


def _copy_helper(rank: int) -> str:
    coords = ", ".join(f"int c{i}" for i in range(rank))
    regs = ", ".join(f"%{i + 2}" for i in range(rank))
    ins = ", ".join(f'"r"(c{i})' for i in range(rank))
    return (f"__device__ __forceinline__ void zd_tma{rank}(unsigned dst, const zd_tmap* map, unsigned bar, {coords}) {{\n"
            f'  asm volatile("cp.async.bulk.tensor.{rank}d.shared::cluster.global.mbarrier::complete_tx::bytes '
            f'[%0], [%1, {{{regs}}}], [%{rank + 2}];"\n'
            f'               :: "r"(dst), "l"((unsigned long long)map), {ins}, "r"(bar) : "memory");\n}}')


HELPERS = "\n".join([
    "#ifndef ZD_TMA_HELPERS",
    "#define ZD_TMA_HELPERS",
    "struct __align__(64) zd_tmap { unsigned long long v[16]; };  // a CUtensorMap, passed by value",
    *(_copy_helper(r) for r in range(2, 6)),
    r"""__device__ __forceinline__ void zd_bar_init(unsigned bar, unsigned count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"(bar), "r"(count) : "memory");
}
__device__ __forceinline__ void zd_bar_expect(unsigned bar, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(bar), "r"(bytes) : "memory");
}
__device__ __forceinline__ void zd_bar_wait(unsigned bar, unsigned parity) {
  unsigned done = 0;
  while (!done)
    asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
                 : "=r"(done) : "r"(bar), "r"(parity) : "memory");
}
#endif""",
])
