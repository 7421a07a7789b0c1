#pragma once
// Merging a (row, head)'s chunk partial results, one warp: out = sum_s acc_s e^(m_s - M) / sum_s
// l_s e^(m_s - M), M the chunks' largest maximum. Two callers compute it the same way, so a row's
// bits do not depend on which: the one-warp combine kernel (kernels_attention.cu) and the
// tensor-core chunk blocks' fused combine (kernels_attention_mma.cu: the last block of a row group
// to finish merges its rows while their partial results are still in L2, and then drops them from
// L2 unwritten).
//
// The arithmetic, fixed: lane s % 32 computes chunk s's weight e^(m_s - M) and adds l_s times it
// to its sum, its chunks in order, then the lanes' sums meet by the xor tree; each dimension's
// weighted accumulators are added in chunk order (one fma chain a dimension), each weight handed
// over by its lane.
#include <cuda_runtime.h>

namespace voxrt::cuda {

// Loads that skip L1 (which is not coherent between SMs: the fused combine reads what other blocks
// of its launch wrote).
__device__ __forceinline__ float load_cg(const float* p) { return __ldcg(p); }

// Drops a 128-byte L2 line without writing it back to memory (its contents become undefined): the
// partial results, once merged, are never read again, and writing them back would cost as many
// bytes as writing them did.
__device__ __forceinline__ void discard_l2_line(const void* p) {
#if __CUDA_ARCH__ >= 800
  asm volatile("discard.global.L2 [%0], 128;" ::"l"(p) : "memory");
#endif
}

// ml: the (row, head)'s (max, sum) pairs, ns of them; acc: its ns accumulators of head_dim floats
// (head_dim = 32 * per_lane, per_lane <= kMaxPerLane); out: head_dim floats. Every lane of the warp
// calls it with the same arguments. discard: drop acc's lines from L2 afterwards (acc 128-byte
// aligned, and no other warp reads them).
template <int kMaxPerLane>
__device__ __forceinline__ void combine_partials(const float* ml, const float* acc, int ns, int per_lane, float* out,
                                                 bool discard) {
  const int lane = threadIdx.x % 32;
  float m = -INFINITY;
  for (int s = lane; s < ns; s += 32) m = fmaxf(m, load_cg(ml + 2 * s));
  for (int off = 16; off > 0; off >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, off));
  float l = 0.f, o[kMaxPerLane];
#pragma unroll
  for (int i = 0; i < kMaxPerLane; ++i) o[i] = 0.f;
  for (int base = 0; base < ns; base += 32) {  // 32 chunks at a time, lane j's weight for chunk base + j
    const int mine = base + lane;
    const float w = mine < ns ? expf(load_cg(ml + 2 * mine) - m) : 0.f;
    if (mine < ns) l = fmaf(load_cg(ml + 2 * mine + 1), w, l);
    const int count = min(32, ns - base);
#pragma unroll 4
    for (int j = 0; j < count; ++j) {
      const float ws = __shfl_sync(0xffffffffu, w, j);
      const float* as = acc + static_cast<size_t>(base + j) * per_lane * 32;
#pragma unroll
      for (int i = 0; i < kMaxPerLane; ++i)
        if (i < per_lane) o[i] = fmaf(load_cg(as + lane + 32 * i), ws, o[i]);
    }
  }
  for (int off = 16; off > 0; off >>= 1) l += __shfl_xor_sync(0xffffffffu, l, off);
#pragma unroll
  for (int i = 0; i < kMaxPerLane; ++i)
    if (i < per_lane) out[lane + 32 * i] = o[i] / l;
  if (discard) {
    __syncwarp();  // every lane's loads of the lines have returned (their values are in o)
    for (int line = lane; line < ns * per_lane; line += 32) discard_l2_line(acc + static_cast<size_t>(line) * 32);
  }
}

}  // namespace voxrt::cuda
