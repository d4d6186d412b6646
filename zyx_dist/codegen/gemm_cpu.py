"""Driver side: the GEMM template for CPU OpenCL devices (Intel's CPU runtime, PoCL). Takes a `gemm.GemmSpec`
(any matmul-shaped kernel: batch, views read in place, tails, the epilogue) and gives a kernel without local
memory or barriers, shaped for how CPU OpenCL compilers vectorise: they run the work-items of dimension 0 in
SIMD lanes, so each work-item owns one column and `rows` consecutive rows of the output. Per step of k it
loads B(k, column), which adjacent lanes read side by side (one vector load), and A(row, k) for its rows,
which every lane reads alike (broadcasts), then does `rows` multiply-adds into accumulators that stay in
registers; the tiled GPU template's local-memory tiles and barriers only cost a CPU. Rows past the edge read
a clamped row (no branch in the loop) and store nothing.
"""

from __future__ import annotations

from . import symbolic as sym
from .gemm import Epilogue, GemmSpec, Operand

COLUMNS_PER_GROUP = 16  # work-items of dimension 0 per work-group: whole SIMD vectors of 4, 8 or 16 lanes


def render(spec: GemmSpec, name: str, dialect, params: list[str], operand: Operand, epilogue: Epilogue,
           index_type: str, rows: int) -> tuple[str, tuple, tuple]:
    """Source and (gws, lws) of the kernel: gws (columns rounded up to a work-group, row blocks, batch)."""
    M, N, K, T = spec.M, spec.N, spec.K, index_type
    bz, gi, gj, gk = (sym.Var("bz", 0, spec.B - 1), sym.Var("gi", 0, M - 1), sym.Var("gj", 0, N - 1),
                      sym.Var("gk", 0, K - 1))
    b_lines, b_value = operand(spec.b, spec.index(bz, gi, gj, gk))  # B does not depend on the rows
    a_parts = []
    for r in range(rows):
        lines, value = operand(spec.a, spec.index(bz, sym.Var(f"gi{r}", 0, M - 1), gj, gk))
        a_parts.append((lines, value))

    def scope(lines: list[str], indent: str) -> str:
        return "\n".join(indent + ln for ln in lines)

    # each operand's lines in a C scope of their own (their temporaries share names), the value kept outside
    a_code = "\n".join(f"      float a{r};\n      {{\n{scope(lines, '        ')}\n        a{r} = {value};\n      }}"
                       for r, (lines, value) in enumerate(a_parts))
    fma = "\n".join(f"      c[{r}] += a{r} * b;" for r in range(rows))
    rows_at = "\n".join(f"  const {T} gi{r} = min(i0 + {r}, ({T}){M - 1});" for r in range(rows))
    body = "\n".join("        " + ln for ln in epilogue(spec.out_flat()))
    blocks = -(-M // rows)
    columns = -(-N // COLUMNS_PER_GROUP) * COLUMNS_PER_GROUP
    src = f"""{dialect.kernel_prefix} {name}({', '.join(params)}) {{
  const {T} gj = ({T})get_global_id(0);
  const {T} i0 = ({T})get_global_id(1) * {rows};
  const {T} bz = ({T})get_global_id(2);
  if (gj >= {N}) return;
{rows_at}
  float c[{rows}];
  for (int r = 0; r < {rows}; r++) c[r] = 0.0f;
  for ({T} gk = 0; gk < {K}; gk++) {{
    float b;
    {{
{scope(b_lines, '      ')}
      b = {b_value};
    }}
    {{
{a_code}
{fma}
    }}
  }}
  for (int r = 0; r < {rows}; r++) {{
    const {T} gi = i0 + r;
    if (gi < {M}) {{
      const float acc = c[r];
{body}
    }}
  }}
}}
"""
    return src, (columns, blocks, spec.B), (COLUMNS_PER_GROUP, 1, 1)
