"""Unit tests of the CUDA dialect of the renderer (`zyx_dist.codegen.render.CUDA`): the spellings that
differ from OpenCL C (entry point, qualifiers, global id, type names, float16 through cuda_fp16.h, the
preamble), that both dialects of a kernel share everything else (work sizes, cost figures, the name's
hash), and that `nvcc --ptx -arch=sm_90` accepts every kernel of a broad set of graphs: every unary,
binary, reduce and cast op over float32/float16/float64/int8/uint8/int32/int64/uint32/bool (and the
other dtypes), movement ops, pads, long reductions, matmul, softmax, huge index spaces and kernels from
the public API. The nvcc checks skip cleanly where nvcc is absent. NVRTC compiles without host headers,
so the sources may use nothing but CUDA built-ins and cuda_fp16.h, which these tests also check.
"""

from __future__ import annotations

import math
import os
import re
import shutil
import subprocess
import tempfile
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from helpers import leaf, one, one_kernel

import zyx_dist as zd
from zyx_dist import dtypes as dt
from zyx_dist.codegen.render import CUDA, OPENCL, Program, literal, render_kernel
from zyx_dist.fuse.kernelize import Kernel, kernelize
from zyx_dist.graph import ir as g

f32 = dt.float32
# the dtypes of the sweep (the brief's nine), and every dtype for casts and literals
SWEEP = [dt.float32, dt.float16, dt.bfloat16, dt.float64, dt.int8, dt.uint8, dt.int32, dt.int64, dt.uint32, dt.bool_]
NVCC = shutil.which("nvcc")
NVCC_ARGS = ["--ptx", "-arch=sm_90", "-x", "cu"]




def cuda(k: Kernel) -> Program:
    return render_kernel(k, CUDA)


def body(src: str) -> str:
    return src[src.index('extern "C"'):]


# ---- the graphs ----------------------------------------------------------------------------------------

def _valid(build, ops) -> list[g.Node]:
    """The nodes `build(op)` makes for every op the graph allows on the dtype (it raises DTypeError else)."""
    out = []
    for op in ops:
        try:
            out.append(build(op))
        except zd.DTypeError:
            pass
    return out


def _unary_all(a: g.Node) -> list[g.Node]:
    return _valid(lambda op: g.unary(op, a), g.UnaryOp)


def _binary_all(a: g.Node, b: g.Node) -> list[g.Node]:
    return _valid(lambda op: g.binary(op, a, b), g.BinaryOp)


def _matmul(a: g.Node, b: g.Node) -> g.Node:
    (m, k), (_, n) = a.shape, b.shape
    ae = g.expand(g.reshape(a, (m, k, 1)), (m, k, n))
    be = g.expand(g.reshape(b, (1, k, n)), (m, k, n))
    return g.reshape(g.reduce(g.ReduceOp.SUM, g.binary(g.BinaryOp.MUL, ae, be), (1,)), (m, n))


def _softmax(x: g.Node) -> g.Node:
    mx = g.reduce(g.ReduceOp.MAX, x, (1,))
    e = g.unary(g.UnaryOp.EXP, g.binary(g.BinaryOp.SUB, x, g.expand(mx, x.shape)))
    s = g.reduce(g.ReduceOp.SUM, e, (1,))
    return g.binary(g.BinaryOp.DIV, e, g.expand(s, x.shape))


def _api_kernels() -> list[Kernel]:
    """Kernels of public API ops (built lazily: nothing runs)."""
    rng = np.random.default_rng(0)
    x = zd.tensor(rng.standard_normal((8, 16)).astype(np.float32))
    h = zd.tensor(rng.standard_normal((8, 16)).astype(np.float16))
    w = zd.tensor(rng.standard_normal((16, 4)).astype(np.float32))
    i = zd.tensor(rng.integers(-5, 5, (8, 16)).astype(np.int32))
    outs = [
        zd.softmax(x, axis=1), zd.log_softmax(x, axis=1), zd.logsumexp(x, axis=1), x @ w, zd.relu(x @ w + 1.0),
        zd.sigmoid(x) * zd.relu(x * 2 + 1), zd.mean(x, axis=0), zd.var(x, axis=1), zd.std(x),
        zd.argmax(x, axis=1), zd.argmin(i, axis=0), zd.clip(i, -2, 2), zd.where(x > 0, x, h), zd.softmax(h, axis=1),
        h @ zd.astype(w, zd.float16), zd.pad(x, ((1, 2), (3, 0)), float("nan")),
        zd.concat([x, x * 2], axis=0), zd.flip(x, axis=1), zd.tile(x, (2, 1)), zd.sum(i, axis=1), zd.prod(x, axis=0),
        zd.any(x > 1), zd.all(i != 0), zd.layer_norm(x, 1), zd.matrix_transpose(x) @ x, x[2:6, ::3],
        zd.floor_divide(i, 3), zd.remainder(x, 0.75), zd.pow(i, 2), zd.sign(x), zd.round(x), zd.isnan(x / x),
    ]
    return kernelize([t.node for t in outs])


def all_kernels() -> list[tuple[str, Kernel]]:
    """(label, kernel) over a broad set of graphs."""
    out: list[tuple[str, Kernel]] = []

    def add(label, nodes):
        nodes = nodes if isinstance(nodes, list) else [nodes]
        out.extend((label, k) for k in kernelize(nodes))

    x, y = leaf(4, 6), leaf(4, 6)
    add("elementwise", g.unary(g.UnaryOp.EXP, g.binary(g.BinaryOp.ADD, x, y)))
    add("transpose", g.permute(x, (1, 0)))
    add("expand", g.unary(g.UnaryOp.EXP, g.expand(leaf(4, 1), (4, 6))))
    add("flip", g.flip(g.reshape(g.permute(x, (1, 0)), (24,)), (0,)))
    add("pad", g.pad(x, ((1, 1), (0, 2)), 3.0))
    add("pad_nan", g.pad(g.unary(g.UnaryOp.EXP, leaf(6)), ((2, 0),), math.nan))
    add("crop", g.pad(x, ((-1, -1), (-2, 0))))
    add("pad_outside", g.unary(g.UnaryOp.EXP, g.pad(g.pad(leaf(2, 3), ((0, 0), (0, 3)), 5.0), ((0, 0), (-3, 0)))))
    add("const", g.binary(g.BinaryOp.MUL, g.const(2.0, (3,), f32), g.const(3.0, (3,), f32)))
    add("multi_axis_reduce", g.reduce(g.ReduceOp.SUM, leaf(3, 4, 5), (0, 2)))
    add("hoist", g.reduce(g.ReduceOp.SUM, g.binary(g.BinaryOp.MUL, x, g.unary(g.UnaryOp.EXP, g.expand(leaf(4, 1),
                                                                                               (4, 6)))), (1,)))
    add("long_reduce", g.reduce(g.ReduceOp.SUM, leaf(1 << 20), (0,)))
    add("softmax", _softmax(leaf(8, 32)))
    add("softmax_f16", _softmax(leaf(8, 32, dtype=dt.float16)))
    add("multi_output", [g.reduce(g.ReduceOp.MAX, x, (1,)), g.reduce(g.ReduceOp.SUM, x, (1,))])
    for dtype in SWEEP:
        a, b = leaf(4, 6, dtype=dtype), leaf(4, 6, dtype=dtype)
        out.append((f"unary_{dtype.name}", one_kernel(_unary_all(a))))
        out.append((f"binary_{dtype.name}", one_kernel(_binary_all(a, b))))
        for rop in g.ReduceOp:
            add(f"reduce_{rop.name}_{dtype.name}", g.reduce(rop, a, (1,)))
        out.append((f"where_{dtype.name}", one(g.where(g.cast(a, dt.bool_), a, b))))
        if dtype is not dt.bool_:
            add(f"matmul_{dtype.name}", _matmul(leaf(3, 5, dtype=dtype), leaf(5, 7, dtype=dtype)))
            add(f"gemm_{dtype.name}", _matmul(leaf(40, 36, dtype=dtype), leaf(36, 20, dtype=dtype)))
    for src in dt.ALL:  # every cast, from every dtype
        s = leaf(4, dtype=src)
        out.append((f"casts_from_{src.name}", one_kernel([g.cast(s, d) for d in dt.ALL if d is not src])))
    for dtype in dt.ALL:  # other dtypes' arithmetic too
        if dtype not in SWEEP:
            a, b = leaf(4, dtype=dtype), leaf(4, dtype=dtype)
            out.append((f"binary_{dtype.name}", one_kernel(_binary_all(a, b))))
            out.append((f"unary_{dtype.name}", one_kernel(_unary_all(a))))
    specials = [(math.inf, f32), (-math.inf, f32), (math.nan, f32), (1e-45, f32), (3.4028234663852886e38, f32),
                (-(2**31), dt.int32), (-(2**63), dt.int64), (2**64 - 1, dt.uint64), (2**32 - 1, dt.uint32),
                (-128, dt.int8), (255, dt.uint8), (math.nan, dt.float64), (-math.inf, dt.float64),
                (5e-324, dt.float64), (65504.0, dt.float16), (-math.inf, dt.float16), (True, dt.bool_)]
    for v, dtype in specials:
        out.append((f"literal_{dtype.name}_{v}", one(g.binary(g.BinaryOp.MAX, leaf(3, dtype=dtype),
                                                                g.const(v, (3,), dtype)))))
    big = g.expand(leaf(1, 1), (2**16, 2**15))
    out.append(("huge_output", one(g.cast(big, dt.float16))))
    out.append(("huge_input", Kernel([g.reduce(g.ReduceOp.SUM, big, (1,))], [big])))
    out.extend(("api", k) for k in _api_kernels())
    return out


