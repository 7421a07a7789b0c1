// The quantized formats' traits for the tensor-core products: how many 16-byte vectors a lane holds
// of one (tile, chunk) in quant_layout.h's layout, and how a lane turns them into its bf16 A
// fragments of one k16 group. A new format is one more specialization here, a branch in the upload
// (device_weights.cpp) and an option.
//
// An element is bf16(q * scale + bias), rounded once (fma.rn.bf16x2), as quant/weight_format.h
// defines it, so a quantized product is the bf16 product over the dequantized weight, bit for bit.
// Integers reach bf16 by bit operations and an exact subtraction: 0x4300 is bf16 128, whose ulp is
// 1, so 0x4300 | n is exactly 128 + n for n < 128. The conversion instructions run at a quarter of
// the ALU's rate, which made a first version slower than bf16 weights; splitting 8w's bytes into
// nibbles (a dozen instructions a register) kept 8w slower than bf16 at one row.
#pragma once

#include <cuda_bf16.h>

#include <cstdint>

#include "runtime/cuda/quant_layout.h"

namespace voxrt::cuda::qfrag {

__device__ __forceinline__ __nv_bfloat162 as_bf162(uint32_t u) { return *reinterpret_cast<__nv_bfloat162*>(&u); }
__device__ __forceinline__ uint32_t as_u32(__nv_bfloat162 v) { return *reinterpret_cast<uint32_t*>(&v); }
constexpr uint32_t kBf16x2_128 = 0x43004300u;

// A lane's scale and bias words of one group (quant_layout.h: row g's 8 bytes): x holds feature g's
// (scale, bias), y feature g + 8's. Register j's pair is (scale, scale) and (bias, bias) of feature
// g + 8 (j % 2).
__device__ __forceinline__ void scale_pair(uint2 sb, int j, __nv_bfloat162& s2, __nv_bfloat162& b2) {
  const uint32_t w = j % 2 ? sb.y : sb.x;
  s2 = as_bf162(__byte_perm(w, 0, 0x1010));
  b2 = as_bf162(__byte_perm(w, 0, 0x3232));
}

template <int FMT>
struct Traits;

// (x & mask) | bits in one instruction (lop3 0xea: (a & b) | c), where the compiler makes two.
template <uint32_t MASK, uint32_t BITS>
__device__ __forceinline__ uint32_t and_or(uint32_t x) {
  uint32_t r;
  asm("lop3.b32 %0, %1, %2, %3, 0xea;\n" : "=r"(r) : "r"(x), "n"(MASK), "n"(BITS));
  return r;
}

template <>
struct Traits<kGemvInt4> {
  static constexpr int kLaneVecs = qlayout::lane_bytes(kGemvInt4) / 16;
  // Register j of group h: nibbles j and j + 4 of word h.
  __device__ __forceinline__ static __nv_bfloat162 integers(const uint32_t (&w)[4 * kLaneVecs], int h, int j) {
    return __hsub2(as_bf162(and_or<0x000f000fu, kBf16x2_128>(w[h] >> (4 * j))), as_bf162(kBf16x2_128));
  }
};

template <>
struct Traits<kGemvInt8> {
  static constexpr int kLaneVecs = qlayout::lane_bytes(kGemvInt8) / 16;
  // Register j of group h: the int8 pair at bits 16 (j % 2) of word 2h + j / 2, moved to the low
  // byte of each half (one prmt). An int8 r with low bits l (7) and sign bit s is q = l - 128 s,
  // and both terms sit in exact bf16 values: 0x4300 | l is 128 + l, 0x4300 | (r & 0x80) is
  // 128 + 128 s (0x4380 is bf16 256), so q is one exact subtraction of two masked words.
  __device__ __forceinline__ static __nv_bfloat162 integers(const uint32_t (&w)[4 * kLaneVecs], int h, int j) {
    const uint32_t pair = __byte_perm(w[2 * h + j / 2], 0, j % 2 ? 0x4342 : 0x4140);
    return __hsub2(as_bf162(and_or<0x007f007fu, kBf16x2_128>(pair)), as_bf162(and_or<0x00800080u, kBf16x2_128>(pair)));
  }
};

// A lane's A fragment of k16 group h from its packed words w and its scale words sb of the group's
// half of the chunk: register j = bf16(q * scale + bias) of its two elements.
template <int FMT>
__device__ __forceinline__ void fragments(const uint32_t (&w)[4 * Traits<FMT>::kLaneVecs], int h, uint2 sb,
                                          uint32_t (&a)[4]) {
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    __nv_bfloat162 s2, b2;
    scale_pair(sb, j, s2, b2);
    a[j] = as_u32(__hfma2(Traits<FMT>::integers(w, h, j), s2, b2));
  }
}

}  // namespace voxrt::cuda::qfrag
