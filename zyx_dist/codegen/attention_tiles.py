"""Driver side: shared-memory tiles of the CUDA attention kernels (attention_tc.py, attention_tma.py,
attention_tiled.py). Takes a kernel's operand (a node at an index in the tile's variables) and a `Tile` describing
where it goes; gives the C that fills the tile (16-byte `cp.async` copies where the operand is a view of an input
whose elements lie side by side along the tile's columns, else value by value) and the C that tests what a thread
put there (whether v is finite, for the skipped blocks).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..dtypes import dtype as dtype_named
from ..fuse.kernelize import Kernel
from . import symbolic as sym
from .attention import Evaluate
from .gemm import _walk, contiguous, tidy

# a staged tile's C element type and its value as float
SIDE_TYPES = {"float32": ("float", "{}"), "bfloat16": ("unsigned short", "zd_bf16_load({})"),
              "float16": ("unsigned short", "__half2float(__ushort_as_half({}))")}


@dataclass(frozen=True)
class Tile:
    """A block of an operand in shared memory: element (row, col) is the operand at `row_var` = row_base +
    row and `col_var` = col_base + col, zero where row_var >= row_limit or col_var >= col_limit."""

    slot: str  # the C lvalue of element (row, col), e.g. "Ks[row][col]"
    rows: int
    cols: int
    row_var: str
    row_base: str
    row_limit: int
    col_var: sym.Var
    col_limit: int
    dtype: str  # what the tile holds: a view of an input of this dtype is copied as it is
    store: str  # a computed (float) value as the tile's type, e.g. "zd_bf16_store({})"
    col_base: str = ""  # what `col_var` is offset by ("j0 + "), with `col_limit` then checked at every column


def copyable(kernel: Kernel, node, index: tuple, dtype: str, col_var: sym.Var, cols: int) -> tuple | None:
    """(input position, offset) when `node` at `index` is a view of an input of `dtype` whose elements lie
    side by side in aligned 16-byte runs along `col_var` (so a tile of `cols` columns fills by `cp.async`)."""
    pos = {n.id: i for i, n in enumerate(kernel.inputs)}
    walk = _walk(node, index, pos)
    width = 16 // dtype_named(dtype).itemsize
    if walk is None or walk[2] or len(walk[1]) != 1 or cols % width:
        return None
    p, off = walk[1][0]
    off = tidy(off)
    return (p, off) if kernel.inputs[p].dtype.name == dtype and contiguous(off, col_var, width) else None


def fill(kernel: Kernel, node, index: tuple, t: Tile, evaluate: Evaluate, T: str, threads: int) -> str:
    """Code with which `threads` threads put `node` (at `index`, in the tile's variables) into the tile:
    16-byte `cp.async` copies when the node is a view of an input of the tile's dtype whose elements lie
    side by side in 16-byte runs along the columns, else value by value. The caller commits and waits."""
    width = 16 // dtype_named(t.dtype).itemsize
    view = copyable(kernel, node, index, t.dtype, t.col_var, t.cols)
    col_guard = f" && {t.col_var.name} < {t.col_limit}" if t.cols > t.col_limit or t.col_base else ""
    if view is not None:
        chunks = t.rows * t.cols // width
        p, off = view
        return f"""  #pragma unroll
  for (int r = 0; r < {-(-chunks // threads)}; r++) {{
    const int e = tid + r * {threads};
    const int row = e / {t.cols // width}, col = (e % {t.cols // width}) * {width};
    const {T} {t.row_var} = {t.row_base} + row, {t.col_var.name} = {t.col_base}col;
    const bool inside = {f'e < {chunks} && ' if chunks % threads else ''}{t.row_var} < {t.row_limit}{col_guard};
    if ({f'e < {chunks}' if chunks % threads else 'true'})
      zd_cp_async(&{t.slot}, inside ? (const void*)(in{p} + {sym.render(off)}) : (const void*)in{p}, inside);
  }}"""
    lines, value = evaluate(node, index, {})
    elems = t.rows * t.cols
    return f"""  #pragma unroll 4
  for (int r = 0; r < {-(-elems // threads)}; r++) {{
    const int e = tid + r * {threads};
    const int row = e / {t.cols}, col = e % {t.cols};
    const {T} {t.row_var} = {t.row_base} + row, {t.col_var.name} = {t.col_base}col;
    float v = 0.0f;
    if ({f'e < {elems} && ' if elems % threads else ''}{t.row_var} < {t.row_limit}{col_guard}) {{ {' '.join(lines)} v = {value}; }}
    if ({f'e < {elems}' if elems % threads else 'true'}) {t.slot} = {t.store.format('v')};
  }}"""


def filled_check(kernel: Kernel, node, index: tuple, t: Tile, threads: int, flag: str, vec: tuple[str, str],
                 one: str) -> str:
    """Code that ANDs into `flag` a test of each element of the tile that this thread put there in `fill`
    (visible to it after its own `cp.async` wait, before any barrier): `vec` = (type, test of `w`) for 16
    bytes at a time where `fill` copies so, else `one`, a test of the element `x`."""
    width = 16 // dtype_named(t.dtype).itemsize
    if copyable(kernel, node, index, t.dtype, t.col_var, t.cols) is not None:
        count, per_row, step, test = t.rows * t.cols // width, t.cols // width, width, vec[1]
        read = f"const {vec[0]} w = *reinterpret_cast<const {vec[0]}*>(&{t.slot});"
    else:
        count, per_row, step, test = t.rows * t.cols, t.cols, 1, one
        read = f"const auto x = {t.slot};"
    return f"""    #pragma unroll
    for (int r = 0; r < {-(-count // threads)}; r++) {{
      const int e = tid + r * {threads};
      const int row = e / {per_row}, col = (e % {per_row}) * {step};
      if ({f'e < {count}' if count % threads else 'true'}) {{ {read} {flag} = {flag} && {test}; }}
    }}"""
