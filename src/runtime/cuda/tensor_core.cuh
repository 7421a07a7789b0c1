// What the tensor-core product kernels share (kernels_gemv_mma.cu for a few rows, kernels_gemm_mma.cu
// for many): the bf16 mma, the 32-element chunk both multiply the same way, and the asynchronous
// copies that stage their operands in shared memory.
#pragma once

#include <cstdint>

namespace voxrt::cuda::tc {

// How both kernels walk K, the GEMV's order that the GEMM reproduces: K in units of 256 elements,
// each unit in kChains chunks of 32 (4 vectors of 8); chain w (the GEMV's warp w) takes chunk w of
// every unit.
constexpr int kChains = 8;
constexpr int kChunkK8 = 4;
constexpr int kUnitK8 = kChains * kChunkK8;
// 256-element units in a row of K8 8-element vectors.
__host__ __device__ constexpr int units_of(int K8) { return (K8 + kUnitK8 - 1) / kUnitK8; }

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

// acc += weight rows (g, g + 8) times x row g over one 32-element chunk of K, for lane (g, t) =
// (lane / 4, lane % 4) holding elements 8t .. 8t+7 of each (wa: row g, wb: row g + 8, x: x row g).
// They serve as fragment k-slots {2t, 2t+1, 2t+8, 2t+9} of the chunk's two k16 halves: the same
// permutation of K on both operands, so each dot product is unchanged and every load is a full
// 16-byte vector. Both kernels multiply every chunk through this function, in this order: the
// tensor cores' rounding depends on which products share an mma, so this is part of what makes a
// row's result the same whichever kernel computes it.
// mma_chunk_half<0> then mma_chunk_half<1> is mma_chunk; a kernel with many accumulators runs the
// first half on all of them, then the second, so that no mma waits for the one before it.
template <int H>
__device__ __forceinline__ void mma_chunk_half(float (&acc)[4], uint4 wa, uint4 wb, uint4 x) {
  if constexpr (H == 0) mma16816(acc, wa.x, wb.x, wa.y, wb.y, x.x, x.y);
  else mma16816(acc, wa.z, wb.z, wa.w, wb.w, x.z, x.w);
}
__device__ __forceinline__ void mma_chunk(float (&acc)[4], uint4 wa, uint4 wb, uint4 x) {
  mma_chunk_half<0>(acc, wa, wb, x);
  mma_chunk_half<1>(acc, wa, wb, x);
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
__device__ __forceinline__ void cp_async16(void* dst, const void* src, bool valid) {
  const unsigned d = static_cast<unsigned>(__cvta_generic_to_shared(dst));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(d), "l"(src), "r"(valid ? 16 : 0) : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

}  // namespace voxrt::cuda::tc
