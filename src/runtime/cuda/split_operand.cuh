#pragma once
// fp32-exact products on bf16 mma.sync (the tensor-core attention's scores and weighted values): an
// fp32 operand split into three bf16 terms, hi + mid + lo, which hold its 24 bits (x - hi is exact
// in fp32, and so is the next remainder), each term's products accumulated in fp32 and the three
// sums added smallest first. The other operand must be bf16 as it is (a cache's K or V).
#include <cuda_bf16.h>

#include <cstdint>
#include <type_traits>

#include "runtime/cuda/tensor_core.cuh"

namespace voxrt::cuda {

// A bf16 pair as the 32-bit register an mma operand takes.
__device__ __forceinline__ uint32_t pair_bits(__nv_bfloat162 v) { return *reinterpret_cast<uint32_t*>(&v); }

// x as three bf16 terms, hi + mid + lo = x to fp32's precision (the file comment).
struct Bf16x3 {
  __nv_bfloat16 hi, mid, lo;
};
__device__ __forceinline__ Bf16x3 split3(float x) {
  const __nv_bfloat16 hi = __float2bfloat16_rn(x);
  const float r = x - __bfloat162float(hi);
  const __nv_bfloat16 mid = __float2bfloat16_rn(r);
  return {hi, mid, __float2bfloat16_rn(r - __bfloat162float(mid))};
}
// (x, y) the same, as the three bf16 pairs an mma operand register holds (x in the low half).
struct Split3 {
  uint32_t hi, mid, lo;
};
__device__ __forceinline__ Split3 split3(float x, float y) {
  const Bf16x3 a = split3(x), b = split3(y);
  return {pair_bits(__halves2bfloat162(a.hi, b.hi)), pair_bits(__halves2bfloat162(a.mid, b.mid)),
          pair_bits(__halves2bfloat162(a.lo, b.lo))};
}

// Three accumulators, one a term of the split operand: three independent chains of mma (an mma's
// result takes tens of cycles, and one chain of every term in turn waited on each), added smallest
// first at the end.
struct Acc3 {
  float lo[4] = {0, 0, 0, 0}, mid[4] = {0, 0, 0, 0}, hi[4] = {0, 0, 0, 0};
  __device__ __forceinline__ void mma(const uint32_t (&a)[4], const Split3& b0, const Split3& b1) {
    tc::mma16816(lo, a[0], a[1], a[2], a[3], b0.lo, b1.lo);
    tc::mma16816(mid, a[0], a[1], a[2], a[3], b0.mid, b1.mid);
    tc::mma16816(hi, a[0], a[1], a[2], a[3], b0.hi, b1.hi);
  }
  __device__ __forceinline__ float sum(int e) const { return hi[e] + (mid[e] + lo[e]); }
};

// Up to four queries: the three terms in two mma, not three. The first's eight columns hold the
// queries' hi terms (column q) and mid terms (column 4 + q), the second's first four their lo
// terms (zeros after): a third fewer mma and fragment registers. A query's sum is the one above,
// term for term: each column of an mma is a dot product of its own (the other columns never enter
// it), so column q holds the bits Acc3's hi chain would, column 4 + q its mid chain's, which the
// lane two to the right (t + 2, the same rows) hands over.
struct Packed2 {
  uint32_t hm, lo;
};
// This lane's B register of a split operand whose column g holds query g % 4.
__device__ __forceinline__ Packed2 pack2(const Split3& s, int g) { return {g < 4 ? s.hi : s.mid, g < 4 ? s.lo : 0u}; }
struct AccPacked {
  float lo[4] = {0, 0, 0, 0}, hm[4] = {0, 0, 0, 0};
  __device__ __forceinline__ void mma(const uint32_t (&a)[4], const Packed2& b0, const Packed2& b1) {
    tc::mma16816(lo, a[0], a[1], a[2], a[3], b0.lo, b1.lo);
    tc::mma16816(hm, a[0], a[1], a[2], a[3], b0.hm, b1.hm);
  }
  // Query 2 t + (e & 1)'s sum in lanes t < 2 (others: not a query's). Every lane must call it.
  __device__ __forceinline__ float sum(int e) const {
    const float mid = __shfl_xor_sync(0xffffffffu, hm[e], 2);
    return hm[e] + (mid + lo[e]);
  }
};
// The split operand's B register type and accumulators, by whether the queries pack (Q <= 4).
template <bool kPacked>
using SplitB = std::conditional_t<kPacked, Packed2, Split3>;
template <bool kPacked>
using SplitAcc = std::conditional_t<kPacked, AccPacked, Acc3>;

}  // namespace voxrt::cuda
