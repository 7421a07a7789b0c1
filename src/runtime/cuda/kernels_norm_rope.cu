// RMS norm and rotary embedding: per-row kernels whose arithmetic follows the CPU reference step by
// step, so that results agree to a few fp32 ulps.
#include <cuda_bf16.h>

#include <algorithm>

#include "runtime/cuda/cuda_check.h"
#include "runtime/cuda/cuda_kernels.h"
#include "runtime/cuda/dev_vec.cuh"
#include "runtime/cuda/kv_elem.cuh"
#include "runtime/cuda/launch.cuh"

namespace voxrt::cuda {
namespace {

// The row kernels are latency-bound (one block per row: one block in all for a decode step), so
// their time is the chain of dependent memory round trips and the instructions of the longest
// thread, not bandwidth.
//
// RMS norm: one block per row, thread tid holding the row's elements c = tid, tid + blockDim, ...
// (at most kPer of them) in registers, so the row is read once; the norm weight, which no kernel
// writes, is read before the PDL wait, overlapping the previous kernel's tail. The fp32 sum of
// squares is a block tree reduction (each thread's elements in ascending order), then
// y = w * (x * (1 / sqrt(mean + eps))) as the reference writes it, times scales[scale_row[r]] when
// scales is given (the separate scale_rows kernel's product, the same rounding). Safe in place
// (x == y): each thread rewrites only the elements it read, after the reduction's barrier.
constexpr int kNormMaxThreads = 1024;
constexpr int kNormMaxPerThread = 16;

template <int kPer>
__global__ void __launch_bounds__(kNormMaxThreads) rms_norm_kernel(const float* x, int cols, DevVec w, float eps,
                                                                   float* y, const float* scales, int scales_ld,
                                                                   const int* scale_row) {
  pdl_trigger();
  __shared__ float partial[kNormMaxThreads / 32];
  __shared__ float inv_s;
  const int tid = threadIdx.x, nt = blockDim.x;
  float wv[kPer], v[kPer], sv[kPer];
#pragma unroll
  for (int i = 0; i < kPer; ++i) {
    const int c = tid + i * nt;
    wv[i] = c < cols ? vec_at(w, c) : 0.0f;
  }
  pdl_wait();
  const float* xr = x + static_cast<size_t>(blockIdx.x) * cols;
  float* yr = y + static_cast<size_t>(blockIdx.x) * cols;
  const float* sr = scales ? scales + static_cast<size_t>(scale_row[blockIdx.x]) * scales_ld : nullptr;
#pragma unroll
  for (int i = 0; i < kPer; ++i) {
    const int c = tid + i * nt;
    v[i] = c < cols ? xr[c] : 0.0f;
    sv[i] = sr && c < cols ? sr[c] : 1.0f;
  }
  float ss = 0;
#pragma unroll
  for (int i = 0; i < kPer; ++i) ss = fmaf(v[i], v[i], ss);
  for (int o = 16; o > 0; o >>= 1) ss += __shfl_xor_sync(0xffffffffu, ss, o);
  if (tid % 32 == 0) partial[tid / 32] = ss;
  __syncthreads();
  if (tid < 32) {
    float t = tid < nt / 32 ? partial[tid] : 0.0f;
    for (int o = 16; o > 0; o >>= 1) t += __shfl_xor_sync(0xffffffffu, t, o);
    if (tid == 0) inv_s = 1.0f / sqrtf(t / static_cast<float>(cols) + eps);
  }
  __syncthreads();
  const float inv = inv_s;
#pragma unroll
  for (int i = 0; i < kPer; ++i) {
    const int c = tid + i * nt;
    if (c < cols) {
      float o = wv[i] * (v[i] * inv);
      if (sr) o = o * sv[i];
      yr[c] = o;
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

// RoPE on q's and k's heads plus the K/V store, with rope_kernel's and store_kv_kernel's results
// in one launch. Grid (row, blocks along the row): thread t of a row takes rotation pair t of q's
// heads, then of k's (rotated in place and written to the row's ring entry), then the same pair of
// elements of v (copied to the ring entry). Each thread makes its own cos/sin (the same fp32 angle,
// float(pos) * inv_freq[i], and the same functions as rope_kernel's table), so a block is one round
// trip with no barrier: one block per row would make a decode step's row a chain of waves on one SM.
constexpr int kRopeStoreThreads = 128;

template <typename T>
__global__ void __launch_bounds__(kRopeStoreThreads)
    rope_store_kernel(float* q, int ldq, int n_heads, float* k, int ldk, const float* v, int ldv, KvLayout kv,
                      const DevRowRef* rows, const float* __restrict__ inv_freq) {
  pdl_trigger();
  const int head_dim = kv.head_dim, half = head_dim / 2;
  const int q_pairs = n_heads * half, k_pairs = kv.kv_heads * half;
  int t = blockIdx.y * blockDim.x + threadIdx.x;
  if (t >= q_pairs + 2 * k_pairs) return;  // touches nothing: no need to wait
  const int part = t < q_pairs ? 0 : t < q_pairs + k_pairs ? 1 : 2;  // q, k, v
  if (part > 0) t -= q_pairs + (part - 1) * k_pairs;
  const int h = t / half, i = t % half;
  const float f = inv_freq[i];  // a constant table: read before the wait
  pdl_wait();
  const int r = blockIdx.x;
  const DevRowRef row = rows[r];
  T* entry = (part == 1 ? static_cast<T*>(kv.keys) : static_cast<T*>(kv.values)) + kv_row_offset(kv, row) +
             static_cast<size_t>(h) * head_dim;
  if (part == 2) {
    const float* vr = v + static_cast<size_t>(r) * ldv + static_cast<size_t>(h) * head_dim;
    const float lo = vr[i], hi = vr[i + half];
    KvElem<T>::store(entry + i, lo);
    KvElem<T>::store(entry + i + half, hi);
    return;
  }
  float* x = (part == 0 ? q + static_cast<size_t>(r) * ldq : k + static_cast<size_t>(r) * ldk) +
             static_cast<size_t>(h) * head_dim;
  const float a = x[i], b = x[i + half];
  const float ang = static_cast<float>(row.pos) * f;
  const float c = cosf(ang), sn = sinf(ang);
  const float lo = a * c - b * sn, hi = b * c + a * sn;
  x[i] = lo;
  x[i + half] = hi;
  if (part == 1) {
    KvElem<T>::store(entry + i, lo);
    KvElem<T>::store(entry + i + half, hi);
  }
}

}  // namespace

void launch_rope_store(float* q, int ldq, int n_heads, float* k, int ldk, const float* v, int ldv, const KvLayout& kv,
                       const DevRowRef* rows, int n_rows, const float* inv_freq, Stream s) {
  const int half = kv.head_dim / 2;
  if (n_rows <= 0 || half <= 0) return;
  if (kv.fp8) {  // a head's scale needs all of its rotated elements: rotate, then store
    launch_rope(q, n_rows, ldq, n_heads, kv.head_dim, rows, inv_freq, s);
    launch_rope(k, n_rows, ldk, kv.kv_heads, kv.head_dim, rows, inv_freq, s);
    return launch_store_kv(kv, k, ldk, v, ldv, rows, n_rows, s);
  }
  const int pairs = (n_heads + 2 * kv.kv_heads) * half;
  const dim3 grid(static_cast<unsigned>(n_rows), static_cast<unsigned>((pairs + kRopeStoreThreads - 1) / kRopeStoreThreads));
  if (kv.bf16)
    launch_kernel("rope_store", rope_store_kernel<__nv_bfloat16>, grid, dim3(kRopeStoreThreads), 0, s, q, ldq, n_heads,
                  k, ldk, v, ldv, kv, rows, inv_freq);
  else
    launch_kernel("rope_store", rope_store_kernel<float>, grid, dim3(kRopeStoreThreads), 0, s, q, ldq, n_heads, k, ldk,
                  v, ldv, kv, rows, inv_freq);
}

namespace {

// The fewest elements per thread (4, 8 or 16) that fit a row in one block of at most 1024 threads.
template <typename... Args>
void launch_rms_norm_rows(int rows, int cols, Stream s, Args... args) {
  if (cols > kNormMaxThreads * kNormMaxPerThread)
    throw Error("cuda rms_norm: rows of " + std::to_string(cols) + " columns exceed the kernel's " +
                std::to_string(kNormMaxThreads * kNormMaxPerThread));
  int per = 4;
  while (per < kNormMaxPerThread && cols > kNormMaxThreads * per) per *= 2;
  const int threads = std::max(32, ((cols + per - 1) / per + 31) / 32 * 32);
  const dim3 grid(static_cast<unsigned>(rows)), block(static_cast<unsigned>(threads));
  if (per == 4) launch_kernel("rms_norm", rms_norm_kernel<4>, grid, block, 0, s, args...);
  else if (per == 8) launch_kernel("rms_norm", rms_norm_kernel<8>, grid, block, 0, s, args...);
  else launch_kernel("rms_norm", rms_norm_kernel<16>, grid, block, 0, s, args...);
}

}  // namespace

void launch_rms_norm(const float* x, int rows, int cols, DevVec w, float eps, float* y, Stream s) {
  if (rows <= 0 || cols <= 0) return;
  launch_rms_norm_rows(rows, cols, s, x, cols, w, eps, y, static_cast<const float*>(nullptr), 0,
                       static_cast<const int*>(nullptr));
}

void launch_rms_norm_scaled(const float* x, int rows, int cols, DevVec w, float eps, float* y, const float* scales,
                            int scales_ld, const int* scale_row, Stream s) {
  if (rows <= 0 || cols <= 0) return;
  launch_rms_norm_rows(rows, cols, s, x, cols, w, eps, y, scales, scales_ld, scale_row);
}

void launch_rope(float* x, int n_rows, int ld, int n_heads, int head_dim, const DevRowRef* rows,
                 const float* inv_freq, Stream s) {
  const int half = head_dim / 2;
  if (n_rows <= 0 || n_heads <= 0 || half <= 0) return;
  const int threads = std::min(256, std::max(32, (n_heads * half + 31) / 32 * 32));
  launch_kernel("rope", rope_kernel<float>, dim3(n_rows), dim3(threads), 2 * half * sizeof(float), s, x, ld, n_heads,
                head_dim, rows, 0LL, inv_freq);
}

void launch_shift_cached_keys(const KvLayout& kv, int layers, int page, long long shift, const float* inv_freq,
                              Stream s) {
  const int half = kv.head_dim / 2, width = kv.kv_heads * kv.head_dim;
  const long long n_rows = static_cast<long long>(layers) * kv.page_len;  // a page's layers are contiguous
  if (n_rows <= 0 || half <= 0) return;
  if (kv.fp8) return launch_rotate_keys_fp8(kv, layers, page, -shift, inv_freq, s);
  const size_t first = static_cast<size_t>(page) * kv.per_page;
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