@pytest.fixture(scope="module")
def kernels() -> list[tuple[str, Kernel]]:
    return all_kernels()


# ---- the CUDA spellings ----------------------------------------------------------------------------------

def test_entry_point_and_parameters():
    p = cuda(one(g.unary(g.UnaryOp.EXP, g.binary(g.BinaryOp.ADD, leaf(4, 6), leaf(4, 6)))))
    assert p.dialect == "cuda" and p.name.startswith("kc_")
    assert f'extern "C" __global__ void {p.name}(const float* __restrict__ in0, const float* __restrict__ in1, ' \
           f"float* __restrict__ out0) {{" in p.source
    assert "  int gid = (int)(blockIdx.x * blockDim.x + threadIdx.x);" in p.source
    assert "out0[gid] = (float)(" in p.source and "exp(" in p.source
    for opencl_only in ("__kernel", "__global ", "get_global_id", "vload_half", "vstore_half", "#pragma", "__private",
                        " restrict "):
        assert opencl_only not in p.source


def test_both_dialects_share_everything_but_spelling(kernels):
    for label, k in kernels[::7]:
        a, b = render_kernel(k, OPENCL, gpu=True), render_kernel(k, CUDA)  # the same options for the same device
        assert a.name[len("k_"):] == b.name[len("kc_"):], label
        assert (a.gws, a.lws, a.uses_fp64, a.flops, a.bytes) == (b.gws, b.lws, b.uses_fp64, b.flops, b.bytes), label
        assert a.dialect == "opencl" and b.dialect == "cuda"
        assert render_kernel(k, "cuda") == b


def test_huge_index_space_uses_long_long():
    big = g.expand(leaf(1, 1), (2**16, 2**15))
    p = cuda(one(g.cast(big, dt.float16)))
    # loop-free CUDA kernels take several elements per thread, from `base`
    assert "  long long base = (long long)blockIdx.x * blockDim.x + threadIdx.x;" in p.source
    p = cuda(Kernel([g.reduce(g.ReduceOp.SUM, big, (1,))], [big]))
    assert re.search(r"for \(long long r\d+ = (0|lid); r\d+ < 32768;", p.source)  # lid: an in-group reduce


def test_type_names_are_spelled_out():
    p = cuda(one_kernel([g.cast(leaf(4, dtype=dt.float64), d) for d in dt.ALL if d is not dt.float64]))
    src = body(p.source)
    for t in ("signed char*", "unsigned char*", "unsigned short*", "unsigned int*", "long long*",
              "unsigned long long*", "__half*", "short*", "int*", "float*"):
        assert t in src, t
    # no OpenCL or host typedef names, and no `long`/`char` whose width or sign depends on the host
    assert not re.search(r"\b(uchar|ushort|uint|ulong|half)\b", src)
    assert not re.search(r"(?<!long )\blong\b(?! long)", src)
    assert not re.search(r"(?<!signed )(?<!unsigned )\bchar\b", src)


def test_float16_goes_through_cuda_fp16():
    h = leaf(8, dtype=dt.float16)
    p = cuda(one(g.binary(g.BinaryOp.ADD, h, h)))
    assert p.source.startswith("#include <cuda_fp16.h>\n")
    assert "const __half* __restrict__ in0" in p.source and "__half* __restrict__ out0" in p.source
    assert "__half2float(in0[gid])" in p.source and re.search(r"out0\[gid\] = __float2half_rn\(\w+\);", p.source)
    assert "float ld" in p.source  # computed in float
    p = cuda(one(g.cast(leaf(8), dt.float16)))  # rounding of a float cast to half
    assert "__half2float(__float2half_rn((float)(" in p.source
    p = cuda(one(g.cast(leaf(8, dtype=dt.float64), dt.float16)))  # from double: rounded once, as NumPy does
    assert "__half2float(__double2half(" in p.source
    p = cuda(one(g.unary(g.UnaryOp.EXP, leaf(8))))
    assert "cuda_fp16" not in p.source


def test_preamble_defines_infinity_and_nan_for_nvrtc():
    p = cuda(one(g.reduce(g.ReduceOp.MAX, leaf(4, 6), (1,))))
    assert "#ifndef INFINITY\n#define INFINITY __int_as_float(0x7f800000)\n#endif" in p.source
    assert "#ifndef NAN\n#define NAN __int_as_float(0x7fc00000)\n#endif" in p.source
    assert "(-INFINITY)" in p.source


def test_integer_pow_helper_is_a_device_function():
    x = leaf(4, dtype=dt.int64)
    src = cuda(one(g.binary(g.BinaryOp.POW, x, x))).source
    assert "__device__ long long ipow_long(long long a, long long b)" in src
    assert "ipow_long(" in body(src)
    src = cuda(one(g.binary(g.BinaryOp.POW, leaf(4, dtype=dt.int8), leaf(4, dtype=dt.int8)))).source
    assert "__device__ signed char ipow_char(signed char a, signed char b)" in src


def test_cuda_literals():
    assert literal(7, dt.int64, CUDA) == "7ll" and literal(7, dt.int64) == "7l"
    assert literal(-(2**63), dt.int64, CUDA) == "(-9223372036854775807ll-1ll)"
    assert literal(2**64 - 1, dt.uint64, CUDA) == "18446744073709551615ull"
    assert literal(-128, dt.int8, CUDA) == "((signed char)-128)"
    assert literal(2**32 - 1, dt.uint32, CUDA) == "4294967295u"
    assert literal(math.inf, f32, CUDA) == "INFINITY" and literal(1.5, dt.float16, CUDA) == "1.5f"


def test_no_headers_but_cuda_fp16(kernels):
    for label, k in kernels:
        src = cuda(k).source
        assert set(re.findall(r"#include\s*(\S+)", src)) <= {"<cuda_fp16.h>"}, label
        assert "std::" not in src and "printf" not in src, label


# ---- nvcc accepts every kernel --------------------------------------------------------------------------

def _translation_unit(progs: list[Program]) -> tuple[str, list[tuple[int, str]]]:
    """One source of many kernels (distinct names) and where each starts. Helper functions and preamble
    lines that several kernels share are kept once; nothing is added that the renderer does not emit."""
    seen: set[str] = set()
    parts, starts, line = [], [], 1
    for p in progs:
        head, kernel = p.source[:p.source.index('extern "C"')], body(p.source)
        chunks = re.split(r"(?m)^(?=__device__ |#ifndef |#include )", head)
        keep = "".join(c for c in chunks if c and c not in seen)
        seen.update(chunks)
        text = keep + kernel
        starts.append((line, p.name))
        parts.append(text)
        line += text.count("\n")
    return "".join(parts), starts


