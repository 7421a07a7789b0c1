#include "bench/kernels/fp8_e4m3.h"

#include <algorithm>
#include <array>
#include <cmath>

namespace voxrt::bench {

float e4m3_to_float(uint8_t code) {
  const int sign = code >> 7, exponent = (code >> 3) & 0xf, mantissa = code & 7;
  if (exponent == 0xf && mantissa == 7) return std::nanf("");
  const float magnitude = exponent == 0 ? std::ldexp(static_cast<float>(mantissa), -9)  // subnormal: m/8 * 2^-6
                                        : std::ldexp(1.0f + mantissa / 8.0f, exponent - 7);
  return sign ? -magnitude : magnitude;
}

uint8_t float_to_e4m3(float x) {
  if (std::isnan(x)) return 0x7f;
  // The 127 finite magnitudes grow with their codes 0x00 .. 0x7e: the nearest is next to the first
  // one not below |x|.
  static const std::array<float, 127> magnitudes = [] {
    std::array<float, 127> m{};
    for (int c = 0; c < 127; ++c) m[c] = e4m3_to_float(static_cast<uint8_t>(c));
    return m;
  }();
  const float a = std::min(std::fabs(x), kE4m3Max);
  const int hi = static_cast<int>(std::lower_bound(magnitudes.begin(), magnitudes.end(), a) - magnitudes.begin());
  int code = hi;
  if (hi > 0 && magnitudes[hi] != a) {
    const float below = a - magnitudes[hi - 1], above = magnitudes[hi] - a;
    code = below < above || (below == above && (hi - 1) % 2 == 0) ? hi - 1 : hi;
  }
  return static_cast<uint8_t>(code | (std::signbit(x) ? 0x80 : 0));
}

}  // namespace voxrt::bench
