// What the tensor-core product kernels share (kernels_gemv_mma.cu for a few rows, kernels_gemm_*.cu
// for many): the order of summation they all follow, the bf16 mma, and the asynchronous copies that
// stage their operands in shared memory.
#pragma once

#include <cstdint>

#include "runtime/cuda/quant_layout.h"

namespace voxrt::cuda::tc {

// The products' order of summation. Every tensor-core product kernel (the GEMV, kernels_gemv_mma.cu,
// for a few rows; the tiled GEMMs, kernels_gemm_wgmma.cu and kernels_gemm_mma.cu, for many) computes
// each output in exactly this order, so that a row's bits never depend on the kernel that computes
// it, nor on how many rows share its launch (batch invariance, cuda_backend.cpp):
//   - K is walked in chunks of 64 elements (kChunkK8 vectors of 8), zeros past K;
//   - K is cut into S pieces of whole chunks, piece q taking chunks piece_begin(q) .. piece_begin(q + 1),
//     S = gemv_mma_pieces(n, K, tuning): a function of the weight's shape and the device alone;
//   - each piece is one chain: from a zero accumulator, each chunk's four k16 groups (elements
//     16h .. 16h + 15 of the chunk, h = 0 .. 3, in their natural order) are added by one bf16 mma
//     each (16 products and the running sum: mma.sync m16n8k16 and wgmma m64nNk16 round alike,
//     bench/results/2026-12-02-mma-numerics.txt), in chunk order;
//   - the pieces' sums are added in piece order, ((p0 + p1) + p2) + ..., then the epilogue
//     (gemv_common.cuh: store_output, silu_times).
// fp8 weights (W8A8) walk the same bytes: their rows are read as rows of K / 2 bf16, so a "chunk"
// is 128 elements and each group's mma is an e4m3 m16n8k32 (mma_group), on every GPU but Hopper.
// Hopper runs every fp8 product on wgmma (kernels_gemm_wgmma.cu), whose e4m3 rounds otherwise and
// keeps fewer bits of a running sum (tools/probes/mma_fp8_numerics.cu): there each chunk's four
// groups are summed from zero and the chunk sums are added in fp32, in order, into the chain.
// One chain a piece lets the GEMM run long, drain-free wgmma loops over plain, swizzled tiles (the
// order before this one, eight interleaved chains a piece with K permuted inside each instruction,
// cost it most of its rate: docs/scheduler.md).
constexpr int kChunkK8 = 8;  // a chunk: 64 elements, 8 vectors of 8 (128 bytes of a bf16 row)
constexpr int kGroupsPerChunk = 4;  // k16 groups a chunk
// Chunks in a row of K8 8-element vectors.
__host__ __device__ constexpr int chunks_of(int K8) { return (K8 + kChunkK8 - 1) / kChunkK8; }
// The first chunk of piece q when `chunks` are cut into S pieces.
__host__ __device__ constexpr int piece_begin(int q, int chunks, int S) { return q * chunks / S; }

// c += a (16 x 16, row-major fragment) b (16 x 8, column-major fragment): bf16 in, fp32 accumulate.
// Not volatile: the accumulator operands order the mma of one accumulator, and the compiler is
// free to interleave those of independent accumulators (an mma's result takes tens of cycles).
__device__ __forceinline__ void mma16816(float (&c)[4], uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3,
                                         uint32_t b0, uint32_t b1) {
  asm(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

// The same for fp8 (e4m3) operands, m16n8k32: each register holds 4 codes where mma16816's holds 2
// bf16, the same bytes (quant_layout.h: kGemvFp8), so the bf16 kernels' fragments feed it as they
// are. sm_89 and later; elsewhere a kernel reaching it traps (fp8_products_available() says which).
__device__ __forceinline__ void mma_e4m3(float (&c)[4], uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3,
                                         uint32_t b0, uint32_t b1) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
  asm(
      "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
#else
  (void)c, (void)a0, (void)a1, (void)a2, (void)a3, (void)b0, (void)b1;
  __trap();
#endif
}
// One k16 group of a chain (k32 for fp8: the same bytes) in the weight's format.
template <int FMT>
__device__ __forceinline__ void mma_group(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  if constexpr (FMT == kGemvFp8) mma_e4m3(c, a[0], a[1], a[2], a[3], b0, b1);
  else mma16816(c, a[0], a[1], a[2], a[3], b0, b1);
}

// Four 8x8 bf16 matrices from shared memory, each lane giving one row's address (lanes 8i .. 8i + 7
// the rows of matrix i): for a 16 x 16 A operand, lanes 0-15 address rows 0-15 at k 0 and lanes
// 16-31 rows 0-15 at k 8, and r[0..3] are a0..a3 of mma16816.
__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(addr) : "memory");
}

__device__ __forceinline__ uint64_t l2_evict_first_policy() {
  uint64_t policy;
  asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;\n" : "=l"(policy));
  return policy;
}

// 16 bytes global -> shared, asynchronously; zeros (nothing read) when !valid.
__device__ __forceinline__ void cp_async16(void* dst, const void* src, bool valid, uint64_t policy) {
  const unsigned d = static_cast<unsigned>(__cvta_generic_to_shared(dst));
  asm volatile("cp.async.cg.shared.global.L2::cache_hint [%0], [%1], 16, %2, %3;\n" ::"r"(d), "l"(src),
               "r"(valid ? 16 : 0), "l"(policy)
               : "memory");
}
// The same to a shared-memory address (a __cvta_generic_to_shared result plus an offset).
__device__ __forceinline__ void cp_async16_shared(uint32_t dst, const void* src, bool valid, uint64_t policy) {
  asm volatile("cp.async.cg.shared.global.L2::cache_hint [%0], [%1], 16, %2, %3;\n" ::"r"(dst), "l"(src),
               "r"(valid ? 16 : 0), "l"(policy)
               : "memory");
}
__device__ __forceinline__ void cp_async16(void* dst, const void* src, bool valid) {
  const unsigned d = static_cast<unsigned>(__cvta_generic_to_shared(dst));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(d), "l"(src), "r"(valid ? 16 : 0) : "memory");
}
// A ring stage's arrival, tracked by an mbarrier in shared memory (shared-memory addresses), where a
// commit group's would need the ring's depth as an immediate: mbar_init(bar, 32) by one lane, then
// each of a warp's 32 lanes calls cp_async_arrive(bar) after issuing its copies of the stage, and
// the stage's u-th filling has landed, every lane's copies, once mbar_wait_parity(bar, u & 1) returns.
__device__ __forceinline__ void mbar_init(uint32_t bar, int count) {
  asm volatile("mbarrier.init.shared.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}
__device__ __forceinline__ void cp_async_arrive(uint32_t bar) {
  asm volatile("cp.async.mbarrier.arrive.noinc.shared.b64 [%0];\n" ::"r"(bar) : "memory");
}
// Hopper's try_wait suspends the thread in hardware for a while before it answers; earlier GPUs
// poll with test_wait. The loop is in the assembly (a predicated branch back), one copy for every
// mbarrier wait of the kernels (the ring stages here, the TMA stages of kernels_gemm_wgmma.cu).
__device__ __forceinline__ void mbar_wait_parity(uint32_t bar, uint32_t parity) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile(
      "{\n.reg .pred done;\nWAIT:\nmbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n@!done bra WAIT;\n}\n" ::"r"(bar),
      "r"(parity)
      : "memory");
#else
  asm volatile(
      "{\n.reg .pred done;\nWAIT:\nmbarrier.test_wait.parity.shared.b64 done, [%0], %1;\n@!done bra WAIT;\n}\n" ::"r"(bar),
      "r"(parity)
      : "memory");
#endif
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}
}  // namespace voxrt::cuda::tc
