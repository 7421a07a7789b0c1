#include "quant/fp8_e4m3.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <limits>

#include "common/bf16.h"

namespace voxrt {
namespace {

// 2^e as a float, for e in the normal range: multiplying by it is exact.
float power_of_two(int e) { return std::bit_cast<float>(static_cast<uint32_t>(127 + e) << 23); }

// The smallest bf16 value not below x (x >= 0): x's top half, one up when the bottom half is not 0.
uint16_t bf16_at_least(float x) {
  uint32_t u = std::bit_cast<uint32_t>(x);
  if ((u & 0xffffu) != 0) u += 0x10000u;
  return static_cast<uint16_t>(u >> 16);
}

const std::array<float, 256>& e4m3_values() {
  static const std::array<float, 256> values = [] {
    std::array<float, 256> v{};
    for (int c = 0; c < 256; ++c) v[c] = e4m3_to_float(static_cast<uint8_t>(c));
    return v;
  }();
  return values;
}

}  // namespace

float e4m3_to_float(uint8_t code) {
  const int exponent = (code >> 3) & 0xf, mantissa = code & 7;
  if (exponent == 0xf && mantissa == 7) return std::numeric_limits<float>::quiet_NaN();
  // Subnormal: m/8 * 2^-6 = m * 2^-9; normal: (1 + m/8) * 2^(e-7) = (8 + m) * 2^(e-10). Exact.
  const float magnitude = exponent == 0 ? static_cast<float>(mantissa) * power_of_two(-9)
                                        : static_cast<float>(8 + mantissa) * power_of_two(exponent - 10);
  return (code & 0x80) ? -magnitude : magnitude;
}

uint8_t float_to_e4m3(float x) {
  if (std::isnan(x)) return 0x7f;
  const uint8_t sign = std::signbit(x) ? 0x80 : 0;
  const float a = std::fabs(x);
  if (a >= kE4m3Max) return sign | 0x7e;  // 448 itself, and saturation (infinities included)
  // The codes count steps up from 0 without a break: 2^-9 apart below 2^-6 (the subnormals, and
  // the first binade continues them), 2^(e-3) apart in the binade [2^e, 2^(e+1)), whose first code
  // is (e + 7) * 8. So a's code is (e + 6) * 8 plus a's size in steps, rounded to the nearest
  // integer (ties to even: the code's parity is the steps'); rounding up to 16 steps lands on the
  // next binade's first code. Below 448 the steps stay at most 14 in the top binade (e = 8): 0x7e.
  const int e = a < 0x1p-6f ? -6 : static_cast<int>(std::bit_cast<uint32_t>(a) >> 23) - 127;
  const float steps = std::nearbyint(a * power_of_two(3 - e));  // exact scaling, then round to nearest even
  return sign | static_cast<uint8_t>((e + 6) * 8 + static_cast<int>(steps));
}

void e4m3_to_floats(const uint8_t* codes, int n, float* out) {
  const std::array<float, 256>& values = e4m3_values();
  for (int i = 0; i < n; ++i) out[i] = values[codes[i]];
}

uint16_t quantize_weight_row_e4m3(const float* w, int n, uint8_t* q) {
  float amax = 0;
  for (int k = 0; k < n; ++k) amax = std::max(amax, std::fabs(w[k]));
  const uint16_t scale = bf16_at_least(amax / kE4m3Max);
  const float s = bf16_to_float(scale);
  for (int k = 0; k < n; ++k) q[k] = s != 0 ? float_to_e4m3(w[k] / s) : 0;
  return scale;
}

float quantize_activation_row_e4m3(const float* x, int n, float* values) {
  float a = 0;
  for (int k = 0; k < n; ++k) a = std::max(a, std::fabs(x[k]));
  if (a == 0) {
    std::fill(values, values + n, 0.0f);
    return 0.0f;
  }
  const std::array<float, 256>& table = e4m3_values();
  const float inv = kE4m3Max / a;
  for (int k = 0; k < n; ++k) values[k] = table[float_to_e4m3(x[k] * inv)];
  return a / kE4m3Max;
}

}  // namespace voxrt
