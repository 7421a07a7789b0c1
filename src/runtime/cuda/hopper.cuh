// Hopper's asynchronous machinery as the wgmma GEMM (kernels_gemm_wgmma.cu) uses it, one PTX
// instruction each: warpgroup MMA (wgmma) with B in shared memory and A there or in registers, its fences and
// waits; mbarriers; tensor-memory copies (TMA) that announce their bytes to an
// mbarrier; setmaxnreg. Everything here needs sm_90a; callers compile it only there
// (VOXRT_HAS_WGMMA).
#pragma once

#include <cuda.h>

#include <cstdint>

namespace voxrt::cuda::hopper {

__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}
// Keeps the compiler from moving reads or writes of the accumulators across this point: the
// hardware writes them asynchronously, between the wgmma and its wait, behind the compiler's back.
template <int NA>
__device__ __forceinline__ void pin(float (&d)[NA]) {
#pragma unroll
  for (int i = 0; i < NA; ++i) asm volatile("" : "+f"(d[i])::"memory");
}
// mbarriers in shared memory (addresses from __cvta_generic_to_shared; made by tc::mbar_init and
// waited on by tc::mbar_wait_parity, tensor_core.cuh): a phase completes when `count` threads have
// arrived and the bytes announced for it have landed; a waiter names the phase's parity.
__device__ __forceinline__ void mbar_arrive(uint32_t bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}
__device__ __forceinline__ void mbar_arrive_expect_bytes(uint32_t bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes) : "memory");
}
// TMA: a box of the tensor `map` at coordinates (innermost first) into shared memory at dst,
// announced to the mbarrier bar as it lands. Out-of-range elements arrive as zeros.
__device__ __forceinline__ void tma_load_2d(uint32_t dst, const CUtensorMap* map, int c0, int c1, uint32_t bar) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];\n" ::"r"(
          dst),
      "l"(map), "r"(c0), "r"(c1), "r"(bar)
      : "memory");
}
// A warpgroup's registers per thread from here on (all its warps execute it).
template <int N>
__device__ __forceinline__ void registers_down() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(N));
}
template <int N>
__device__ __forceinline__ void registers_up() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(N));
}
// A wgmma shared-memory descriptor for a K-major tile in the 128-byte swizzle that TMA writes
// (CU_TENSOR_MAP_SWIZZLE_128B): rows of 64 bf16 (128 bytes), 8-row groups 1024 bytes apart, the
// tile 1024-byte aligned. The k16 step h of the 64 elements starts 32 h bytes further (+2 h here).
__device__ __forceinline__ uint64_t smem_desc_sw128(uint32_t addr) {
  return static_cast<uint64_t>((addr >> 4) & 0x3fff) | (static_cast<uint64_t>(1) << 16) |
         (static_cast<uint64_t>(1024 >> 4) << 32) | (static_cast<uint64_t>(1) << 62);
}

// The accumulator operands of a wgmma of N = 64 (32 a thread) or 128 (64 a thread): their names in
// the instruction's text, and the constraints binding d[0 ..] to them.
#define VOXRT_WGMMA_D32_NAMES \
  "%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31"
#define VOXRT_WGMMA_D64_NAMES                                                                                      \
  VOXRT_WGMMA_D32_NAMES                                                                                             \
  ",%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58," \
  "%59,%60,%61,%62,%63"
#define VOXRT_WGMMA_D8(d, i)                                                                                   \
  "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]), "+f"(d[i + 4]), "+f"(d[i + 5]), "+f"(d[i + 6]), \
      "+f"(d[i + 7])
#define VOXRT_WGMMA_D32(d) VOXRT_WGMMA_D8(d, 0), VOXRT_WGMMA_D8(d, 8), VOXRT_WGMMA_D8(d, 16), VOXRT_WGMMA_D8(d, 24)
#define VOXRT_WGMMA_D64(d) \
  VOXRT_WGMMA_D32(d), VOXRT_WGMMA_D8(d, 32), VOXRT_WGMMA_D8(d, 40), VOXRT_WGMMA_D8(d, 48), VOXRT_WGMMA_D8(d, 56)

