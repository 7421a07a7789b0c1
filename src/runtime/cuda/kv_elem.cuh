// How kernels read and write K/V cache elements, stored as fp32 or bf16 (KvLayout::bf16): single
// elements, or 16 bytes (kPer16 elements) at once widened to floats; a store rounds to nearest
// even, as the reference's bf16 cache does.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <cstddef>
#include <cstdint>

#include "runtime/cuda/cuda_kernels.h"

namespace voxrt::cuda {

// The first element of ring entry `entry` of `slot` in the layout's layer: its page (from the
// slot's page table), the layer within the page, the entry within the page.
__device__ __forceinline__ size_t kv_entry_offset(const KvLayout& kv, const int* slot_pages, int entry) {
  return static_cast<size_t>(slot_pages[entry / kv.page_len]) * kv.per_page +
         static_cast<size_t>(kv.layer) * kv.per_page_layer + static_cast<size_t>(entry % kv.page_len) * kv.kv_heads * kv.head_dim;
}
__device__ __forceinline__ const int* kv_slot_pages(const KvLayout& kv, int slot) {
  return kv.page_table + static_cast<size_t>(slot) * kv.pages_per_slot;
}
// The scale of ring entry `entry`'s first kv head (fp8 caches: one float per entry and head, laid
// out as the elements are, [page][layer][page_len][kv_heads]).
__device__ __forceinline__ size_t kv_scale_offset(const KvLayout& kv, const int* slot_pages, int entry) {
  return static_cast<size_t>(slot_pages[entry / kv.page_len]) * kv.scales_per_page +
         (static_cast<size_t>(kv.layer) * kv.page_len + entry % kv.page_len) * kv.kv_heads;
}
// The first element of a row's K (or V): its slot's ring entry pos % ring.
__device__ __forceinline__ size_t kv_row_offset(const KvLayout& kv, DevRowRef row) {
  return kv_entry_offset(kv, kv_slot_pages(kv, row.slot), static_cast<int>(row.pos % kv.ring));
}

template <typename T>
struct KvElem;

template <>
struct KvElem<float> {
  static constexpr int kPer16 = 4;  // elements in 16 bytes
  __device__ __forceinline__ static void widen16(uint4 r, float (&out)[kPer16]) {
    out[0] = __uint_as_float(r.x);
    out[1] = __uint_as_float(r.y);
    out[2] = __uint_as_float(r.z);
    out[3] = __uint_as_float(r.w);
  }
  __device__ __forceinline__ static void store(float* p, float v) { *p = v; }
  __device__ __forceinline__ static float load(const float* p) { return *p; }
};

template <>
struct KvElem<__nv_bfloat16> {
  static constexpr int kPer16 = 8;
  __device__ __forceinline__ static void widen16(uint4 r, float (&out)[kPer16]) {
    const unsigned w[4] = {r.x, r.y, r.z, r.w};
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      out[2 * i] = __uint_as_float(w[i] << 16);
      out[2 * i + 1] = __uint_as_float(w[i] & 0xffff0000u);
    }
  }
  __device__ __forceinline__ static void store(__nv_bfloat16* p, float v) { *p = __float2bfloat16_rn(v); }
  __device__ __forceinline__ static float load(const __nv_bfloat16* p) { return __bfloat162float(*p); }
};

// fp8 (e4m3) elements, each head of an entry scaled by its own float (KvLayout::key_scales): load
// and widen16 give the stored values unscaled; the caller multiplies by the scale. Stores go through
// store_kv_fp8 (kernels_kv_fp8.cu), which picks the scale.
template <>
struct KvElem<__nv_fp8_e4m3> {
  static constexpr int kPer16 = 16;
  __device__ __forceinline__ static void widen16(uint4 r, float (&out)[kPer16]) {
    const unsigned w[4] = {r.x, r.y, r.z, r.w};
#pragma unroll
    for (int i = 0; i < 4; ++i) {
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const __half2_raw pair = __nv_cvt_fp8x2_to_halfraw2(static_cast<__nv_fp8x2_storage_t>(w[i] >> (16 * h)), __NV_E4M3);
        const float2 f = __half22float2(__half2(pair));
        out[4 * i + 2 * h] = f.x;
        out[4 * i + 2 * h + 1] = f.y;
      }
    }
  }
  __device__ __forceinline__ static float load(const __nv_fp8_e4m3* p) { return static_cast<float>(*p); }
};

}  // namespace voxrt::cuda