def _nvcc(sources: dict[str, str], tmp: str, args: list[str] = NVCC_ARGS, flag: str | None = None) -> dict[str, str]:
    """Compile each named source with nvcc (in parallel); the output of those that fail, or whose output names
    `flag` (a message of ptxas's)."""
    def run(item):
        name, text = item
        path = os.path.join(tmp, f"{name}.cu")
        with open(path, "w") as f:
            f.write(text)
        r = subprocess.run([NVCC, *args, path, "-o", os.path.join(tmp, f"{name}.ptx")],
                           check=False, capture_output=True, text=True, timeout=600)
        out = r.stdout + r.stderr
        return name, out if r.returncode or (flag is not None and flag in out) else None

    with ThreadPoolExecutor(max(1, min(4, os.cpu_count() or 1))) as ex:
        return {n: err for n, err in ex.map(run, sources.items()) if err is not None}


def _explain(err: str, starts: list[tuple[int, str]], progs: dict[str, Program]) -> str:
    """The failing kernels' sources with nvcc's messages."""
    out = [err[:4000]]
    names = []
    for m in re.finditer(r"\.cu\((\d+)\): error", err):
        line = int(m.group(1))
        name = max((s for s in starts if s[0] <= line), default=starts[0])[1]
        if name not in names:
            names.append(name)
    for name in names[:3]:
        out.append(f"--- {name} ---\n{progs[name].source}")
    return "\n".join(out)


@pytest.mark.skipif(NVCC is None, reason="nvcc not found")
def test_nvcc_accepts_every_kernel(kernels):
    progs: dict[str, Program] = {}
    for _, k in kernels:
        p = cuda(k)
        progs.setdefault(p.name, p)
    assert len(progs) > 150
    names = list(progs)
    chunks = max(1, min(4, os.cpu_count() or 1))
    units = {f"unit{i}": _translation_unit([progs[n] for n in names[i::chunks]]) for i in range(chunks)}
    with tempfile.TemporaryDirectory() as tmp:
        errors = _nvcc({u: text for u, (text, _) in units.items()}, tmp)
    assert not errors, "\n".join(_explain(err, units[u][1], progs) for u, err in errors.items())


@pytest.mark.skipif(NVCC is None, reason="nvcc not found")
def test_nvcc_accepts_kernels_on_their_own():
    """Each kernel's own preamble suffices (a shared translation unit could hide a missing one)."""
    h = leaf(8, dtype=dt.float16)
    cases = {
        "half_io": one(g.binary(g.BinaryOp.ADD, h, h)),
        "half_cast_only": one(g.cast(g.cast(leaf(8), dt.float16), f32)),
        "double_to_half": one(g.cast(leaf(8, dtype=dt.float64), dt.float16)),
        "inf_nan": one(g.pad(g.reduce(g.ReduceOp.MAX, leaf(4, 6), (1,)), ((1, 1), (0, 0)), math.nan)),
        "ipow": one_kernel([g.binary(g.BinaryOp.POW, leaf(4, dtype=d), leaf(4, dtype=d))
                            for d in (dt.int8, dt.uint8, dt.int64, dt.uint32)]),
        "huge": one(g.cast(g.expand(leaf(1, 1), (2**16, 2**15)), dt.float16)),
    }
    sources = {name: cuda(k).source for name, k in cases.items()}
    with tempfile.TemporaryDirectory() as tmp:
        errors = _nvcc(sources, tmp)
    assert not errors, "\n\n".join(f"--- {n} ---\n{sources[n]}\n{e}" for n, e in errors.items())


@pytest.mark.skipif(NVCC is None, reason="nvcc not found")
def test_nvcc_accepts_row_kernels_in_quads():
    """Row kernels in quads (the row in registers, four neighbours per load and store: 16 bytes for float32,
    8 for half types) at every group size, a warp alone without its barrier, with an int mask read element by
    element beside them; the quad form is the GPU's first candidate."""
    from zyx_dist.codegen import options
    from zyx_dist.codegen.options import KernelOpts
    from zyx_dist.codegen.render import facts

    sources = {}
    for d in (f32, dt.bfloat16, dt.float16):
        x = zd.tensor(np.zeros((6, 1024), d.np_dtype))
        keep = zd.tensor(np.ones((6, 1024), np.int32))
        mean = x.mean(-1, keepdims=True)
        graphs = {"softmax": zd.softmax(zd.where(keep == 1, x, -np.inf), axis=-1),
                  "norm": (x - mean) / zd.sqrt(((x - mean) ** 2).mean(-1, keepdims=True) + 1e-5)}
        for name, t in graphs.items():
            (k,) = kernelize([t.node])
            assert options.candidates(facts(k, CUDA))[0].vec == 4
            for group in (32, 64, 128, 256):
                src = render_kernel(k, CUDA, KernelOpts(group=group, cache=1, vec=4)).source
                assert ("__syncthreads" in src) == (group > 32), (name, d, group)
                assert ("float4" in src) and ("zd_bf16x4_store" in src) == (d is dt.bfloat16)
                sources[f"{name}_{d.name}_g{group}"] = src
    with tempfile.TemporaryDirectory() as tmp:
        errors = _nvcc(sources, tmp)
    assert not errors, "\n\n".join(f"--- {n} ---\n{sources[n]}\n{e}" for n, e in errors.items())


def test_half_type_elementwise_kernels_move_four_elements_at_once():
    """Loop-free kernels with half-type inputs and outputs take the vector form first on CUDA: four neighbours as
    one 8-byte load, widened to a float4, and one 8-byte store (a bfloat16 rotary kernel moved one 2-byte element
    per work-item, ~1 TB/s on an H100); mixed with float32, and with a tail; nvcc compiles them. OpenCL keeps half
    types scalar."""
    from zyx_dist.codegen.render import facts

    sources = {}
    for d, name in ((dt.bfloat16, "bf16"), (dt.float16, "f16")):
        x, y = leaf(30001, 3, dtype=d), leaf(30001, 3)  # (enough quads to fill a GPU: the vector form is first)
        k = one_kernel([g.binary(g.BinaryOp.ADD, g.unary(g.UnaryOp.EXP, x), g.cast(y, d)),
                        g.binary(g.BinaryOp.MUL, g.cast(x, f32), y)])
        assert facts(k, CUDA).vectorisable and not facts(k, "opencl", True).vectorisable
        src = cuda(k).source
        assert f"zd_{name}x4_load(in0 + first)" in src and f"zd_{name}x4_store(out0 + first" in src
        assert "reinterpret_cast<float4*>(out1 + first)" in src
        sources[name] = src
    if NVCC is not None:
        with tempfile.TemporaryDirectory() as tmp:
            errors = _nvcc(sources, tmp)
        assert not errors, "\n\n".join(f"--- {n} ---\n{sources[n]}\n{e}" for n, e in errors.items())


