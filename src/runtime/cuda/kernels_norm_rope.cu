// RMS norm and rotary embedding: per-row kernels (one block per row) whose arithmetic follows the
// CPU reference step by step, so that results agree to a few fp32 ulps.
#include <cuda_bf16.h>

#include <algorithm>

#include "runtime/cuda/cuda_check.h"
#include "runtime/cuda/cuda_kernels.h"
#include "runtime/cuda/dev_vec.cuh"
#include "runtime/cuda/launch.cuh"

namespace voxrt::cuda {
namespace {

constexpr int kNormThreads = 256;

// One block per row: the fp32 sum of squares by a block tree reduction, then
// y = w * (x * (1 / sqrt(mean + eps))) as the reference writes it, times scales[scale_row[r]] when
// scales is given (the separate scale_rows kernel's product, the same rounding). Safe in place
// (x == y): each thread rewrites only the elements it read, after the reduction's barrier.
__global__ void __launch_bounds__(kNormThreads) rms_norm_kernel(const float* x, int cols, DevVec w, float eps,
                                                                float* y, const float* scales, int scales_ld,
                                                                const int* scale_row) {
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
  if (scales) {
    const float* sr = scales + static_cast<size_t>(scale_row[blockIdx.x]) * scales_ld;
    for (int c = threadIdx.x; c < cols; c += kNormThreads) {
      const float v = vec_at(w, c) * (xr[c] * inv);
      yr[c] = v * sr[c];
    }
  } else {
    for (int c = threadIdx.x; c < cols; c += kNormThreads) yr[c] = vec_at(w, c) * (xr[c] * inv);
  }
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

// One block per row: the rows' cos/sin table as rope_kernel makes it, then q's heads and k's
// heads rotated in place as rope_kernel rotates them, and the rotated k and v written to the row's
// ring entry as store_kv_kernel writes them: the three kernels' results in one launch.
__global__ void rope_store_kernel(float* q, int ldq, int n_heads, float* k, int ldk, const float* v, int ldv,
                                  KvLayout kv, const DevRowRef* rows, const float* __restrict__ inv_freq) {
  pdl_trigger();
  pdl_wait();
  extern __shared__ float table[];  // cos[half], sin[half]
  const int head_dim = kv.head_dim, half = head_dim / 2;
  const int r = blockIdx.x;
  const float pos = static_cast<float>(rows[r].pos);
  for (int i = threadIdx.x; i < half; i += blockDim.x) {
    const float a = pos * inv_freq[i];
    table[i] = cosf(a);
    table[half + i] = sinf(a);
  }
  __syncthreads();
  const int width = kv.kv_heads * head_dim;
  const size_t off = static_cast<size_t>(rows[r].slot) * kv.per_slot + static_cast<size_t>(kv.layer) * kv.per_layer +
                     static_cast<size_t>(rows[r].pos % kv.ring) * width;
  float* qr = q + static_cast<size_t>(r) * ldq;
  float* kr = k + static_cast<size_t>(r) * ldk;
  const float* vr = v + static_cast<size_t>(r) * ldv;
  const int q_pairs = n_heads * half, k_pairs = kv.kv_heads * half;
  for (int t = threadIdx.x; t < q_pairs + k_pairs; t += blockDim.x) {
    const bool is_q = t < q_pairs;
    const int p = is_q ? t : t - q_pairs;
    const int h = p / half, i = p % half;
    float* x = (is_q ? qr : kr) + static_cast<size_t>(h) * head_dim;
    const float a = x[i], b = x[i + half];
    const float c = table[i], sn = table[half + i];
    const float lo = a * c - b * sn, hi = b * c + a * sn;
    x[i] = lo;
    x[i + half] = hi;
    if (!is_q) {
      kv.keys[off + static_cast<size_t>(h) * head_dim + i] = lo;
      kv.keys[off + static_cast<size_t>(h) * head_dim + i + half] = hi;
    }
  }
  for (int c = threadIdx.x; c < width; c += blockDim.x) kv.values[off + c] = vr[c];
}

}  // namespace

void launch_rope_store(float* q, int ldq, int n_heads, float* k, int ldk, const float* v, int ldv, const KvLayout& kv,
                       const DevRowRef* rows, int n_rows, const float* inv_freq, cudaStream_t s) {
  const int half = kv.head_dim / 2;
  if (n_rows <= 0 || half <= 0) return;
  launch_kernel("rope_store", rope_store_kernel, dim3(n_rows), dim3(256), 2 * half * sizeof(float), s, q, ldq, n_heads,
                k, ldk, v, ldv, kv, rows, inv_freq);
}

void launch_rms_norm(const float* x, int rows, int cols, DevVec w, float eps, float* y, cudaStream_t s) {
  if (rows <= 0 || cols <= 0) return;
  launch_kernel("rms_norm", rms_norm_kernel, dim3(rows), dim3(kNormThreads), 0, s, x, cols, w, eps, y,
                static_cast<const float*>(nullptr), 0, static_cast<const int*>(nullptr));
}

void launch_rms_norm_scaled(const float* x, int rows, int cols, DevVec w, float eps, float* y, const float* scales,
                            int scales_ld, const int* scale_row, cudaStream_t s) {
  if (rows <= 0 || cols <= 0) return;
  launch_kernel("rms_norm", rms_norm_kernel, dim3(rows), dim3(kNormThreads), 0, s, x, cols, w, eps, y, scales, scales_ld,
                scale_row);
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
