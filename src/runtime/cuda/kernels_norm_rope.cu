// RMS norm and rotary embedding: per-row kernels (one block per row) whose arithmetic follows the
// CPU reference step by step, so that results agree to a few fp32 ulps.
#include <cuda_bf16.h>

#include <algorithm>

#include "runtime/cuda/cuda_check.h"
#include "runtime/cuda/cuda_kernels.h"
#include "runtime/cuda/launch.cuh"

namespace voxrt::cuda {
namespace {

constexpr int kNormThreads = 256;

__device__ __forceinline__ float vec_at(DevVec v, int i) {
  return v.bf16 ? __bfloat162float(static_cast<const __nv_bfloat16*>(v.data)[i]) : static_cast<const float*>(v.data)[i];
}

// One block per row: the fp32 sum of squares by a block tree reduction, then
// y = w * (x * (1 / sqrt(mean + eps))) as the reference writes it. Safe in place (x == y): each
// thread rewrites only the elements it read, after the reduction's barrier.
__global__ void __launch_bounds__(kNormThreads) rms_norm_kernel(const float* x, int cols, DevVec w, float eps,
                                                                float* y) {
  pdl_trigger();
  pdl_wait();
  __shared__ float partial[kNormThreads / 32];
  __shared__ float inv_s;
  const float* xr = x + static_cast<size_t>(blockIdx.x) * cols;
  float* yr = y + static_cast<size_t>(blockIdx.x) * cols;
  float ss = 0;
  for (int c = threadIdx.x; c < cols; c += kNormThreads) ss = fmaf(xr[c], xr[c], ss);
  for (int o = 16; o > 0; o >>= 1) ss += __shfl_xor_sync(0xffffffffu, ss, o);
  if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = ss;
  __syncthreads();
  if (threadIdx.x < 32) {
    float t = threadIdx.x < kNormThreads / 32 ? partial[threadIdx.x] : 0.0f;
    for (int o = 16; o > 0; o >>= 1) t += __shfl_xor_sync(0xffffffffu, t, o);
    if (threadIdx.x == 0) inv_s = 1.0f / sqrtf(t / static_cast<float>(cols) + eps);
  }
  __syncthreads();
  const float inv = inv_s;
  for (int c = threadIdx.x; c < cols; c += kNormThreads) yr[c] = vec_at(w, c) * (xr[c] * inv);
}

// One block per row: the row's cos/sin table (angle = float(pos) * inv_freq[i] in fp32, as the
// reference) goes to shared memory once, then every head of the row is rotated with it.
__global__ void rope_kernel(float* x, int ld, int n_heads, int head_dim, const DevRowRef* rows, long long uniform_pos,
                            const float* __restrict__ inv_freq) {
  pdl_trigger();
  pdl_wait();
  extern __shared__ float table[];  // cos[half], sin[half]
  const int half = head_dim / 2;
  const int r = blockIdx.x;
  const float pos = static_cast<float>(rows ? rows[r].pos : uniform_pos);
  for (int i = threadIdx.x; i < half; i += blockDim.x) {
    const float a = pos * inv_freq[i];
    table[i] = cosf(a);
    table[half + i] = sinf(a);
  }
  __syncthreads();
  float* xr = x + static_cast<size_t>(r) * ld;
  const int pairs = n_heads * half;
  for (int t = threadIdx.x; t < pairs; t += blockDim.x) {
    const int h = t / half, i = t % half;
    float* v = xr + static_cast<size_t>(h) * head_dim;
    const float a = v[i], b = v[i + half];
    const float c = table[i], s = table[half + i];
    v[i] = a * c - b * s;
    v[i + half] = b * c + a * s;
  }
}

}  // namespace

void launch_rms_norm(const float* x, int rows, int cols, DevVec w, float eps, float* y, cudaStream_t s) {
  if (rows <= 0 || cols <= 0) return;
  launch_kernel("rms_norm", rms_norm_kernel, dim3(rows), dim3(kNormThreads), 0, s, x, cols, w, eps, y);
}

void launch_rope(float* x, int n_rows, int ld, int n_heads, int head_dim, const DevRowRef* rows,
                 long long uniform_pos, const float* inv_freq, cudaStream_t s) {
  const int half = head_dim / 2;
  if (n_rows <= 0 || n_heads <= 0 || half <= 0) return;
  const int threads = std::min(256, std::max(32, (n_heads * half + 31) / 32 * 32));
  launch_kernel("rope", rope_kernel, dim3(n_rows), dim3(threads), 2 * half * sizeof(float), s, x, ld, n_heads,
                head_dim, rows, uniform_pos, inv_freq);
}

}  // namespace voxrt::cuda