def _gemm_and_attention_kernels() -> dict[str, tuple[Kernel, object]]:
    """The GEMM forms (views read in place, 3-D @ 2-D with an epilogue, transposed operands, per-element
    operands) in float32 and on tensor cores in float16/bfloat16, each tile option; fused attention."""
    from zyx_dist.codegen import gemm
    from zyx_dist.codegen.options import KernelOpts

    out: dict[str, tuple[Kernel, object]] = {}
    for dtype in (dt.float32, dt.float16, dt.bfloat16):
        B, T, H, D = 2, 40, 2, 16
        qkv = g.permute(g.reshape(leaf(B, T, 3 * H * D, dtype=dtype), (B, T, 3, H, D)), (2, 0, 3, 1, 4))
        q, k, v = (g.reshape(g.pad(qkv, ((-i, i - 2), (0, 0), (0, 0), (0, 0), (0, 0))), (B, H, T, D)) for i in range(3))
        scores = _bmm(q, g.permute(k, (0, 1, 3, 2)))
        forms = {
            "qk_view": scores,
            "x3d_bias_relu": g.binary(g.BinaryOp.MAX, g.binary(g.BinaryOp.ADD, _bmm(leaf(3, 50, 64, dtype=dtype),
                                                                                      leaf(1, 64, 96, dtype=dtype)),
                                                               g.expand(leaf(1, 1, 96, dtype=dtype), (3, 50, 96))),
                                      g.const(0, (3, 50, 96), dtype)),
            "transposed": _matmul(g.permute(leaf(64, 130, dtype=dtype), (1, 0)), leaf(64, 72, dtype=dtype)),
        }
        for name, node in forms.items():
            for tile in range(len(gemm.TILES) if dtype is dt.float32 else 4):  # the 8 x 8-item tiles: float32
                out[f"{name}_{dtype.name}_t{tile}"] = (one(node), KernelOpts(tile=tile, prefetch=1,
                                                                             tile_k=32 if tile >= 4 else 8))
            if dtype is dt.float32:  # the epilogue staged through shared memory
                for tile in range(4):
                    out[f"{name}_float32_staged_t{tile}"] = (one(node), KernelOpts(tile=tile, prefetch=1, cache=1))
            if dtype is not dt.float32:  # deeper pipelines in dynamic shared memory
                for stages in (3, 4):
                    out[f"{name}_{dtype.name}_s{stages}"] = (one(node), KernelOpts(stages=stages))
        out[f"attention_{dtype.name}"] = (one(_attention(scores, v)), None)
        # tensor cores for half types: head dims 32 (v 64) with an additive mask (130 keys: read from global
        # memory; 136: staged in shared memory), 128 with a computed q (filled value by value), 40 (not whole
        # k16 steps: the float32 kernel); cross-attention lengths
        for label, (Tq, Tk, D, Dv, masked, scaled) in {
                "d32_v64_mask": (70, 130, 32, 64, True, False), "d32_staged_mask": (70, 136, 32, 32, True, False),
                "d128_computed_q": (65, 64, 128, 128, False, True), "d40": (40, 40, 40, 40, True, False)}.items():
            q, k, v = leaf(2, Tq, D, dtype=dtype), leaf(2, Tk, D, dtype=dtype), leaf(2, Tk, Dv, dtype=dtype)
            if scaled:
                q = g.binary(g.BinaryOp.MUL, q, g.const(0.5, q.shape, dtype))
            s = _bmm(q, g.permute(k, (0, 2, 1)))
            if masked:
                s = g.binary(g.BinaryOp.ADD, s, g.expand(leaf(1, Tq, Tk, dtype=dtype), s.shape))
            out[f"attention_{label}_{dtype.name}"] = (one(_attention(s, v)), None)
    return out


def _attention(scores: g.Node, v: g.Node) -> g.Node:
    axis = len(scores.shape) - 1
    mx = g.reduce(g.ReduceOp.MAX, scores, (axis,))
    e = g.unary(g.UnaryOp.EXP, g.binary(g.BinaryOp.SUB, scores, g.expand(mx, scores.shape)))
    p = g.binary(g.BinaryOp.DIV, e, g.expand(g.reduce(g.ReduceOp.SUM, e, (axis,)), e.shape))
    return _bmm(p, v)


def _bmm(a: g.Node, b: g.Node) -> g.Node:
    *batch, m, k = a.shape
    n = b.shape[-1]
    nb = len(batch)
    ae = g.expand(g.reshape(a, (*batch, m, 1, k)), (*batch, m, n, k))
    bt = g.permute(b, (*range(nb), nb + 1, nb))
    be = g.expand(g.reshape(bt, (*b.shape[:-2], 1, n, k)), (*batch, m, n, k))
    return g.reshape(g.reduce(g.ReduceOp.SUM, g.binary(g.BinaryOp.MUL, ae, be), (nb + 2,)), (*batch, m, n))


def test_gemm_and_attention_forms_render_as_such():
    from zyx_dist.codegen import attention, attention_skip, gemm

    for name, (k, opts) in _gemm_and_attention_kernels().items():
        src = render_kernel(k, CUDA, opts).source
        if name.startswith("attention"):
            assert attention.match(k) is not None and "Ks[" in src, name
            # a mask added to the scores: a prologue kernel flags the blocks it hides, which are then left out
            assert (attention_skip.PROLOGUE_MARK in src) == ("mask" in name or "d40" in name), name
            tensor_cores = "float32" not in name and "d40" not in name
            assert ("mma.sync.aligned.m16n8k16" in src) == tensor_cores, name
            if tensor_cores:  # views travel by cp.async (k in two places), a computed q value by value; a
                # mask whose rows are whole 16-byte runs as a tile of its own, copied with k
                copies = 3 if "computed" in name else 6 if "staged" in name else 4
                assert src.count("zd_cp_async(&") == copies and ("Ms0[" in src) == ("staged" in name), name
            else:  # register-tiled float32 arithmetic; OpenCL keeps the kernel of one row per work-item
                assert "Ps[" in src and "Ps[" not in render_kernel(k, OPENCL, opts).source, name
        elif "float32" in name:
            assert gemm.match(k) is not None and "As[" in src and "mma" not in src, name
        else:
            assert "mma.sync.aligned.m16n8k16.row.col.f32" in src and "ldmatrix" in src, name


@pytest.mark.skipif(NVCC is None, reason="nvcc not found")
def test_nvcc_accepts_gemm_and_attention_forms():
    sources = {name: render_kernel(k, CUDA, opts).source for name, (k, opts) in _gemm_and_attention_kernels().items()}
    with tempfile.TemporaryDirectory() as tmp:
        errors = _nvcc(sources, tmp)
    assert not errors, "\n\n".join(f"--- {n} ---\n{sources[n]}\n{e}" for n, e in list(errors.items())[:2])


def _wgmma_kernels() -> dict[str, tuple[Kernel, object]]:
    """The half-type GEMM forms above (views, an epilogue, a transposed operand) and one evaluated element by
    element, with each wgmma tile and stage option of the tuner."""
    from zyx_dist.codegen.options import KernelOpts

    forms = {name[:-3]: k for name, (k, _) in _gemm_and_attention_kernels().items()
             if name.endswith("_t0") and "float32" not in name}
    for dtype in (dt.float16, dt.bfloat16):
        scaled = g.binary(g.BinaryOp.MUL, leaf(64, 72, dtype=dtype), g.const(0.5, (64, 72), dtype))
        forms[f"scaled_{dtype.name}"] = one(_matmul(scaled, leaf(72, 96, dtype=dtype)))
    return {f"{name}_wgmma_t{tile}_s{stages}_p{deep}_c{staged}":
            (k, KernelOpts(wgmma=1, tile=tile, stages=stages, prefetch=deep, cache=staged))
            for name, k in forms.items() for staged in (0, 1)
            for tile, stages, deep in ((0, 4, 0), (1, 4, 0), (0, 3, 0), (1, 3, 0), (1, 3, 1), (1, 5, 0))}


def test_wgmma_gemm_only_in_the_dialect_of_compute_capability_9():
    from zyx_dist.codegen import options
    from zyx_dist.codegen.autotune import Target
    from zyx_dist.codegen.render import CUDA_SM90A, facts

    for name, (k, opts) in _wgmma_kernels().items():
        src = render_kernel(k, CUDA_SM90A, opts).source
        assert "wgmma.mma_async.sync.aligned.m64n" in src and "// zyx_dist: arch sm_90a" in src, name
        assert ("zd_st0[zd_l]" in src) == bool(opts.cache), name  # every form's tile fits in the stages
        assert "wgmma" not in render_kernel(k, CUDA, opts).source, name  # other GPUs keep mma.sync
        first = options.candidates(facts(k, "cuda_sm90a"))[0].wgmma
        assert first == (2 if "tensor map" in render_kernel(k, CUDA_SM90A, options.KernelOpts(wgmma=2)).source else 1), name
        assert not any(o.wgmma for o in options.candidates(facts(k, "cuda"))), name
    assert Target.dialect_of("cuda", "9.0") == ("cuda_sm90a", False)
    assert Target.dialect_of("cuda", "8.0") == ("cuda", False) and Target.dialect_of("opencl", "9.0") == ("opencl", False)