// d (64 x N, fp32) += a (64 x 16) b (N x 16)^T, both K-major in shared memory (descriptors),
// added to d as it is (scale-d 1: a chain starts from a zeroed d).
template <int N>
__device__ __forceinline__ void wgmma_ss(float (&d)[N / 2], uint64_t a, uint64_t b);
template <>
__device__ __forceinline__ void wgmma_ss<64>(float (&d)[32], uint64_t a, uint64_t b) {
  asm volatile(
      "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {" VOXRT_WGMMA_D32_NAMES
      "}, %32, %33, 1, 1, 1, 0, 0;\n"
      :
        VOXRT_WGMMA_D32(d)
      : "l"(a), "l"(b));
}
template <>
__device__ __forceinline__ void wgmma_ss<128>(float (&d)[64], uint64_t a, uint64_t b) {
  asm volatile(
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {" VOXRT_WGMMA_D64_NAMES
      "}, %64, %65, 1, 1, 1, 0, 0;\n"
      :
        VOXRT_WGMMA_D64(d)
      : "l"(a), "l"(b));
}

// d (64 x N, fp32) = a (64 x 32) b (N x 32)^T (+ d when `accumulate`), e4m3 operands K-major in
// shared memory: the descriptors of bf16's 64 x 16 tiles, whose bytes these are (quant_layout.h:
// kGemvFp8). Its sum keeps fewer bits than fp32 (tools/probes/mma_fp8_numerics.cu), so the fp8 GEMM
// starts each chunk's sum from zero and adds the chunks in fp32 itself.
template <int N>
__device__ __forceinline__ void wgmma_ss_e4m3(float (&d)[N / 2], uint64_t a, uint64_t b, int accumulate);
template <>
__device__ __forceinline__ void wgmma_ss_e4m3<64>(float (&d)[32], uint64_t a, uint64_t b, int accumulate) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n64k32.f32.e4m3.e4m3 {" VOXRT_WGMMA_D32_NAMES
      "}, %32, %33, p, 1, 1;\n}\n"
      :
        VOXRT_WGMMA_D32(d)
      : "l"(a), "l"(b), "r"(accumulate));
}
template <>
__device__ __forceinline__ void wgmma_ss_e4m3<128>(float (&d)[64], uint64_t a, uint64_t b, int accumulate) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e4m3 {" VOXRT_WGMMA_D64_NAMES
      "}, %64, %65, p, 1, 1;\n}\n"
      :
        VOXRT_WGMMA_D64(d)
      : "l"(a), "l"(b), "r"(accumulate));
}

// d (64 x N, fp32) += a (64 x 16, bf16 in registers) b (N x 16)^T (K-major in shared memory):
// the A operand as four registers a lane, warp w of the warpgroup holding rows 16 w .. 16 w + 15 in
// mma.sync m16n8k16's A fragment layout (tensor_core.cuh), so fragments made in registers (a
// quantized weight dequantized on the way, quant_fragments.cuh) feed it directly. The registers
// must hold their values until a wgmma_wait covers the instruction: it reads them asynchronously.
template <int N>
__device__ __forceinline__ void wgmma_rs(float (&d)[N / 2], const uint32_t (&a)[4], uint64_t b);
template <>
__device__ __forceinline__ void wgmma_rs<64>(float (&d)[32], const uint32_t (&a)[4], uint64_t b) {
  asm volatile(
      "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {" VOXRT_WGMMA_D32_NAMES
      "}, {%32,%33,%34,%35}, %36, 1, 1, 1, 0;\n"
      :
        VOXRT_WGMMA_D32(d)
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b));
}
template <>
__device__ __forceinline__ void wgmma_rs<128>(float (&d)[64], const uint32_t (&a)[4], uint64_t b) {
  asm volatile(
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {" VOXRT_WGMMA_D64_NAMES
      "}, {%64,%65,%66,%67}, %68, 1, 1, 1, 0;\n"
      :
        VOXRT_WGMMA_D64(d)
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b));
}
// Keeps the compiler from reusing registers a wgmma_rs still reads until this point (after the wait
// that covers it), as pin() does for the accumulators.
template <int N>
__device__ __forceinline__ void pin_u32(uint32_t (&r)[N][4]) {
#pragma unroll
  for (int i = 0; i < N; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j) asm volatile("" : "+r"(r[i][j])::"memory");
}

// A barrier among the `threads` threads (a multiple of 32) that name barrier `id` (1-15: 0 is
// __syncthreads's).
__device__ __forceinline__ void named_barrier(int id, int threads) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}

}  // namespace voxrt::cuda::hopper
