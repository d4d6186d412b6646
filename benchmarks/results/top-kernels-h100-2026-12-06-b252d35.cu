// ==== kc_0c5101a155d3: 0.892 ms per step in 4 launches, gws=(3145728,) lws=(256,) opts=KernelOpts(lws=256, elems=1, vec=1, group=0, unroll=1, tile_k=8, prefetch=0, cache=1, lanes=0, stages=3, tile=2, cpu_rows=0, wgmma=2)
// IR outputs (24,) row 0
//    0 ('in', 1, (8192, 768, 1), 'bfloat16')
//    1 ('reshape', '(8, 1024, 12, 64)', (8, 1024, 12, 64), 'bfloat16', (0,))
//    2 ('permute', '(0, 2, 1, 3)', (8, 12, 1024, 64), 'bfloat16', (1,))
//    3 ('reshape', '(8, 12, 1024, 1, 64)', (8, 12, 1024, 1, 64), 'bfloat16', (2,))
//    4 ('expand', '(8, 12, 1024, 1024, 64)', (8, 12, 1024, 1024, 64), 'bfloat16', (3,))
//    5 ('in', 2, (8192, 768, 1), 'bfloat16')
//    6 ('reshape', '(8, 1024, 12, 64)', (8, 1024, 12, 64), 'bfloat16', (5,))
//    7 ('permute', '(0, 2, 1, 3)', (8, 12, 1024, 64), 'bfloat16', (6,))
//    8 ('reshape', '(8, 12, 1, 1024, 64)', (8, 12, 1, 1024, 64), 'bfloat16', (7,))
//    9 ('expand', '(8, 12, 1024, 1024, 64)', (8, 12, 1024, 1024, 64), 'bfloat16', (8,))
//   10 ('binary', "<BinaryOp.MUL: 'mul'>", (8, 12, 1024, 1024, 64), 'bfloat16', (4, 9))
//   11 ('reduce', "(<ReduceOp.SUM: 'sum'>, (4,))", (8, 12, 1024, 1024, 1), 'bfloat16', (10,))
//   12 ('reshape', '(8, 12, 1024, 1024)', (8, 12, 1024, 1024), 'bfloat16', (11,))
//   13 ('const', '0.125', (8, 12, 1024, 1024), 'bfloat16', ())
//   14 ('binary', "<BinaryOp.MUL: 'mul'>", (8, 12, 1024, 1024), 'bfloat16', (12, 13))
//   15 ('in', 0, (1024, 1024), 'bfloat16')
//   16 ('reshape', '(1, 1, 1024, 1024)', (1, 1, 1024, 1024), 'bfloat16', (15,))
//   17 ('expand', '(8, 12, 1024, 1024)', (8, 12, 1024, 1024), 'bfloat16', (16,))
//   18 ('binary', "<BinaryOp.ADD: 'add'>", (8, 12, 1024, 1024), 'bfloat16', (14, 17))
//   19 ('cast', "'float32'", (8, 12, 1024, 1024), 'float32', (18,))
//   20 ('in', 3, (8, 12, 1024, 1), 'float32')
//   21 ('expand', '(8, 12, 1024, 1024)', (8, 12, 1024, 1024), 'float32', (20,))
//   22 ('binary', "<BinaryOp.SUB: 'sub'>", (8, 12, 1024, 1024), 'float32', (19, 21))
//   23 ('unary', "<UnaryOp.EXP: 'exp'>", (8, 12, 1024, 1024), 'float32', (22,))
//   24 ('cast', "'bfloat16'", (8, 12, 1024, 1024), 'bfloat16', (23,))
#ifndef INFINITY
#define INFINITY __int_as_float(0x7f800000)
#endif
#ifndef NAN
#define NAN __int_as_float(0x7fc00000)
#endif
__device__ inline float zd_bf16_load(unsigned short h) { return __uint_as_float(((unsigned int)h) << 16); }
__device__ inline unsigned short zd_bf16_store(float f) {
  unsigned int u = __float_as_uint(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (unsigned short)((u >> 16) | 0x40u);
  return (unsigned short)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}
__device__ inline float zd_bf16_round(float f) { return zd_bf16_load(zd_bf16_store(f)); }
__device__ inline float4 zd_bf16x4_load(const unsigned short* p) {
  const uint2 r = *reinterpret_cast<const uint2*>(p);
  return make_float4(__uint_as_float(r.x << 16), __uint_as_float(r.x & 0xffff0000u), __uint_as_float(r.y << 16), __uint_as_float(r.y & 0xffff0000u));
}
__device__ inline void zd_bf16x4_store(unsigned short* p, float4 v) {
  *reinterpret_cast<uint2*>(p) = make_uint2(zd_bf16_store(v.x) | ((unsigned)zd_bf16_store(v.y) << 16), zd_bf16_store(v.z) | ((unsigned)zd_bf16_store(v.w) << 16));
}
// zyx_dist: arch sm_90a
#ifndef ZD_TC_HELPERS
#define ZD_TC_HELPERS
__device__ __forceinline__ unsigned zd_smem(const void* p) {
  unsigned a;
  asm("{ .reg .u64 t; cvta.to.shared.u64 t, %1; cvt.u32.u64 %0, t; }" : "=r"(a) : "l"(p));
  return a;
}
__device__ __forceinline__ void zd_cp_async(void* dst, const void* src, bool inside) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" :: "r"(zd_smem(dst)), "l"(src), "r"(inside ? 16 : 0));
}
__device__ __forceinline__ void zd_cp_commit() { asm volatile("cp.async.commit_group;"); }
#endif
#ifndef ZD_WGMMA_HELPERS
#define ZD_WGMMA_HELPERS
__device__ __forceinline__ unsigned zd_swz(unsigned off) { return off ^ (((off >> 7) & 7) << 4); }
__device__ __forceinline__ unsigned long long zd_desc(unsigned addr, unsigned lbo, unsigned sbo) {
  return (unsigned long long)((addr & 0x3FFFF) >> 4) | ((unsigned long long)((lbo >> 4) & 0x3FFF) << 16)
       | ((unsigned long long)((sbo >> 4) & 0x3FFF) << 32) | (1ull << 62);  // 128-byte swizzle
}
__device__ __forceinline__ void zd_cp_async_s(unsigned dst, const void* src, bool inside) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" :: "r"(dst), "l"(src), "r"(inside ? 16 : 0));
}
__device__ __forceinline__ void zd_st_shared_u16(unsigned dst, unsigned short v) {
  asm volatile("st.shared.u16 [%0], %1;" :: "r"(dst), "h"(v) : "memory");
}
#endif
#ifndef ZD_TMA_HELPERS
#define ZD_TMA_HELPERS
struct __align__(64) zd_tmap { unsigned long long v[16]; };  // a CUtensorMap, passed by value
__device__ __forceinline__ void zd_tma2(unsigned dst, const zd_tmap* map, unsigned bar, int c0, int c1) {
  asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];"
               :: "r"(dst), "l"((unsigned long long)map), "r"(c0), "r"(c1), "r"(bar) : "memory");
}
__device__ __forceinline__ void zd_tma3(unsigned dst, const zd_tmap* map, unsigned bar, int c0, int c1, int c2) {
  asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4}], [%5];"
               :: "r"(dst), "l"((unsigned long long)map), "r"(c0), "r"(c1), "r"(c2), "r"(bar) : "memory");
}
__device__ __forceinline__ void zd_tma4(unsigned dst, const zd_tmap* map, unsigned bar, int c0, int c1, int c2, int c3) {
  asm volatile("cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4, %5}], [%6];"
               :: "r"(dst), "l"((unsigned long long)map), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(bar) : "memory");
}
__device__ __forceinline__ void zd_tma5(unsigned dst, const zd_tmap* map, unsigned bar, int c0, int c1, int c2, int c3, int c4) {
  asm volatile("cp.async.bulk.tensor.5d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4, %5, %6}], [%7];"
               :: "r"(dst), "l"((unsigned long long)map), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(c4), "r"(bar) : "memory");
}
__device__ __forceinline__ void zd_bar_init(unsigned bar, unsigned count) {
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
#endif
// zyx_dist: dynamic shared bytes 44032
// zyx_dist: tensor map 1 bf16 0 4 64 1024 12 8 1536 128 1572864 64 128 1 1
// zyx_dist: tensor map 2 bf16 0 4 64 1024 12 8 1536 128 1572864 64 64 1 1
extern "C" __global__ void __launch_bounds__(256, 4) kc_0c5101a155d3(const unsigned short* __restrict__ in0, const unsigned short* __restrict__ in1, const unsigned short* __restrict__ in2, const float* __restrict__ in3, unsigned short* __restrict__ out0, const __grid_constant__ zd_tmap zd_tma_a, const __grid_constant__ zd_tmap zd_tma_b) {
  extern __shared__ __align__(16) unsigned char zd_pool[];
  const unsigned base = (zd_smem(zd_pool) + 1023u) & ~1023u;  // swizzle atoms are 1024-aligned
  const int tid = threadIdx.x, wg = tid >> 7, w = (tid >> 5) & 3, l = tid & 31;
  const int bz = (int)(blockIdx.x / 128);
  const int tile = blockIdx.x % 128;
  const int panel = tile / 128, inpanel = tile % 128;
  const int prows = min(8, 8 - panel * 8);
  const int bi = (int)(panel * 8 + inpanel % prows) * 128, bj = (int)(inpanel / prows) * 64;
  const int zd_tma_a_c0 = (int)(bz % 12); const int zd_tma_a_c1 = (int)(bz / 12);
  const int zd_tma_b_c0 = (int)(bz % 12); const int zd_tma_b_c1 = (int)(bz / 12);
  __shared__ __align__(8) unsigned long long zd_full[3];  // per stage: its tensor-map copies landed
  const unsigned bars = zd_smem(zd_full);
  if (tid == 0) {
    for (int i = 0; i < 3; i++) zd_bar_init(bars + i * 8u, 1);
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();  // the barriers are set up before anyone waits on them
  for (int e = tid; e < 1024; e += 256) {  // input 0's tile, as the epilogue reads it
    const int r = e / 8, c = e % 8 * 8;
    const int gi = bi + r, gj = bj + c;
    if (gi < 1024 && gj < 1024) {
      const int src = (gi*1024+gj);
      zd_cp_async(reinterpret_cast<unsigned short*>(zd_pool + (base - zd_smem(zd_pool)) + 24576) + r * 72 + c, in0 + src, true);
    }
  }
  zd_cp_commit();  // (waited for before the epilogue)
  float d[32];
  #pragma unroll
  for (int i = 0; i < 32; i++) d[i] = 0.0f;
  const int steps = 1;
  #pragma unroll
  for (int f = 0; f < 1; f++) {  // the first 1 k-steps in flight
    if (f < steps) {
      const unsigned sa = base + f * 24576u, sb = sa + 16384u;
      const int k0 = (int)f * 64;
    if (tid == 0) {
      const unsigned bar = bars + (f % 3) * 8u;
      zd_bar_expect(bar, 24576u);
      zd_tma4(sa, &zd_tma_a, bar, (int)(k0), (int)(bi), zd_tma_a_c0, zd_tma_a_c1);
      zd_tma4(sb, &zd_tma_b, bar, (int)(k0), (int)(bj), zd_tma_b_c0, zd_tma_b_c1);
    }
    }
    
  }
  for (int s = 0; s < steps; s++) {
    __syncthreads();  // for every thread; and every wgmma but the last one's is done with its stage
    {
      const int f = s + 1;
      if (f < steps) {  // into the stage a finished wgmma read (the last step's if deep, else the one before)
        const unsigned sa = base + (f % 3) * 24576u, sb = sa + 16384u;
        const int k0 = (int)f * 64;
    if (tid == 0) {
      const unsigned bar = bars + (f % 3) * 8u;
      zd_bar_expect(bar, 24576u);
      zd_tma4(sa, &zd_tma_a, bar, (int)(k0), (int)(bi), zd_tma_a_c0, zd_tma_a_c1);
      zd_tma4(sb, &zd_tma_b, bar, (int)(k0), (int)(bj), zd_tma_b_c0, zd_tma_b_c1);
    }
      }
      
    }
    zd_bar_wait(bars + (s % 3) * 8u, (s / 3) & 1);  // the tensor-map copies have landed
    const unsigned sa = base + (s % 3) * 24576u, sb = sa + 16384u;
    asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
    #pragma unroll
    for (int kk = 0; kk < 4; kk++) {
      const unsigned long long da = zd_desc(sa + wg * 64 * 128 + kk * 32, 16, 1024);
      const unsigned long long db = zd_desc(sb + kk * 32, 16, 1024);
      asm volatile("{ .reg .pred p; setp.ne.b32 p, %34, 0; wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, %32, %33, p, 1, 1, 0, 0; }" : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]) : "l"(da), "l"(db), "r"(1) : "memory");
    }
    asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
    asm volatile("wgmma.wait_group.sync.aligned 1;" ::: "memory");
  }
  asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
  asm volatile("cp.async.wait_all;" ::: "memory");
  __syncthreads();  // every warpgroup is done with the stages the tile is staged in
  #pragma unroll
  for (int i = 0; i < 32; i++) {  // accumulator i: row w*16 + l/4 (+8), column 8*(i/4) + 2*(l%4) (+1)
    const int gi = bi + wg * 64 + w * 16 + (l >> 2) + (((i >> 1) & 1) << 3);
    const int gj = bj + ((i >> 2) << 3) + ((l & 3) << 1) + (i & 1);
    if (gi < 1024 && gj < 1024) {
      const float acc = d[i];
        unsigned short* zd_st0 = reinterpret_cast<unsigned short*>(zd_pool + (base - zd_smem(zd_pool)) + 0);
        const int zd_l = (int)(gi - bi) * 72 + (int)(gj - bj);
        const int gid = (gi*1024+gj+bz*1048576);
        float v0 = (acc * 0.125f);
        float ld1 = zd_bf16_load(reinterpret_cast<unsigned short*>(zd_pool + (base - zd_smem(zd_pool)) + 24576)[zd_l]);
        float v2 = (v0 + ld1);
        float v3 = ((float)(v2));
        float ld4 = in3[(gi+bz*1024)];
        float v5 = (v3 - ld4);
        float v6 = exp(v5);
        float v7 = zd_bf16_round((float)(v6));
        zd_st0[zd_l] = zd_bf16_store(v7);
    }
  }
  __syncthreads();  // the whole tile is in shared memory
  for (int e = tid; e < 1024; e += 256) {  // neighbours by neighbours in memory
    const int r = e / 8, c = e % 8 * 8;
    const int gi = bi + r, gj = bj + c;
    if (gi < 1024 && gj < 1024) {
      const int gid = (gi*1024+gj+bz*1048576);
      *reinterpret_cast<uint4*>(out0 + gid) = *reinterpret_cast<const uint4*>(reinterpret_cast<unsigned short*>(zd_pool + (base - zd_smem(zd_pool)) + 0) + r * 72 + c);
    }
  }
}
// ==== kc_3ce50d58c091: 0.842 ms per step in 4 launches, gws=(3145728,) lws=(256,) opts=KernelOpts(lws=256, elems=1, vec=1, group=0, unroll=1, tile_k=8, prefetch=0, cache=1, lanes=0, stages=3, tile=2, cpu_rows=0, wgmma=2)
// IR outputs (23,) row 0
//    0 ('in', 1, (8, 12, 1024, 1024), 'bfloat16')
//    1 ('cast', "'float32'", (8, 12, 1024, 1024), 'float32', (0,))
//    2 ('in', 2, (8192, 1, 768), 'bfloat16')
//    3 ('reshape', '(8, 1024, 12, 64)', (8, 1024, 12, 64), 'bfloat16', (2,))
//    4 ('permute', '(0, 2, 1, 3)', (8, 12, 1024, 64), 'bfloat16', (3,))
//    5 ('reshape', '(8, 12, 1024, 64, 1)', (8, 12, 1024, 64, 1), 'bfloat16', (4,))
//    6 ('expand', '(8, 12, 1024, 64, 1024)', (8, 12, 1024, 64, 1024), 'bfloat16', (5,))
//    7 ('in', 0, (8192, 768, 1), 'bfloat16')
//    8 ('reshape', '(8, 1024, 12, 64)', (8, 1024, 12, 64), 'bfloat16', (7,))
//    9 ('permute', '(0, 2, 3, 1)', (8, 12, 64, 1024), 'bfloat16', (8,))
//   10 ('reshape', '(8, 12, 1, 64, 1024)', (8, 12, 1, 64, 1024), 'bfloat16', (9,))
//   11 ('expand', '(8, 12, 1024, 64, 1024)', (8, 12, 1024, 64, 1024), 'bfloat16', (10,))
//   12 ('binary', "<BinaryOp.MUL: 'mul'>", (8, 12, 1024, 64, 1024), 'bfloat16', (6, 11))
//   13 ('reduce', "(<ReduceOp.SUM: 'sum'>, (3,))", (8, 12, 1024, 1, 1024), 'bfloat16', (12,))
//   14 ('reshape', '(8, 12, 1024, 1024)', (8, 12, 1024, 1024), 'bfloat16', (13,))
//   15 ('cast', "'float32'", (8, 12, 1024, 1024), 'float32', (14,))
//   16 ('in', 3, (8, 12, 1024, 1, 1), 'float32')
//   17 ('reshape', '(8, 12, 1024, 1)', (8, 12, 1024, 1), 'float32', (16,))
//   18 ('expand', '(8, 12, 1024, 1024)', (8, 12, 1024, 1024), 'float32', (17,))
//   19 ('binary', "<BinaryOp.SUB: 'sub'>", (8, 12, 1024, 1024), 'float32', (15, 18))
//   20 ('binary', "<BinaryOp.MUL: 'mul'>", (8, 12, 1024, 1024), 'float32', (1, 19))
//   21 ('cast', "'bfloat16'", (8, 12, 1024, 1024), 'bfloat16', (20,))
//   22 ('const', '0.125', (8, 12, 1024, 1024), 'bfloat16', ())
//   23 ('binary', "<BinaryOp.MUL: 'mul'>", (8, 12, 1024, 1024), 'bfloat16', (21, 22))
#ifndef INFINITY
#define INFINITY __int_as_float(0x7f800000)
#endif
#ifndef NAN
#define NAN __int_as_float(0x7fc00000)
#endif
__device__ inline float zd_bf16_load(unsigned short h) { return __uint_as_float(((unsigned int)h) << 16); }
__device__ inline unsigned short zd_bf16_store(float f) {
  unsigned int u = __float_as_uint(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (unsigned short)((u >> 16) | 0x40u);
  return (unsigned short)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}
__device__ inline float zd_bf16_round(float f) { return zd_bf16_load(zd_bf16_store(f)); }
__device__ inline float4 zd_bf16x4_load(const unsigned short* p) {
  const uint2 r = *reinterpret_cast<const uint2*>(p);
  return make_float4(__uint_as_float(r.x << 16), __uint_as_float(r.x & 0xffff0000u), __uint_as_float(r.y << 16), __uint_as_float(r.y & 0xffff0000u));
}
__device__ inline void zd_bf16x4_store(unsigned short* p, float4 v) {
  *reinterpret_cast<uint2*>(p) = make_uint2(zd_bf16_store(v.x) | ((unsigned)zd_bf16_store(v.y) << 16), zd_bf16_store(v.z) | ((unsigned)zd_bf16_store(v.w) << 16));
}
// zyx_dist: arch sm_90a
#ifndef ZD_TC_HELPERS
#define ZD_TC_HELPERS
__device__ __forceinline__ unsigned zd_smem(const void* p) {
  unsigned a;
  asm("{ .reg .u64 t; cvta.to.shared.u64 t, %1; cvt.u32.u64 %0, t; }" : "=r"(a) : "l"(p));
  return a;
}
__device__ __forceinline__ void zd_cp_async(void* dst, const void* src, bool inside) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" :: "r"(zd_smem(dst)), "l"(src), "r"(inside ? 16 : 0));
}
__device__ __forceinline__ void zd_cp_commit() { asm volatile("cp.async.commit_group;"); }
#endif
#ifndef ZD_WGMMA_HELPERS
#define ZD_WGMMA_HELPERS
__device__ __forceinline__ unsigned zd_swz(unsigned off) { return off ^ (((off >> 7) & 7) << 4); }
__device__ __forceinline__ unsigned long long zd_desc(unsigned addr, unsigned lbo, unsigned sbo) {
  return (unsigned long long)((addr & 0x3FFFF) >> 4) | ((unsigned long long)((lbo >> 4) & 0x3FFF) << 16)
       | ((unsigned long long)((sbo >> 4) & 0x3FFF) << 32) | (1ull << 62);  // 128-byte swizzle
}
__device__ __forceinline__ void zd_cp_async_s(unsigned dst, const void* src, bool inside) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" :: "r"(dst), "l"(src), "r"(inside ? 16 : 0));
}
__device__ __forceinline__ void zd_st_shared_u16(unsigned dst, unsigned short v) {
  asm volatile("st.shared.u16 [%0], %1;" :: "r"(dst), "h"(v) : "memory");
}
#endif
#ifndef ZD_TMA_HELPERS
#define ZD_TMA_HELPERS
struct __align__(64) zd_tmap { unsigned long long v[16]; };  // a CUtensorMap, passed by value
__device__ __forceinline__ void zd_tma2(unsigned dst, const zd_tmap* map, unsigned bar, int c0, int c1) {
  asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];"
               :: "r"(dst), "l"((unsigned long long)map), "r"(c0), "r"(c1), "r"(bar) : "memory");
}
__device__ __forceinline__ void zd_tma3(unsigned dst, const zd_tmap* map, unsigned bar, int c0, int c1, int c2) {
  asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4}], [%5];"
               :: "r"(dst), "l"((unsigned long long)map), "r"(c0), "r"(c1), "r"(c2), "r"(bar) : "memory");
}
__device__ __forceinline__ void zd_tma4(unsigned dst, const zd_tmap* map, unsigned bar, int c0, int c1, int c2, int c3) {
  asm volatile("cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4, %5}], [%6];"
               :: "r"(dst), "l"((unsigned long long)map), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(bar) : "memory");
}
__device__ __forceinline__ void zd_tma5(unsigned dst, const zd_tmap* map, unsigned bar, int c0, int c1, int c2, int c3, int c4) {
  asm volatile("cp.async.bulk.tensor.5d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4, %5, %6}], [%7];"
               :: "r"(dst), "l"((unsigned long long)map), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(c4), "r"(bar) : "memory");
}
__device__ __forceinline__ void zd_bar_init(unsigned bar, unsigned count) {
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
#endif
// zyx_dist: dynamic shared bytes 44032
// zyx_dist: tensor map 2 bf16 0 4 64 1024 12 8 1536 128 1572864 64 128 1 1
// zyx_dist: tensor map 0 bf16 0 4 64 1024 12 8 1536 128 1572864 64 64 1 1
extern "C" __global__ void __launch_bounds__(256, 4) kc_3ce50d58c091(const unsigned short* __restrict__ in0, const unsigned short* __restrict__ in1, const unsigned short* __restrict__ in2, const float* __restrict__ in3, unsigned short* __restrict__ out0, const __grid_constant__ zd_tmap zd_tma_a, const __grid_constant__ zd_tmap zd_tma_b) {
  extern __shared__ __align__(16) unsigned char zd_pool[];
  const unsigned base = (zd_smem(zd_pool) + 1023u) & ~1023u;  // swizzle atoms are 1024-aligned
  const int tid = threadIdx.x, wg = tid >> 7, w = (tid >> 5) & 3, l = tid & 31;
  const int bz = (int)(blockIdx.x / 128);
  const int tile = blockIdx.x % 128;
  const int panel = tile / 128, inpanel = tile % 128;
  const int prows = min(8, 8 - panel * 8);
  const int bi = (int)(panel * 8 + inpanel % prows) * 128, bj = (int)(inpanel / prows) * 64;
  const int zd_tma_a_c0 = (int)(bz % 12); const int zd_tma_a_c1 = (int)(bz / 12);
  const int zd_tma_b_c0 = (int)(bz % 12); const int zd_tma_b_c1 = (int)(bz / 12);
  __shared__ __align__(8) unsigned long long zd_full[3];  // per stage: its tensor-map copies landed
  const unsigned bars = zd_smem(zd_full);
  if (tid == 0) {
    for (int i = 0; i < 3; i++) zd_bar_init(bars + i * 8u, 1);
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();  // the barriers are set up before anyone waits on them
  for (int e = tid; e < 1024; e += 256) {  // input 1's tile, as the epilogue reads it
    const int r = e / 8, c = e % 8 * 8;
    const int gi = bi + r, gj = bj + c;
    if (gi < 1024 && gj < 1024) {
      const int src = (gi*1024+gj+bz*1048576);
      zd_cp_async(reinterpret_cast<unsigned short*>(zd_pool + (base - zd_smem(zd_pool)) + 24576) + r * 72 + c, in1 + src, true);
    }
  }
  zd_cp_commit();  // (waited for before the epilogue)
  float d[32];
  #pragma unroll
  for (int i = 0; i < 32; i++) d[i] = 0.0f;
  const int steps = 1;
  #pragma unroll
  for (int f = 0; f < 1; f++) {  // the first 1 k-steps in flight
    if (f < steps) {
      const unsigned sa = base + f * 24576u, sb = sa + 16384u;
      const int k0 = (int)f * 64;
    if (tid == 0) {
      const unsigned bar = bars + (f % 3) * 8u;
      zd_bar_expect(bar, 24576u);
      zd_tma4(sa, &zd_tma_a, bar, (int)(k0), (int)(bi), zd_tma_a_c0, zd_tma_a_c1);
      zd_tma4(sb, &zd_tma_b, bar, (int)(k0), (int)(bj), zd_tma_b_c0, zd_tma_b_c1);
    }
    }
    
  }
  for (int s = 0; s < steps; s++) {
    __syncthreads();  // for every thread; and every wgmma but the last one's is done with its stage
    {
      const int f = s + 1;
      if (f < steps) {  // into the stage a finished wgmma read (the last step's if deep, else the one before)
        const unsigned sa = base + (f % 3) * 24576u, sb = sa + 16384u;
        const int k0 = (int)f * 64;
    if (tid == 0) {
      const unsigned bar = bars + (f % 3) * 8u;
      zd_bar_expect(bar, 24576u);
      zd_tma4(sa, &zd_tma_a, bar, (int)(k0), (int)(bi), zd_tma_a_c0, zd_tma_a_c1);
      zd_tma4(sb, &zd_tma_b, bar, (int)(k0), (int)(bj), zd_tma_b_c0, zd_tma_b_c1);
    }
      }
      
    }
    zd_bar_wait(bars + (s % 3) * 8u, (s / 3) & 1);  // the tensor-map copies have landed
    const unsigned sa = base + (s % 3) * 24576u, sb = sa + 16384u;
    asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
    #pragma unroll
    for (int kk = 0; kk < 4; kk++) {
      const unsigned long long da = zd_desc(sa + wg * 64 * 128 + kk * 32, 16, 1024);
      const unsigned long long db = zd_desc(sb + kk * 32, 16, 1024);
      asm volatile("{ .reg .pred p; setp.ne.b32 p, %34, 0; wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, %32, %33, p, 1, 1, 0, 0; }" : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]) : "l"(da), "l"(db), "r"(1) : "memory");
    }
    asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
    asm volatile("wgmma.wait_group.sync.aligned 1;" ::: "memory");
  }
  asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
  asm volatile("cp.async.wait_all;" ::: "memory");
  __syncthreads();  // every warpgroup is done with the stages the tile is staged in
  #pragma unroll
  for (int i = 0; i < 32; i++) {  // accumulator i: row w*16 + l/4 (+8), column 8*(i/4) + 2*(l%4) (+1)
    const int gi = bi + wg * 64 + w * 16 + (l >> 2) + (((i >> 1) & 1) << 3);
    const int gj = bj + ((i >> 2) << 3) + ((l & 3) << 1) + (i & 1);
    if (gi < 1024 && gj < 1024) {
      const float acc = d[i];
        unsigned short* zd_st0 = reinterpret_cast<unsigned short*>(zd_pool + (base - zd_smem(zd_pool)) + 0);
        const int zd_l = (int)(gi - bi) * 72 + (int)(gj - bj);
        const int gid = (gi*1024+gj+bz*1048576);
        float ld0 = zd_bf16_load(reinterpret_cast<unsigned short*>(zd_pool + (base - zd_smem(zd_pool)) + 24576)[zd_l]);
        float v1 = ((float)(ld0));
        float v2 = ((float)(acc));
        float ld3 = in3[(gi+bz*1024)];
        float v4 = (v2 - ld3);
        float v5 = (v1 * v4);
        float v6 = zd_bf16_round((float)(v5));
        float v7 = (v6 * 0.125f);
        zd_st0[zd_l] = zd_bf16_store(v7);
    }
  }
  __syncthreads();  // the whole tile is in shared memory
  for (int e = tid; e < 1024; e += 256) {  // neighbours by neighbours in memory
    const int r = e / 8, c = e % 8 * 8;
    const int gi = bi + r, gj = bj + c;
    if (gi < 1024 && gj < 1024) {
      const int gid = (gi*1024+gj+bz*1048576);
      *reinterpret_cast<uint4*>(out0 + gid) = *reinterpret_cast<const uint4*>(reinterpret_cast<unsigned short*>(zd_pool + (base - zd_smem(zd_pool)) + 0) + r * 72 + c);
    }
  }
}
// ==== kc_666a88d136c8: 0.501 ms per step in 4 launches, gws=(24576,) lws=(256,) opts=KernelOpts(lws=256, elems=1, vec=1, group=0, unroll=1, tile_k=8, prefetch=0, cache=0, lanes=0, stages=4, tile=3, cpu_rows=0, wgmma=2)
// IR outputs (42, 47, 53) row 0
//    0 ('in', 0, (768, 3072), 'bfloat16')
//    1 ('cast', "'float32'", (768, 3072), 'float32', (0,))
//    2 ('in', 6, (), 'float32')
//    3 ('reshape', '(1, 1)', (1, 1), 'float32', (2,))
//    4 ('expand', '(768, 3072)', (768, 3072), 'float32', (3,))
//    5 ('const', '0.8999999761581421', (768, 3072), 'float32', ())
//    6 ('in', 1, (768, 3072), 'float32')
//    7 ('binary', "<BinaryOp.MUL: 'mul'>", (768, 3072), 'float32', (5, 6))
//    8 ('const', '0.10000000149011612', (768, 3072), 'float32', ())
//    9 ('in', 4, (8192, 3072), 'bfloat16')
//   10 ('reshape', '(8192, 3072, 1)', (8192, 3072, 1), 'bfloat16', (9,))
//   11 ('permute', '(2, 1, 0)', (1, 3072, 8192), 'bfloat16', (10,))
//   12 ('expand', '(768, 3072, 8192)', (768, 3072, 8192), 'bfloat16', (11,))
//   13 ('in', 3, (8, 1024, 768), 'bfloat16')
//   14 ('reshape', '(8192, 1, 768)', (8192, 1, 768), 'bfloat16', (13,))
//   15 ('permute', '(2, 1, 0)', (768, 1, 8192), 'bfloat16', (14,))
//   16 ('expand', '(768, 3072, 8192)', (768, 3072, 8192), 'bfloat16', (15,))
//   17 ('binary', "<BinaryOp.MUL: 'mul'>", (768, 3072, 8192), 'bfloat16', (12, 16))
//   18 ('reduce', "(<ReduceOp.SUM: 'sum'>, (2,))", (768, 3072, 1), 'bfloat16', (17,))
//   19 ('reshape', '(768, 3072)', (768, 3072), 'bfloat16', (18,))
//   20 ('cast', "'float32'", (768, 3072), 'float32', (19,))
//   21 ('const', '1.0', (768, 3072), 'float32', ())
//   22 ('binary', "<BinaryOp.MUL: 'mul'>", (768, 3072), 'float32', (20, 21))
//   23 ('binary', "<BinaryOp.MUL: 'mul'>", (768, 3072), 'float32', (8, 22))
//   24 ('binary', "<BinaryOp.ADD: 'add'>", (768, 3072), 'float32', (7, 23))
//   25 ('binary', "<BinaryOp.MUL: 'mul'>", (768, 3072), 'float32', (4, 24))
//   26 ('const', '0.9990000128746033', (768, 3072), 'float32', ())
//   27 ('in', 2, (768, 3072), 'float32')
//   28 ('binary', "<BinaryOp.MUL: 'mul'>", (768, 3072), 'float32', (26, 27))
//   29 ('const', '0.0010000000474974513', (768, 3072), 'float32', ())
//   30 ('binary', "<BinaryOp.MUL: 'mul'>", (768, 3072), 'float32', (22, 22))
//   31 ('binary', "<BinaryOp.MUL: 'mul'>", (768, 3072), 'float32', (29, 30))
//   32 ('binary', "<BinaryOp.ADD: 'add'>", (768, 3072), 'float32', (28, 31))
//   33 ('unary', "<UnaryOp.SQRT: 'sqrt'>", (768, 3072), 'float32', (32,))
//   34 ('in', 5, (), 'float32')
//   35 ('reshape', '(1, 1)', (1, 1), 'float32', (34,))
//   36 ('expand', '(768, 3072)', (768, 3072), 'float32', (35,))
//   37 ('binary', "<BinaryOp.MUL: 'mul'>", (768, 3072), 'float32', (33, 36))
//   38 ('const', '9.99999993922529e-09', (768, 3072), 'float32', ())
//   39 ('binary', "<BinaryOp.ADD: 'add'>", (768, 3072), 'float32', (37, 38))
//   40 ('binary', "<BinaryOp.DIV: 'div'>", (768, 3072), 'float32', (25, 39))
//   41 ('binary', "<BinaryOp.SUB: 'sub'>", (768, 3072), 'float32', (1, 40))
//   42 ('cast', "'bfloat16'", (768, 3072), 'bfloat16', (41,))
//   43 ('const', '0.8999999761581421', (768, 3072), 'float32', ())
//   44 ('binary', "<BinaryOp.MUL: 'mul'>", (768, 3072), 'float32', (43, 6))
//   45 ('const', '0.10000000149011612', (768, 3072), 'float32', ())
//   46 ('binary', "<BinaryOp.MUL: 'mul'>", (768, 3072), 'float32', (45, 22))
//   47 ('binary', "<BinaryOp.ADD: 'add'>", (768, 3072), 'float32', (44, 46))
//   48 ('const', '0.9990000128746033', (768, 3072), 'float32', ())
//   49 ('binary', "<BinaryOp.MUL: 'mul'>", (768, 3072), 'float32', (48, 27))
//   50 ('const', '0.0010000000474974513', (768, 3072), 'float32', ())
//   51 ('binary', "<BinaryOp.MUL: 'mul'>", (768, 3072), 'float32', (22, 22))
//   52 ('binary', "<BinaryOp.MUL: 'mul'>", (768, 3072), 'float32', (50, 51))
//   53 ('binary', "<BinaryOp.ADD: 'add'>", (768, 3072), 'float32', (49, 52))
#ifndef INFINITY
#define INFINITY __int_as_float(0x7f800000)
#endif
#ifndef NAN
#define NAN __int_as_float(0x7fc00000)
#endif
__device__ inline float zd_bf16_load(unsigned short h) { return __uint_as_float(((unsigned int)h) << 16); }
__device__ inline unsigned short zd_bf16_store(float f) {
  unsigned int u = __float_as_uint(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (unsigned short)((u >> 16) | 0x40u);
  return (unsigned short)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}
__device__ inline float zd_bf16_round(float f) { return zd_bf16_load(zd_bf16_store(f)); }
__device__ inline float4 zd_bf16x4_load(const unsigned short* p) {
  const uint2 r = *reinterpret_cast<const uint2*>(p);
  return make_float4(__uint_as_float(r.x << 16), __uint_as_float(r.x & 0xffff0000u), __uint_as_float(r.y << 16), __uint_as_float(r.y & 0xffff0000u));
}
__device__ inline void zd_bf16x4_store(unsigned short* p, float4 v) {
  *reinterpret_cast<uint2*>(p) = make_uint2(zd_bf16_store(v.x) | ((unsigned)zd_bf16_store(v.y) << 16), zd_bf16_store(v.z) | ((unsigned)zd_bf16_store(v.w) << 16));
}
// zyx_dist: arch sm_90a
#ifndef ZD_TC_HELPERS
#define ZD_TC_HELPERS
__device__ __forceinline__ unsigned zd_smem(const void* p) {
  unsigned a;
  asm("{ .reg .u64 t; cvta.to.shared.u64 t, %1; cvt.u32.u64 %0, t; }" : "=r"(a) : "l"(p));
  return a;
}
__device__ __forceinline__ void zd_cp_async(void* dst, const void* src, bool inside) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" :: "r"(zd_smem(dst)), "l"(src), "r"(inside ? 16 : 0));
}
__device__ __forceinline__ void zd_cp_commit() { asm volatile("cp.async.commit_group;"); }
#endif
#ifndef ZD_WGMMA_HELPERS
#define ZD_WGMMA_HELPERS
__device__ __forceinline__ unsigned zd_swz(unsigned off) { return off ^ (((off >> 7) & 7) << 4); }
__device__ __forceinline__ unsigned long long zd_desc(unsigned addr, unsigned lbo, unsigned sbo) {
  return (unsigned long long)((addr & 0x3FFFF) >> 4) | ((unsigned long long)((lbo >> 4) & 0x3FFF) << 16)
       | ((unsigned long long)((sbo >> 4) & 0x3FFF) << 32) | (1ull << 62);  // 128-byte swizzle
}
__device__ __forceinline__ void zd_cp_async_s(unsigned dst, const void* src, bool inside) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" :: "r"(dst), "l"(src), "r"(inside ? 16 : 0));
}
__device__ __forceinline__ void zd_st_shared_u16(unsigned dst, unsigned short v) {
  asm volatile("st.shared.u16 [%0], %1;" :: "r"(dst), "h"(v) : "memory");
}
#endif
#ifndef ZD_TMA_HELPERS
#define ZD_TMA_HELPERS
struct __align__(64) zd_tmap { unsigned long long v[16]; };  // a CUtensorMap, passed by value
__device__ __forceinline__ void zd_tma2(unsigned dst, const zd_tmap* map, unsigned bar, int c0, int c1) {
  asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];"
               :: "r"(dst), "l"((unsigned long long)map), "r"(c0), "r"(c1), "r"(bar) : "memory");
}
__device__ __forceinline__ void zd_tma3(unsigned dst, const zd_tmap* map, unsigned bar, int c0, int c1, int c2) {
  asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4}], [%5];"
               :: "r"(dst), "l"((unsigned long long)map), "r"(c0), "r"(c1), "r"(c2), "r"(bar) : "memory");
}
__device__ __forceinline__ void zd_tma4(unsigned dst, const zd_tmap* map, unsigned bar, int c0, int c1, int c2, int c3) {
  asm volatile("cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4, %5}], [%6];"
               :: "r"(dst), "l"((unsigned long long)map), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(bar) : "memory");
}
__device__ __forceinline__ void zd_tma5(unsigned dst, const zd_tmap* map, unsigned bar, int c0, int c1, int c2, int c3, int c4) {
  asm volatile("cp.async.bulk.tensor.5d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4, %5, %6}], [%7];"
               :: "r"(dst), "l"((unsigned long long)map), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(c4), "r"(bar) : "memory");
}
__device__ __forceinline__ void zd_bar_init(unsigned bar, unsigned count) {
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
#endif
// zyx_dist: dynamic shared bytes 164864
// zyx_dist: tensor map 4 bf16 0 2 3072 8192 6144 64 64
// zyx_dist: tensor map 3 bf16 0 2 768 8192 1536 64 64
extern "C" __global__ void __launch_bounds__(256, 1) kc_666a88d136c8(const unsigned short* __restrict__ in0, const float* __restrict__ in1, const float* __restrict__ in2, const unsigned short* __restrict__ in3, const unsigned short* __restrict__ in4, const float* __restrict__ in5, const float* __restrict__ in6, unsigned short* __restrict__ out0, float* __restrict__ out1, float* __restrict__ out2, const __grid_constant__ zd_tmap zd_tma_a, const __grid_constant__ zd_tmap zd_tma_b) {
  extern __shared__ __align__(16) unsigned char zd_pool[];
  const unsigned base = (zd_smem(zd_pool) + 1023u) & ~1023u;  // swizzle atoms are 1024-aligned
  const int tid = threadIdx.x, wg = tid >> 7, w = (tid >> 5) & 3, l = tid & 31;
  const int bz = (int)(blockIdx.x / 96);
  const int tile = blockIdx.x % 96;
  const int panel = tile / 32, inpanel = tile % 32;
  const int prows = min(8, 24 - panel * 8);
  const int bi = (int)(panel * 8 + inpanel % prows) * 128, bj = (int)(inpanel / prows) * 192;
  __shared__ __align__(8) unsigned long long zd_full[4];  // per stage: its tensor-map copies landed
  const unsigned bars = zd_smem(zd_full);
  if (tid == 0) {
    for (int i = 0; i < 4; i++) zd_bar_init(bars + i * 8u, 1);
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();  // the barriers are set up before anyone waits on them
  float d[96];
  #pragma unroll
  for (int i = 0; i < 96; i++) d[i] = 0.0f;
  const int steps = 128;
  #pragma unroll
  for (int f = 0; f < 2; f++) {  // the first 2 k-steps in flight
    if (f < steps) {
      const unsigned sa = base + f * 40960u, sb = sa + 16384u;
      const int k0 = (int)f * 64;
    if (tid == 0) {
      const unsigned bar = bars + (f % 4) * 8u;
      zd_bar_expect(bar, 40960u);
      zd_tma2(sa + 0u, &zd_tma_a, bar, (int)(bi) + 0, (int)(k0));
      zd_tma2(sa + 8192u, &zd_tma_a, bar, (int)(bi) + 64, (int)(k0));
      zd_tma2(sb + 0u, &zd_tma_b, bar, (int)(bj) + 0, (int)(k0));
      zd_tma2(sb + 8192u, &zd_tma_b, bar, (int)(bj) + 64, (int)(k0));
      zd_tma2(sb + 16384u, &zd_tma_b, bar, (int)(bj) + 128, (int)(k0));
    }
    }
    
  }
  for (int s = 0; s < steps; s++) {
    __syncthreads();  // for every thread; and every wgmma but the last one's is done with its stage
    {
      const int f = s + 2;
      if (f < steps) {  // into the stage a finished wgmma read (the last step's if deep, else the one before)
        const unsigned sa = base + (f % 4) * 40960u, sb = sa + 16384u;
        const int k0 = (int)f * 64;
    if (tid == 0) {
      const unsigned bar = bars + (f % 4) * 8u;
      zd_bar_expect(bar, 40960u);
      zd_tma2(sa + 0u, &zd_tma_a, bar, (int)(bi) + 0, (int)(k0));
      zd_tma2(sa + 8192u, &zd_tma_a, bar, (int)(bi) + 64, (int)(k0));
      zd_tma2(sb + 0u, &zd_tma_b, bar, (int)(bj) + 0, (int)(k0));
      zd_tma2(sb + 8192u, &zd_tma_b, bar, (int)(bj) + 64, (int)(k0));
      zd_tma2(sb + 16384u, &zd_tma_b, bar, (int)(bj) + 128, (int)(k0));
    }
      }
      
    }
    zd_bar_wait(bars + (s % 4) * 8u, (s / 4) & 1);  // the tensor-map copies have landed
    const unsigned sa = base + (s % 4) * 40960u, sb = sa + 16384u;
    asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
    #pragma unroll
    for (int kk = 0; kk < 4; kk++) {
      const unsigned long long da = zd_desc(sa + wg * 8192 + kk * 2048, 8192, 1024);
      const unsigned long long db = zd_desc(sb + kk * 2048, 8192, 1024);
      asm volatile("{ .reg .pred p; setp.ne.b32 p, %98, 0; wgmma.mma_async.sync.aligned.m64n192k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95}, %96, %97, p, 1, 1, 1, 1; }" : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]) : "l"(da), "l"(db), "r"(1) : "memory");
    }
    asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
    asm volatile("wgmma.wait_group.sync.aligned 1;" ::: "memory");
  }
  asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
  #pragma unroll
  for (int i = 0; i < 96; i++) {  // accumulator i: row w*16 + l/4 (+8), column 8*(i/4) + 2*(l%4) (+1)
    const int gi = bi + wg * 64 + w * 16 + (l >> 2) + (((i >> 1) & 1) << 3);
    const int gj = bj + ((i >> 2) << 3) + ((l & 3) << 1) + (i & 1);
    if (gi < 3072 && gj < 768) {
      const float acc = d[i];
        const int gid = (gj*3072+gi);
        float ld0 = zd_bf16_load(in0[(gj*3072+gi)]);
        float v1 = ((float)(ld0));
        float ld2 = in6[0];
        float ld3 = in1[(gj*3072+gi)];
        float v4 = (0.8999999761581421f * ld3);
        float v5 = ((float)(acc));
        float v6 = (v5 * 1.0f);
        float v7 = (0.10000000149011612f * v6);
        float v8 = (v4 + v7);
        float v9 = (ld2 * v8);
        float ld10 = in2[(gj*3072+gi)];
        float v11 = (0.9990000128746033f * ld10);
        float v12 = (v6 * v6);
        float v13 = (0.0010000000474974513f * v12);
        float v14 = (v11 + v13);
        float v15 = sqrt(v14);
        float ld16 = in5[0];
        float v17 = (v15 * ld16);
        float v18 = (v17 + 9.99999993922529e-09f);
        float v19 = (v9 / v18);
        float v20 = (v1 - v19);
        float v21 = zd_bf16_round((float)(v20));
        float v22 = (0.8999999761581421f * ld3);
        float v23 = (0.10000000149011612f * v6);
        float v24 = (v22 + v23);
        float v25 = (0.9990000128746033f * ld10);
        float v26 = (v6 * v6);
        float v27 = (0.0010000000474974513f * v26);
        float v28 = (v25 + v27);
        out0[gid] = zd_bf16_store(v21);
        out1[gid] = (float)(v24);
        out2[gid] = (float)(v28);
    }
  }
}
// ==== kc_fb0108bc2813: 0.474 ms per step in 4 launches, gws=(24576,) lws=(256,) opts=KernelOpts(lws=256, elems=1, vec=1, group=0, unroll=1, tile_k=8, prefetch=0, cache=0, lanes=0, stages=4, tile=3, cpu_rows=0, wgmma=2)
// IR outputs (42, 47, 53) row 0
//    0 ('in', 0, (3072, 768), 'bfloat16')
//    1 ('cast', "'float32'", (3072, 768), 'float32', (0,))
//    2 ('in', 6, (), 'float32')
//    3 ('reshape', '(1, 1)', (1, 1), 'float32', (2,))
//    4 ('expand', '(3072, 768)', (3072, 768), 'float32', (3,))
//    5 ('const', '0.8999999761581421', (3072, 768), 'float32', ())
//    6 ('in', 1, (3072, 768), 'float32')
//    7 ('binary', "<BinaryOp.MUL: 'mul'>", (3072, 768), 'float32', (5, 6))
//    8 ('const', '0.10000000149011612', (3072, 768), 'float32', ())
//    9 ('in', 4, (8, 1024, 768), 'bfloat16')
//   10 ('reshape', '(8192, 768, 1)', (8192, 768, 1), 'bfloat16', (9,))
//   11 ('permute', '(2, 1, 0)', (1, 768, 8192), 'bfloat16', (10,))
//   12 ('expand', '(3072, 768, 8192)', (3072, 768, 8192), 'bfloat16', (11,))
//   13 ('in', 3, (8192, 3072), 'bfloat16')
//   14 ('reshape', '(8192, 1, 3072)', (8192, 1, 3072), 'bfloat16', (13,))
//   15 ('permute', '(2, 1, 0)', (3072, 1, 8192), 'bfloat16', (14,))
//   16 ('expand', '(3072, 768, 8192)', (3072, 768, 8192), 'bfloat16', (15,))
//   17 ('binary', "<BinaryOp.MUL: 'mul'>", (3072, 768, 8192), 'bfloat16', (12, 16))
//   18 ('reduce', "(<ReduceOp.SUM: 'sum'>, (2,))", (3072, 768, 1), 'bfloat16', (17,))
//   19 ('reshape', '(3072, 768)', (3072, 768), 'bfloat16', (18,))
//   20 ('cast', "'float32'", (3072, 768), 'float32', (19,))
//   21 ('const', '1.0', (3072, 768), 'float32', ())
//   22 ('binary', "<BinaryOp.MUL: 'mul'>", (3072, 768), 'float32', (20, 21))
//   23 ('binary', "<BinaryOp.MUL: 'mul'>", (3072, 768), 'float32', (8, 22))
//   24 ('binary', "<BinaryOp.ADD: 'add'>", (3072, 768), 'float32', (7, 23))
//   25 ('binary', "<BinaryOp.MUL: 'mul'>", (3072, 768), 'float32', (4, 24))
//   26 ('const', '0.9990000128746033', (3072, 768), 'float32', ())
//   27 ('in', 2, (3072, 768), 'float32')
//   28 ('binary', "<BinaryOp.MUL: 'mul'>", (3072, 768), 'float32', (26, 27))
//   29 ('const', '0.0010000000474974513', (3072, 768), 'float32', ())
//   30 ('binary', "<BinaryOp.MUL: 'mul'>", (3072, 768), 'float32', (22, 22))
//   31 ('binary', "<BinaryOp.MUL: 'mul'>", (3072, 768), 'float32', (29, 30))
//   32 ('binary', "<BinaryOp.ADD: 'add'>", (3072, 768), 'float32', (28, 31))
//   33 ('unary', "<UnaryOp.SQRT: 'sqrt'>", (3072, 768), 'float32', (32,))
//   34 ('in', 5, (), 'float32')
//   35 ('reshape', '(1, 1)', (1, 1), 'float32', (34,))
//   36 ('expand', '(3072, 768)', (3072, 768), 'float32', (35,))
//   37 ('binary', "<BinaryOp.MUL: 'mul'>", (3072, 768), 'float32', (33, 36))
//   38 ('const', '9.99999993922529e-09', (3072, 768), 'float32', ())
//   39 ('binary', "<BinaryOp.ADD: 'add'>", (3072, 768), 'float32', (37, 38))
//   40 ('binary', "<BinaryOp.DIV: 'div'>", (3072, 768), 'float32', (25, 39))
//   41 ('binary', "<BinaryOp.SUB: 'sub'>", (3072, 768), 'float32', (1, 40))
//   42 ('cast', "'bfloat16'", (3072, 768), 'bfloat16', (41,))
//   43 ('const', '0.8999999761581421', (3072, 768), 'float32', ())
//   44 ('binary', "<BinaryOp.MUL: 'mul'>", (3072, 768), 'float32', (43, 6))
//   45 ('const', '0.10000000149011612', (3072, 768), 'float32', ())
//   46 ('binary', "<BinaryOp.MUL: 'mul'>", (3072, 768), 'float32', (45, 22))
//   47 ('binary', "<BinaryOp.ADD: 'add'>", (3072, 768), 'float32', (44, 46))
//   48 ('const', '0.9990000128746033', (3072, 768), 'float32', ())
//   49 ('binary', "<BinaryOp.MUL: 'mul'>", (3072, 768), 'float32', (48, 27))
//   50 ('const', '0.0010000000474974513', (3072, 768), 'float32', ())
//   51 ('binary', "<BinaryOp.MUL: 'mul'>", (3072, 768), 'float32', (22, 22))
//   52 ('binary', "<BinaryOp.MUL: 'mul'>", (3072, 768), 'float32', (50, 51))
//   53 ('binary', "<BinaryOp.ADD: 'add'>", (3072, 768), 'float32', (49, 52))
#ifndef INFINITY
#define INFINITY __int_as_float(0x7f800000)
#endif
#ifndef NAN
#define NAN __int_as_float(0x7fc00000)
#endif
__device__ inline float zd_bf16_load(unsigned short h) { return __uint_as_float(((unsigned int)h) << 16); }
__device__ inline unsigned short zd_bf16_store(float f) {
  unsigned int u = __float_as_uint(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (unsigned short)((u >> 16) | 0x40u);
  return (unsigned short)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}
__device__ inline float zd_bf16_round(float f) { return zd_bf16_load(zd_bf16_store(f)); }
__device__ inline float4 zd_bf16x4_load(const unsigned short* p) {
  const uint2 r = *reinterpret_cast<const uint2*>(p);
  return make_float4(__uint_as_float(r.x << 16), __uint_as_float(r.x & 0xffff0000u), __uint_as_float(r.y << 16), __uint_as_float(r.y & 0xffff0000u));
}
__device__ inline void zd_bf16x4_store(unsigned short* p, float4 v) {
  *reinterpret_cast<uint2*>(p) = make_uint2(zd_bf16_store(v.x) | ((unsigned)zd_bf16_store(v.y) << 16), zd_bf16_store(v.z) | ((unsigned)zd_bf16_store(v.w) << 16));
}
// zyx_dist: arch sm_90a
#ifndef ZD_TC_HELPERS
#define ZD_TC_HELPERS
__device__ __forceinline__ unsigned zd_smem(const void* p) {
  unsigned a;
  asm("{ .reg .u64 t; cvta.to.shared.u64 t, %1; cvt.u32.u64 %0, t; }" : "=r"(a) : "l"(p));
  return a;
}
__device__ __forceinline__ void zd_cp_async(void* dst, const void* src, bool inside) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" :: "r"(zd_smem(dst)), "l"(src), "r"(inside ? 16 : 0));
}
__device__ __forceinline__ void zd_cp_commit() { asm volatile("cp.async.commit_group;"); }
#endif
#ifndef ZD_WGMMA_HELPERS
#define ZD_WGMMA_HELPERS
__device__ __forceinline__ unsigned zd_swz(unsigned off) { return off ^ (((off >> 7) & 7) << 4); }
__device__ __forceinline__ unsigned long long zd_desc(unsigned addr, unsigned lbo, unsigned sbo) {
  return (unsigned long long)((addr & 0x3FFFF) >> 4) | ((unsigned long long)((lbo >> 4) & 0x3FFF) << 16)
       | ((unsigned long long)((sbo >> 4) & 0x3FFF) << 32) | (1ull << 62);  // 128-byte swizzle
}
__device__ __forceinline__ void zd_cp_async_s(unsigned dst, const void* src, bool inside) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" :: "r"(dst), "l"(src), "r"(inside ? 16 : 0));
}
__device__ __forceinline__ void zd_st_shared_u16(unsigned dst, unsigned short v) {
  asm volatile("st.shared.u16 [%0], %1;" :: "r"(dst), "h"(v) : "memory");
}
#endif
#ifndef ZD_TMA_HELPERS
#define ZD_TMA_HELPERS
struct __align__(64) zd_tmap { unsigned long long v[16]; };  // a CUtensorMap, passed by value
__device__ __forceinline__ void zd_tma2(unsigned dst, const zd_tmap* map, unsigned bar, int c0, int c1) {
  asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];"
               :: "r"(dst), "l"((unsigned long long)map), "r"(c0), "r"(c1), "r"(bar) : "memory");
}
__device__ __forceinline__ void zd_tma3(unsigned dst, const zd_tmap* map, unsigned bar, int c0, int c1, int c2) {
  asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4}], [%5];"
               :: "r"(dst), "l"((unsigned long long)map), "r"(c0), "r"(c1), "r"(c2), "r"(bar) : "memory");
}
__device__ __forceinline__ void zd_tma4(unsigned dst, const zd_tmap* map, unsigned bar, int c0, int c1, int c2, int c3) {
  asm volatile("cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4, %5}], [%6];"
               :: "r"(dst), "l"((unsigned long long)map), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(bar) : "memory");
}
__device__ __forceinline__ void zd_tma5(unsigned dst, const zd_tmap* map, unsigned bar, int c0, int c1, int c2, int c3, int c4) {
  asm volatile("cp.async.bulk.tensor.5d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4, %5, %6}], [%7];"
               :: "r"(dst), "l"((unsigned long long)map), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(c4), "r"(bar) : "memory");
}
__device__ __forceinline__ void zd_bar_init(unsigned bar, unsigned count) {
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
#endif
// zyx_dist: dynamic shared bytes 164864
// zyx_dist: tensor map 4 bf16 0 2 768 8192 1536 64 64
// zyx_dist: tensor map 3 bf16 0 2 3072 8192 6144 64 64
extern "C" __global__ void __launch_bounds__(256, 1) kc_fb0108bc2813(const unsigned short* __restrict__ in0, const float* __restrict__ in1, const float* __restrict__ in2, const unsigned short* __restrict__ in3, const unsigned short* __restrict__ in4, const float* __restrict__ in5, const float* __restrict__ in6, unsigned short* __restrict__ out0, float* __restrict__ out1, float* __restrict__ out2, const __grid_constant__ zd_tmap zd_tma_a, const __grid_constant__ zd_tmap zd_tma_b) {
  extern __shared__ __align__(16) unsigned char zd_pool[];
  const unsigned base = (zd_smem(zd_pool) + 1023u) & ~1023u;  // swizzle atoms are 1024-aligned
  const int tid = threadIdx.x, wg = tid >> 7, w = (tid >> 5) & 3, l = tid & 31;
  const int bz = (int)(blockIdx.x / 96);
  const int tile = blockIdx.x % 96;
  const int panel = tile / 128, inpanel = tile % 128;
  const int prows = min(8, 6 - panel * 8);
  const int bi = (int)(panel * 8 + inpanel % prows) * 128, bj = (int)(inpanel / prows) * 192;
  __shared__ __align__(8) unsigned long long zd_full[4];  // per stage: its tensor-map copies landed
  const unsigned bars = zd_smem(zd_full);
  if (tid == 0) {
    for (int i = 0; i < 4; i++) zd_bar_init(bars + i * 8u, 1);
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();  // the barriers are set up before anyone waits on them
  float d[96];
  #pragma unroll
  for (int i = 0; i < 96; i++) d[i] = 0.0f;
  const int steps = 128;
  #pragma unroll
  for (int f = 0; f < 2; f++) {  // the first 2 k-steps in flight
    if (f < steps) {
      const unsigned sa = base + f * 40960u, sb = sa + 16384u;
      const int k0 = (int)f * 64;
    if (tid == 0) {
      const unsigned bar = bars + (f % 4) * 8u;
      zd_bar_expect(bar, 40960u);
      zd_tma2(sa + 0u, &zd_tma_a, bar, (int)(bi) + 0, (int)(k0));
      zd_tma2(sa + 8192u, &zd_tma_a, bar, (int)(bi) + 64, (int)(k0));
      zd_tma2(sb + 0u, &zd_tma_b, bar, (int)(bj) + 0, (int)(k0));
      zd_tma2(sb + 8192u, &zd_tma_b, bar, (int)(bj) + 64, (int)(k0));
      zd_tma2(sb + 16384u, &zd_tma_b, bar, (int)(bj) + 128, (int)(k0));
    }
    }
    
  }
  for (int s = 0; s < steps; s++) {
    __syncthreads();  // for every thread; and every wgmma but the last one's is done with its stage
    {
      const int f = s + 2;
      if (f < steps) {  // into the stage a finished wgmma read (the last step's if deep, else the one before)
        const unsigned sa = base + (f % 4) * 40960u, sb = sa + 16384u;
        const int k0 = (int)f * 64;
    if (tid == 0) {
      const unsigned bar = bars + (f % 4) * 8u;
      zd_bar_expect(bar, 40960u);
      zd_tma2(sa + 0u, &zd_tma_a, bar, (int)(bi) + 0, (int)(k0));
      zd_tma2(sa + 8192u, &zd_tma_a, bar, (int)(bi) + 64, (int)(k0));
      zd_tma2(sb + 0u, &zd_tma_b, bar, (int)(bj) + 0, (int)(k0));
      zd_tma2(sb + 8192u, &zd_tma_b, bar, (int)(bj) + 64, (int)(k0));
      zd_tma2(sb + 16384u, &zd_tma_b, bar, (int)(bj) + 128, (int)(k0));
    }
      }
      
    }
    zd_bar_wait(bars + (s % 4) * 8u, (s / 4) & 1);  // the tensor-map copies have landed
    const unsigned sa = base + (s % 4) * 40960u, sb = sa + 16384u;
    asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
    #pragma unroll
    for (int kk = 0; kk < 4; kk++) {
      const unsigned long long da = zd_desc(sa + wg * 8192 + kk * 2048, 8192, 1024);
      const unsigned long long db = zd_desc(sb + kk * 2048, 8192, 1024);
      asm volatile("{ .reg .pred p; setp.ne.b32 p, %98, 0; wgmma.mma_async.sync.aligned.m64n192k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95}, %96, %97, p, 1, 1, 1, 1; }" : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]) : "l"(da), "l"(db), "r"(1) : "memory");
    }
    asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
    asm volatile("wgmma.wait_group.sync.aligned 1;" ::: "memory");
  }
  asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
  #pragma unroll
  for (int i = 0; i < 96; i++) {  // accumulator i: row w*16 + l/4 (+8), column 8*(i/4) + 2*(l%4) (+1)
    const int gi = bi + wg * 64 + w * 16 + (l >> 2) + (((i >> 1) & 1) << 3);
    const int gj = bj + ((i >> 2) << 3) + ((l & 3) << 1) + (i & 1);
    if (gi < 768 && gj < 3072) {
      const float acc = d[i];
        const int gid = (gj*768+gi);
        float ld0 = zd_bf16_load(in0[(gj*768+gi)]);
        float v1 = ((float)(ld0));
        float ld2 = in6[0];
        float ld3 = in1[(gj*768+gi)];
        float v4 = (0.8999999761581421f * ld3);
        float v5 = ((float)(acc));
        float v6 = (v5 * 1.0f);
        float v7 = (0.10000000149011612f * v6);
        float v8 = (v4 + v7);
        float v9 = (ld2 * v8);
        float ld10 = in2[(gj*768+gi)];
        float v11 = (0.9990000128746033f * ld10);
        float v12 = (v6 * v6);
        float v13 = (0.0010000000474974513f * v12);
        float v14 = (v11 + v13);
        float v15 = sqrt(v14);
        float ld16 = in5[0];
        float v17 = (v15 * ld16);
        float v18 = (v17 + 9.99999993922529e-09f);
        float v19 = (v9 / v18);
        float v20 = (v1 - v19);
        float v21 = zd_bf16_round((float)(v20));
        float v22 = (0.8999999761581421f * ld3);
        float v23 = (0.10000000149011612f * v6);
        float v24 = (v22 + v23);
        float v25 = (0.9990000128746033f * ld10);
        float v26 = (v6 * v6);
        float v27 = (0.0010000000474974513f * v26);
        float v28 = (v25 + v27);
        out0[gid] = zd_bf16_store(v21);
        out1[gid] = (float)(v24);
        out2[gid] = (float)(v28);
    }
  }
}
// ==== kc_85a784d60cd1: 0.447 ms per step in 4 launches, gws=(196608,) lws=(128,) opts=KernelOpts(lws=256, elems=1, vec=1, group=0, unroll=1, tile_k=8, prefetch=0, cache=0, lanes=0, stages=2, tile=0, cpu_rows=0, wgmma=2)
// IR outputs (34, 38) row 0
//    0 ('in', 1, (8192, 768, 1), 'bfloat16')
//    1 ('reshape', '(8, 1024, 12, 64)', (8, 1024, 12, 64), 'bfloat16', (0,))
//    2 ('permute', '(0, 2, 1, 3)', (8, 12, 1024, 64), 'bfloat16', (1,))
//    3 ('reshape', '(8, 12, 1024, 1, 64)', (8, 12, 1024, 1, 64), 'bfloat16', (2,))
//    4 ('expand', '(8, 12, 1024, 1024, 64)', (8, 12, 1024, 1024, 64), 'bfloat16', (3,))
//    5 ('in', 2, (8192, 768, 1), 'bfloat16')
//    6 ('reshape', '(8, 1024, 12, 64)', (8, 1024, 12, 64), 'bfloat16', (5,))
//    7 ('permute', '(0, 2, 1, 3)', (8, 12, 1024, 64), 'bfloat16', (6,))
//    8 ('reshape', '(8, 12, 1, 1024, 64)', (8, 12, 1, 1024, 64), 'bfloat16', (7,))
//    9 ('expand', '(8, 12, 1024, 1024, 64)', (8, 12, 1024, 1024, 64), 'bfloat16', (8,))
//   10 ('binary', "<BinaryOp.MUL: 'mul'>", (8, 12, 1024, 1024, 64), 'bfloat16', (4, 9))
//   11 ('reduce', "(<ReduceOp.SUM: 'sum'>, (4,))", (8, 12, 1024, 1024, 1), 'bfloat16', (10,))
//   12 ('reshape', '(8, 12, 1024, 1024)', (8, 12, 1024, 1024), 'bfloat16', (11,))
//   13 ('const', '0.125', (8, 12, 1024, 1024), 'bfloat16', ())
//   14 ('binary', "<BinaryOp.MUL: 'mul'>", (8, 12, 1024, 1024), 'bfloat16', (12, 13))
//   15 ('in', 0, (1024, 1024), 'bfloat16')
//   16 ('reshape', '(1, 1, 1024, 1024)', (1, 1, 1024, 1024), 'bfloat16', (15,))
//   17 ('expand', '(8, 12, 1024, 1024)', (8, 12, 1024, 1024), 'bfloat16', (16,))
//   18 ('binary', "<BinaryOp.ADD: 'add'>", (8, 12, 1024, 1024), 'bfloat16', (14, 17))
//   19 ('reduce', "(<ReduceOp.MAX: 'max'>, (3,))", (8, 12, 1024, 1), 'bfloat16', (18,))
//   20 ('expand', '(8, 12, 1024, 1024)', (8, 12, 1024, 1024), 'bfloat16', (19,))
//   21 ('binary', "<BinaryOp.SUB: 'sub'>", (8, 12, 1024, 1024), 'bfloat16', (18, 20))
//   22 ('unary', "<UnaryOp.EXP: 'exp'>", (8, 12, 1024, 1024), 'bfloat16', (21,))
//   23 ('reduce', "(<ReduceOp.SUM: 'sum'>, (3,))", (8, 12, 1024, 1), 'bfloat16', (22,))
//   24 ('expand', '(8, 12, 1024, 1024)', (8, 12, 1024, 1024), 'bfloat16', (23,))
//   25 ('binary', "<BinaryOp.DIV: 'div'>", (8, 12, 1024, 1024), 'bfloat16', (22, 24))
//   26 ('reshape', '(8, 12, 1024, 1, 1024)', (8, 12, 1024, 1, 1024), 'bfloat16', (25,))
//   27 ('expand', '(8, 12, 1024, 64, 1024)', (8, 12, 1024, 64, 1024), 'bfloat16', (26,))
//   28 ('in', 3, (8192, 768, 1), 'bfloat16')
//   29 ('reshape', '(8, 1024, 12, 64)', (8, 1024, 12, 64), 'bfloat16', (28,))
//   30 ('permute', '(0, 2, 3, 1)', (8, 12, 64, 1024), 'bfloat16', (29,))
//   31 ('reshape', '(8, 12, 1, 64, 1024)', (8, 12, 1, 64, 1024), 'bfloat16', (30,))
//   32 ('expand', '(8, 12, 1024, 64, 1024)', (8, 12, 1024, 64, 1024), 'bfloat16', (31,))
//   33 ('binary', "<BinaryOp.MUL: 'mul'>", (8, 12, 1024, 64, 1024), 'bfloat16', (27, 32))
//   34 ('reduce', "(<ReduceOp.SUM: 'sum'>, (4,))", (8, 12, 1024, 64, 1), 'bfloat16', (33,))
//   35 ('cast', "'float32'", (8, 12, 1024, 1), 'float32', (19,))
//   36 ('cast', "'float32'", (8, 12, 1024, 1), 'float32', (23,))
//   37 ('unary', "<UnaryOp.LOG: 'log'>", (8, 12, 1024, 1), 'float32', (36,))
//   38 ('binary', "<BinaryOp.ADD: 'add'>", (8, 12, 1024, 1), 'float32', (35, 37))
#ifndef INFINITY
#define INFINITY __int_as_float(0x7f800000)
#endif
#ifndef NAN
#define NAN __int_as_float(0x7fc00000)
#endif
__device__ inline float zd_bf16_load(unsigned short h) { return __uint_as_float(((unsigned int)h) << 16); }
__device__ inline unsigned short zd_bf16_store(float f) {
  unsigned int u = __float_as_uint(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (unsigned short)((u >> 16) | 0x40u);
  return (unsigned short)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}
__device__ inline float zd_bf16_round(float f) { return zd_bf16_load(zd_bf16_store(f)); }
__device__ inline float4 zd_bf16x4_load(const unsigned short* p) {
  const uint2 r = *reinterpret_cast<const uint2*>(p);
  return make_float4(__uint_as_float(r.x << 16), __uint_as_float(r.x & 0xffff0000u), __uint_as_float(r.y << 16), __uint_as_float(r.y & 0xffff0000u));
}
__device__ inline void zd_bf16x4_store(unsigned short* p, float4 v) {
  *reinterpret_cast<uint2*>(p) = make_uint2(zd_bf16_store(v.x) | ((unsigned)zd_bf16_store(v.y) << 16), zd_bf16_store(v.z) | ((unsigned)zd_bf16_store(v.w) << 16));
}
__device__ inline float zd_hdiv(float a, float b) {
  const float m = fabsf(b), s = m > 0x1p126f ? 0.25f : m < 0x1p-126f ? 0x1p24f : 1.0f;
  return (a * s) * __frcp_rn(b * s);
}
// zyx_dist: arch sm_90a
#ifndef ZD_TC_HELPERS
#define ZD_TC_HELPERS
__device__ __forceinline__ unsigned zd_smem(const void* p) {
  unsigned a;
  asm("{ .reg .u64 t; cvta.to.shared.u64 t, %1; cvt.u32.u64 %0, t; }" : "=r"(a) : "l"(p));
  return a;
}
__device__ __forceinline__ void zd_cp_async(void* dst, const void* src, bool inside) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" :: "r"(zd_smem(dst)), "l"(src), "r"(inside ? 16 : 0));
}
__device__ __forceinline__ void zd_cp_commit() { asm volatile("cp.async.commit_group;"); }
#endif
#ifndef ZD_WGMMA_HELPERS
#define ZD_WGMMA_HELPERS
__device__ __forceinline__ unsigned zd_swz(unsigned off) { return off ^ (((off >> 7) & 7) << 4); }
__device__ __forceinline__ unsigned long long zd_desc(unsigned addr, unsigned lbo, unsigned sbo) {
  return (unsigned long long)((addr & 0x3FFFF) >> 4) | ((unsigned long long)((lbo >> 4) & 0x3FFF) << 16)
       | ((unsigned long long)((sbo >> 4) & 0x3FFF) << 32) | (1ull << 62);  // 128-byte swizzle
}
__device__ __forceinline__ void zd_cp_async_s(unsigned dst, const void* src, bool inside) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" :: "r"(dst), "l"(src), "r"(inside ? 16 : 0));
}
__device__ __forceinline__ void zd_st_shared_u16(unsigned dst, unsigned short v) {
  asm volatile("st.shared.u16 [%0], %1;" :: "r"(dst), "h"(v) : "memory");
}
#endif
#ifndef ZD_TMA_HELPERS
#define ZD_TMA_HELPERS
struct __align__(64) zd_tmap { unsigned long long v[16]; };  // a CUtensorMap, passed by value
__device__ __forceinline__ void zd_tma2(unsigned dst, const zd_tmap* map, unsigned bar, int c0, int c1) {
  asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];"
               :: "r"(dst), "l"((unsigned long long)map), "r"(c0), "r"(c1), "r"(bar) : "memory");
}
__device__ __forceinline__ void zd_tma3(unsigned dst, const zd_tmap* map, unsigned bar, int c0, int c1, int c2) {
  asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4}], [%5];"
               :: "r"(dst), "l"((unsigned long long)map), "r"(c0), "r"(c1), "r"(c2), "r"(bar) : "memory");
}
__device__ __forceinline__ void zd_tma4(unsigned dst, const zd_tmap* map, unsigned bar, int c0, int c1, int c2, int c3) {
  asm volatile("cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4, %5}], [%6];"
               :: "r"(dst), "l"((unsigned long long)map), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(bar) : "memory");
}
__device__ __forceinline__ void zd_tma5(unsigned dst, const zd_tmap* map, unsigned bar, int c0, int c1, int c2, int c3, int c4) {
  asm volatile("cp.async.bulk.tensor.5d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4, %5, %6}], [%7];"
               :: "r"(dst), "l"((unsigned long long)map), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(c4), "r"(bar) : "memory");
}
__device__ __forceinline__ void zd_bar_init(unsigned bar, unsigned count) {
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
#endif
#ifndef ZD_BAR_ARRIVE
#define ZD_BAR_ARRIVE
__device__ __forceinline__ void zd_bar_arrive(unsigned bar) {  // an arrival that brings no bytes
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" :: "r"(bar) : "memory");
}
#endif
#ifndef ZD_FLAG_HELPERS
#define ZD_FLAG_HELPERS
__device__ __forceinline__ unsigned long long zd_flag_ld(const unsigned long long* p) {  // as another SM left it
  unsigned long long v;
  asm volatile("ld.relaxed.gpu.b64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ void zd_flag_st(unsigned long long* p, unsigned tag, unsigned payload) {  // one word
  asm volatile("st.relaxed.gpu.b64 [%0], %1;" :: "l"(p), "l"(((unsigned long long)tag << 32) | payload) : "memory");
}
#endif
__device__ unsigned long long kc_85a784d60cd1_flags[1792];  // per (batch, key block), then per mask tile: tag << 32 | flags
__device__ unsigned kc_85a784d60cd1_epoch, kc_85a784d60cd1_done;  // launches so far; work-groups done in this one
#ifndef ZD_TC_PACK_bf16
#define ZD_TC_PACK_bf16
__device__ __forceinline__ unsigned zd_pack_bf16(float lo, float hi) {
  unsigned r;
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
}
__device__ __forceinline__ float zd_max_nan(float a, float b) {  // NaN if either is (fmaxf drops a NaN)
  float r;
  asm("max.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
  return r;
}
__device__ __forceinline__ bool zd_finite8_bf16(uint4 w) {  // eight halves: none infinite or NaN
  const unsigned x[4] = {w.x, w.y, w.z, w.w};
  bool ok = true;
  #pragma unroll
  for (int i = 0; i < 4; i++)
    ok = ok && (x[i] & 0x7f80u) != 0x7f80u && ((x[i] >> 16) & 0x7f80u) != 0x7f80u;
  return ok;
}
#endif
// zyx_dist: dynamic shared bytes 50176
// zyx_dist: tensor map 2 bf16 0 4 64 1024 12 8 1536 128 1572864 64 64 1 1
// zyx_dist: tensor map 3 bf16 0 4 64 1024 12 8 1536 128 1572864 64 64 1 1
// zyx_dist: tensor map 0 bf16 0 2 1024 1024 2048 64 64
extern "C" __global__ void __launch_bounds__(128, 4) kc_85a784d60cd1(const unsigned short* __restrict__ in0, const unsigned short* __restrict__ in1, const unsigned short* __restrict__ in2, const unsigned short* __restrict__ in3, unsigned short* __restrict__ out0, float* __restrict__ out1, const __grid_constant__ zd_tmap zd_tma_k, const __grid_constant__ zd_tmap zd_tma_v, const __grid_constant__ zd_tmap zd_tma_m0) {
  extern __shared__ __align__(16) float zd_pool[];
  unsigned char* zd_base = reinterpret_cast<unsigned char*>(zd_pool) + (((zd_smem(zd_pool) + 1023u) & ~1023u) - zd_smem(zd_pool));  // swizzle atoms: 1024-aligned
  // q is staged in the last stage, whose first block is copied once q is in registers
  unsigned short (*Qs)[72] = reinterpret_cast<unsigned short (*)[72]>(zd_base + 24576);
  const unsigned zd_stages = zd_smem(zd_base);
  __shared__ __align__(8) unsigned long long zd_full[2];  // per stage: its copies have landed
  __shared__ int zd_info[2];  // per stage: 2 * its key block + (the mask leaves it clear), -1 past the walk's end
  const unsigned bars = zd_smem(zd_full);
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int zd_c = blockIdx.x / 1024, zd_r = blockIdx.x % 1024, zd_n = min(64, 96 - zd_c * 64);
  const int zd_qb = 15 - zd_r / zd_n;  // the chunk's batch entries side by side
  const int bz = (int)(zd_c * 64 + zd_r % zd_n);
  const int q0 = (int)zd_qb * 64;
  const int zd_tma_k_c0 = (int)(bz % 12); const int zd_tma_k_c1 = (int)(bz / 12);
  const int zd_tma_v_c0 = (int)(bz % 12); const int zd_tma_v_c1 = (int)(bz / 12);
  if (tid == 0) {
    for (int i = 0; i < 2; i++) zd_bar_init(bars + i * 8u, 1);
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  #pragma unroll
  for (int r = 0; r < 4; r++) {
    const int e = tid + r * 128;
    const int row = e / 8, col = (e % 8) * 8;
    const int gi = q0 + row, dd = col;
    const bool inside = gi < 1024;
    if (true)
      zd_cp_async(&Qs[row][col], inside ? (const void*)(in1 + ((bz/12)*786432+gi*768+(bz%12)*64+dd)) : (const void*)in1, inside);
  }
  zd_cp_commit();
  const unsigned zd_tag = *reinterpret_cast<volatile unsigned*>(&kc_85a784d60cd1_epoch) + 1u;  // this launch's
  unsigned long long* zd_flags = kc_85a784d60cd1_flags;
  float zd_qmax = INFINITY;
  int zd_last = -1;  // warp 0: the last key block whose copies were started
  int zd_wb = -64;  // warp 0: 32 key blocks from zd_wb known to be left out, visited, left clear
  unsigned zd_ks = 0u, zd_kv = 0u, zd_kc = 0u;
  if (warp == 0) {
    for (int it = -1; it < 0; it++) {  // the first blocks' copies, one a stage, while q and the scans come in
      const int st = it + 1;
      int zd_next = 16;
      bool zd_nclear = false;
      {
        int zd_b = zd_last + 1;
        bool zd_fresh = false, zd_stale = false;
        while (zd_b < 16) {
          int zd_rel = zd_b - zd_wb;
          if (zd_stale || zd_rel < 0 || zd_rel >= 32) {  // read the flags of the 32 blocks from zd_b, one per lane
            zd_wb = zd_b;
            zd_rel = 0;
            zd_fresh = true;
            zd_stale = false;
            const int zd_x = zd_b + lane;
            bool zd_s = false, zd_v = true, zd_c = false;  // known: left out, visited, left clear (past the end: visited)
            if (zd_x < 16) {
              const unsigned long long zd_m = zd_flag_ld(&zd_flags[1536 + zd_qb * 16 + zd_x]);
              const unsigned long long zd_k = zd_flag_ld(&zd_flags[(int)bz * 16 + zd_x]);
              const bool zd_mk = (unsigned)(zd_m >> 32) == zd_tag, zd_kk = (unsigned)(zd_k >> 32) == zd_tag;
              const float zd_kp = __uint_as_float((unsigned)zd_k);
              const bool zd_ok = zd_qmax * zd_kp <= 5.19178786e+36f;
              zd_s = zd_mk && (zd_m & 1ull) && zd_kk && zd_ok;
              zd_v = zd_mk && (!(zd_m & 1ull) || (zd_kk && !zd_ok));
              zd_c = zd_mk && (zd_m & 2ull);
            }
            zd_ks = __ballot_sync(0xffffffffu, zd_s);
            zd_kv = __ballot_sync(0xffffffffu, zd_v);
            zd_kc = __ballot_sync(0xffffffffu, zd_c);
          }
          const unsigned zd_open = ~zd_ks & (0xffffffffu << zd_rel);  // from zd_b on: not known to be left out
          if (zd_open == 0u) {
            zd_b = zd_wb + 32;
            continue;
          }
          const int zd_p = __ffs(zd_open) - 1;
          if (!zd_fresh && !((zd_kv >> zd_p) & 1u)) {  // its flags were not out when the window was read: again
            zd_b = zd_wb + zd_p;
            zd_stale = true;
            continue;
          }
          zd_next = min(zd_wb + zd_p, 16);  // known to be visited, or not known yet: computed either way
          zd_nclear = (zd_kc >> zd_p) & 1u;
          break;
        }
      }
      if (lane == 0) {
        const unsigned zd_bar = bars + st * 8u, zd_dst = zd_stages + st * 24576u;
        if (zd_next < 16) {
          const int zd_j = zd_next * 64;
          zd_info[st] = 2 * zd_next + (zd_nclear ? 1 : 0);
          zd_bar_expect(zd_bar, 16384u + (zd_nclear ? 0u : 8192u));
          zd_tma4(zd_dst + 0u, &zd_tma_k, zd_bar, 0 + 0, zd_j, zd_tma_k_c0, zd_tma_k_c1);
          zd_tma4(zd_dst + 8192u + 0u, &zd_tma_v, zd_bar, 0 + 0, zd_j, zd_tma_v_c0, zd_tma_v_c1);
          if (!zd_nclear) { zd_tma2(zd_dst + 16384u + 0u, &zd_tma_m0, zd_bar, zd_j + 0, (int)q0); }
        } else {
          zd_info[st] = -1;  // the walk's end
          zd_bar_arrive(zd_bar);
        }
      }
      zd_last = zd_next;
    }
  }
  {
    __shared__ float zd_red[4];
    for (int zd_kb = zd_qb; zd_kb < 16; zd_kb += 16) {  // this work-group's key blocks of k and v
      const int j0 = (int)zd_kb * 64;
      float km = 0.0f;
      bool fin = true;
      unsigned zd_k2 = 0u;  // k's largest magnitude, two halves at a time
      uint4 zd_wk[4];
      bool zd_wk_in[4];
      #pragma unroll
      for (int r = 0; r < 4; r++) {
        const int e = tid + r * 128;
        const int gk = j0 + e / 8, dd = 0 + (e % 8) * 8;
        zd_wk_in[r] = gk < 1024;
        if (zd_wk_in[r]) zd_wk[r] = *reinterpret_cast<const uint4*>(in2 + ((bz/12)*786432+gk*768+(bz%12)*64+dd));
      }
      uint4 zd_wv[4];
      bool zd_wv_in[4];
      #pragma unroll
      for (int r = 0; r < 4; r++) {
        const int e = tid + r * 128;
        const int gk = j0 + e / 8, gj = 0 + (e % 8) * 8;
        zd_wv_in[r] = gk < 1024;
        if (zd_wv_in[r]) zd_wv[r] = *reinterpret_cast<const uint4*>(in3 + ((bz/12)*786432+gk*768+(bz%12)*64+gj));
      }
      #pragma unroll
      for (int r = 0; r < 4; r++)
        if (zd_wk_in[r]) { const uint4 w = zd_wk[r]; zd_k2 = __vmaxu2(zd_k2, w.x & 0x7fff7fffu); zd_k2 = __vmaxu2(zd_k2, w.y & 0x7fff7fffu); zd_k2 = __vmaxu2(zd_k2, w.z & 0x7fff7fffu); zd_k2 = __vmaxu2(zd_k2, w.w & 0x7fff7fffu); }
      #pragma unroll
      for (int r = 0; r < 4; r++)
        if (zd_wv_in[r]) { const uint4 w = zd_wv[r]; fin = fin & (__vcmpeq2(w.x & 0x7f807f80u, 0x7f807f80u) == 0u); fin = fin & (__vcmpeq2(w.y & 0x7f807f80u, 0x7f807f80u) == 0u); fin = fin & (__vcmpeq2(w.z & 0x7f807f80u, 0x7f807f80u) == 0u); fin = fin & (__vcmpeq2(w.w & 0x7f807f80u, 0x7f807f80u) == 0u); }
      km = fmaxf(km, (max(zd_k2 & 0xffffu, zd_k2 >> 16) > 0x7f80u ? INFINITY : __uint_as_float(max(zd_k2 & 0xffffu, zd_k2 >> 16) << 16)));
      fin = __syncthreads_and(fin);
      km = fmaxf(km, __shfl_xor_sync(0xffffffffu, km, 16)); km = fmaxf(km, __shfl_xor_sync(0xffffffffu, km, 8)); km = fmaxf(km, __shfl_xor_sync(0xffffffffu, km, 4)); km = fmaxf(km, __shfl_xor_sync(0xffffffffu, km, 2)); km = fmaxf(km, __shfl_xor_sync(0xffffffffu, km, 1));
      if ((threadIdx.x & 31) == 0) zd_red[threadIdx.x >> 5] = km;
      __syncthreads();
      km = fmaxf(fmaxf(zd_red[0], zd_red[1]), fmaxf(zd_red[2], zd_red[3]));
      if (tid == 0) zd_flag_st(&zd_flags[(int)bz * 16 + zd_kb], zd_tag, __float_as_uint(fin ? km : INFINITY));
    }
    for (int zd_kb = (int)bz; zd_kb < 16; zd_kb += 96) {  // ... and its mask tiles
      const int j0 = (int)zd_kb * 64;
      bool masked = true, clear = true;
      uint4 zd_wm[4];
      bool zd_wm_in[4];
      #pragma unroll
      for (int r = 0; r < 4; r++) {
        const int e = tid + r * 128;
        const int gi = q0 + e / 8, gk = j0 + (e % 8) * 8;
        zd_wm_in[r] = gi < 1024 && gk < 1024;
        if (zd_wm_in[r]) zd_wm[r] = *reinterpret_cast<const uint4*>(in0 + (gi*1024+gk));
      }
      #pragma unroll
      for (int r = 0; r < 4; r++)
        if (zd_wm_in[r]) { const uint4 w = zd_wm[r]; masked = masked & (w.x == 0xff80ff80u); clear = clear & ((w.x & 0x7fff7fffu) == 0u); masked = masked & (w.y == 0xff80ff80u); clear = clear & ((w.y & 0x7fff7fffu) == 0u); masked = masked & (w.z == 0xff80ff80u); clear = clear & ((w.z & 0x7fff7fffu) == 0u); masked = masked & (w.w == 0xff80ff80u); clear = clear & ((w.w & 0x7fff7fffu) == 0u); }
      masked = __syncthreads_and(masked);
      clear = __syncthreads_and(clear);
      if (tid == 0) zd_flag_st(&zd_flags[1536 + zd_qb * 16 + zd_kb], zd_tag, (unsigned)masked | ((unsigned)clear << 1));
    }
  }
  asm volatile("cp.async.wait_group 0;" ::: "memory");
  __syncthreads();
  unsigned qf[4][4];
  #pragma unroll
  for (int kk = 0; kk < 4; kk++)
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];" : "=r"(qf[kk][0]), "=r"(qf[kk][1]), "=r"(qf[kk][2]), "=r"(qf[kk][3]) : "r"(zd_smem(&Qs[warp * 16 + (((lane >> 3) & 1) << 3) + (lane & 7)][kk * 16 + ((lane >> 4) << 3)])) : "memory");
  unsigned zd_q2 = 0u;
  #pragma unroll
  for (int kk = 0; kk < 4; kk++)
    #pragma unroll
    for (int r = 0; r < 4; r++) zd_q2 = __vmaxu2(zd_q2, qf[kk][r] & 0x7fff7fffu);
  zd_qmax = (max(zd_q2 & 0xffffu, zd_q2 >> 16) > 0x7f80u ? INFINITY : __uint_as_float(max(zd_q2 & 0xffffu, zd_q2 >> 16) << 16));
  __shared__ float zd_qred[4];
  zd_qmax = fmaxf(zd_qmax, __shfl_xor_sync(0xffffffffu, zd_qmax, 16)); zd_qmax = fmaxf(zd_qmax, __shfl_xor_sync(0xffffffffu, zd_qmax, 8)); zd_qmax = fmaxf(zd_qmax, __shfl_xor_sync(0xffffffffu, zd_qmax, 4)); zd_qmax = fmaxf(zd_qmax, __shfl_xor_sync(0xffffffffu, zd_qmax, 2)); zd_qmax = fmaxf(zd_qmax, __shfl_xor_sync(0xffffffffu, zd_qmax, 1));
  if ((threadIdx.x & 31) == 0) zd_qred[threadIdx.x >> 5] = zd_qmax;
  __syncthreads();
  zd_qmax = fmaxf(fmaxf(zd_qred[0], zd_qred[1]), fmaxf(zd_qred[2], zd_qred[3]));
  zd_wb = -64;  // the flags read so far were judged without q's bound
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");  // q's staging is the copies' from here on
  __syncthreads();  // q is in registers
  float o[8][4];
  #pragma unroll
  for (int x = 0; x < 8; x++)
    #pragma unroll
    for (int h = 0; h < 4; h++) o[x][h] = 0.0f;
  float m0 = -INFINITY, m1 = -INFINITY, l0 = 0.0f, l1 = 0.0f;  // rows lane/4 and lane/4 + 8 of the warp's 16
  const int zd_mrow = (warp * 16 + (lane >> 2)) * 128 + ((lane & 3) << 2), zd_msw = (lane >> 2) & 7;
  for (int it = 0;; it++) {
    const int st = it % 2;
    zd_bar_wait(bars + st * 8u, (it / 2) & 1);  // this stage's copies have landed
    const int zd_at = zd_info[st];
    if (zd_at < 0) break;
    const int j0 = (int)(zd_at >> 1) * 64;
    const bool zd_clear = zd_at & 1;
    const unsigned char* zd_stage = zd_base + st * 24576;
    const unsigned ks = zd_stages + st * 24576u, vs = ks + 8192u;
    float S[8][4];
    #pragma unroll
    for (int ni = 0; ni < 8; ni++)
      #pragma unroll
      for (int h = 0; h < 4; h++) S[ni][h] = 0.0f;
    asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
    #pragma unroll
    for (int kk = 0; kk < 4; kk++) {
      asm volatile("{ .reg .pred p; setp.ne.b32 p, %37, 0; wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, {%32,%33,%34,%35}, %36, p, 1, 1, 0; }" : "+f"(S[0][0]), "+f"(S[0][1]), "+f"(S[0][2]), "+f"(S[0][3]), "+f"(S[1][0]), "+f"(S[1][1]), "+f"(S[1][2]), "+f"(S[1][3]), "+f"(S[2][0]), "+f"(S[2][1]), "+f"(S[2][2]), "+f"(S[2][3]), "+f"(S[3][0]), "+f"(S[3][1]), "+f"(S[3][2]), "+f"(S[3][3]), "+f"(S[4][0]), "+f"(S[4][1]), "+f"(S[4][2]), "+f"(S[4][3]), "+f"(S[5][0]), "+f"(S[5][1]), "+f"(S[5][2]), "+f"(S[5][3]), "+f"(S[6][0]), "+f"(S[6][1]), "+f"(S[6][2]), "+f"(S[6][3]), "+f"(S[7][0]), "+f"(S[7][1]), "+f"(S[7][2]), "+f"(S[7][3]) : "r"(qf[kk][0]), "r"(qf[kk][1]), "r"(qf[kk][2]), "r"(qf[kk][3]), "l"(zd_desc(ks + (kk >> 2) * 8192 + (kk & 3) * 32, 16, 1024)), "r"(1) : "memory");
    }
    asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
    if (warp == 0) {  // while the tensor cores score this block: the copies of block it + 1 into the stage
      const int st = (it + 1) % 2;  // the last block used (every warp was done with it at the barrier)
      int zd_next = 16;
      bool zd_nclear = false;
      {
        int zd_b = zd_last + 1;
        bool zd_fresh = false, zd_stale = false;
        while (zd_b < 16) {
          int zd_rel = zd_b - zd_wb;
          if (zd_stale || zd_rel < 0 || zd_rel >= 32) {  // read the flags of the 32 blocks from zd_b, one per lane
            zd_wb = zd_b;
            zd_rel = 0;
            zd_fresh = true;
            zd_stale = false;
            const int zd_x = zd_b + lane;
            bool zd_s = false, zd_v = true, zd_c = false;  // known: left out, visited, left clear (past the end: visited)
            if (zd_x < 16) {
              const unsigned long long zd_m = zd_flag_ld(&zd_flags[1536 + zd_qb * 16 + zd_x]);
              const unsigned long long zd_k = zd_flag_ld(&zd_flags[(int)bz * 16 + zd_x]);
              const bool zd_mk = (unsigned)(zd_m >> 32) == zd_tag, zd_kk = (unsigned)(zd_k >> 32) == zd_tag;
              const float zd_kp = __uint_as_float((unsigned)zd_k);
              const bool zd_ok = zd_qmax * zd_kp <= 5.19178786e+36f;
              zd_s = zd_mk && (zd_m & 1ull) && zd_kk && zd_ok;
              zd_v = zd_mk && (!(zd_m & 1ull) || (zd_kk && !zd_ok));
              zd_c = zd_mk && (zd_m & 2ull);
            }
            zd_ks = __ballot_sync(0xffffffffu, zd_s);
            zd_kv = __ballot_sync(0xffffffffu, zd_v);
            zd_kc = __ballot_sync(0xffffffffu, zd_c);
          }
          const unsigned zd_open = ~zd_ks & (0xffffffffu << zd_rel);  // from zd_b on: not known to be left out
          if (zd_open == 0u) {
            zd_b = zd_wb + 32;
            continue;
          }
          const int zd_p = __ffs(zd_open) - 1;
          if (!zd_fresh && !((zd_kv >> zd_p) & 1u)) {  // its flags were not out when the window was read: again
            zd_b = zd_wb + zd_p;
            zd_stale = true;
            continue;
          }
          zd_next = min(zd_wb + zd_p, 16);  // known to be visited, or not known yet: computed either way
          zd_nclear = (zd_kc >> zd_p) & 1u;
          break;
        }
      }
      if (lane == 0) {
        const unsigned zd_bar = bars + st * 8u, zd_dst = zd_stages + st * 24576u;
        if (zd_next < 16) {
          const int zd_j = zd_next * 64;
          zd_info[st] = 2 * zd_next + (zd_nclear ? 1 : 0);
          zd_bar_expect(zd_bar, 16384u + (zd_nclear ? 0u : 8192u));
          zd_tma4(zd_dst + 0u, &zd_tma_k, zd_bar, 0 + 0, zd_j, zd_tma_k_c0, zd_tma_k_c1);
          zd_tma4(zd_dst + 8192u + 0u, &zd_tma_v, zd_bar, 0 + 0, zd_j, zd_tma_v_c0, zd_tma_v_c1);
          if (!zd_nclear) { zd_tma2(zd_dst + 16384u + 0u, &zd_tma_m0, zd_bar, zd_j + 0, (int)q0); }
        } else {
          zd_info[st] = -1;  // the walk's end
          zd_bar_arrive(zd_bar);
        }
      }
      zd_last = zd_next;
    }
    asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");  // the block's scores are in S
    asm volatile("" : "+f"(S[0][0]), "+f"(S[0][1]), "+f"(S[0][2]), "+f"(S[0][3]), "+f"(S[1][0]), "+f"(S[1][1]), "+f"(S[1][2]), "+f"(S[1][3]), "+f"(S[2][0]), "+f"(S[2][1]), "+f"(S[2][2]), "+f"(S[2][3]), "+f"(S[3][0]), "+f"(S[3][1]), "+f"(S[3][2]), "+f"(S[3][3]), "+f"(S[4][0]), "+f"(S[4][1]), "+f"(S[4][2]), "+f"(S[4][3]), "+f"(S[5][0]), "+f"(S[5][1]), "+f"(S[5][2]), "+f"(S[5][3]), "+f"(S[6][0]), "+f"(S[6][1]), "+f"(S[6][2]), "+f"(S[6][3]), "+f"(S[7][0]), "+f"(S[7][1]), "+f"(S[7][2]), "+f"(S[7][3]) :: "memory");
    if (zd_clear) {  // the same in every thread
    #pragma unroll
    for (int ni = 0; ni < 8; ni++) {
      #pragma unroll
      for (int h = 0; h < 4; h++) {  // unrolled, so S stays in registers whatever the scoring does
        const int gi = q0 + warp * 16 + (lane >> 2) + ((h >> 1) << 3);
        const int gk = j0 + ni * 8 + ((lane & 3) << 1) + (h & 1);
        const float acc = S[ni][h];
        float sc = -INFINITY;
        if (true) { float v0 = (acc * 0.125f); float v1 = (v0 + 0.0f); sc = v1; }
        S[ni][h] = sc;
      }
    }
    } else {
    #pragma unroll
    for (int ni = 0; ni < 8; ni++) {
      #pragma unroll
      for (int h = 0; h < 4; h++) {  // unrolled, so S stays in registers whatever the scoring does
        const int gi = q0 + warp * 16 + (lane >> 2) + ((h >> 1) << 3);
        const int gk = j0 + ni * 8 + ((lane & 3) << 1) + (h & 1);
        const float acc = S[ni][h];
        float sc = -INFINITY;
        if (true) { float v0 = (acc * 0.125f); float v1 = (v0 + zd_bf16_load(*reinterpret_cast<const unsigned short*>(zd_stage + 16384 + zd_mrow + ((h >> 1) << 10) + ((ni ^ zd_msw) << 4) + ((h & 1) << 1)))); sc = v1; }
        S[ni][h] = sc;
      }
    }
    }
    float mb0, mb1;
    {
      float r0[8], r1[8];
      #pragma unroll
      for (int ni = 0; ni < 8; ni++) {
        r0[ni] = zd_max_nan(S[ni][0], S[ni][1]);
        r1[ni] = zd_max_nan(S[ni][2], S[ni][3]);
      }
      #pragma unroll
      for (int w = 4; w >= 1; w >>= 1)
        #pragma unroll
        for (int ni = 0; ni < w; ni++) {
          r0[ni] = zd_max_nan(r0[ni], r0[ni + w]);
          r1[ni] = zd_max_nan(r1[ni], r1[ni + w]);
        }
      mb0 = r0[0];
      mb1 = r1[0];
    }
    // a warp whose 16 rows score -inf at every key of the block (masked out) leaves its max, sums and
    // output as they are: the softmax is skipped, and p @ v too unless v holds an inf or NaN (0 * inf is NaN)
    const bool masked = __all_sync(0xffffffffu, mb0 == -INFINITY && mb1 == -INFINITY);
    unsigned pf[4][4];
    if (masked) {
      #pragma unroll
      for (int t = 0; t < 4; t++) pf[t][0] = pf[t][1] = pf[t][2] = pf[t][3] = 0u;
    } else {
      // the lanes of a quad hold the same two rows: their max and the running max are the rows' max
      mb0 = zd_max_nan(mb0, __shfl_xor_sync(0xffffffffu, mb0, 1));
      mb0 = zd_max_nan(m0, zd_max_nan(mb0, __shfl_xor_sync(0xffffffffu, mb0, 2)));
      mb1 = zd_max_nan(mb1, __shfl_xor_sync(0xffffffffu, mb1, 1));
      mb1 = zd_max_nan(m1, zd_max_nan(mb1, __shfl_xor_sync(0xffffffffu, mb1, 2)));
      // online softmax: what was summed under the old max is rescaled
      const float al0 = mb0 == -INFINITY ? 1.0f : exp2f((m0 - mb0) * 1.4426950408889634f);
      const float al1 = mb1 == -INFINITY ? 1.0f : exp2f((m1 - mb1) * 1.4426950408889634f);
      m0 = mb0;
      m1 = mb1;
      // a row that is -inf so far takes 0 for its max, so its -inf scores give exp(-inf) = 0, not NaN, without a
      // test per score (s * log2(e) - max * log2(e) in one FMA would save more, but loses exp(0) = 1 at large
      // scores: the rounding of max * log2(e) is then far above 1)
      const float ms0 = mb0 == -INFINITY ? 0.0f : mb0, ms1 = mb1 == -INFINITY ? 0.0f : mb1;
      l0 *= al0;
      l1 *= al1;
      #pragma unroll
      for (int x = 0; x < 8; x++) {
        o[x][0] *= al0; o[x][1] *= al0; o[x][2] *= al1; o[x][3] *= al1;
      }
      #pragma unroll
      for (int t = 0; t < 4; t++) {
        float p[2][4];
        #pragma unroll
        for (int u = 0; u < 2; u++)
          #pragma unroll
          for (int h = 0; h < 4; h++) {
            const float e = exp2f((S[2 * t + u][h] - (h < 2 ? ms0 : ms1)) * 1.4426950408889634f);
            p[u][h] = e;
            if (h < 2) l0 += e; else l1 += e;
          }
        pf[t][0] = zd_pack_bf16(p[0][0], p[0][1]);
        pf[t][1] = zd_pack_bf16(p[0][2], p[0][3]);
        pf[t][2] = zd_pack_bf16(p[1][0], p[1][1]);
        pf[t][3] = zd_pack_bf16(p[1][2], p[1][3]);
      }
    }
    asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
    #pragma unroll
    for (int t = 0; t < 4; t++) {
      asm volatile("{ .reg .pred p; setp.ne.b32 p, %37, 0; wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, {%32,%33,%34,%35}, %36, p, 1, 1, 1; }" : "+f"(o[0][0]), "+f"(o[0][1]), "+f"(o[0][2]), "+f"(o[0][3]), "+f"(o[1][0]), "+f"(o[1][1]), "+f"(o[1][2]), "+f"(o[1][3]), "+f"(o[2][0]), "+f"(o[2][1]), "+f"(o[2][2]), "+f"(o[2][3]), "+f"(o[3][0]), "+f"(o[3][1]), "+f"(o[3][2]), "+f"(o[3][3]), "+f"(o[4][0]), "+f"(o[4][1]), "+f"(o[4][2]), "+f"(o[4][3]), "+f"(o[5][0]), "+f"(o[5][1]), "+f"(o[5][2]), "+f"(o[5][3]), "+f"(o[6][0]), "+f"(o[6][1]), "+f"(o[6][2]), "+f"(o[6][3]), "+f"(o[7][0]), "+f"(o[7][1]), "+f"(o[7][2]), "+f"(o[7][3]) : "r"(pf[t][0]), "r"(pf[t][1]), "r"(pf[t][2]), "r"(pf[t][3]), "l"(zd_desc(vs + t * 2048, 8192, 1024)), "r"(1) : "memory");
    }
    asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
    asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
    __syncthreads();  // every warp is done with this stage: the next block's copies may come in
  }
  l0 += __shfl_xor_sync(0xffffffffu, l0, 1);
  l0 += __shfl_xor_sync(0xffffffffu, l0, 2);
  l1 += __shfl_xor_sync(0xffffffffu, l1, 1);
  l1 += __shfl_xor_sync(0xffffffffu, l1, 2);
  if ((lane & 3) == 0) {  // the row statistics, from one lane of the quad that shares a row
    #pragma unroll
    for (int h = 0; h < 2; h++) {
      const int gi = q0 + warp * 16 + (lane >> 2) + (h << 3);
      const float zd_m = h ? m1 : m0, zd_l = h ? l1 : l0;
      if (gi < 1024) {
        const int gid = (gi+bz*1024);
        {
        float v0 = ((float)(zd_m));
        float v1 = ((float)(zd_l));
        float v2 = log(v1);
        float v3 = (v0 + v2);
        out1[gid] = (float)(v3);
        }
      }
    }
  }
  // one division a row: o * (1 / l) is NaN or inf where o / l is (l is 0 only in a row masked at every key, and
  // at least 1 otherwise: exp(0) for its max), within an ulp of it elsewhere
  const float r0 = 1.0f / l0, r1 = 1.0f / l1;
  #pragma unroll
  for (int x = 0; x < 8; x++) {
    #pragma unroll
    for (int h = 0; h < 4; h++) {
      const int gi = q0 + warp * 16 + (lane >> 2) + ((h >> 1) << 3);
      const int gj = x * 8 + ((lane & 3) << 1) + (h & 1);
      if (gi < 1024) {
        const float acc = o[x][h] * (h < 2 ? r0 : r1);
        const int gid = (gi*64+gj+bz*65536);
        out0[gid] = zd_bf16_store(acc);
      }
    }
  }
  if (tid == 0) {  // the last work-group to finish counts the launches (every one has read this one's tag)
    __threadfence();
    if (atomicAdd(&kc_85a784d60cd1_done, 1u) == gridDim.x - 1) {
      atomicExch(&kc_85a784d60cd1_done, 0u);
      __threadfence();
      *reinterpret_cast<volatile unsigned*>(&kc_85a784d60cd1_epoch) = zd_tag;
    }
  }
}
// ==== kc_a0353a8e57f3: 0.373 ms per step in 4 launches, gws=(196608,) lws=(256,) opts=KernelOpts(lws=256, elems=1, vec=1, group=0, unroll=1, tile_k=8, prefetch=1, cache=0, lanes=0, stages=3, tile=1, cpu_rows=0, wgmma=1)
// IR outputs (11,) row 0
//    0 ('in', 1, (8192, 1, 768), 'bfloat16')
//    1 ('reshape', '(8, 1024, 12, 64)', (8, 1024, 12, 64), 'bfloat16', (0,))
//    2 ('permute', '(0, 2, 1, 3)', (8, 12, 1024, 64), 'bfloat16', (1,))
//    3 ('reshape', '(8, 12, 1024, 64, 1)', (8, 12, 1024, 64, 1), 'bfloat16', (2,))
//    4 ('permute', '(0, 4, 1, 3, 2)', (8, 1, 12, 64, 1024), 'bfloat16', (3,))
//    5 ('expand', '(8, 1024, 12, 64, 1024)', (8, 1024, 12, 64, 1024), 'bfloat16', (4,))
//    6 ('in', 0, (8, 12, 1024, 1024), 'bfloat16')
//    7 ('reshape', '(8, 12, 1024, 1, 1024)', (8, 12, 1024, 1, 1024), 'bfloat16', (6,))
//    8 ('permute', '(0, 4, 1, 3, 2)', (8, 1024, 12, 1, 1024), 'bfloat16', (7,))
//    9 ('expand', '(8, 1024, 12, 64, 1024)', (8, 1024, 12, 64, 1024), 'bfloat16', (8,))
//   10 ('binary', "<BinaryOp.MUL: 'mul'>", (8, 1024, 12, 64, 1024), 'bfloat16', (5, 9))
//   11 ('reduce', "(<ReduceOp.SUM: 'sum'>, (4,))", (8, 1024, 12, 64, 1), 'bfloat16', (10,))
#ifndef INFINITY
#define INFINITY __int_as_float(0x7f800000)
#endif
#ifndef NAN
#define NAN __int_as_float(0x7fc00000)
#endif
__device__ inline float zd_bf16_load(unsigned short h) { return __uint_as_float(((unsigned int)h) << 16); }
__device__ inline unsigned short zd_bf16_store(float f) {
  unsigned int u = __float_as_uint(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (unsigned short)((u >> 16) | 0x40u);
  return (unsigned short)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}
__device__ inline float zd_bf16_round(float f) { return zd_bf16_load(zd_bf16_store(f)); }
__device__ inline float4 zd_bf16x4_load(const unsigned short* p) {
  const uint2 r = *reinterpret_cast<const uint2*>(p);
  return make_float4(__uint_as_float(r.x << 16), __uint_as_float(r.x & 0xffff0000u), __uint_as_float(r.y << 16), __uint_as_float(r.y & 0xffff0000u));
}
__device__ inline void zd_bf16x4_store(unsigned short* p, float4 v) {
  *reinterpret_cast<uint2*>(p) = make_uint2(zd_bf16_store(v.x) | ((unsigned)zd_bf16_store(v.y) << 16), zd_bf16_store(v.z) | ((unsigned)zd_bf16_store(v.w) << 16));
}
// zyx_dist: arch sm_90a
#ifndef ZD_TC_HELPERS
#define ZD_TC_HELPERS
__device__ __forceinline__ unsigned zd_smem(const void* p) {
  unsigned a;
  asm("{ .reg .u64 t; cvta.to.shared.u64 t, %1; cvt.u32.u64 %0, t; }" : "=r"(a) : "l"(p));
  return a;
}
__device__ __forceinline__ void zd_cp_async(void* dst, const void* src, bool inside) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" :: "r"(zd_smem(dst)), "l"(src), "r"(inside ? 16 : 0));
}
__device__ __forceinline__ void zd_cp_commit() { asm volatile("cp.async.commit_group;"); }
#endif
#ifndef ZD_WGMMA_HELPERS
#define ZD_WGMMA_HELPERS
__device__ __forceinline__ unsigned zd_swz(unsigned off) { return off ^ (((off >> 7) & 7) << 4); }
__device__ __forceinline__ unsigned long long zd_desc(unsigned addr, unsigned lbo, unsigned sbo) {
  return (unsigned long long)((addr & 0x3FFFF) >> 4) | ((unsigned long long)((lbo >> 4) & 0x3FFF) << 16)
       | ((unsigned long long)((sbo >> 4) & 0x3FFF) << 32) | (1ull << 62);  // 128-byte swizzle
}
__device__ __forceinline__ void zd_cp_async_s(unsigned dst, const void* src, bool inside) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" :: "r"(dst), "l"(src), "r"(inside ? 16 : 0));
}
__device__ __forceinline__ void zd_st_shared_u16(unsigned dst, unsigned short v) {
  asm volatile("st.shared.u16 [%0], %1;" :: "r"(dst), "h"(v) : "memory");
}
#endif

// zyx_dist: dynamic shared bytes 99328
extern "C" __global__ void __launch_bounds__(256, 1) kc_a0353a8e57f3(const unsigned short* __restrict__ in0, const unsigned short* __restrict__ in1, unsigned short* __restrict__ out0) {
  extern __shared__ __align__(16) unsigned char zd_pool[];
  const unsigned base = (zd_smem(zd_pool) + 1023u) & ~1023u;  // swizzle atoms are 1024-aligned
  const int tid = threadIdx.x, wg = tid >> 7, w = (tid >> 5) & 3, l = tid & 31;
  const int bz = (int)(blockIdx.x / 8);
  const int tile = blockIdx.x % 8;
  const int panel = tile / 64, inpanel = tile % 64;
  const int prows = min(8, 1 - panel * 8);
  const int bi = (int)(panel * 8 + inpanel % prows) * 128, bj = (int)(inpanel / prows) * 128;
  float d[64];
  #pragma unroll
  for (int i = 0; i < 64; i++) d[i] = 0.0f;
  const int steps = 16;
  #pragma unroll
  for (int f = 0; f < 2; f++) {  // the first 2 k-steps in flight
    if (f < steps) {
      const unsigned sa = base + f * 32768u, sb = sa + 16384u;
      const int k0 = (int)f * 64;
    #pragma unroll
    for (int r = 0; r < 4; r++) {
      const int e = tid + r * 256;
      const int kc = e / 16, row = (e % 16) << 3;
      const unsigned off = (row >> 6) * 8192 + kc * 128 + (row & 63) * 2;
      const int gi = bi + row, gk = k0 + kc;
      const bool inside = gi < 64 && gk < 1024;
      if (true)
        zd_cp_async_s(sa + zd_swz(off), inside ? (const void*)(in1 + ((bz/12)*786432+gk*768+(bz%12)*64+gi)) : (const void*)in1, inside);
    }
    #pragma unroll
    for (int r = 0; r < 4; r++) {
      const int e = tid + r * 256;
      const int kc = e / 16, row = (e % 16) << 3;
      const unsigned off = (row >> 6) * 8192 + kc * 128 + (row & 63) * 2;
      const int gj = bj + row, gk = k0 + kc;
      const bool inside = gj < 1024 && gk < 1024;
      if (true)
        zd_cp_async_s(sb + zd_swz(off), inside ? (const void*)(in0 + (gk*1024+gj+bz*1048576)) : (const void*)in0, inside);
    }
    }
    zd_cp_commit();
  }
  for (int s = 0; s < steps; s++) {
    asm volatile("cp.async.wait_group 1;" ::: "memory");  // this step's copies have landed
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");  // ... and are visible to wgmma's reads
    __syncthreads();  // for every thread; and every wgmma but the last one's is done with its stage
    {
      const int f = s + 2;
      if (f < steps) {  // into the stage a finished wgmma read (the last step's if deep, else the one before)
        const unsigned sa = base + (f % 3) * 32768u, sb = sa + 16384u;
        const int k0 = (int)f * 64;
    #pragma unroll
    for (int r = 0; r < 4; r++) {
      const int e = tid + r * 256;
      const int kc = e / 16, row = (e % 16) << 3;
      const unsigned off = (row >> 6) * 8192 + kc * 128 + (row & 63) * 2;
      const int gi = bi + row, gk = k0 + kc;
      const bool inside = gi < 64 && gk < 1024;
      if (true)
        zd_cp_async_s(sa + zd_swz(off), inside ? (const void*)(in1 + ((bz/12)*786432+gk*768+(bz%12)*64+gi)) : (const void*)in1, inside);
    }
    #pragma unroll
    for (int r = 0; r < 4; r++) {
      const int e = tid + r * 256;
      const int kc = e / 16, row = (e % 16) << 3;
      const unsigned off = (row >> 6) * 8192 + kc * 128 + (row & 63) * 2;
      const int gj = bj + row, gk = k0 + kc;
      const bool inside = gj < 1024 && gk < 1024;
      if (true)
        zd_cp_async_s(sb + zd_swz(off), inside ? (const void*)(in0 + (gk*1024+gj+bz*1048576)) : (const void*)in0, inside);
    }
      }
      zd_cp_commit();
    }
    const unsigned sa = base + (s % 3) * 32768u, sb = sa + 16384u;
    asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
    #pragma unroll
    for (int kk = 0; kk < 4; kk++) {
      const unsigned long long da = zd_desc(sa + wg * 8192 + kk * 2048, 8192, 1024);
      const unsigned long long db = zd_desc(sb + kk * 2048, 8192, 1024);
      asm volatile("{ .reg .pred p; setp.ne.b32 p, %66, 0; wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, %64, %65, p, 1, 1, 1, 1; }" : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]) : "l"(da), "l"(db), "r"(1) : "memory");
    }
    asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
    asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
  }
  asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
  #pragma unroll
  for (int i = 0; i < 64; i++) {  // accumulator i: row w*16 + l/4 (+8), column 8*(i/4) + 2*(l%4) (+1)
    const int gi = bi + wg * 64 + w * 16 + (l >> 2) + (((i >> 1) & 1) << 3);
    const int gj = bj + ((i >> 2) << 3) + ((l & 3) << 1) + (i & 1);
    if (gi < 64 && gj < 1024) {
      const float acc = d[i];
        const int gid = ((bz/12)*786432+gj*768+(bz%12)*64+gi);
        out0[gid] = zd_bf16_store(acc);
    }
  }
}
// ==== kc_9587561f7c2c: 0.372 ms per step in 12 launches, gws=(98304,) lws=(256,) opts=KernelOpts(lws=256, elems=1, vec=1, group=0, unroll=1, tile_k=8, prefetch=0, cache=1, lanes=0, stages=3, tile=1, cpu_rows=0, wgmma=2)
// IR outputs (8,) row 0
//    0 ('in', 1, (8, 1024, 768), 'bfloat16')
//    1 ('reshape', '(8192, 1, 768)', (8192, 1, 768), 'bfloat16', (0,))
//    2 ('expand', '(8192, 768, 768)', (8192, 768, 768), 'bfloat16', (1,))
//    3 ('in', 0, (768, 768), 'bfloat16')
//    4 ('permute', '(1, 0)', (768, 768), 'bfloat16', (3,))
//    5 ('reshape', '(1, 768, 768)', (1, 768, 768), 'bfloat16', (4,))
//    6 ('expand', '(8192, 768, 768)', (8192, 768, 768), 'bfloat16', (5,))
//    7 ('binary', "<BinaryOp.MUL: 'mul'>", (8192, 768, 768), 'bfloat16', (2, 6))
//    8 ('reduce', "(<ReduceOp.SUM: 'sum'>, (2,))", (8192, 768, 1), 'bfloat16', (7,))
#ifndef INFINITY
#define INFINITY __int_as_float(0x7f800000)
#endif
#ifndef NAN
#define NAN __int_as_float(0x7fc00000)
#endif
__device__ inline float zd_bf16_load(unsigned short h) { return __uint_as_float(((unsigned int)h) << 16); }
__device__ inline unsigned short zd_bf16_store(float f) {
  unsigned int u = __float_as_uint(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (unsigned short)((u >> 16) | 0x40u);
  return (unsigned short)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}
__device__ inline float zd_bf16_round(float f) { return zd_bf16_load(zd_bf16_store(f)); }
__device__ inline float4 zd_bf16x4_load(const unsigned short* p) {
  const uint2 r = *reinterpret_cast<const uint2*>(p);
  return make_float4(__uint_as_float(r.x << 16), __uint_as_float(r.x & 0xffff0000u), __uint_as_float(r.y << 16), __uint_as_float(r.y & 0xffff0000u));
}
__device__ inline void zd_bf16x4_store(unsigned short* p, float4 v) {
  *reinterpret_cast<uint2*>(p) = make_uint2(zd_bf16_store(v.x) | ((unsigned)zd_bf16_store(v.y) << 16), zd_bf16_store(v.z) | ((unsigned)zd_bf16_store(v.w) << 16));
}
// zyx_dist: arch sm_90a
#ifndef ZD_TC_HELPERS
#define ZD_TC_HELPERS
__device__ __forceinline__ unsigned zd_smem(const void* p) {
  unsigned a;
  asm("{ .reg .u64 t; cvta.to.shared.u64 t, %1; cvt.u32.u64 %0, t; }" : "=r"(a) : "l"(p));
  return a;
}
__device__ __forceinline__ void zd_cp_async(void* dst, const void* src, bool inside) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" :: "r"(zd_smem(dst)), "l"(src), "r"(inside ? 16 : 0));
}
__device__ __forceinline__ void zd_cp_commit() { asm volatile("cp.async.commit_group;"); }
#endif
#ifndef ZD_WGMMA_HELPERS
#define ZD_WGMMA_HELPERS
__device__ __forceinline__ unsigned zd_swz(unsigned off) { return off ^ (((off >> 7) & 7) << 4); }
__device__ __forceinline__ unsigned long long zd_desc(unsigned addr, unsigned lbo, unsigned sbo) {
  return (unsigned long long)((addr & 0x3FFFF) >> 4) | ((unsigned long long)((lbo >> 4) & 0x3FFF) << 16)
       | ((unsigned long long)((sbo >> 4) & 0x3FFF) << 32) | (1ull << 62);  // 128-byte swizzle
}
__device__ __forceinline__ void zd_cp_async_s(unsigned dst, const void* src, bool inside) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" :: "r"(dst), "l"(src), "r"(inside ? 16 : 0));
}
__device__ __forceinline__ void zd_st_shared_u16(unsigned dst, unsigned short v) {
  asm volatile("st.shared.u16 [%0], %1;" :: "r"(dst), "h"(v) : "memory");
}
#endif
#ifndef ZD_TMA_HELPERS
#define ZD_TMA_HELPERS
struct __align__(64) zd_tmap { unsigned long long v[16]; };  // a CUtensorMap, passed by value
__device__ __forceinline__ void zd_tma2(unsigned dst, const zd_tmap* map, unsigned bar, int c0, int c1) {
  asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];"
               :: "r"(dst), "l"((unsigned long long)map), "r"(c0), "r"(c1), "r"(bar) : "memory");
}
__device__ __forceinline__ void zd_tma3(unsigned dst, const zd_tmap* map, unsigned bar, int c0, int c1, int c2) {
  asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4}], [%5];"
               :: "r"(dst), "l"((unsigned long long)map), "r"(c0), "r"(c1), "r"(c2), "r"(bar) : "memory");
}
__device__ __forceinline__ void zd_tma4(unsigned dst, const zd_tmap* map, unsigned bar, int c0, int c1, int c2, int c3) {
  asm volatile("cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4, %5}], [%6];"
               :: "r"(dst), "l"((unsigned long long)map), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(bar) : "memory");
}
__device__ __forceinline__ void zd_tma5(unsigned dst, const zd_tmap* map, unsigned bar, int c0, int c1, int c2, int c3, int c4) {
  asm volatile("cp.async.bulk.tensor.5d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4, %5, %6}], [%7];"
               :: "r"(dst), "l"((unsigned long long)map), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(c4), "r"(bar) : "memory");
}
__device__ __forceinline__ void zd_bar_init(unsigned bar, unsigned count) {
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
#endif
// zyx_dist: dynamic shared bytes 99328
// zyx_dist: tensor map 1 bf16 0 2 768 8192 1536 64 128
// zyx_dist: tensor map 0 bf16 0 2 768 768 1536 64 64
extern "C" __global__ void __launch_bounds__(256, 1) kc_9587561f7c2c(const unsigned short* __restrict__ in0, const unsigned short* __restrict__ in1, unsigned short* __restrict__ out0, const __grid_constant__ zd_tmap zd_tma_a, const __grid_constant__ zd_tmap zd_tma_b) {
  extern __shared__ __align__(16) unsigned char zd_pool[];
  const unsigned base = (zd_smem(zd_pool) + 1023u) & ~1023u;  // swizzle atoms are 1024-aligned
  const int tid = threadIdx.x, wg = tid >> 7, w = (tid >> 5) & 3, l = tid & 31;
  const int bz = (int)(blockIdx.x / 384);
  const int tile = blockIdx.x % 384;
  const int panel = tile / 48, inpanel = tile % 48;
  const int prows = min(8, 64 - panel * 8);
  const int bi = (int)(panel * 8 + inpanel % prows) * 128, bj = (int)(inpanel / prows) * 128;
  __shared__ __align__(8) unsigned long long zd_full[3];  // per stage: its tensor-map copies landed
  const unsigned bars = zd_smem(zd_full);
  if (tid == 0) {
    for (int i = 0; i < 3; i++) zd_bar_init(bars + i * 8u, 1);
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();  // the barriers are set up before anyone waits on them
  float d[64];
  #pragma unroll
  for (int i = 0; i < 64; i++) d[i] = 0.0f;
  const int steps = 12;
  #pragma unroll
  for (int f = 0; f < 1; f++) {  // the first 1 k-steps in flight
    if (f < steps) {
      const unsigned sa = base + f * 32768u, sb = sa + 16384u;
      const int k0 = (int)f * 64;
    if (tid == 0) {
      const unsigned bar = bars + (f % 3) * 8u;
      zd_bar_expect(bar, 32768u);
      zd_tma2(sa, &zd_tma_a, bar, (int)(k0), (int)(bi));
      zd_tma2(sb + 0u, &zd_tma_b, bar, (int)(bj) + 0, (int)(k0));
      zd_tma2(sb + 8192u, &zd_tma_b, bar, (int)(bj) + 64, (int)(k0));
    }
    }
    
  }
  for (int s = 0; s < steps; s++) {
    __syncthreads();  // for every thread; and every wgmma but the last one's is done with its stage
    {
      const int f = s + 1;
      if (f < steps) {  // into the stage a finished wgmma read (the last step's if deep, else the one before)
        const unsigned sa = base + (f % 3) * 32768u, sb = sa + 16384u;
        const int k0 = (int)f * 64;
    if (tid == 0) {
      const unsigned bar = bars + (f % 3) * 8u;
      zd_bar_expect(bar, 32768u);
      zd_tma2(sa, &zd_tma_a, bar, (int)(k0), (int)(bi));
      zd_tma2(sb + 0u, &zd_tma_b, bar, (int)(bj) + 0, (int)(k0));
      zd_tma2(sb + 8192u, &zd_tma_b, bar, (int)(bj) + 64, (int)(k0));
    }
      }
      
    }
    zd_bar_wait(bars + (s % 3) * 8u, (s / 3) & 1);  // the tensor-map copies have landed
    const unsigned sa = base + (s % 3) * 32768u, sb = sa + 16384u;
    asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
    #pragma unroll
    for (int kk = 0; kk < 4; kk++) {
      const unsigned long long da = zd_desc(sa + wg * 64 * 128 + kk * 32, 16, 1024);
      const unsigned long long db = zd_desc(sb + kk * 2048, 8192, 1024);
      asm volatile("{ .reg .pred p; setp.ne.b32 p, %66, 0; wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, %64, %65, p, 1, 1, 0, 1; }" : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]) : "l"(da), "l"(db), "r"(1) : "memory");
    }
    asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
    asm volatile("wgmma.wait_group.sync.aligned 1;" ::: "memory");
  }
  asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
  __syncthreads();  // every warpgroup is done with the stages the tile is staged in
  #pragma unroll
  for (int i = 0; i < 64; i++) {  // accumulator i: row w*16 + l/4 (+8), column 8*(i/4) + 2*(l%4) (+1)
    const int gi = bi + wg * 64 + w * 16 + (l >> 2) + (((i >> 1) & 1) << 3);
    const int gj = bj + ((i >> 2) << 3) + ((l & 3) << 1) + (i & 1);
    if (gi < 8192 && gj < 768) {
      const float acc = d[i];
        unsigned short* zd_st0 = reinterpret_cast<unsigned short*>(zd_pool + (base - zd_smem(zd_pool)) + 0);
        const int zd_l = (int)(gi - bi) * 136 + (int)(gj - bj);
        const int gid = (gi*768+gj);
        zd_st0[zd_l] = zd_bf16_store(acc);
    }
  }
  __syncthreads();  // the whole tile is in shared memory
  for (int e = tid; e < 2048; e += 256) {  // neighbours by neighbours in memory
    const int r = e / 16, c = e % 16 * 8;
    const int gi = bi + r, gj = bj + c;
    if (gi < 8192 && gj < 768) {
      const int gid = (gi*768+gj);
      *reinterpret_cast<uint4*>(out0 + gid) = *reinterpret_cast<const uint4*>(reinterpret_cast<unsigned short*>(zd_pool + (base - zd_smem(zd_pool)) + 0) + r * 136 + c);
    }
  }
}
// ==== kc_470c71a4318e: 0.361 ms per step in 4 launches, gws=(393216,) lws=(256,) opts=KernelOpts(lws=256, elems=1, vec=1, group=0, unroll=1, tile_k=8, prefetch=0, cache=1, lanes=0, stages=3, tile=1, cpu_rows=0, wgmma=2)
// IR outputs (8,) row 0
//    0 ('in', 1, (8, 1024, 768), 'bfloat16')
//    1 ('reshape', '(8192, 1, 768)', (8192, 1, 768), 'bfloat16', (0,))
//    2 ('expand', '(8192, 3072, 768)', (8192, 3072, 768), 'bfloat16', (1,))
//    3 ('in', 0, (768, 3072), 'bfloat16')
//    4 ('permute', '(1, 0)', (3072, 768), 'bfloat16', (3,))
//    5 ('reshape', '(1, 3072, 768)', (1, 3072, 768), 'bfloat16', (4,))
//    6 ('expand', '(8192, 3072, 768)', (8192, 3072, 768), 'bfloat16', (5,))
//    7 ('binary', "<BinaryOp.MUL: 'mul'>", (8192, 3072, 768), 'bfloat16', (2, 6))
//    8 ('reduce', "(<ReduceOp.SUM: 'sum'>, (2,))", (8192, 3072, 1), 'bfloat16', (7,))
#ifndef INFINITY
#define INFINITY __int_as_float(0x7f800000)
#endif
#ifndef NAN
#define NAN __int_as_float(0x7fc00000)
#endif
__device__ inline float zd_bf16_load(unsigned short h) { return __uint_as_float(((unsigned int)h) << 16); }
__device__ inline unsigned short zd_bf16_store(float f) {
  unsigned int u = __float_as_uint(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (unsigned short)((u >> 16) | 0x40u);
  return (unsigned short)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}
__device__ inline float zd_bf16_round(float f) { return zd_bf16_load(zd_bf16_store(f)); }
__device__ inline float4 zd_bf16x4_load(const unsigned short* p) {
  const uint2 r = *reinterpret_cast<const uint2*>(p);
  return make_float4(__uint_as_float(r.x << 16), __uint_as_float(r.x & 0xffff0000u), __uint_as_float(r.y << 16), __uint_as_float(r.y & 0xffff0000u));
}
__device__ inline void zd_bf16x4_store(unsigned short* p, float4 v) {
  *reinterpret_cast<uint2*>(p) = make_uint2(zd_bf16_store(v.x) | ((unsigned)zd_bf16_store(v.y) << 16), zd_bf16_store(v.z) | ((unsigned)zd_bf16_store(v.w) << 16));
}
// zyx_dist: arch sm_90a
#ifndef ZD_TC_HELPERS
#define ZD_TC_HELPERS
__device__ __forceinline__ unsigned zd_smem(const void* p) {
  unsigned a;
  asm("{ .reg .u64 t; cvta.to.shared.u64 t, %1; cvt.u32.u64 %0, t; }" : "=r"(a) : "l"(p));
  return a;
}
__device__ __forceinline__ void zd_cp_async(void* dst, const void* src, bool inside) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" :: "r"(zd_smem(dst)), "l"(src), "r"(inside ? 16 : 0));
}
__device__ __forceinline__ void zd_cp_commit() { asm volatile("cp.async.commit_group;"); }
#endif
#ifndef ZD_WGMMA_HELPERS
#define ZD_WGMMA_HELPERS
__device__ __forceinline__ unsigned zd_swz(unsigned off) { return off ^ (((off >> 7) & 7) << 4); }
__device__ __forceinline__ unsigned long long zd_desc(unsigned addr, unsigned lbo, unsigned sbo) {
  return (unsigned long long)((addr & 0x3FFFF) >> 4) | ((unsigned long long)((lbo >> 4) & 0x3FFF) << 16)
       | ((unsigned long long)((sbo >> 4) & 0x3FFF) << 32) | (1ull << 62);  // 128-byte swizzle
}
__device__ __forceinline__ void zd_cp_async_s(unsigned dst, const void* src, bool inside) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" :: "r"(dst), "l"(src), "r"(inside ? 16 : 0));
}
__device__ __forceinline__ void zd_st_shared_u16(unsigned dst, unsigned short v) {
  asm volatile("st.shared.u16 [%0], %1;" :: "r"(dst), "h"(v) : "memory");
}
#endif
#ifndef ZD_TMA_HELPERS
#define ZD_TMA_HELPERS
struct __align__(64) zd_tmap { unsigned long long v[16]; };  // a CUtensorMap, passed by value
__device__ __forceinline__ void zd_tma2(unsigned dst, const zd_tmap* map, unsigned bar, int c0, int c1) {
  asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];"
               :: "r"(dst), "l"((unsigned long long)map), "r"(c0), "r"(c1), "r"(bar) : "memory");
}
__device__ __forceinline__ void zd_tma3(unsigned dst, const zd_tmap* map, unsigned bar, int c0, int c1, int c2) {
  asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4}], [%5];"
               :: "r"(dst), "l"((unsigned long long)map), "r"(c0), "r"(c1), "r"(c2), "r"(bar) : "memory");
}
__device__ __forceinline__ void zd_tma4(unsigned dst, const zd_tmap* map, unsigned bar, int c0, int c1, int c2, int c3) {
  asm volatile("cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4, %5}], [%6];"
               :: "r"(dst), "l"((unsigned long long)map), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(bar) : "memory");
}
__device__ __forceinline__ void zd_tma5(unsigned dst, const zd_tmap* map, unsigned bar, int c0, int c1, int c2, int c3, int c4) {
  asm volatile("cp.async.bulk.tensor.5d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4, %5, %6}], [%7];"
               :: "r"(dst), "l"((unsigned long long)map), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(c4), "r"(bar) : "memory");
}
__device__ __forceinline__ void zd_bar_init(unsigned bar, unsigned count) {
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
#endif
// zyx_dist: dynamic shared bytes 99328
// zyx_dist: tensor map 1 bf16 0 2 768 8192 1536 64 128
// zyx_dist: tensor map 0 bf16 0 2 3072 768 6144 64 64
extern "C" __global__ void __launch_bounds__(256, 1) kc_470c71a4318e(const unsigned short* __restrict__ in0, const unsigned short* __restrict__ in1, unsigned short* __restrict__ out0, const __grid_constant__ zd_tmap zd_tma_a, const __grid_constant__ zd_tmap zd_tma_b) {
  extern __shared__ __align__(16) unsigned char zd_pool[];
  const unsigned base = (zd_smem(zd_pool) + 1023u) & ~1023u;  // swizzle atoms are 1024-aligned
  const int tid = threadIdx.x, wg = tid >> 7, w = (tid >> 5) & 3, l = tid & 31;
  const int bz = (int)(blockIdx.x / 1536);
  const int tile = blockIdx.x % 1536;
  const int panel = tile / 192, inpanel = tile % 192;
  const int prows = min(8, 64 - panel * 8);
  const int bi = (int)(panel * 8 + inpanel % prows) * 128, bj = (int)(inpanel / prows) * 128;
  __shared__ __align__(8) unsigned long long zd_full[3];  // per stage: its tensor-map copies landed
  const unsigned bars = zd_smem(zd_full);
  if (tid == 0) {
    for (int i = 0; i < 3; i++) zd_bar_init(bars + i * 8u, 1);
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();  // the barriers are set up before anyone waits on them
  float d[64];
  #pragma unroll
  for (int i = 0; i < 64; i++) d[i] = 0.0f;
  const int steps = 12;
  #pragma unroll
  for (int f = 0; f < 1; f++) {  // the first 1 k-steps in flight
    if (f < steps) {
      const unsigned sa = base + f * 32768u, sb = sa + 16384u;
      const int k0 = (int)f * 64;
    if (tid == 0) {
      const unsigned bar = bars + (f % 3) * 8u;
      zd_bar_expect(bar, 32768u);
      zd_tma2(sa, &zd_tma_a, bar, (int)(k0), (int)(bi));
      zd_tma2(sb + 0u, &zd_tma_b, bar, (int)(bj) + 0, (int)(k0));
      zd_tma2(sb + 8192u, &zd_tma_b, bar, (int)(bj) + 64, (int)(k0));
    }
    }
    
  }
  for (int s = 0; s < steps; s++) {
    __syncthreads();  // for every thread; and every wgmma but the last one's is done with its stage
    {
      const int f = s + 1;
      if (f < steps) {  // into the stage a finished wgmma read (the last step's if deep, else the one before)
        const unsigned sa = base + (f % 3) * 32768u, sb = sa + 16384u;
        const int k0 = (int)f * 64;
    if (tid == 0) {
      const unsigned bar = bars + (f % 3) * 8u;
      zd_bar_expect(bar, 32768u);
      zd_tma2(sa, &zd_tma_a, bar, (int)(k0), (int)(bi));
      zd_tma2(sb + 0u, &zd_tma_b, bar, (int)(bj) + 0, (int)(k0));
      zd_tma2(sb + 8192u, &zd_tma_b, bar, (int)(bj) + 64, (int)(k0));
    }
      }
      
    }
    zd_bar_wait(bars + (s % 3) * 8u, (s / 3) & 1);  // the tensor-map copies have landed
    const unsigned sa = base + (s % 3) * 32768u, sb = sa + 16384u;
    asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
    #pragma unroll
    for (int kk = 0; kk < 4; kk++) {
      const unsigned long long da = zd_desc(sa + wg * 64 * 128 + kk * 32, 16, 1024);
      const unsigned long long db = zd_desc(sb + kk * 2048, 8192, 1024);
      asm volatile("{ .reg .pred p; setp.ne.b32 p, %66, 0; wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, %64, %65, p, 1, 1, 0, 1; }" : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]) : "l"(da), "l"(db), "r"(1) : "memory");
    }
    asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
    asm volatile("wgmma.wait_group.sync.aligned 1;" ::: "memory");
  }
  asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
  __syncthreads();  // every warpgroup is done with the stages the tile is staged in
  #pragma unroll
  for (int i = 0; i < 64; i++) {  // accumulator i: row w*16 + l/4 (+8), column 8*(i/4) + 2*(l%4) (+1)
    const int gi = bi + wg * 64 + w * 16 + (l >> 2) + (((i >> 1) & 1) << 3);
    const int gj = bj + ((i >> 2) << 3) + ((l & 3) << 1) + (i & 1);
    if (gi < 8192 && gj < 3072) {
      const float acc = d[i];
        unsigned short* zd_st0 = reinterpret_cast<unsigned short*>(zd_pool + (base - zd_smem(zd_pool)) + 0);
        const int zd_l = (int)(gi - bi) * 136 + (int)(gj - bj);
        const int gid = (gi*3072+gj);
        zd_st0[zd_l] = zd_bf16_store(acc);
    }
  }
  __syncthreads();  // the whole tile is in shared memory
  for (int e = tid; e < 2048; e += 256) {  // neighbours by neighbours in memory
    const int r = e / 16, c = e % 16 * 8;
    const int gi = bi + r, gj = bj + c;
    if (gi < 8192 && gj < 3072) {
      const int gid = (gi*3072+gj);
      *reinterpret_cast<uint4*>(out0 + gid) = *reinterpret_cast<const uint4*>(reinterpret_cast<unsigned short*>(zd_pool + (base - zd_smem(zd_pool)) + 0) + r * 136 + c);
    }
  }
}
// ==== kc_d6ac66abdb85: 0.360 ms per step in 4 launches, gws=(393216,) lws=(256,) opts=KernelOpts(lws=256, elems=1, vec=1, group=0, unroll=1, tile_k=8, prefetch=0, cache=1, lanes=0, stages=3, tile=1, cpu_rows=0, wgmma=2)
// IR outputs (8,) row 0
//    0 ('in', 1, (8, 1024, 768), 'bfloat16')
//    1 ('reshape', '(8192, 768, 1)', (8192, 768, 1), 'bfloat16', (0,))
//    2 ('expand', '(8192, 768, 3072)', (8192, 768, 3072), 'bfloat16', (1,))
//    3 ('in', 0, (3072, 768), 'bfloat16')
//    4 ('permute', '(1, 0)', (768, 3072), 'bfloat16', (3,))
//    5 ('reshape', '(1, 768, 3072)', (1, 768, 3072), 'bfloat16', (4,))
//    6 ('expand', '(8192, 768, 3072)', (8192, 768, 3072), 'bfloat16', (5,))
//    7 ('binary', "<BinaryOp.MUL: 'mul'>", (8192, 768, 3072), 'bfloat16', (2, 6))
//    8 ('reduce', "(<ReduceOp.SUM: 'sum'>, (1,))", (8192, 1, 3072), 'bfloat16', (7,))
#ifndef INFINITY
#define INFINITY __int_as_float(0x7f800000)
#endif
#ifndef NAN
#define NAN __int_as_float(0x7fc00000)
#endif
__device__ inline float zd_bf16_load(unsigned short h) { return __uint_as_float(((unsigned int)h) << 16); }
__device__ inline unsigned short zd_bf16_store(float f) {
  unsigned int u = __float_as_uint(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (unsigned short)((u >> 16) | 0x40u);
  return (unsigned short)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}
__device__ inline float zd_bf16_round(float f) { return zd_bf16_load(zd_bf16_store(f)); }
__device__ inline float4 zd_bf16x4_load(const unsigned short* p) {
  const uint2 r = *reinterpret_cast<const uint2*>(p);
  return make_float4(__uint_as_float(r.x << 16), __uint_as_float(r.x & 0xffff0000u), __uint_as_float(r.y << 16), __uint_as_float(r.y & 0xffff0000u));
}
__device__ inline void zd_bf16x4_store(unsigned short* p, float4 v) {
  *reinterpret_cast<uint2*>(p) = make_uint2(zd_bf16_store(v.x) | ((unsigned)zd_bf16_store(v.y) << 16), zd_bf16_store(v.z) | ((unsigned)zd_bf16_store(v.w) << 16));
}
// zyx_dist: arch sm_90a
#ifndef ZD_TC_HELPERS
#define ZD_TC_HELPERS
__device__ __forceinline__ unsigned zd_smem(const void* p) {
  unsigned a;
  asm("{ .reg .u64 t; cvta.to.shared.u64 t, %1; cvt.u32.u64 %0, t; }" : "=r"(a) : "l"(p));
  return a;
}
__device__ __forceinline__ void zd_cp_async(void* dst, const void* src, bool inside) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" :: "r"(zd_smem(dst)), "l"(src), "r"(inside ? 16 : 0));
}
__device__ __forceinline__ void zd_cp_commit() { asm volatile("cp.async.commit_group;"); }
#endif
#ifndef ZD_WGMMA_HELPERS
#define ZD_WGMMA_HELPERS
__device__ __forceinline__ unsigned zd_swz(unsigned off) { return off ^ (((off >> 7) & 7) << 4); }
__device__ __forceinline__ unsigned long long zd_desc(unsigned addr, unsigned lbo, unsigned sbo) {
  return (unsigned long long)((addr & 0x3FFFF) >> 4) | ((unsigned long long)((lbo >> 4) & 0x3FFF) << 16)
       | ((unsigned long long)((sbo >> 4) & 0x3FFF) << 32) | (1ull << 62);  // 128-byte swizzle
}
__device__ __forceinline__ void zd_cp_async_s(unsigned dst, const void* src, bool inside) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" :: "r"(dst), "l"(src), "r"(inside ? 16 : 0));
}
__device__ __forceinline__ void zd_st_shared_u16(unsigned dst, unsigned short v) {
  asm volatile("st.shared.u16 [%0], %1;" :: "r"(dst), "h"(v) : "memory");
}
#endif
#ifndef ZD_TMA_HELPERS
#define ZD_TMA_HELPERS
struct __align__(64) zd_tmap { unsigned long long v[16]; };  // a CUtensorMap, passed by value
__device__ __forceinline__ void zd_tma2(unsigned dst, const zd_tmap* map, unsigned bar, int c0, int c1) {
  asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];"
               :: "r"(dst), "l"((unsigned long long)map), "r"(c0), "r"(c1), "r"(bar) : "memory");
}
__device__ __forceinline__ void zd_tma3(unsigned dst, const zd_tmap* map, unsigned bar, int c0, int c1, int c2) {
  asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4}], [%5];"
               :: "r"(dst), "l"((unsigned long long)map), "r"(c0), "r"(c1), "r"(c2), "r"(bar) : "memory");
}
__device__ __forceinline__ void zd_tma4(unsigned dst, const zd_tmap* map, unsigned bar, int c0, int c1, int c2, int c3) {
  asm volatile("cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4, %5}], [%6];"
               :: "r"(dst), "l"((unsigned long long)map), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(bar) : "memory");
}
__device__ __forceinline__ void zd_tma5(unsigned dst, const zd_tmap* map, unsigned bar, int c0, int c1, int c2, int c3, int c4) {
  asm volatile("cp.async.bulk.tensor.5d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4, %5, %6}], [%7];"
               :: "r"(dst), "l"((unsigned long long)map), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(c4), "r"(bar) : "memory");
}
__device__ __forceinline__ void zd_bar_init(unsigned bar, unsigned count) {
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
#endif
// zyx_dist: dynamic shared bytes 99328
// zyx_dist: tensor map 1 bf16 0 2 768 8192 1536 64 128
// zyx_dist: tensor map 0 bf16 0 2 768 3072 1536 64 128
extern "C" __global__ void __launch_bounds__(256, 1) kc_d6ac66abdb85(const unsigned short* __restrict__ in0, const unsigned short* __restrict__ in1, unsigned short* __restrict__ out0, const __grid_constant__ zd_tmap zd_tma_a, const __grid_constant__ zd_tmap zd_tma_b) {
  extern __shared__ __align__(16) unsigned char zd_pool[];
  const unsigned base = (zd_smem(zd_pool) + 1023u) & ~1023u;  // swizzle atoms are 1024-aligned
  const int tid = threadIdx.x, wg = tid >> 7, w = (tid >> 5) & 3, l = tid & 31;
  const int bz = (int)(blockIdx.x / 1536);
  const int tile = blockIdx.x % 1536;
  const int panel = tile / 192, inpanel = tile % 192;
  const int prows = min(8, 64 - panel * 8);
  const int bi = (int)(panel * 8 + inpanel % prows) * 128, bj = (int)(inpanel / prows) * 128;
  __shared__ __align__(8) unsigned long long zd_full[3];  // per stage: its tensor-map copies landed
  const unsigned bars = zd_smem(zd_full);
  if (tid == 0) {
    for (int i = 0; i < 3; i++) zd_bar_init(bars + i * 8u, 1);
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();  // the barriers are set up before anyone waits on them
  float d[64];
  #pragma unroll
  for (int i = 0; i < 64; i++) d[i] = 0.0f;
  const int steps = 12;
  #pragma unroll
  for (int f = 0; f < 1; f++) {  // the first 1 k-steps in flight
    if (f < steps) {
      const unsigned sa = base + f * 32768u, sb = sa + 16384u;
      const int k0 = (int)f * 64;
    if (tid == 0) {
      const unsigned bar = bars + (f % 3) * 8u;
      zd_bar_expect(bar, 32768u);
      zd_tma2(sa, &zd_tma_a, bar, (int)(k0), (int)(bi));
      zd_tma2(sb, &zd_tma_b, bar, (int)(k0), (int)(bj));
    }
    }
    
  }
  for (int s = 0; s < steps; s++) {
    __syncthreads();  // for every thread; and every wgmma but the last one's is done with its stage
    {
      const int f = s + 1;
      if (f < steps) {  // into the stage a finished wgmma read (the last step's if deep, else the one before)
        const unsigned sa = base + (f % 3) * 32768u, sb = sa + 16384u;
        const int k0 = (int)f * 64;
    if (tid == 0) {
      const unsigned bar = bars + (f % 3) * 8u;
      zd_bar_expect(bar, 32768u);
      zd_tma2(sa, &zd_tma_a, bar, (int)(k0), (int)(bi));
      zd_tma2(sb, &zd_tma_b, bar, (int)(k0), (int)(bj));
    }
      }
      
    }
    zd_bar_wait(bars + (s % 3) * 8u, (s / 3) & 1);  // the tensor-map copies have landed
    const unsigned sa = base + (s % 3) * 32768u, sb = sa + 16384u;
    asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
    #pragma unroll
    for (int kk = 0; kk < 4; kk++) {
      const unsigned long long da = zd_desc(sa + wg * 64 * 128 + kk * 32, 16, 1024);
      const unsigned long long db = zd_desc(sb + kk * 32, 16, 1024);
      asm volatile("{ .reg .pred p; setp.ne.b32 p, %66, 0; wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, %64, %65, p, 1, 1, 0, 0; }" : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]) : "l"(da), "l"(db), "r"(1) : "memory");
    }
    asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
    asm volatile("wgmma.wait_group.sync.aligned 1;" ::: "memory");
  }
  asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
  __syncthreads();  // every warpgroup is done with the stages the tile is staged in
  #pragma unroll
  for (int i = 0; i < 64; i++) {  // accumulator i: row w*16 + l/4 (+8), column 8*(i/4) + 2*(l%4) (+1)
    const int gi = bi + wg * 64 + w * 16 + (l >> 2) + (((i >> 1) & 1) << 3);
    const int gj = bj + ((i >> 2) << 3) + ((l & 3) << 1) + (i & 1);
    if (gi < 8192 && gj < 3072) {
      const float acc = d[i];
        unsigned short* zd_st0 = reinterpret_cast<unsigned short*>(zd_pool + (base - zd_smem(zd_pool)) + 0);
        const int zd_l = (int)(gi - bi) * 136 + (int)(gj - bj);
        const int gid = (gi*3072+gj);
        zd_st0[zd_l] = zd_bf16_store(acc);
    }
  }
  __syncthreads();  // the whole tile is in shared memory
  for (int e = tid; e < 2048; e += 256) {  // neighbours by neighbours in memory
    const int r = e / 16, c = e % 16 * 8;
    const int gi = bi + r, gj = bj + c;
    if (gi < 8192 && gj < 3072) {
      const int gid = (gi*3072+gj);
      *reinterpret_cast<uint4*>(out0 + gid) = *reinterpret_cast<const uint4*>(reinterpret_cast<unsigned short*>(zd_pool + (base - zd_smem(zd_pool)) + 0) + r * 136 + c);
    }
  }
}
// ==== kc_bd982c6b021a: 0.359 ms per step in 4 launches, gws=(196608,) lws=(256,) opts=KernelOpts(lws=256, elems=1, vec=1, group=0, unroll=1, tile_k=8, prefetch=0, cache=1, lanes=0, stages=3, tile=2, cpu_rows=0, wgmma=2)
// IR outputs (11,) row 0
//    0 ('in', 1, (8, 12, 1024, 1024), 'bfloat16')
//    1 ('reshape', '(8, 12, 1024, 1024, 1)', (8, 12, 1024, 1024, 1), 'bfloat16', (0,))
//    2 ('permute', '(0, 3, 1, 4, 2)', (8, 1024, 12, 1, 1024), 'bfloat16', (1,))
//    3 ('expand', '(8, 1024, 12, 64, 1024)', (8, 1024, 12, 64, 1024), 'bfloat16', (2,))
//    4 ('in', 0, (8192, 768, 1), 'bfloat16')
//    5 ('reshape', '(8, 1024, 12, 64)', (8, 1024, 12, 64), 'bfloat16', (4,))
//    6 ('permute', '(0, 2, 1, 3)', (8, 12, 1024, 64), 'bfloat16', (5,))
//    7 ('reshape', '(8, 12, 1024, 1, 64)', (8, 12, 1024, 1, 64), 'bfloat16', (6,))
//    8 ('permute', '(0, 3, 1, 4, 2)', (8, 1, 12, 64, 1024), 'bfloat16', (7,))
//    9 ('expand', '(8, 1024, 12, 64, 1024)', (8, 1024, 12, 64, 1024), 'bfloat16', (8,))
//   10 ('binary', "<BinaryOp.MUL: 'mul'>", (8, 1024, 12, 64, 1024), 'bfloat16', (3, 9))
//   11 ('reduce', "(<ReduceOp.SUM: 'sum'>, (4,))", (8, 1024, 12, 64, 1), 'bfloat16', (10,))
#ifndef INFINITY
#define INFINITY __int_as_float(0x7f800000)
#endif
#ifndef NAN
#define NAN __int_as_float(0x7fc00000)
#endif
__device__ inline float zd_bf16_load(unsigned short h) { return __uint_as_float(((unsigned int)h) << 16); }
__device__ inline unsigned short zd_bf16_store(float f) {
  unsigned int u = __float_as_uint(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (unsigned short)((u >> 16) | 0x40u);
  return (unsigned short)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}
__device__ inline float zd_bf16_round(float f) { return zd_bf16_load(zd_bf16_store(f)); }
__device__ inline float4 zd_bf16x4_load(const unsigned short* p) {
  const uint2 r = *reinterpret_cast<const uint2*>(p);
  return make_float4(__uint_as_float(r.x << 16), __uint_as_float(r.x & 0xffff0000u), __uint_as_float(r.y << 16), __uint_as_float(r.y & 0xffff0000u));
}
__device__ inline void zd_bf16x4_store(unsigned short* p, float4 v) {
  *reinterpret_cast<uint2*>(p) = make_uint2(zd_bf16_store(v.x) | ((unsigned)zd_bf16_store(v.y) << 16), zd_bf16_store(v.z) | ((unsigned)zd_bf16_store(v.w) << 16));
}
// zyx_dist: arch sm_90a
#ifndef ZD_TC_HELPERS
#define ZD_TC_HELPERS
__device__ __forceinline__ unsigned zd_smem(const void* p) {
  unsigned a;
  asm("{ .reg .u64 t; cvta.to.shared.u64 t, %1; cvt.u32.u64 %0, t; }" : "=r"(a) : "l"(p));
  return a;
}
__device__ __forceinline__ void zd_cp_async(void* dst, const void* src, bool inside) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" :: "r"(zd_smem(dst)), "l"(src), "r"(inside ? 16 : 0));
}
__device__ __forceinline__ void zd_cp_commit() { asm volatile("cp.async.commit_group;"); }
#endif
#ifndef ZD_WGMMA_HELPERS
#define ZD_WGMMA_HELPERS
__device__ __forceinline__ unsigned zd_swz(unsigned off) { return off ^ (((off >> 7) & 7) << 4); }
__device__ __forceinline__ unsigned long long zd_desc(unsigned addr, unsigned lbo, unsigned sbo) {
  return (unsigned long long)((addr & 0x3FFFF) >> 4) | ((unsigned long long)((lbo >> 4) & 0x3FFF) << 16)
       | ((unsigned long long)((sbo >> 4) & 0x3FFF) << 32) | (1ull << 62);  // 128-byte swizzle
}
__device__ __forceinline__ void zd_cp_async_s(unsigned dst, const void* src, bool inside) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" :: "r"(dst), "l"(src), "r"(inside ? 16 : 0));
}
__device__ __forceinline__ void zd_st_shared_u16(unsigned dst, unsigned short v) {
  asm volatile("st.shared.u16 [%0], %1;" :: "r"(dst), "h"(v) : "memory");
}
#endif
#ifndef ZD_TMA_HELPERS
#define ZD_TMA_HELPERS
struct __align__(64) zd_tmap { unsigned long long v[16]; };  // a CUtensorMap, passed by value
__device__ __forceinline__ void zd_tma2(unsigned dst, const zd_tmap* map, unsigned bar, int c0, int c1) {
  asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];"
               :: "r"(dst), "l"((unsigned long long)map), "r"(c0), "r"(c1), "r"(bar) : "memory");
}
__device__ __forceinline__ void zd_tma3(unsigned dst, const zd_tmap* map, unsigned bar, int c0, int c1, int c2) {
  asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4}], [%5];"
               :: "r"(dst), "l"((unsigned long long)map), "r"(c0), "r"(c1), "r"(c2), "r"(bar) : "memory");
}
__device__ __forceinline__ void zd_tma4(unsigned dst, const zd_tmap* map, unsigned bar, int c0, int c1, int c2, int c3) {
  asm volatile("cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4, %5}], [%6];"
               :: "r"(dst), "l"((unsigned long long)map), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(bar) : "memory");
}
__device__ __forceinline__ void zd_tma5(unsigned dst, const zd_tmap* map, unsigned bar, int c0, int c1, int c2, int c3, int c4) {
  asm volatile("cp.async.bulk.tensor.5d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4, %5, %6}], [%7];"
               :: "r"(dst), "l"((unsigned long long)map), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(c4), "r"(bar) : "memory");
}
__device__ __forceinline__ void zd_bar_init(unsigned bar, unsigned count) {
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
#endif
// zyx_dist: dynamic shared bytes 74752
// zyx_dist: tensor map 1 bf16 0 3 1024 1024 96 2048 2097152 64 64 1
// zyx_dist: tensor map 0 bf16 0 4 64 1024 12 8 1536 128 1572864 64 64 1 1
extern "C" __global__ void __launch_bounds__(256, 3) kc_bd982c6b021a(const unsigned short* __restrict__ in0, const unsigned short* __restrict__ in1, unsigned short* __restrict__ out0, const __grid_constant__ zd_tmap zd_tma_a, const __grid_constant__ zd_tmap zd_tma_b) {
  extern __shared__ __align__(16) unsigned char zd_pool[];
  const unsigned base = (zd_smem(zd_pool) + 1023u) & ~1023u;  // swizzle atoms are 1024-aligned
  const int tid = threadIdx.x, wg = tid >> 7, w = (tid >> 5) & 3, l = tid & 31;
  const int bz = (int)(blockIdx.x / 8);
  const int tile = blockIdx.x % 8;
  const int panel = tile / 8, inpanel = tile % 8;
  const int prows = min(8, 8 - panel * 8);
  const int bi = (int)(panel * 8 + inpanel % prows) * 128, bj = (int)(inpanel / prows) * 64;
  const int zd_tma_a_c0 = (int)bz;
  const int zd_tma_b_c0 = (int)(bz % 12); const int zd_tma_b_c1 = (int)(bz / 12);
  __shared__ __align__(8) unsigned long long zd_full[3];  // per stage: its tensor-map copies landed
  const unsigned bars = zd_smem(zd_full);
  if (tid == 0) {
    for (int i = 0; i < 3; i++) zd_bar_init(bars + i * 8u, 1);
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();  // the barriers are set up before anyone waits on them
  float d[32];
  #pragma unroll
  for (int i = 0; i < 32; i++) d[i] = 0.0f;
  const int steps = 16;
  #pragma unroll
  for (int f = 0; f < 1; f++) {  // the first 1 k-steps in flight
    if (f < steps) {
      const unsigned sa = base + f * 24576u, sb = sa + 16384u;
      const int k0 = (int)f * 64;
    if (tid == 0) {
      const unsigned bar = bars + (f % 3) * 8u;
      zd_bar_expect(bar, 24576u);
      zd_tma3(sa + 0u, &zd_tma_a, bar, (int)(bi) + 0, (int)(k0), zd_tma_a_c0);
      zd_tma3(sa + 8192u, &zd_tma_a, bar, (int)(bi) + 64, (int)(k0), zd_tma_a_c0);
      zd_tma4(sb + 0u, &zd_tma_b, bar, (int)(bj) + 0, (int)(k0), zd_tma_b_c0, zd_tma_b_c1);
    }
    }
    
  }
  for (int s = 0; s < steps; s++) {
    __syncthreads();  // for every thread; and every wgmma but the last one's is done with its stage
    {
      const int f = s + 1;
      if (f < steps) {  // into the stage a finished wgmma read (the last step's if deep, else the one before)
        const unsigned sa = base + (f % 3) * 24576u, sb = sa + 16384u;
        const int k0 = (int)f * 64;
    if (tid == 0) {
      const unsigned bar = bars + (f % 3) * 8u;
      zd_bar_expect(bar, 24576u);
      zd_tma3(sa + 0u, &zd_tma_a, bar, (int)(bi) + 0, (int)(k0), zd_tma_a_c0);
      zd_tma3(sa + 8192u, &zd_tma_a, bar, (int)(bi) + 64, (int)(k0), zd_tma_a_c0);
      zd_tma4(sb + 0u, &zd_tma_b, bar, (int)(bj) + 0, (int)(k0), zd_tma_b_c0, zd_tma_b_c1);
    }
      }
      
    }
    zd_bar_wait(bars + (s % 3) * 8u, (s / 3) & 1);  // the tensor-map copies have landed
    const unsigned sa = base + (s % 3) * 24576u, sb = sa + 16384u;
    asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
    #pragma unroll
    for (int kk = 0; kk < 4; kk++) {
      const unsigned long long da = zd_desc(sa + wg * 8192 + kk * 2048, 8192, 1024);
      const unsigned long long db = zd_desc(sb + kk * 2048, 8192, 1024);
      asm volatile("{ .reg .pred p; setp.ne.b32 p, %34, 0; wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, %32, %33, p, 1, 1, 1, 1; }" : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]) : "l"(da), "l"(db), "r"(1) : "memory");
    }
    asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
    asm volatile("wgmma.wait_group.sync.aligned 1;" ::: "memory");
  }
  asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
  __syncthreads();  // every warpgroup is done with the stages the tile is staged in
  #pragma unroll
  for (int i = 0; i < 32; i++) {  // accumulator i: row w*16 + l/4 (+8), column 8*(i/4) + 2*(l%4) (+1)
    const int gi = bi + wg * 64 + w * 16 + (l >> 2) + (((i >> 1) & 1) << 3);
    const int gj = bj + ((i >> 2) << 3) + ((l & 3) << 1) + (i & 1);
    if (gi < 1024 && gj < 64) {
      const float acc = d[i];
        unsigned short* zd_st0 = reinterpret_cast<unsigned short*>(zd_pool + (base - zd_smem(zd_pool)) + 0);
        const int zd_l = (int)(gi - bi) * 72 + (int)(gj - bj);
        const int gid = ((bz/12)*786432+gi*768+(bz%12)*64+gj);
        zd_st0[zd_l] = zd_bf16_store(acc);
    }
  }
  __syncthreads();  // the whole tile is in shared memory
  for (int e = tid; e < 1024; e += 256) {  // neighbours by neighbours in memory
    const int r = e / 8, c = e % 8 * 8;
    const int gi = bi + r, gj = bj + c;
    if (gi < 1024 && gj < 64) {
      const int gid = ((bz/12)*786432+gi*768+(bz%12)*64+gj);
      *reinterpret_cast<uint4*>(out0 + gid) = *reinterpret_cast<const uint4*>(reinterpret_cast<unsigned short*>(zd_pool + (base - zd_smem(zd_pool)) + 0) + r * 72 + c);
    }
  }
}
// ==== kc_a1c7db28e6d4: 0.346 ms per step in 4 launches, gws=(196608,) lws=(256,) opts=KernelOpts(lws=256, elems=1, vec=1, group=0, unroll=1, tile_k=8, prefetch=0, cache=1, lanes=0, stages=3, tile=2, cpu_rows=0, wgmma=2)
// IR outputs (11,) row 0
//    0 ('in', 1, (8, 12, 1024, 1024), 'bfloat16')
//    1 ('reshape', '(8, 12, 1024, 1024, 1)', (8, 12, 1024, 1024, 1), 'bfloat16', (0,))
//    2 ('permute', '(0, 2, 1, 4, 3)', (8, 1024, 12, 1, 1024), 'bfloat16', (1,))
//    3 ('expand', '(8, 1024, 12, 64, 1024)', (8, 1024, 12, 64, 1024), 'bfloat16', (2,))
//    4 ('in', 0, (8192, 768, 1), 'bfloat16')
//    5 ('reshape', '(8, 1024, 12, 64)', (8, 1024, 12, 64), 'bfloat16', (4,))
//    6 ('permute', '(0, 2, 1, 3)', (8, 12, 1024, 64), 'bfloat16', (5,))
//    7 ('reshape', '(8, 12, 1, 1024, 64)', (8, 12, 1, 1024, 64), 'bfloat16', (6,))
//    8 ('permute', '(0, 2, 1, 4, 3)', (8, 1, 12, 64, 1024), 'bfloat16', (7,))
//    9 ('expand', '(8, 1024, 12, 64, 1024)', (8, 1024, 12, 64, 1024), 'bfloat16', (8,))
//   10 ('binary', "<BinaryOp.MUL: 'mul'>", (8, 1024, 12, 64, 1024), 'bfloat16', (3, 9))
//   11 ('reduce', "(<ReduceOp.SUM: 'sum'>, (4,))", (8, 1024, 12, 64, 1), 'bfloat16', (10,))
#ifndef INFINITY
#define INFINITY __int_as_float(0x7f800000)
#endif
#ifndef NAN
#define NAN __int_as_float(0x7fc00000)
#endif
__device__ inline float zd_bf16_load(unsigned short h) { return __uint_as_float(((unsigned int)h) << 16); }
__device__ inline unsigned short zd_bf16_store(float f) {
  unsigned int u = __float_as_uint(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (unsigned short)((u >> 16) | 0x40u);
  return (unsigned short)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}
__device__ inline float zd_bf16_round(float f) { return zd_bf16_load(zd_bf16_store(f)); }
__device__ inline float4 zd_bf16x4_load(const unsigned short* p) {
  const uint2 r = *reinterpret_cast<const uint2*>(p);
  return make_float4(__uint_as_float(r.x << 16), __uint_as_float(r.x & 0xffff0000u), __uint_as_float(r.y << 16), __uint_as_float(r.y & 0xffff0000u));
}
__device__ inline void zd_bf16x4_store(unsigned short* p, float4 v) {
  *reinterpret_cast<uint2*>(p) = make_uint2(zd_bf16_store(v.x) | ((unsigned)zd_bf16_store(v.y) << 16), zd_bf16_store(v.z) | ((unsigned)zd_bf16_store(v.w) << 16));
}
// zyx_dist: arch sm_90a
#ifndef ZD_TC_HELPERS
#define ZD_TC_HELPERS
__device__ __forceinline__ unsigned zd_smem(const void* p) {
  unsigned a;
  asm("{ .reg .u64 t; cvta.to.shared.u64 t, %1; cvt.u32.u64 %0, t; }" : "=r"(a) : "l"(p));
  return a;
}
__device__ __forceinline__ void zd_cp_async(void* dst, const void* src, bool inside) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" :: "r"(zd_smem(dst)), "l"(src), "r"(inside ? 16 : 0));
}
__device__ __forceinline__ void zd_cp_commit() { asm volatile("cp.async.commit_group;"); }
#endif
#ifndef ZD_WGMMA_HELPERS
#define ZD_WGMMA_HELPERS
__device__ __forceinline__ unsigned zd_swz(unsigned off) { return off ^ (((off >> 7) & 7) << 4); }
__device__ __forceinline__ unsigned long long zd_desc(unsigned addr, unsigned lbo, unsigned sbo) {
  return (unsigned long long)((addr & 0x3FFFF) >> 4) | ((unsigned long long)((lbo >> 4) & 0x3FFF) << 16)
       | ((unsigned long long)((sbo >> 4) & 0x3FFF) << 32) | (1ull << 62);  // 128-byte swizzle
}
__device__ __forceinline__ void zd_cp_async_s(unsigned dst, const void* src, bool inside) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" :: "r"(dst), "l"(src), "r"(inside ? 16 : 0));
}
__device__ __forceinline__ void zd_st_shared_u16(unsigned dst, unsigned short v) {
  asm volatile("st.shared.u16 [%0], %1;" :: "r"(dst), "h"(v) : "memory");
}
#endif
#ifndef ZD_TMA_HELPERS
#define ZD_TMA_HELPERS
struct __align__(64) zd_tmap { unsigned long long v[16]; };  // a CUtensorMap, passed by value
__device__ __forceinline__ void zd_tma2(unsigned dst, const zd_tmap* map, unsigned bar, int c0, int c1) {
  asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];"
               :: "r"(dst), "l"((unsigned long long)map), "r"(c0), "r"(c1), "r"(bar) : "memory");
}
__device__ __forceinline__ void zd_tma3(unsigned dst, const zd_tmap* map, unsigned bar, int c0, int c1, int c2) {
  asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4}], [%5];"
               :: "r"(dst), "l"((unsigned long long)map), "r"(c0), "r"(c1), "r"(c2), "r"(bar) : "memory");
}
__device__ __forceinline__ void zd_tma4(unsigned dst, const zd_tmap* map, unsigned bar, int c0, int c1, int c2, int c3) {
  asm volatile("cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4, %5}], [%6];"
               :: "r"(dst), "l"((unsigned long long)map), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(bar) : "memory");
}
__device__ __forceinline__ void zd_tma5(unsigned dst, const zd_tmap* map, unsigned bar, int c0, int c1, int c2, int c3, int c4) {
  asm volatile("cp.async.bulk.tensor.5d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4, %5, %6}], [%7];"
               :: "r"(dst), "l"((unsigned long long)map), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(c4), "r"(bar) : "memory");
}
__device__ __forceinline__ void zd_bar_init(unsigned bar, unsigned count) {
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
#endif
// zyx_dist: dynamic shared bytes 74752
// zyx_dist: tensor map 1 bf16 0 3 1024 1024 96 2048 2097152 64 128 1
// zyx_dist: tensor map 0 bf16 0 4 64 1024 12 8 1536 128 1572864 64 64 1 1
extern "C" __global__ void __launch_bounds__(256, 3) kc_a1c7db28e6d4(const unsigned short* __restrict__ in0, const unsigned short* __restrict__ in1, unsigned short* __restrict__ out0, const __grid_constant__ zd_tmap zd_tma_a, const __grid_constant__ zd_tmap zd_tma_b) {
  extern __shared__ __align__(16) unsigned char zd_pool[];
  const unsigned base = (zd_smem(zd_pool) + 1023u) & ~1023u;  // swizzle atoms are 1024-aligned
  const int tid = threadIdx.x, wg = tid >> 7, w = (tid >> 5) & 3, l = tid & 31;
  const int bz = (int)(blockIdx.x / 8);
  const int tile = blockIdx.x % 8;
  const int panel = tile / 8, inpanel = tile % 8;
  const int prows = min(8, 8 - panel * 8);
  const int bi = (int)(panel * 8 + inpanel % prows) * 128, bj = (int)(inpanel / prows) * 64;
  const int zd_tma_a_c0 = (int)bz;
  const int zd_tma_b_c0 = (int)(bz % 12); const int zd_tma_b_c1 = (int)(bz / 12);
  __shared__ __align__(8) unsigned long long zd_full[3];  // per stage: its tensor-map copies landed
  const unsigned bars = zd_smem(zd_full);
  if (tid == 0) {
    for (int i = 0; i < 3; i++) zd_bar_init(bars + i * 8u, 1);
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();  // the barriers are set up before anyone waits on them
  float d[32];
  #pragma unroll
  for (int i = 0; i < 32; i++) d[i] = 0.0f;
  const int steps = 16;
  #pragma unroll
  for (int f = 0; f < 1; f++) {  // the first 1 k-steps in flight
    if (f < steps) {
      const unsigned sa = base + f * 24576u, sb = sa + 16384u;
      const int k0 = (int)f * 64;
    if (tid == 0) {
      const unsigned bar = bars + (f % 3) * 8u;
      zd_bar_expect(bar, 24576u);
      zd_tma3(sa, &zd_tma_a, bar, (int)(k0), (int)(bi), zd_tma_a_c0);
      zd_tma4(sb + 0u, &zd_tma_b, bar, (int)(bj) + 0, (int)(k0), zd_tma_b_c0, zd_tma_b_c1);
    }
    }
    
  }
  for (int s = 0; s < steps; s++) {
    __syncthreads();  // for every thread; and every wgmma but the last one's is done with its stage
    {
      const int f = s + 1;
      if (f < steps) {  // into the stage a finished wgmma read (the last step's if deep, else the one before)
        const unsigned sa = base + (f % 3) * 24576u, sb = sa + 16384u;
        const int k0 = (int)f * 64;
    if (tid == 0) {
      const unsigned bar = bars + (f % 3) * 8u;
      zd_bar_expect(bar, 24576u);
      zd_tma3(sa, &zd_tma_a, bar, (int)(k0), (int)(bi), zd_tma_a_c0);
      zd_tma4(sb + 0u, &zd_tma_b, bar, (int)(bj) + 0, (int)(k0), zd_tma_b_c0, zd_tma_b_c1);
    }
      }
      
    }
    zd_bar_wait(bars + (s % 3) * 8u, (s / 3) & 1);  // the tensor-map copies have landed
    const unsigned sa = base + (s % 3) * 24576u, sb = sa + 16384u;
    asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
    #pragma unroll
    for (int kk = 0; kk < 4; kk++) {
      const unsigned long long da = zd_desc(sa + wg * 64 * 128 + kk * 32, 16, 1024);
      const unsigned long long db = zd_desc(sb + kk * 2048, 8192, 1024);
      asm volatile("{ .reg .pred p; setp.ne.b32 p, %34, 0; wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, %32, %33, p, 1, 1, 0, 1; }" : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]) : "l"(da), "l"(db), "r"(1) : "memory");
    }
    asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
    asm volatile("wgmma.wait_group.sync.aligned 1;" ::: "memory");
  }
  asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
  __syncthreads();  // every warpgroup is done with the stages the tile is staged in
  #pragma unroll
  for (int i = 0; i < 32; i++) {  // accumulator i: row w*16 + l/4 (+8), column 8*(i/4) + 2*(l%4) (+1)
    const int gi = bi + wg * 64 + w * 16 + (l >> 2) + (((i >> 1) & 1) << 3);
    const int gj = bj + ((i >> 2) << 3) + ((l & 3) << 1) + (i & 1);
    if (gi < 1024 && gj < 64) {
      const float acc = d[i];
        unsigned short* zd_st0 = reinterpret_cast<unsigned short*>(zd_pool + (base - zd_smem(zd_pool)) + 0);
        const int zd_l = (int)(gi - bi) * 72 + (int)(gj - bj);
        const int gid = ((bz/12)*786432+gi*768+(bz%12)*64+gj);
        zd_st0[zd_l] = zd_bf16_store(acc);
    }
  }
  __syncthreads();  // the whole tile is in shared memory
  for (int e = tid; e < 1024; e += 256) {  // neighbours by neighbours in memory
    const int r = e / 8, c = e % 8 * 8;
    const int gi = bi + r, gj = bj + c;
    if (gi < 1024 && gj < 64) {
      const int gid = ((bz/12)*786432+gi*768+(bz%12)*64+gj);
      *reinterpret_cast<uint4*>(out0 + gid) = *reinterpret_cast<const uint4*>(reinterpret_cast<unsigned short*>(zd_pool + (base - zd_smem(zd_pool)) + 0) + r * 72 + c);
    }
  }
}
// ==== kc_f62b4f7136c9: 0.324 ms per step in 1 launches, gws=(768,) lws=(256,) opts=KernelOpts(lws=256, elems=1, vec=1, group=0, unroll=1, tile_k=8, prefetch=0, cache=1, lanes=0, stages=4, tile=0, cpu_rows=0, wgmma=2)
// IR outputs (42, 47, 53) row 0
//    0 ('in', 0, (768, 17), 'bfloat16')
//    1 ('cast', "'float32'", (768, 17), 'float32', (0,))
//    2 ('in', 6, (), 'float32')
//    3 ('reshape', '(1, 1)', (1, 1), 'float32', (2,))
//    4 ('expand', '(768, 17)', (768, 17), 'float32', (3,))
//    5 ('const', '0.8999999761581421', (768, 17), 'float32', ())
//    6 ('in', 1, (768, 17), 'float32')
//    7 ('binary', "<BinaryOp.MUL: 'mul'>", (768, 17), 'float32', (5, 6))
//    8 ('const', '0.10000000149011612', (768, 17), 'float32', ())
//    9 ('in', 4, (8192, 17), 'bfloat16')
//   10 ('reshape', '(8192, 17, 1)', (8192, 17, 1), 'bfloat16', (9,))
//   11 ('permute', '(2, 1, 0)', (1, 17, 8192), 'bfloat16', (10,))
//   12 ('expand', '(768, 17, 8192)', (768, 17, 8192), 'bfloat16', (11,))
//   13 ('in', 3, (8, 1024, 768), 'bfloat16')
//   14 ('reshape', '(8192, 1, 768)', (8192, 1, 768), 'bfloat16', (13,))
//   15 ('permute', '(2, 1, 0)', (768, 1, 8192), 'bfloat16', (14,))
//   16 ('expand', '(768, 17, 8192)', (768, 17, 8192), 'bfloat16', (15,))
//   17 ('binary', "<BinaryOp.MUL: 'mul'>", (768, 17, 8192), 'bfloat16', (12, 16))
//   18 ('reduce', "(<ReduceOp.SUM: 'sum'>, (2,))", (768, 17, 1), 'bfloat16', (17,))
//   19 ('reshape', '(768, 17)', (768, 17), 'bfloat16', (18,))
//   20 ('cast', "'float32'", (768, 17), 'float32', (19,))
//   21 ('const', '1.0', (768, 17), 'float32', ())
//   22 ('binary', "<BinaryOp.MUL: 'mul'>", (768, 17), 'float32', (20, 21))
//   23 ('binary', "<BinaryOp.MUL: 'mul'>", (768, 17), 'float32', (8, 22))
//   24 ('binary', "<BinaryOp.ADD: 'add'>", (768, 17), 'float32', (7, 23))
//   25 ('binary', "<BinaryOp.MUL: 'mul'>", (768, 17), 'float32', (4, 24))
//   26 ('const', '0.9990000128746033', (768, 17), 'float32', ())
//   27 ('in', 2, (768, 17), 'float32')
//   28 ('binary', "<BinaryOp.MUL: 'mul'>", (768, 17), 'float32', (26, 27))
//   29 ('const', '0.0010000000474974513', (768, 17), 'float32', ())
//   30 ('binary', "<BinaryOp.MUL: 'mul'>", (768, 17), 'float32', (22, 22))
//   31 ('binary', "<BinaryOp.MUL: 'mul'>", (768, 17), 'float32', (29, 30))
//   32 ('binary', "<BinaryOp.ADD: 'add'>", (768, 17), 'float32', (28, 31))
//   33 ('unary', "<UnaryOp.SQRT: 'sqrt'>", (768, 17), 'float32', (32,))
//   34 ('in', 5, (), 'float32')
//   35 ('reshape', '(1, 1)', (1, 1), 'float32', (34,))
//   36 ('expand', '(768, 17)', (768, 17), 'float32', (35,))
//   37 ('binary', "<BinaryOp.MUL: 'mul'>", (768, 17), 'float32', (33, 36))
//   38 ('const', '9.99999993922529e-09', (768, 17), 'float32', ())
//   39 ('binary', "<BinaryOp.ADD: 'add'>", (768, 17), 'float32', (37, 38))
//   40 ('binary', "<BinaryOp.DIV: 'div'>", (768, 17), 'float32', (25, 39))
//   41 ('binary', "<BinaryOp.SUB: 'sub'>", (768, 17), 'float32', (1, 40))
//   42 ('cast', "'bfloat16'", (768, 17), 'bfloat16', (41,))
//   43 ('const', '0.8999999761581421', (768, 17), 'float32', ())
//   44 ('binary', "<BinaryOp.MUL: 'mul'>", (768, 17), 'float32', (43, 6))
//   45 ('const', '0.10000000149011612', (768, 17), 'float32', ())
//   46 ('binary', "<BinaryOp.MUL: 'mul'>", (768, 17), 'float32', (45, 22))
//   47 ('binary', "<BinaryOp.ADD: 'add'>", (768, 17), 'float32', (44, 46))
//   48 ('const', '0.9990000128746033', (768, 17), 'float32', ())
//   49 ('binary', "<BinaryOp.MUL: 'mul'>", (768, 17), 'float32', (48, 27))
//   50 ('const', '0.0010000000474974513', (768, 17), 'float32', ())
//   51 ('binary', "<BinaryOp.MUL: 'mul'>", (768, 17), 'float32', (22, 22))
//   52 ('binary', "<BinaryOp.MUL: 'mul'>", (768, 17), 'float32', (50, 51))
//   53 ('binary', "<BinaryOp.ADD: 'add'>", (768, 17), 'float32', (49, 52))
#ifndef INFINITY
#define INFINITY __int_as_float(0x7f800000)
#endif
#ifndef NAN
#define NAN __int_as_float(0x7fc00000)
#endif
__device__ inline float zd_bf16_load(unsigned short h) { return __uint_as_float(((unsigned int)h) << 16); }
__device__ inline unsigned short zd_bf16_store(float f) {
  unsigned int u = __float_as_uint(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (unsigned short)((u >> 16) | 0x40u);
  return (unsigned short)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}
__device__ inline float zd_bf16_round(float f) { return zd_bf16_load(zd_bf16_store(f)); }
__device__ inline float4 zd_bf16x4_load(const unsigned short* p) {
  const uint2 r = *reinterpret_cast<const uint2*>(p);
  return make_float4(__uint_as_float(r.x << 16), __uint_as_float(r.x & 0xffff0000u), __uint_as_float(r.y << 16), __uint_as_float(r.y & 0xffff0000u));
}
__device__ inline void zd_bf16x4_store(unsigned short* p, float4 v) {
  *reinterpret_cast<uint2*>(p) = make_uint2(zd_bf16_store(v.x) | ((unsigned)zd_bf16_store(v.y) << 16), zd_bf16_store(v.z) | ((unsigned)zd_bf16_store(v.w) << 16));
}
// zyx_dist: arch sm_90a
#ifndef ZD_TC_HELPERS
#define ZD_TC_HELPERS
__device__ __forceinline__ unsigned zd_smem(const void* p) {
  unsigned a;
  asm("{ .reg .u64 t; cvta.to.shared.u64 t, %1; cvt.u32.u64 %0, t; }" : "=r"(a) : "l"(p));
  return a;
}
__device__ __forceinline__ void zd_cp_async(void* dst, const void* src, bool inside) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" :: "r"(zd_smem(dst)), "l"(src), "r"(inside ? 16 : 0));
}
__device__ __forceinline__ void zd_cp_commit() { asm volatile("cp.async.commit_group;"); }
#endif
#ifndef ZD_WGMMA_HELPERS
#define ZD_WGMMA_HELPERS
__device__ __forceinline__ unsigned zd_swz(unsigned off) { return off ^ (((off >> 7) & 7) << 4); }
__device__ __forceinline__ unsigned long long zd_desc(unsigned addr, unsigned lbo, unsigned sbo) {
  return (unsigned long long)((addr & 0x3FFFF) >> 4) | ((unsigned long long)((lbo >> 4) & 0x3FFF) << 16)
       | ((unsigned long long)((sbo >> 4) & 0x3FFF) << 32) | (1ull << 62);  // 128-byte swizzle
}
__device__ __forceinline__ void zd_cp_async_s(unsigned dst, const void* src, bool inside) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" :: "r"(dst), "l"(src), "r"(inside ? 16 : 0));
}
__device__ __forceinline__ void zd_st_shared_u16(unsigned dst, unsigned short v) {
  asm volatile("st.shared.u16 [%0], %1;" :: "r"(dst), "h"(v) : "memory");
}
#endif
#ifndef ZD_TMA_HELPERS
#define ZD_TMA_HELPERS
struct __align__(64) zd_tmap { unsigned long long v[16]; };  // a CUtensorMap, passed by value
__device__ __forceinline__ void zd_tma2(unsigned dst, const zd_tmap* map, unsigned bar, int c0, int c1) {
  asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];"
               :: "r"(dst), "l"((unsigned long long)map), "r"(c0), "r"(c1), "r"(bar) : "memory");
}
__device__ __forceinline__ void zd_tma3(unsigned dst, const zd_tmap* map, unsigned bar, int c0, int c1, int c2) {
  asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4}], [%5];"
               :: "r"(dst), "l"((unsigned long long)map), "r"(c0), "r"(c1), "r"(c2), "r"(bar) : "memory");
}
__device__ __forceinline__ void zd_tma4(unsigned dst, const zd_tmap* map, unsigned bar, int c0, int c1, int c2, int c3) {
  asm volatile("cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4, %5}], [%6];"
               :: "r"(dst), "l"((unsigned long long)map), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(bar) : "memory");
}
__device__ __forceinline__ void zd_tma5(unsigned dst, const zd_tmap* map, unsigned bar, int c0, int c1, int c2, int c3, int c4) {
  asm volatile("cp.async.bulk.tensor.5d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4, %5, %6}], [%7];"
               :: "r"(dst), "l"((unsigned long long)map), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(c4), "r"(bar) : "memory");
}
__device__ __forceinline__ void zd_bar_init(unsigned bar, unsigned count) {
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
#endif
// zyx_dist: dynamic shared bytes 197632
// zyx_dist: tensor map 3 bf16 0 2 768 8192 1536 64 64
extern "C" __global__ void __launch_bounds__(256, 1) kc_f62b4f7136c9(const unsigned short* __restrict__ in0, const float* __restrict__ in1, const float* __restrict__ in2, const unsigned short* __restrict__ in3, const unsigned short* __restrict__ in4, const float* __restrict__ in5, const float* __restrict__ in6, unsigned short* __restrict__ out0, float* __restrict__ out1, float* __restrict__ out2, const __grid_constant__ zd_tmap zd_tma_b) {
  extern __shared__ __align__(16) unsigned char zd_pool[];
  const unsigned base = (zd_smem(zd_pool) + 1023u) & ~1023u;  // swizzle atoms are 1024-aligned
  const int tid = threadIdx.x, wg = tid >> 7, w = (tid >> 5) & 3, l = tid & 31;
  const int bz = (int)(blockIdx.x / 3);
  const int tile = blockIdx.x % 3;
  const int panel = tile / 24, inpanel = tile % 24;
  const int prows = min(8, 1 - panel * 8);
  const int bi = (int)(panel * 8 + inpanel % prows) * 128, bj = (int)(inpanel / prows) * 256;
  __shared__ __align__(8) unsigned long long zd_full[4];  // per stage: its tensor-map copies landed
  const unsigned bars = zd_smem(zd_full);
  if (tid == 0) {
    for (int i = 0; i < 4; i++) zd_bar_init(bars + i * 8u, 1);
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();  // the barriers are set up before anyone waits on them
  float d[128];
  #pragma unroll
  for (int i = 0; i < 128; i++) d[i] = 0.0f;
  const int steps = 128;
  #pragma unroll
  for (int f = 0; f < 2; f++) {  // the first 2 k-steps in flight
    if (f < steps) {
      const unsigned sa = base + f * 49152u, sb = sa + 16384u;
      const int k0 = (int)f * 64;
    #pragma unroll 4
    for (int r = 0; r < 32; r++) {
      const int e = tid + r * 256;
      const int row = e >> 6, kc = e & 63;
      const int gi = bi + row, gk = k0 + kc;
      float v = 0.0f;
      if (gi < 17 && gk < 8192) { float ld0 = zd_bf16_load(in4[(gk*17+gi)]); v = ld0; }
      if (true) zd_st_shared_u16(sa + zd_swz(row * 128 + kc * 2), zd_bf16_store(v));
    }
    if (tid == 0) {
      const unsigned bar = bars + (f % 4) * 8u;
      zd_bar_expect(bar, 32768u);
      zd_tma2(sb + 0u, &zd_tma_b, bar, (int)(bj) + 0, (int)(k0));
      zd_tma2(sb + 8192u, &zd_tma_b, bar, (int)(bj) + 64, (int)(k0));
      zd_tma2(sb + 16384u, &zd_tma_b, bar, (int)(bj) + 128, (int)(k0));
      zd_tma2(sb + 24576u, &zd_tma_b, bar, (int)(bj) + 192, (int)(k0));
    }
    }
    zd_cp_commit();
  }
  for (int s = 0; s < steps; s++) {
    asm volatile("cp.async.wait_group 1;" ::: "memory");  // this step's copies have landed
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");  // ... and are visible to wgmma's reads
    __syncthreads();  // for every thread; and every wgmma but the last one's is done with its stage
    {
      const int f = s + 2;
      if (f < steps) {  // into the stage a finished wgmma read (the last step's if deep, else the one before)
        const unsigned sa = base + (f % 4) * 49152u, sb = sa + 16384u;
        const int k0 = (int)f * 64;
    #pragma unroll 4
    for (int r = 0; r < 32; r++) {
      const int e = tid + r * 256;
      const int row = e >> 6, kc = e & 63;
      const int gi = bi + row, gk = k0 + kc;
      float v = 0.0f;
      if (gi < 17 && gk < 8192) { float ld0 = zd_bf16_load(in4[(gk*17+gi)]); v = ld0; }
      if (true) zd_st_shared_u16(sa + zd_swz(row * 128 + kc * 2), zd_bf16_store(v));
    }
    if (tid == 0) {
      const unsigned bar = bars + (f % 4) * 8u;
      zd_bar_expect(bar, 32768u);
      zd_tma2(sb + 0u, &zd_tma_b, bar, (int)(bj) + 0, (int)(k0));
      zd_tma2(sb + 8192u, &zd_tma_b, bar, (int)(bj) + 64, (int)(k0));
      zd_tma2(sb + 16384u, &zd_tma_b, bar, (int)(bj) + 128, (int)(k0));
      zd_tma2(sb + 24576u, &zd_tma_b, bar, (int)(bj) + 192, (int)(k0));
    }
      }
      zd_cp_commit();
    }
    zd_bar_wait(bars + (s % 4) * 8u, (s / 4) & 1);  // the tensor-map copies have landed
    const unsigned sa = base + (s % 4) * 49152u, sb = sa + 16384u;
    asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
    #pragma unroll
    for (int kk = 0; kk < 4; kk++) {
      const unsigned long long da = zd_desc(sa + wg * 64 * 128 + kk * 32, 16, 1024);
      const unsigned long long db = zd_desc(sb + kk * 2048, 8192, 1024);
      asm volatile("{ .reg .pred p; setp.ne.b32 p, %130, 0; wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, %96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, %112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}, %128, %129, p, 1, 1, 0, 1; }" : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]), "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]), "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]), "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]), "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127]) : "l"(da), "l"(db), "r"(1) : "memory");
    }
    asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
    asm volatile("wgmma.wait_group.sync.aligned 1;" ::: "memory");
  }
  asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
  #pragma unroll
  for (int i = 0; i < 128; i++) {  // accumulator i: row w*16 + l/4 (+8), column 8*(i/4) + 2*(l%4) (+1)
    const int gi = bi + wg * 64 + w * 16 + (l >> 2) + (((i >> 1) & 1) << 3);
    const int gj = bj + ((i >> 2) << 3) + ((l & 3) << 1) + (i & 1);
    if (gi < 17 && gj < 768) {
      const float acc = d[i];
        const int gid = (gj*17+gi);
        float ld0 = zd_bf16_load(in0[(gj*17+gi)]);
        float v1 = ((float)(ld0));
        float ld2 = in6[0];
        float ld3 = in1[(gj*17+gi)];
        float v4 = (0.8999999761581421f * ld3);
        float v5 = ((float)(acc));
        float v6 = (v5 * 1.0f);
        float v7 = (0.10000000149011612f * v6);
        float v8 = (v4 + v7);
        float v9 = (ld2 * v8);
        float ld10 = in2[(gj*17+gi)];
        float v11 = (0.9990000128746033f * ld10);
        float v12 = (v6 * v6);
        float v13 = (0.0010000000474974513f * v12);
        float v14 = (v11 + v13);
        float v15 = sqrt(v14);
        float ld16 = in5[0];
        float v17 = (v15 * ld16);
        float v18 = (v17 + 9.99999993922529e-09f);
        float v19 = (v9 / v18);
        float v20 = (v1 - v19);
        float v21 = zd_bf16_round((float)(v20));
        float v22 = (0.8999999761581421f * ld3);
        float v23 = (0.10000000149011612f * v6);
        float v24 = (v22 + v23);
        float v25 = (0.9990000128746033f * ld10);
        float v26 = (v6 * v6);
        float v27 = (0.0010000000474974513f * v26);
        float v28 = (v25 + v27);
        out0[gid] = zd_bf16_store(v21);
        out1[gid] = (float)(v24);
        out2[gid] = (float)(v28);
    }
  }
}