def test_wgmma_staged_store_copies_sixteen_bytes_where_columns_are_contiguous():
    """The staged tile leaves in 16-byte copies of the widest output (8 half columns, 4 float32) when every output's
    columns lie side by side (a bfloat16 product; an update of a bfloat16 weight beside a float32 moment, which
    copies 4 columns: 8 bytes of the weight, 16 of the moment), and element by element when they do not (a
    product stored transposed); nvcc compiles each."""
    from zyx_dist.codegen.options import KernelOpts
    from zyx_dist.codegen.render import CUDA_SM90A

    bf = dt.bfloat16
    staged = KernelOpts(wgmma=1, tile=1, stages=4, cache=1)  # (4 stages of 128 x 128: room for both outputs' tiles)
    prod = _matmul(leaf(256, 64, dtype=bf), leaf(64, 128, dtype=bf))
    wide = g.cast(prod, f32)
    update = one_kernel([g.cast(g.binary(g.BinaryOp.SUB, wide, leaf(256, 128)), bf),
                         g.binary(g.BinaryOp.ADD, wide, leaf(256, 128))])
    cases = {"plain": (one(prod), ["uint4"]), "update": (update, ["uint2", "uint4"]),
             "transposed": (one(g.permute(prod, (1, 0))), [])}
    sources = {}
    for name, (k, copies) in cases.items():
        src = render_kernel(k, CUDA_SM90A, staged).source
        store = src[src.index("the whole tile is in shared memory"):]
        assert [f"reinterpret_cast<{t}*>(out{i} + gid)" in store for i, t in enumerate(copies)] == [True] * len(copies)
        assert ("out0[gid] = " in store) == (not copies), name
        sources[name] = src
    if NVCC is not None:
        with tempfile.TemporaryDirectory() as tmp:
            errors = _nvcc(sources, tmp, ["--ptx", "-arch=sm_90a", "-x", "cu"])
        assert not errors, "\n\n".join(f"--- {n} ---\n{sources[n]}\n{e}" for n, e in errors.items())


def test_wgmma_staged_epilogue_reads_output_shaped_inputs_from_shared_memory():
    """An input the epilogue reads along both rows and columns (the softmax rows an attention gradient's GEMM
    multiplies by, a residual, a mask broadcast over the batch) is copied into shared memory as a tile first,
    neighbouring threads copying neighbouring columns up to 16 bytes at a time, and the epilogue reads that tile
    instead of a few bytes of 8 rows per warp; a per-row input (the gradient's row sums) and a bias along the
    columns stay global reads, and the direct form keeps every read global. Where K is one k-step (the attention's
    products) the copies are cp.async ones issued before the main loop, past the one stage it fills; where the
    tiles would not fit there (K = 72 fills two stages), plain copies after it. nvcc compiles each."""
    from zyx_dist.codegen.options import KernelOpts
    from zyx_dist.codegen.render import CUDA_SM90A

    bf = dt.bfloat16
    staged = KernelOpts(wgmma=1, tile=1, stages=3, cache=1)  # the tuner's pick for the attention gradient
    dp = g.reshape(_bmm(leaf(4, 256, 64, dtype=bf), g.permute(leaf(4, 256, 64, dtype=bf), (0, 2, 1))), (4, 256, 256))
    rows = g.expand(g.reshape(leaf(4, 256), (4, 256, 1)), (4, 256, 256))
    p = leaf(4, 256, 256, dtype=bf)
    grad = g.cast(g.binary(g.BinaryOp.MUL, g.cast(p, f32), g.binary(g.BinaryOp.SUB, g.cast(dp, f32), rows)), bf)
    residual = leaf(200, 136, dtype=bf)
    scores = g.reshape(_bmm(leaf(4, 256, 64, dtype=bf), g.permute(leaf(4, 256, 64, dtype=bf), (0, 2, 1))), (4, 256, 256))
    masked = g.binary(g.BinaryOp.ADD, scores, g.expand(g.reshape(leaf(256, 256, dtype=bf), (1, 256, 256)), (4, 256, 256)))
    biased = g.binary(g.BinaryOp.ADD, _matmul(leaf(200, 72, dtype=bf), leaf(72, 136, dtype=bf)),
                      g.expand(g.reshape(leaf(136, dtype=bf), (1, 136)), (200, 136)))
    cases = {"attention_grad": (one(grad), 1), "residual": (one(g.binary(g.BinaryOp.ADD, _matmul(
        leaf(200, 72, dtype=bf), leaf(72, 136, dtype=bf)), residual)), 1),
        "mask_over_the_batch": (one(masked), 1), "bias": (one(biased), 0)}
    sources = {}
    for name, (k, tiles) in cases.items():
        src = render_kernel(k, CUDA_SM90A, staged).source
        assert src.count("as the epilogue reads it") == tiles, name
        sources[name] = src
        if not tiles:  # a bias along the columns: read where it is
            continue
        epilogue = src[src.index("every warpgroup is done with the stages"):src.index("the whole tile is in shared memory")]
        assert not re.search(r"in\d\[\([^]]*gj[^]]*\)\]", epilogue), name  # no global read along the columns left
        early = name != "residual"
        copies = src.index("as the epilogue reads it")
        assert (copies < src.index("float d[")) == early, name  # before the main loop, or after it
        if early:  # 16 bytes per copy, asynchronous, waited for before the epilogue
            assert "zd_cp_async(reinterpret_cast<unsigned short*>(zd_pool" in src, name
            assert 'cp.async.wait_all;" ::: "memory");\n  __syncthreads();  // every warpgroup' in src, name
            assert "the inputs' tiles are in shared memory" not in src, name
        else:
            assert "*reinterpret_cast<const uint4*>(in" in src, name  # 16 bytes per copy
        direct = render_kernel(k, CUDA_SM90A, KernelOpts(wgmma=1, tile=1, stages=3, cache=0)).source
        assert "as the epilogue reads it" not in direct, name
    assert re.search(r"= in\d\[\(bz\*256\+gi\)\];", sources["attention_grad"])  # the row sums: a global read
    if NVCC is not None:
        with tempfile.TemporaryDirectory() as tmp:
            errors = _nvcc(sources, tmp, ["--ptx", "-arch=sm_90a", "-x", "cu"])
        assert not errors, "\n\n".join(f"--- {n} ---\n{sources[n]}\n{e}" for n, e in errors.items())


