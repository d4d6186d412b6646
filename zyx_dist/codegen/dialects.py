"""Driver side: the spellings in which the OpenCL C and CUDA C renderings of one kernel differ (kernel
and pointer qualifiers, work-item ids, type names, half-precision loads and stores, preambles). Takes
nothing; gives the `OPENCL` and `CUDA` dialect objects the renderer is parametrised by."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass


@dataclass(frozen=True)
class Dialect:
    """Everything the OpenCL C and CUDA C renderings of one kernel differ in. Type names are given in
    OpenCL C spelling (`DType.cname`) and mapped through `types`; templates use `str.format` fields."""

    name: str
    prefix: str  # of program names: the dialect is part of the name, so compiled-program caches never mix
    kernel_prefix: str
    # a kernel that always runs `{threads}` work-items per group, at least `{groups}` groups per compute
    # unit where the dialect can say so (the compiler then keeps registers within that budget)
    bounded_prefix: str
    global_ptr: str  # address space of buffer parameters ("" in CUDA), with its trailing space
    restrict: str
    global_id: dict  # index type -> expression of the work-item's global id
    types: dict  # OpenCL C type name -> this dialect's spelling, where they differ
    int_suffix: dict  # (itemsize, unsigned) -> literal suffix for 64-bit integers
    load_half: str  # {arg}, {off}: a float16 element as float
    store_half: str  # {arg}, {v}: store float {v} as float16 at gid
    round_half: tuple  # (statement or "", expression): {x} rounded to float16 precision, {tmp} a fresh name
    round_half_double: tuple | None  # the same from double, where it differs
    func_prefix: str  # of helper functions
    # work-groups: local/shared memory (16-byte aligned, for float4), the barrier, ids, float4 access
    shared: str = "__local"
    barrier: str = "barrier(CLK_LOCAL_MEM_FENCE);"
    local_id: str = "get_local_id(0)"
    group_id: str = "get_group_id(0)"
    load4: str = "vload4(0, {ptr})"
    store4: str = "vstore4({v}, 0, {ptr});"
    zero4: str = "(float4)(0.0f)"
    make4: str = "(float4)({}, {}, {}, {})"
    # float4 access at a 16-byte aligned address (one 128-bit access; OpenCL's vload4 promises only
    # element alignment, so a compiler may split it into four loads), and the suffix that aligns an array
    load4_global: str = "(*(__global const float4*)({ptr}))"
    load4_local: str = "(*(__local const float4*)({ptr}))"
    store4_local: str = "*(__local float4*)({ptr}) = {v};"
    align16: str = " __attribute__((aligned(16)))"
    preamble: tuple[str, ...] = ()
    # bfloat16, stored as its 16 bits: loaded by a shift into float32's top half, stored rounded to nearest
    # even (NaNs stay NaN, quiet), as ml_dtypes rounds
    load_bf16: str = "zd_bf16_load({arg}[{off}])"
    store_bf16: str = "{arg}[gid] = zd_bf16_store({v});"
    bf16_preamble: tuple[str, ...] = (
        "inline float zd_bf16_load(ushort h) { return as_float(((uint)h) << 16); }",
        ("inline ushort zd_bf16_store(float f) {\n  uint u = as_uint(f);\n"
        "  if ((u & 0x7fffffffu) > 0x7f800000u) return (ushort)((u >> 16) | 0x40u);\n"
        "  return (ushort)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);\n}"),
        "inline float zd_bf16_round(float f) { return zd_bf16_load(zd_bf16_store(f)); }",
    )
    fp64_preamble: tuple[str, ...] = ()
    half_preamble: tuple[str, ...] = ()
    # four neighbouring half-type elements as one 8-byte access, a float4 in registers (loop-free kernels' vector
    # form; the pointer is 8-byte aligned): dtype name -> C; a dtype not named stays scalar
    load4_narrow: dict = dataclasses.field(default_factory=dict)
    store4_narrow: dict = dataclasses.field(default_factory=dict)
    # Hopper's wgmma for half-type GEMMs (codegen/gemm_wgmma.py): a CUDA device of compute capability 9.0
    wgmma: bool = False

    def __hash__(self) -> int:
        return hash(self.name)

    def type(self, cname: str) -> str:
        return self.types.get(cname, cname)


OPENCL = Dialect(
    name="opencl",
    prefix="k_",
    kernel_prefix="__kernel void",
    bounded_prefix="__kernel __attribute__((reqd_work_group_size({threads}, 1, 1))) void",
    global_ptr="__global ",
    restrict="restrict",
    global_id={"int": "get_global_id(0)", "long": "get_global_id(0)"},
    types={},
    int_suffix={(8, False): "l", (8, True): "ul"},
    load_half="vload_half({off}, {arg})",
    store_half="vstore_half({v}, gid, {arg});",
    round_half=("ushort {tmp}; vstore_half((float)({x}), 0, (__private half*)&{tmp});",
                "vload_half(0, (__private half*)&{tmp})"),
    round_half_double=None,
    func_prefix="",
    fp64_preamble=("#pragma OPENCL EXTENSION cl_khr_fp64 : enable",),
)

CUDA = Dialect(
    name="cuda",
    prefix="kc_",
    kernel_prefix='extern "C" __global__ void',
    bounded_prefix='extern "C" __global__ void __launch_bounds__({threads}, {groups})',
    global_ptr="",
    restrict="__restrict__",
    # 32-bit unsigned arithmetic is exact below 2**31 work-items; above, widen before multiplying
    global_id={"int": "(int)(blockIdx.x * blockDim.x + threadIdx.x)",
               "long": "(long long)blockIdx.x * blockDim.x + threadIdx.x"},
    # spelled out rather than typedef'd: nvcc's host headers already typedef `uint`/`ulong` (ulong as a
    # 32-bit-on-some-hosts `unsigned long`); `long` is 64-bit on LP64 hosts only and `char` is unsigned on
    # ARM hosts (Grace), so those two are spelled out as well
    types={"uchar": "unsigned char", "ushort": "unsigned short", "uint": "unsigned int",
           "long": "long long", "ulong": "unsigned long long", "char": "signed char", "half": "__half"},
    int_suffix={(8, False): "ll", (8, True): "ull"},
    load_half="__half2float({arg}[{off}])",
    store_half="{arg}[gid] = __float2half_rn({v});",
    round_half=("", "__half2float(__float2half_rn((float)({x})))"),
    round_half_double=("", "__half2float(__double2half({x}))"),
    func_prefix="__device__ ",
    shared="__shared__ __align__(16)",
    barrier="__syncthreads();",
    local_id="threadIdx.x",
    group_id="blockIdx.x",
    load4="*reinterpret_cast<const float4*>({ptr})",
    store4="*reinterpret_cast<float4*>({ptr}) = {v};",
    zero4="make_float4(0.0f, 0.0f, 0.0f, 0.0f)",
    make4="make_float4({}, {}, {}, {})",
    load4_global="(*reinterpret_cast<const float4*>({ptr}))",
    load4_local="(*reinterpret_cast<const float4*>({ptr}))",
    store4_local="*reinterpret_cast<float4*>({ptr}) = {v};",
    align16="",
    # NVRTC compiles without system headers: no <math.h> macros unless defined here
    preamble=("#ifndef INFINITY", "#define INFINITY __int_as_float(0x7f800000)", "#endif",
              "#ifndef NAN", "#define NAN __int_as_float(0x7fc00000)", "#endif"),
    half_preamble=(
        "#include <cuda_fp16.h>",
        ("__device__ inline float4 zd_f16x4_load(const __half* p) {\n"
         "  const uint2 r = *reinterpret_cast<const uint2*>(p);\n"
         "  const float2 a = __half22float2(*reinterpret_cast<const __half2*>(&r.x));\n"
         "  const float2 b = __half22float2(*reinterpret_cast<const __half2*>(&r.y));\n"
         "  return make_float4(a.x, a.y, b.x, b.y);\n}"),
        ("__device__ inline void zd_f16x4_store(__half* p, float4 v) {\n"
         "  const __half2 a = __floats2half2_rn(v.x, v.y), b = __floats2half2_rn(v.z, v.w);\n"
         "  *reinterpret_cast<uint2*>(p) = make_uint2(*reinterpret_cast<const unsigned*>(&a),"
         " *reinterpret_cast<const unsigned*>(&b));\n}"),
    ),
    bf16_preamble=(
        "__device__ inline float zd_bf16_load(unsigned short h) { return __uint_as_float(((unsigned int)h) << 16); }",
        # round to nearest even, NaNs quieted with their payload's top bits (as ml_dtypes converts): from compute
        # capability 8.0 one cvt instruction rounds (the bit trick's seven made bfloat16 GEMM epilogues over every
        # score issue-bound), and a select keeps the NaNs' bits
        ("__device__ inline unsigned short zd_bf16_store(float f) {\n  unsigned int u = __float_as_uint(f);\n"
         "  if ((u & 0x7fffffffu) > 0x7f800000u) return (unsigned short)((u >> 16) | 0x40u);\n"
         "#if __CUDA_ARCH__ >= 800\n"
         "  unsigned short r;\n  asm(\"cvt.rn.bf16.f32 %0, %1;\" : \"=h\"(r) : \"f\"(f));\n  return r;\n"
         "#else\n"
         "  return (unsigned short)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);\n"
         "#endif\n}"),
        "__device__ inline float zd_bf16_round(float f) { return zd_bf16_load(zd_bf16_store(f)); }",
        ("__device__ inline float4 zd_bf16x4_load(const unsigned short* p) {\n"
         "  const uint2 r = *reinterpret_cast<const uint2*>(p);\n"
         "  return make_float4(__uint_as_float(r.x << 16), __uint_as_float(r.x & 0xffff0000u),"
         " __uint_as_float(r.y << 16), __uint_as_float(r.y & 0xffff0000u));\n}"),
        ("__device__ inline void zd_bf16x4_store(unsigned short* p, float4 v) {\n"
         "  *reinterpret_cast<uint2*>(p) = make_uint2(zd_bf16_store(v.x) | ((unsigned)zd_bf16_store(v.y) << 16),"
         " zd_bf16_store(v.z) | ((unsigned)zd_bf16_store(v.w) << 16));\n}"),
    ),
    load4_narrow={"float16": "zd_f16x4_load({ptr})", "bfloat16": "zd_bf16x4_load({ptr})"},
    store4_narrow={"float16": "zd_f16x4_store({ptr}, {v});", "bfloat16": "zd_bf16x4_store({ptr}, {v});"},
)

# the CUDA dialect on compute capability 9.0 (H100, H200): the same C, plus wgmma GEMMs compiled for sm_90a
CUDA_SM90A = dataclasses.replace(CUDA, wgmma=True)

DIALECTS = {"opencl": OPENCL, "cuda": CUDA, "cuda_sm90a": CUDA_SM90A}  # by Target.dialect
