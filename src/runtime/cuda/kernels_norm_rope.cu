// RMS norm and rotary embedding: per-row kernels (one block per row) whose arithmetic follows the
// CPU reference step by step, so that results agree to a few fp32 ulps.
#include <cuda_bf16.h>

#include <algorithm>

#include "runtime/cuda/cuda_check.h"
#include "runtime/cuda/cuda_kernels.h"
#include "runtime/cuda/dev_vec.cuh"
#include "runtime/cuda/kv_elem.cuh"
#include "runtime/cuda/launch.cuh"

namespace voxrt::cuda {
namespace {

constexpr int kNormThreads = 256;
// These kernels have one block per row (one block in all for a decode step), so their time is the
// chain of memory round trips, not bandwidth: each thread loads all of its elements of a wave
// (kPerThread per thread) before using any, so a wave costs one round trip instead of one per
// element (stores to the row would otherwise keep the compiler from hoisting the next loads).
constexpr int kPerThread = 16;

// One block per row: the fp32 sum of squares by a block tree reduction, then
// y = w * (x * (1 / sqrt(mean + eps))) as the reference writes it, times scales[scale_row[r]] when
// scales is given (the separate scale_rows kernel's product, the same rounding). Safe in place
// (x == y): each thread rewrites only the elements it read, after the reduction's barrier. Each
// thread sums its elements c = tid, tid + 256, ... in ascending order.
__global__ void __launch_bounds__(kNormThreads) rms_norm_kernel(const float* x, int cols, DevVec w, float eps,
                                                                float* y, const float* scales, int scales_ld,
                                                                const int* scale_row) {
  pdl_trigger();
  pdl_wait();
  __shared__ float partial[kNormThreads / 32];
  __shared__ float inv_s;
  constexpr int kWave = kNormThreads * kPerThread;
  const float* xr = x + static_cast<size_t>(blockIdx.x) * cols;
  float* yr = y + static_cast<size_t>(blockIdx.x) * cols;
  float ss = 0;
  for (int base = 0; base < cols; base += kWave) {
    float v[kPerThread];
#pragma unroll
    for (int i = 0; i < kPerThread; ++i) {
      const int c = base + threadIdx.x + i * kNormThreads;
      v[i] = c < cols ? xr[c] : 0.0f;
    }
#pragma unroll
    for (int i = 0; i < kPerThread; ++i)
      if (base + static_cast<int>(threadIdx.x) + i * kNormThreads < cols) ss = fmaf(v[i], v[i], ss);
  }
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
  const float* sr = scales ? scales + static_cast<size_t>(scale_row[blockIdx.x]) * scales_ld : nullptr;
  for (int base = 0; base < cols; base += kWave) {
    float v[kPerThread], wv[kPerThread], sv[kPerThread];
#pragma unroll
    for (int i = 0; i < kPerThread; ++i) {
      const int c = base + threadIdx.x + i * kNormThreads;
      if (c < cols) {
        v[i] = xr[c];
        wv[i] = vec_at(w, c);
        sv[i] = sr ? sr[c] : 1.0f;
      }
    }
#pragma unroll
    for (int i = 0; i < kPerThread; ++i) {
      const int c = base + threadIdx.x + i * kNormThreads;
      if (c < cols) {
        float o = wv[i] * (v[i] * inv);
        if (sr) o = o * sv[i];
        yr[c] = o;
      }
    }
  }
}

// One block per row: the row's cos/sin table (angle = float(pos) * inv_freq[i] in fp32, as the
// reference) goes to shared memory once, then every head of the row is rotated with it. T: x's
// element type (fp32 activations, or a bf16 cache's keys, rotated in fp32 and rounded back).
// Positions are rows[r].pos, or uniform_pos for every row when rows is null (a cache re-base).
template <typename T>
__global__ void rope_kernel(T* x, int ld, int n_heads, int head_dim, const DevRowRef* rows, long long uniform_pos,
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
  T* xr = x + static_cast<size_t>(r) * ld;
  const int pairs = n_heads * half;
  for (int t = threadIdx.x; t < pairs; t += blockDim.x) {
    const int h = t / half, i = t % half;
    T* v = xr + static_cast<size_t>(h) * head_dim;
    const float a = KvElem<T>::load(v + i), b = KvElem<T>::load(v + i + half);
    const float c = table[i], s = table[half + i];
    KvElem<T>::store(v + i, a * c - b * s);
    KvElem<T>::store(v + i + half, b * c + a * s);
  }
}

// One block per row: the rows' cos/sin table as rope_kernel makes it, then q's heads and k's
// heads rotated in place as rope_kernel rotates them, and the rotated k and v written to the row's
// ring entry as store_kv_kernel writes them: the three kernels' results in one launch.
template <typename T>
__global__ void rope_store_kernel(float* q, int ldq, int n_heads, float* k, int ldk, const float* v, int ldv,
                                  KvLayout kv, const DevRowRef* rows, const float* __restrict__ inv_freq) {
  pdl_trigger();
  pdl_wait();
  extern __shared__ float table[];  // cos[half], sin[half]
  const int head_dim = kv.head_dim, half = head_dim / 2;
  const int r = blockIdx.x;
  const int width = kv.kv_heads * head_dim;
  float* qr = q + static_cast<size_t>(r) * ldq;
  float* kr = k + static_cast<size_t>(r) * ldk;
  const float* vr = v + static_cast<size_t>(r) * ldv;
  const int q_pairs = n_heads * half, total = q_pairs + kv.kv_heads * half;
  // Pair t: rotation pair i of head h of q (t < q_pairs) or of k.
  auto pair = [&](int t, bool& is_q, int& h, int& i) -> float* {
    is_q = t < q_pairs;
    const int p = is_q ? t : t - q_pairs;
    h = p / half;
    i = p % half;
    return (is_q ? qr : kr) + static_cast<size_t>(h) * head_dim;
  };
  const int wave = blockDim.x * kPerThread;
  // The first wave's q/k values are loaded while the table is made (they do not need it).
  float a[kPerThread], b[kPerThread];
  auto load_wave = [&](int base) {
#pragma unroll
    for (int u = 0; u < kPerThread; ++u) {
      const int t = base + threadIdx.x + u * blockDim.x;
      if (t < total) {
        bool is_q;
        int h, i;
        const float* x = pair(t, is_q, h, i);
        a[u] = x[i];
        b[u] = x[i + half];
      }
    }
  };
  load_wave(0);
  const DevRowRef row = rows[r];
  const float pos = static_cast<float>(row.pos);
  for (int i = threadIdx.x; i < half; i += blockDim.x) {
    const float ang = pos * inv_freq[i];
    table[i] = cosf(ang);
    table[half + i] = sinf(ang);
  }
  __syncthreads();
  const size_t off = kv_row_offset(kv, row);
  for (int base = 0; base < total; base += wave) {
    if (base > 0) load_wave(base);
#pragma unroll
    for (int u = 0; u < kPerThread; ++u) {
      const int t = base + threadIdx.x + u * blockDim.x;
      if (t >= total) continue;
      bool is_q;
      int h, i;
      float* x = pair(t, is_q, h, i);
      const float c = table[i], sn = table[half + i];
      const float lo = a[u] * c - b[u] * sn, hi = b[u] * c + a[u] * sn;
      x[i] = lo;
      x[i + half] = hi;
      if (!is_q) {
        T* key = static_cast<T*>(kv.keys) + off + static_cast<size_t>(h) * head_dim;
        KvElem<T>::store(key + i, lo);
        KvElem<T>::store(key + i + half, hi);
      }
    }
  }
  T* values = static_cast<T*>(kv.values) + off;
  for (int base = 0; base < width; base += wave) {
    float vals[kPerThread];
#pragma unroll
    for (int u = 0; u < kPerThread; ++u) {
      const int c = base + threadIdx.x + u * blockDim.x;
      if (c < width) vals[u] = vr[c];
    }
#pragma unroll
    for (int u = 0; u < kPerThread; ++u) {
      const int c = base + threadIdx.x + u * blockDim.x;
      if (c < width) KvElem<T>::store(values + c, vals[u]);
    }
  }
}

}  // namespace

void launch_rope_store(float* q, int ldq, int n_heads, float* k, int ldk, const float* v, int ldv, const KvLayout& kv,
                       const DevRowRef* rows, int n_rows, const float* inv_freq, cudaStream_t s) {
  const int half = kv.head_dim / 2;
  if (n_rows <= 0 || half <= 0) return;
  const size_t smem = 2 * half * sizeof(float);
  if (kv.bf16)
    launch_kernel("rope_store", rope_store_kernel<__nv_bfloat16>, dim3(n_rows), dim3(256), smem, s, q, ldq, n_heads, k,
                  ldk, v, ldv, kv, rows, inv_freq);
  else
    launch_kernel("rope_store", rope_store_kernel<float>, dim3(n_rows), dim3(256), smem, s, q, ldq, n_heads, k, ldk, v,
                  ldv, kv, rows, inv_freq);
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
                 const float* inv_freq, cudaStream_t s) {
  const int half = head_dim / 2;
  if (n_rows <= 0 || n_heads <= 0 || half <= 0) return;
  const int threads = std::min(256, std::max(32, (n_heads * half + 31) / 32 * 32));
  launch_kernel("rope", rope_kernel<float>, dim3(n_rows), dim3(threads), 2 * half * sizeof(float), s, x, ld, n_heads,
                head_dim, rows, 0LL, inv_freq);
}

void launch_shift_cached_keys(const KvLayout& kv, int layers, int slot, long long shift, const float* inv_freq,
                              cudaStream_t s) {
  const int half = kv.head_dim / 2, width = kv.kv_heads * kv.head_dim;
  const long long n_rows = static_cast<long long>(layers) * kv.ring;
  if (n_rows <= 0 || half <= 0) return;
  const size_t first = static_cast<size_t>(slot) * kv.per_slot;
  const int threads = std::min(256, std::max(32, (kv.kv_heads * half + 31) / 32 * 32));
  const size_t smem = 2 * half * sizeof(float);
  const DevRowRef* no_rows = nullptr;
  if (kv.bf16)
    launch_kernel("rope", rope_kernel<__nv_bfloat16>, dim3(static_cast<unsigned>(n_rows)), dim3(threads), smem, s,
                  static_cast<__nv_bfloat16*>(kv.keys) + first, width, kv.kv_heads, kv.head_dim, no_rows, -shift,
                  inv_freq);
  else
    launch_kernel("rope", rope_kernel<float>, dim3(static_cast<unsigned>(n_rows)), dim3(threads), smem, s,
                  static_cast<float*>(kv.keys) + first, width, kv.kv_heads, kv.head_dim, no_rows, -shift, inv_freq);
}

}  // namespace voxrt::cuda