def test_wgmma_narrow_and_192_wide_tiles_for_short_k_and_whole_waves():
    """The wgmma GEMM's 128 x 64 tile (four work-groups an SM, 64 registers a thread by its launch bounds) is a
    candidate where K is two k-steps or fewer or N is 64, the 128 x 192 tile where whole waves of it over 132 SMs
    do no more work per SM than either wide tile's; a short K's kernel asks for the shared memory of the stages it fills, not of
    all the tuner's stages; nvcc compiles both tiles, with and without TMA and staging, with no spills."""
    from zyx_dist.codegen.options import KernelOpts, candidates
    from zyx_dist.codegen.render import CUDA_SM90A, facts

    bf = dt.bfloat16
    scores = g.reshape(_bmm(leaf(8, 256, 64, dtype=bf), g.permute(leaf(8, 256, 64, dtype=bf), (0, 2, 1))), (8, 256, 256))
    masked = one(g.binary(g.BinaryOp.ADD, scores, g.expand(g.reshape(leaf(256, 256, dtype=bf), (1, 256, 256)), (8, 256, 256))))
    weight_grad = one(_matmul(g.permute(leaf(8192, 768, dtype=bf), (1, 0)), leaf(8192, 3072, dtype=bf)))
    qkv_grad = one(_matmul(g.permute(leaf(8192, 768, dtype=bf), (1, 0)), leaf(8192, 2304, dtype=bf)))
    pv = one(_bmm(leaf(8, 256, 256, dtype=bf), leaf(8, 256, 64, dtype=bf)))

    def tiles(k) -> set:
        return {(o.wgmma, o.tile, o.stages) for o in candidates(facts(k, "cuda_sm90a")) if o.tile >= 2 and o.wgmma}

    assert tiles(masked) == {(1, 2, 3), (2, 2, 3)}  # K = 64
    assert tiles(pv) == {(1, 2, 3), (2, 2, 3)}  # N = 64
    assert tiles(weight_grad) == {(1, 3, 4), (2, 3, 4)}  # 768 x 3072: 144 tiles of 128 x 128, 96 of 128 x 192
    assert tiles(qkv_grad) == set()  # 768 x 2304, K = 8192: 108 tiles of 128 x 128 (one wave), 72 bigger ones
    sources = {}
    for name, k, tile, stages in (("narrow", masked, 2, 3), ("wide192", weight_grad, 3, 4)):
        for form in (1, 2):
            for cache in (0, 1):
                src = render_kernel(k, CUDA_SM90A, KernelOpts(wgmma=form, tile=tile, stages=stages, cache=cache)).source
                n = 64 if tile == 2 else 192
                assert f"wgmma.mma_async.sync.aligned.m64n{n}k16" in src
                assert ("__launch_bounds__(256, 4)" in src) == (tile == 2)
                sources[f"{name}_w{form}_c{cache}"] = src
    # K = 64 fills one of the three stages (24 KiB; the output's staged tile reuses it), then the mask's tile (18 KiB),
    # copied while the stage fills
    shared = re.search(r"dynamic shared bytes (\d+)", sources["narrow_w2_c1"]).group(1)
    assert int(shared) == 24576 + 128 * 72 * 2 + 1024
    assert re.search(r"dynamic shared bytes (\d+)", sources["narrow_w2_c0"]).group(1) == str(24576 + 1024)
    if NVCC is not None:
        with tempfile.TemporaryDirectory() as tmp:
            errors = _nvcc(sources, tmp, ["-cubin", "-arch=sm_90a", "-x", "cu", "-Xptxas", "--warn-on-spills,--warning-as-error"])
        assert not errors, "\n\n".join(f"--- {n} ---\n{sources[n]}\n{e}" for n, e in errors.items())


def test_half_types_divide_by_the_reciprocal_on_cuda_only():
    """CUDA divides half types as a product with the divisor's correctly rounded reciprocal (IEEE division's slow
    path took zero dividends, the masked entries of a causal softmax); float32 keeps IEEE division, and OpenCL
    its own `/`."""
    from zyx_dist.codegen.options import KernelOpts

    for dtype in (dt.bfloat16, dt.float16):
        k = one(g.binary(g.BinaryOp.DIV, leaf(64, dtype=dtype), leaf(64, dtype=dtype)))
        assert "zd_hdiv(" in render_kernel(k, CUDA, KernelOpts()).source
        assert "zd_hdiv(" not in render_kernel(k, OPENCL, KernelOpts()).source
    k = one(g.binary(g.BinaryOp.DIV, leaf(64), leaf(64)))
    src = render_kernel(k, CUDA, KernelOpts()).source
    assert "zd_hdiv(" not in src and " / " in src


def test_wgmma_is_switched_off_by_the_environment(monkeypatch):
    from zyx_dist.codegen.autotune import Target

    monkeypatch.setenv("ZYX_DIST_WGMMA", "0")
    assert Target.dialect_of("cuda", "9.0") == ("cuda", False)


def _wgmma_attention_kernels() -> dict[str, Kernel]:
    """Fused attention forms that Hopper's wgmma kernel takes (head dims of whole 64s): a permuted qkv view with
    a causal mask, a mask staged in shared memory, cross-attention with v twice as wide, head dim 128 with a
    computed q (filled value by value), a per-batch mask, a mask at head dim 128, a where-mask, and k
    flipped along the keys (no tensor map can read it: the TMA form is not offered); bfloat16 and float16."""
    out = {}
    for dtype in (dt.float16, dt.bfloat16):
        B, T, H, D = 2, 130, 2, 64
        qkv = g.permute(g.reshape(leaf(B, T, 3 * H * D, dtype=dtype), (B, T, 3, H, D)), (2, 0, 3, 1, 4))
        q, k, v = (g.reshape(g.pad(qkv, ((-i, i - 2), (0, 0), (0, 0), (0, 0), (0, 0))), (B, H, T, D)) for i in range(3))
        s = g.binary(g.BinaryOp.ADD, _bmm(q, g.permute(k, (0, 1, 3, 2))), g.expand(leaf(1, 1, T, T, dtype=dtype), (B, H, T, T)))
        out[f"view_causal_{dtype.name}"] = one(_attention(s, v))
        for label, (Tq, Tk, D, Dv, mask, scaled) in {
                "staged_mask": (70, 192, 64, 64, (1, 70, 192), False), "cross_v128": (70, 130, 64, 128, (1, 70, 130), False),
                "d128_computed_q": (65, 64, 128, 128, None, True), "per_batch_mask": (64, 128, 64, 64, (2, 64, 128), False)}.items():
            q, k, v = leaf(2, Tq, D, dtype=dtype), leaf(2, Tk, D, dtype=dtype), leaf(2, Tk, Dv, dtype=dtype)
            if scaled:
                q = g.binary(g.BinaryOp.MUL, q, g.const(0.5, q.shape, dtype))
            s = _bmm(q, g.permute(k, (0, 2, 1)))
            if mask:
                s = g.binary(g.BinaryOp.ADD, s, g.expand(leaf(*mask, dtype=dtype), s.shape))
            out[f"{label}_{dtype.name}"] = one(_attention(s, v))
        q, k, v = leaf(2, 64, 128, dtype=dtype), leaf(2, 128, 128, dtype=dtype), leaf(2, 128, 128, dtype=dtype)
        s = g.binary(g.BinaryOp.ADD, _bmm(q, g.permute(k, (0, 2, 1))), g.expand(leaf(1, 64, 128, dtype=dtype), (2, 64, 128)))
        out[f"mask_d128_{dtype.name}"] = one(_attention(s, v))
        q, k, v = (leaf(2, 128, 64, dtype=dtype) for _ in range(3))
        s = _bmm(q, g.permute(k, (0, 2, 1)))
        s = g.where(g.expand(leaf(1, 128, 128, dtype=dt.bool_), s.shape), s, g.const(-math.inf, s.shape, dtype))
        out[f"where_mask_{dtype.name}"] = one(_attention(s, v))
        s = _bmm(q, g.permute(g.flip(k, (1,)), (0, 2, 1)))
        s = g.binary(g.BinaryOp.ADD, s, g.expand(leaf(1, 128, 128, dtype=dtype), s.shape))
        out[f"flipped_k_{dtype.name}"] = one(_attention(s, v))
    return out


NO_TMA = ("flipped_k",)  # attention kernels of _wgmma_attention_kernels whose k or v no tensor map reads


def test_wgmma_attention_is_a_candidate_beside_mma_sync_on_compute_capability_9():
    from zyx_dist.codegen import options
    from zyx_dist.codegen.options import KernelOpts
    from zyx_dist.codegen.render import CUDA_SM90A, facts

    for name, k in _wgmma_attention_kernels().items():
        tma = [] if name.startswith(NO_TMA) else [2]
        assert [o.wgmma for o in options.candidates(facts(k, "cuda_sm90a"))] == [*tma, 1, 0], name
        assert [o.wgmma for o in options.candidates(facts(k, "cuda"))] == [0], name
        src = render_kernel(k, CUDA_SM90A, KernelOpts(wgmma=1)).source
        assert "// zyx_dist: arch sm_90a" in src and "mma.sync" not in src, name
        assert src.count("wgmma.mma_async.sync.aligned.m64n") == 2, name  # q @ k^T and p @ v
        assert "mma.sync" in render_kernel(k, CUDA_SM90A, KernelOpts()).source, name
    # head dims that are not whole 64s keep mma.sync alone
    small = _gemm_and_attention_kernels()["attention_d32_v64_mask_bfloat16"][0]
    assert [o.wgmma for o in options.candidates(facts(small, "cuda_sm90a"))] == [0]


