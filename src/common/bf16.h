// bf16 <-> fp32 on the host, bit for bit as CUDA's __bfloat162float and __float2bfloat16_rn: a
// bf16 is the top half of an fp32; rounding is to nearest even, and a NaN stays a quiet NaN.
// The array forms run on all cores for large arrays (model loading converts gigabytes).
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>

#include "common/thread_team.h"

namespace voxrt {

inline float bf16_to_float(uint16_t h) { return std::bit_cast<float>(static_cast<uint32_t>(h) << 16); }

inline uint16_t float_to_bf16(float f) {
  uint32_t u = std::bit_cast<uint32_t>(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40u);
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}

// Large arrays (weights at load) are converted by the process's team, in pieces of 1 M values.
inline void bf16_to_float(const uint16_t* src, float* dst, size_t n) {
  ThreadTeam::shared().parallel_for(n, size_t{1} << 20, [&](size_t i0, size_t i1) {
    for (size_t i = i0; i < i1; ++i) dst[i] = bf16_to_float(src[i]);
  });
}

inline void float_to_bf16(const float* src, uint16_t* dst, size_t n) {
  ThreadTeam::shared().parallel_for(n, size_t{1} << 18, [&](size_t i0, size_t i1) {
    for (size_t i = i0; i < i1; ++i) dst[i] = float_to_bf16(src[i]);
  });
}

}  // namespace voxrt
