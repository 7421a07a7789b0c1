// The RMS norm's arithmetic in one place, for the norm kernel (kernels_norm_rope.cu) and for the
// GEMV that folds the norm into its reading of x (kernels_gemv_mma.cu, GemvNorm): the two must
// compute the same bits. A row's sum of squares: thread tid of the norm's RmsNormShape::threads adds
// the squares of its elements c = tid, tid + threads, ... in that order (one fma each, from 0); a
// warp's 32 sums are added by an xor butterfly; the warps' sums (zeros past the last warp) by another
// in the first warp; then y = w * (x * (1 / sqrt(sum / cols + eps))), times the row's scale.
#pragma once

#include "runtime/cuda/cuda_kernels.h"

namespace voxrt::cuda::rmsnorm {

__device__ __forceinline__ float add_square(float sum, float v) { return fmaf(v, v, sum); }

__device__ __forceinline__ float butterfly(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

__device__ __forceinline__ float inverse(float total, int cols, float eps) {
  return 1.0f / sqrtf(total / static_cast<float>(cols) + eps);
}

__device__ __forceinline__ float normed(float w, float x, float inv) { return w * (x * inv); }

// 1 / rms of rows m < M of x (row stride ldx, cols elements) into inv[m], by a block of kWarps warps
// standing in for the norm kernel's shape.threads threads of each row: warp w takes the kernel's
// warps w, w + kWarps, ... of every row in turn, and warp w then finishes rows w, w + kWarps, ...
// partial: 32 floats a row of shared memory, free for the block's use until the barrier this ends on.
template <int kWarps>
__device__ void block_row_inverses(const float* x, long long ldx, int M, int cols, RmsNormShape shape, float eps,
                                   float* partial, float* inv) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int norm_warps = shape.threads / 32;
  for (int i = warp; i < M * norm_warps; i += kWarps) {
    const int m = i / norm_warps, w = i % norm_warps, tid = 32 * w + lane;
    const float* xr = x + m * ldx;
    float ss = 0;
    for (int e = 0; e < shape.per; ++e) {
      const int c = tid + e * shape.threads;
      ss = add_square(ss, c < cols ? __ldg(xr + c) : 0.0f);
    }
    ss = butterfly(ss);
    if (lane == 0) partial[32 * m + w] = ss;
  }
  __syncthreads();
  for (int m = warp; m < M; m += kWarps) {
    const float total = butterfly(lane < norm_warps ? partial[32 * m + lane] : 0.0f);
    if (lane == 0) inv[m] = inverse(total, cols, eps);
  }
  __syncthreads();
}

}  // namespace voxrt::cuda::rmsnorm