def test_tma_attention_copies_k_v_and_the_masks_a_tensor_map_reads():
    """The TMA form (codegen/attention_tma.py): a tensor map each for k and v, one for a mask whose rows a map
    reads (16-byte pitches) where the stages leave room, none for a mask it cannot read (rows of 130 halves)
    nor for a bool condition; no prologue kernel, the skip flags in module memory where a mask gives a rule;
    k flipped along the keys (no map reads it backwards) keeps the wgmma form's text."""
    from zyx_dist.codegen.options import KernelOpts
    from zyx_dist.codegen.render import CUDA_SM90A

    maps = {"view_causal": 2, "staged_mask": 3, "cross_v128": 2, "d128_computed_q": 2, "per_batch_mask": 3,
            "mask_d128": 3, "where_mask": 2}
    for name, k in _wgmma_attention_kernels().items():
        prog = render_kernel(k, CUDA_SM90A, KernelOpts(wgmma=2))
        src = prog.source
        if name.startswith(NO_TMA):
            plain = render_kernel(k, CUDA_SM90A, KernelOpts(wgmma=1))
            assert src.replace(prog.name, plain.name) == plain.source, name
            continue
        label = name.rsplit("_", 1)[0]
        assert src.count("// zyx_dist: tensor map ") == maps[label], name
        assert src.count("const __grid_constant__ zd_tmap") == maps[label], name
        assert "cp.async.bulk.tensor" in src and "mbarrier.try_wait" in src, name
        assert "// zyx_dist: prologue" not in src and "zd_scratch" not in src, name
        assert ("_flags[" in src) == (label != "d128_computed_q"), name  # every other kernel has a mask
    wide = render_kernel(_wgmma_attention_kernels()["mask_d128_bfloat16"], CUDA_SM90A, KernelOpts(wgmma=2)).source
    # head dim 128: two 64-column panels a block of k and of v, 8 KiB apart
    assert "zd_tma3(zd_dst + 8192u, &zd_tma_k, zd_bar, 0 + 64, zd_j" in wide
    assert "zd_tma3(zd_dst + 16384u + 8192u, &zd_tma_v, zd_bar, 0 + 64, zd_j" in wide


@pytest.mark.skipif(NVCC is None, reason="nvcc not found")
def test_nvcc_accepts_wgmma_attention_forms():
    """The wgmma form and the TMA form in two and three stages of every kernel above, through ptxas, none of whose
    wgmma ptxas serializes (C7514: it found a path where an accumulator is read while its wgmma may run, and then
    waits for every wgmma at its issue)."""
    from zyx_dist.codegen.options import KernelOpts
    from zyx_dist.codegen.render import CUDA_SM90A

    sources = {f"{name}_{w}_{st}": render_kernel(k, CUDA_SM90A, KernelOpts(wgmma=w, stages=st)).source
               for name, k in _wgmma_attention_kernels().items() for w, st in ((1, 0), (2, 2), (2, 3))}
    with tempfile.TemporaryDirectory() as tmp:  # through ptxas: it checks the inline wgmma and its registers
        errors = _nvcc(sources, tmp, ["-cubin", "-arch=sm_90a", "-x", "cu"], flag="C7514")
    assert not errors, "\n\n".join(f"--- {n} ---\n{sources[n]}\n{e}" for n, e in list(errors.items())[:2])


@pytest.mark.skipif(NVCC is None, reason="nvcc not found")
def test_nvcc_accepts_wgmma_forms():
    """Every option on one form (bfloat16 with an epilogue), every form with the first option and the last (the
    deepest, staged): the options change the pipeline and the store, the forms the operand copies."""
    from zyx_dist.codegen.render import CUDA_SM90A

    every = _wgmma_kernels()
    last = list(every)[-1].split("_wgmma_")[1]
    picked = {n: v for n, v in every.items()
              if n.startswith("x3d_bias_relu_bfloat16") or n.endswith(("_wgmma_t0_s4_p0_c0", f"_wgmma_{last}"))}
    sources = {name: render_kernel(k, CUDA_SM90A, opts).source for name, (k, opts) in picked.items()}
    with tempfile.TemporaryDirectory() as tmp:
        errors = _nvcc(sources, tmp, ["--ptx", "-arch=sm_90a", "-x", "cu"])
    assert not errors, "\n\n".join(f"--- {n} ---\n{sources[n]}\n{e}" for n, e in list(errors.items())[:2])


def test_attention_row_statistics_in_every_cuda_form_and_apart():
    """The forward of an attention that a gradient recomputes from (graph/recompute.py) is one kernel with two
    outputs, its rows' log-sum-exp after the output: each CUDA form (TMA, wgmma and mma.sync for bfloat16, the
    register-tiled float32 one) stores it once per row from one lane, and with the attention kernel out of the
    way (`render_apart`) every output runs over its own indices; nvcc compiles each (ptxas for sm_90a). The same
    attention without a gradient stores no statistics."""
    import ml_dtypes
    import numpy as np

    import zyx_dist as zd
    from zyx_dist.codegen import attention
    from zyx_dist.codegen.options import KernelOpts
    from zyx_dist.codegen.render import CUDA_SM90A
    from zyx_dist.fuse.kernelize import kernelize

    rng = np.random.default_rng(4)
    sources = {}
    for dtype, forms in ((ml_dtypes.bfloat16, {"tma": (2, 2), "wgmma": (1, 0), "mma_sync": (0, 0)}),
                         (np.float32, {"tiled": (0, 0)})):
        q, k, v, gr = (zd.tensor(rng.standard_normal((2, 3, 200, 64)).astype(dtype)) for _ in range(4))
        mask = zd.tensor(np.triu(np.full((200, 200), -np.inf, np.float32), 1).astype(dtype))
        out = zd.softmax(q @ k.mT * 0.125 + mask, axis=-1) @ v
        (alone,) = kernelize([out.node])
        grads = zd.grad((out * gr).sum(), [q, k, v])
        (kern,) = [kk for kk in kernelize([x.node for x in grads]) if attention.match(kk) is not None]
        assert [o.shape for o in kern.outputs] == [(2, 3, 200, 64, 1), (2, 3, 200, 1)]
        for name, (wgmma, stages) in forms.items():
            opts = KernelOpts(wgmma=wgmma, stages=stages)
            src = render_kernel(kern, CUDA_SM90A, opts).source
            assert src.count("out1[gid] = ") == 1 and "log(" in src, name
            assert "out1" not in render_kernel(alone, CUDA_SM90A, opts).source, name
            sources[f"{name}_{np.dtype(dtype).name}"] = src
        apart = attention.match
        try:
            attention.match = lambda kernel: None
            src = render_kernel(kern, CUDA_SM90A).source
        finally:
            attention.match = apart
        assert "if (gid < 1200) {" in src and "if (gid < 76800) {" in src
        sources[f"apart_{np.dtype(dtype).name}"] = src
    if NVCC is not None:
        with tempfile.TemporaryDirectory() as tmp:
            errors = _nvcc(sources, tmp, ["-cubin", "-arch=sm_90a", "-x", "cu"])
        assert not errors, "\n\n".join(f"--- {n} ---\n{e}" for n, e in errors.items())


