// fp8 e4m3 (the K/V cache's fp8 elements, CUDA's __nv_fp8_e4m3) on the host: 1 sign, 4 exponent
// (bias 7), 3 mantissa bits; no infinities, 0x7f and 0xff are NaN, 448 the largest finite value.
#pragma once

#include <cstdint>

namespace voxrt::bench {

constexpr float kE4m3Max = 448.0f;

float e4m3_to_float(uint8_t code);
// Round to nearest (ties to the even code), saturating at +-448, as __nv_fp8_e4m3(float) does.
uint8_t float_to_e4m3(float x);

}  // namespace voxrt::bench
