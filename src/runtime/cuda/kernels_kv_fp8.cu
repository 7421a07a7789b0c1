// fp8 (e4m3) key/value caches: storing rows and re-basing keys. Each head of each cached entry
// has its own float scale, max|x| / 448 over the head's elements (448: e4m3's largest finite), so
// that every head uses e4m3's whole range whatever its magnitude and no element saturates; the
// attention kernel multiplies scores and value weights by the scales (kernels_attention.cu). A
// scale per entry needs no calibration and does not depend on what else is in the cache, so a
// row's stored bits depend on that row alone, as with bf16.
//
// One warp per head: its lanes find the head's max together (shuffles), then quantise their
// elements. A block holds one row's heads (K and V in separate blocks).
#include <cuda_fp8.h>

#include <algorithm>

#include "runtime/cuda/cuda_check.h"
#include "runtime/cuda/cuda_kernels.h"
#include "runtime/cuda/kv_elem.cuh"
#include "runtime/cuda/launch.cuh"

namespace voxrt::cuda {
namespace {

constexpr float kFp8Max = 448.0f;
constexpr int kMaxHeadDim = 256;

__device__ __forceinline__ float warp_max(float v) {
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

// The scale for a head whose largest magnitude is amax (1 for an all-zero head, so that it stays 0).
__device__ __forceinline__ float head_scale(float amax) { return amax > 0.0f ? amax / kFp8Max : 1.0f; }

// Grid (row, 2: K then V), block kv_heads warps: warp h quantises head h of the row's K or V.
__global__ void store_kv_fp8_kernel(KvLayout kv, const float* __restrict__ k, int ldk, const float* __restrict__ v,
                                    int ldv, const DevRowRef* __restrict__ rows) {
  pdl_trigger();
  pdl_wait();
  const int r = blockIdx.x, part = blockIdx.y, h = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int hd = kv.head_dim;
  const float* src = (part == 0 ? k + static_cast<size_t>(r) * ldk : v + static_cast<size_t>(r) * ldv) +
                     static_cast<size_t>(h) * hd;
  float amax = 0.0f;
  for (int i = lane; i < hd; i += 32) amax = fmaxf(amax, fabsf(src[i]));
  const float scale = head_scale(warp_max(amax)), inv = 1.0f / scale;
  const DevRowRef row = rows[r];
  const int* slot_pages = kv_slot_pages(kv, row.slot);
  const int entry = static_cast<int>(row.pos % kv.ring);
  __nv_fp8_e4m3* dst = static_cast<__nv_fp8_e4m3*>(part == 0 ? kv.keys : kv.values) +
                       kv_entry_offset(kv, slot_pages, entry) + static_cast<size_t>(h) * hd;
  for (int i = lane; i < hd; i += 32) dst[i] = __nv_fp8_e4m3(src[i] * inv);  // round to nearest, saturating
  if (lane == 0) (part == 0 ? kv.key_scales : kv.value_scales)[kv_scale_offset(kv, slot_pages, entry) + h] = scale;
}

// A re-base of one page's keys: every entry of every layer of page `page` rotated by position
// `pos` (rope's rotate-half, the same fp32 angle as rope_kernel), then quantised again with the
// rotated head's own scale. Grid: the page's layers x page_len entries; block kv_heads warps.
__global__ void rotate_keys_fp8_kernel(KvLayout kv, int page, long long pos, const float* __restrict__ inv_freq) {
  pdl_trigger();
  pdl_wait();
  const int e = blockIdx.x, h = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int hd = kv.head_dim, half = hd / 2;
  const size_t row = static_cast<size_t>(page) * kv.per_page + static_cast<size_t>(e) * kv.kv_heads * hd;
  __nv_fp8_e4m3* x = static_cast<__nv_fp8_e4m3*>(kv.keys) + row + static_cast<size_t>(h) * hd;
  float* scale_at = kv.key_scales + static_cast<size_t>(page) * kv.scales_per_page +
                    static_cast<size_t>(e) * kv.kv_heads + h;
  const float scale = *scale_at;
  float lo[kMaxHeadDim / 64], hi[kMaxHeadDim / 64];  // this lane's pairs (i, i + half)
  float amax = 0.0f;
#pragma unroll
  for (int j = 0; j < kMaxHeadDim / 64; ++j) {
    const int i = lane + 32 * j;
    if (i >= half) break;
    const float a = static_cast<float>(x[i]) * scale, b = static_cast<float>(x[i + half]) * scale;
    const float ang = static_cast<float>(pos) * inv_freq[i];
    const float c = cosf(ang), s = sinf(ang);
    lo[j] = a * c - b * s;
    hi[j] = b * c + a * s;
    amax = fmaxf(amax, fmaxf(fabsf(lo[j]), fabsf(hi[j])));
  }
  const float next = head_scale(warp_max(amax)), inv = 1.0f / next;
#pragma unroll
  for (int j = 0; j < kMaxHeadDim / 64; ++j) {
    const int i = lane + 32 * j;
    if (i >= half) break;
    x[i] = __nv_fp8_e4m3(lo[j] * inv);
    x[i + half] = __nv_fp8_e4m3(hi[j] * inv);
  }
  if (lane == 0) *scale_at = next;
}

void check_fp8_layout(const KvLayout& kv, const char* where) {
  check(kv.fp8 && kv.key_scales && kv.value_scales && kv.kv_heads >= 1 && kv.kv_heads <= 32 && kv.head_dim >= 2 &&
            kv.head_dim <= kMaxHeadDim && kv.head_dim % 2 == 0,
        where, "an fp8 cache of 1-32 kv heads of at most 256 elements expected");
}

}  // namespace

void launch_store_kv_fp8(const KvLayout& kv, const float* k, int ldk, const float* v, int ldv, const DevRowRef* rows,
                         int n_rows, Stream s) {
  if (n_rows <= 0) return;
  check_fp8_layout(kv, "cuda store_kv fp8");
  launch_kernel("store_kv_fp8", store_kv_fp8_kernel, dim3(static_cast<unsigned>(n_rows), 2), dim3(32 * kv.kv_heads), 0, s,
                kv, k, ldk, v, ldv, rows);
}

void launch_rotate_keys_fp8(const KvLayout& kv, int layers, int page, long long pos, const float* inv_freq, Stream s) {
  check_fp8_layout(kv, "cuda shift_cached_keys fp8");
  const long long entries = static_cast<long long>(layers) * kv.page_len;
  if (entries <= 0) return;
  launch_kernel("rotate_keys_fp8", rotate_keys_fp8_kernel, dim3(static_cast<unsigned>(entries)), dim3(32 * kv.kv_heads), 0,
                s, kv, page, pos, inv_freq);
}

}  // namespace voxrt::cuda