def test_tensor_core_attention_stores_untested_where_every_block_of_rows_is_whole():
    """The wgmma and TMA forms test each output row against M only where a block of 64 rows runs past it (a test
    per store put each store in a branch of its own, waiting for the last store to read its register); the TMA
    form counts its launch (the skip flags' epoch) before the output's stores, not after them."""
    from zyx_dist.codegen import attention
    from zyx_dist.codegen.options import KernelOpts
    from zyx_dist.codegen.render import CUDA_SM90A

    whole = 0
    for name, k in _wgmma_attention_kernels().items():
        M = attention.match(k).spec.M
        whole += M % 64 == 0
        for opts in (KernelOpts(wgmma=1), KernelOpts(wgmma=2)):
            src = render_kernel(k, CUDA_SM90A, opts).source
            stores = src[src.index("const float r0 = 1.0f / l0"):]
            assert (f"if (gi < {M}) {{" in stores) == (M % 64 != 0), (name, opts)
            if "_epoch) = zd_tag" in src:
                assert src.index("_done, 1u)") < src.index("const float r0 = 1.0f / l0"), name
    assert 0 < whole < len(_wgmma_attention_kernels())  # both kinds are checked


def test_float32_attention_stores_test_only_the_tails():
    """The float32 fused attention kernel tests a store's row against M only where a block of 64 rows runs past it,
    and its column against N only where the value width is not whole 16s (one thread's columns step by 16)."""
    from zyx_dist.codegen import attention

    for Tq, Dv in ((64, 64), (70, 64), (64, 40), (70, 24)):
        q, k, v = leaf(2, Tq, 32), leaf(2, 96, 32), leaf(2, 96, Dv)
        kernel = one(_attention(_bmm(q, g.permute(k, (0, 2, 1))), v))
        spec = attention.match(kernel).spec
        assert (spec.M, spec.N) == (Tq, Dv)
        src = render_kernel(kernel, CUDA).source
        stores = src[src.index("const float acc = o[i][c] / sum") - 80:]
        assert (f"gi < {Tq}" in stores) == (Tq % 64 != 0), (Tq, Dv)
        assert (f"gj < {Dv}" in stores) == (Dv % 16 != 0), (Tq, Dv)


def test_tensor_core_attention_stages_the_output_tile():
    """Every tensor-core attention form writes its output tile into shared memory and stores it in 16-byte pieces,
    neighbours by neighbours (where the output's rows lie along memory); the TMA form without a barrier before the
    tile (its main loop's last one freed the stages), counting its launch before the stores and waiting for the
    count's answer after them, and copying its first key block without reading the block's mask flag."""
    from zyx_dist.codegen import attention
    from zyx_dist.codegen.options import KernelOpts
    from zyx_dist.codegen.render import CUDA_SM90A

    tma = 0
    for name, k in _wgmma_attention_kernels().items():
        N = attention.match(k).spec.N
        for opts in (KernelOpts(), KernelOpts(wgmma=1), KernelOpts(wgmma=2)):
            src = render_kernel(k, CUDA_SM90A, opts).source
            tail = src[src.index("const float r0 = 1.0f / l0"):]
            assert "zd_st0[zd_l] = " in tail and "*reinterpret_cast<uint4*>(out0 + gid)" in tail, (name, opts)
            assert f"e < {64 * N // 8}; e += 128" in tail, (name, opts)  # 8 halves a thread, the 128 threads
            before = src[:src.index("const float r0 = 1.0f / l0")]
            free = "every warp is done with the stages the tile is staged in"
            if "tensor map" not in src:
                assert free in before, (name, opts)
                continue
            tma += 1
            assert free not in before, name
            if "_epoch) = zd_tag" in src:
                assert src.index("_done, 1u)") < src.index("zd_st0[zd_l]") < src.index("zd_before == gridDim.x - 1")
                first = src[src.index("the first blocks' copies"):src.index("for (int it = 0;; it++)")]
                assert "zd_flag_ld(&zd_flags[" not in first.split("} else {")[0], name
    assert tma


def _grad_products(dtype: str, mask: str, Tq: int, Tk: int, D: int) -> list:
    """The three kernels of an attention's backward products (dQ, dK, dV recomputing their weights) for random data
    (helpers.attention_grads: batch 2, 2 heads, scale 0.25), as the kernelizer makes them where tensor cores are."""
    from helpers import attention_grads

    from zyx_dist.codegen import attention_grad
    from zyx_dist.fuse.kernelize import Limits

    np_dtype = np.dtype(getattr(__import__("ml_dtypes"), dtype) if dtype == "bfloat16" else dtype)
    grads, _ = attention_grads(np.random.default_rng(0), np_dtype, mask, 2, 2, Tq, Tk, D, 0.25)
    products = [k for k in kernelize([x.node for x in grads], Limits(grad_heads=16))
                if attention_grad.match(k) is not None]
    assert len(products) == 3
    return products


def test_attention_backward_products_wgmma_form():
    """On Hopper the tuner also gets the backward products' wgmma form (codegen/attention_grad.py): each
    contraction and the product one `wgmma.mma_async` per k16 step, no mma.sync, the loop tiles swizzled from a
    1024-aligned base, the rows' fragments loaded at every block; head dims not in whole 64-half rows keep mma.sync's
    form only. nvcc compiles each for sm_90a with no wgmma made to wait or serialized (C7514, C7515, C7517)."""
    from zyx_dist.codegen import attention_grad
    from zyx_dist.codegen.options import KernelOpts
    from zyx_dist.codegen.render import CUDA_SM90A, facts

    sources = {}
    for dtype, mask, Tq, Tk, D in (("bfloat16", "causal", 128, 128, 64), ("float16", "where", 70, 72, 64),
                                   ("bfloat16", "none", 64, 96, 128), ("bfloat16", "causal", 64, 64, 32)):
        products = _grad_products(dtype, mask, Tq, Tk, D)
        for i, k in enumerate(products):
            assert facts(k, CUDA_SM90A).wgmma == (D % 64 == 0), (mask, D, i)
            assert not facts(k, CUDA).wgmma
            if D % 64:
                continue
            src = render_kernel(k, CUDA_SM90A, KernelOpts(wgmma=1)).source
            assert "wgmma.mma_async" in src and "mma.sync" not in src and "zd_swz_at(row, col)" in src, (mask, i)
            # the rows' fragments loaded at every block (held across the loop, ptxas gave their registers away)
            loop = src.index("for (int s = 0; s < steps; s++)")
            contractions = len(attention_grad.match(k).contractions)
            assert src.index("unsigned rf0[") > loop and src.count("ldmatrix") == contractions, (mask, i)
            assert "mma.sync" in render_kernel(k, CUDA_SM90A, KernelOpts()).source
            sources[f"{mask}_{D}_{i}"] = src
    if NVCC is not None:
        with tempfile.TemporaryDirectory() as tmp:
            for flag in ("C7514", "C7515", "C7517"):
                errors = _nvcc(sources, tmp, ["-cubin", "-arch=sm_90a", "-x", "cu"], flag=flag)
                assert not errors, "\n\n".join(f"--- {n} ---\n{e}" for n, e in errors.items())


def test_attention_backward_products_stage_their_output_tile():
    """dQ, dK and dV on tensor cores (codegen/attention_grad.py) write their output tile into shared memory after
    the loop and store it 16 bytes a thread, testing rows only where a block of 64 has a tail; nvcc compiles each."""
    from zyx_dist.codegen import attention_grad

    sources = {}
    for dtype, mask, Tq, Tk, D in (("bfloat16", "causal", 64, 64, 32), ("float16", "where", 70, 72, 64)):
        products = _grad_products(dtype, mask, Tq, Tk, D)
        for i, k in enumerate(products):
            src = render_kernel(k, CUDA).source
            M, N = attention_grad.match(k).spec.M, attention_grad.match(k).spec.N
            tail = src[src.index("const float acc = o[x][h];") - 200:]
            assert "zd_st0[zd_l] = " in tail and "*reinterpret_cast<uint4*>(out0 + gid)" in tail, (mask, i)
            assert (f"if (gi < {M}) {{" in tail) == (M % 64 != 0), (mask, i, M)
            assert f"e < {64 * N // 8}; e += 128" in tail, (mask, i)
            sources[f"{mask}_{i}"] = src
    if NVCC is not None:
        with tempfile.TemporaryDirectory() as tmp:
            errors = _nvcc(sources, tmp)
        assert not errors, "\n\n".join(f"--- {n} ---\n{e}" for n, e in errors.items())
