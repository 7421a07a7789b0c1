// fp8 e4m3 on the host and the fp8 weight format's activations (quant/fp8_e4m3.h, the definition in
// quant/weight_format.h): every code, every rounding case against a search over all 256 codes, and
// the activations' per-token quantization. The quantizer's fp8 rows: test_weight_format.cpp.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdio>
#include <limits>
#include <random>
#include <vector>

#include "quant/fp8_e4m3.h"

namespace voxrt {
namespace {

bool is_nan_code(int c) { return (c & 0x7f) == 0x7f; }

// The code a search over every finite code gives: the nearest value, ties to the even code,
// beyond 448 the largest (satfinite). What float_to_e4m3 must agree with.
uint8_t nearest_code_by_search(float x) {
  const double a = std::fabs(static_cast<double>(x));
  int best = 0;
  double best_distance = std::numeric_limits<double>::infinity();
  for (int c = 0; c <= 0x7e; ++c) {
    const double d = std::fabs(a - e4m3_to_float(static_cast<uint8_t>(c)));
    if (d < best_distance || (d == best_distance && c % 2 == 0)) {
      best = c;
      best_distance = d;
    }
  }
  return static_cast<uint8_t>(best | (std::signbit(x) ? 0x80 : 0));
}

TEST(E4m3, EveryCodeDecodesToItsValueAndRoundTrips) {
  EXPECT_EQ(e4m3_to_float(0x00), 0.0f);
  EXPECT_EQ(e4m3_to_float(0x01), std::ldexp(1.0f, -9));  // the least subnormal: 1/8 * 2^-6
  EXPECT_EQ(e4m3_to_float(0x07), 7 * std::ldexp(1.0f, -9));  // the largest subnormal
  EXPECT_EQ(e4m3_to_float(0x08), std::ldexp(1.0f, -6));  // the least normal
  EXPECT_EQ(e4m3_to_float(0x38), 1.0f);                  // exponent 7 (the bias), mantissa 0
  EXPECT_EQ(e4m3_to_float(0x39), 1.125f);
  EXPECT_EQ(e4m3_to_float(0x7e), 448.0f);  // the largest finite: exponent 15, mantissa 6
  EXPECT_EQ(e4m3_to_float(0xb8), -1.0f);
  EXPECT_EQ(e4m3_to_float(0xfe), -448.0f);
  EXPECT_TRUE(std::isnan(e4m3_to_float(0x7f)));
  EXPECT_TRUE(std::isnan(e4m3_to_float(0xff)));
  // Negative zero: its own code, both ways.
  EXPECT_EQ(e4m3_to_float(0x80), 0.0f);
  EXPECT_TRUE(std::signbit(e4m3_to_float(0x80)));
  EXPECT_EQ(float_to_e4m3(-0.0f), 0x80);
  EXPECT_EQ(float_to_e4m3(0.0f), 0x00);

  std::vector<float> table(256);
  std::vector<uint8_t> codes(256);
  for (int c = 0; c < 256; ++c) codes[c] = static_cast<uint8_t>(c);
  e4m3_to_floats(codes.data(), 256, table.data());
  for (int c = 0; c < 256; ++c) {
    const float v = e4m3_to_float(static_cast<uint8_t>(c));
    if (is_nan_code(c)) {
      EXPECT_TRUE(std::isnan(table[c])) << c;
      continue;
    }
    EXPECT_EQ(float_to_e4m3(v), c) << "code " << c << " value " << v;
    EXPECT_EQ(std::bit_cast<uint32_t>(table[c]), std::bit_cast<uint32_t>(v)) << c;
    EXPECT_EQ(e4m3_to_float(static_cast<uint8_t>(c ^ 0x80)), -v) << c;  // sign-magnitude
    if (c > 0 && c < 0x7f) EXPECT_LT(e4m3_to_float(static_cast<uint8_t>(c - 1)), v) << c;  // codes grow with values
  }
}

TEST(E4m3, MidpointsRoundToTheEvenCodeAndEverythingElseToTheNearest) {
  for (int c = 0; c < 0x7e; ++c) {
    const float lo = e4m3_to_float(static_cast<uint8_t>(c)), hi = e4m3_to_float(static_cast<uint8_t>(c + 1));
    const float mid = 0.5f * (lo + hi);  // exact: at most 5 significant bits
    ASSERT_GT(mid, lo);
    ASSERT_LT(mid, hi);
    const int even = c % 2 == 0 ? c : c + 1;
    EXPECT_EQ(float_to_e4m3(mid), even) << "between codes " << c << " and " << c + 1;
    EXPECT_EQ(float_to_e4m3(-mid), even | 0x80) << c;
    EXPECT_EQ(float_to_e4m3(std::nextafter(mid, 0.0f)), c) << c;
    EXPECT_EQ(float_to_e4m3(std::nextafter(mid, 1000.0f)), c + 1) << c;
  }
  // And any float: against the search over all codes, over every magnitude e4m3 covers and beyond.
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> mantissa(1.0f, 2.0f);
  std::uniform_int_distribution<int> exponent(-14, 10);
  for (int i = 0; i < 50000; ++i) {
    const float x = (rng() % 2 ? -1.0f : 1.0f) * std::ldexp(mantissa(rng), exponent(rng));
    ASSERT_EQ(float_to_e4m3(x), nearest_code_by_search(x)) << x;
  }
}

TEST(E4m3, SubnormalsRoundOnTheirOwnGrid) {
  const float least = std::ldexp(1.0f, -9);
  EXPECT_EQ(float_to_e4m3(least), 0x01);
  EXPECT_EQ(float_to_e4m3(0.5f * least), 0x00);          // halfway to 0: the even code, 0
  EXPECT_EQ(float_to_e4m3(-0.5f * least), 0x80);         // -0
  EXPECT_EQ(float_to_e4m3(0.51f * least), 0x01);
  EXPECT_EQ(float_to_e4m3(1.5f * least), 0x02);          // halfway between 1 and 2 steps: 2
  EXPECT_EQ(float_to_e4m3(2.5f * least), 0x02);          // halfway between 2 and 3 steps: 2
  EXPECT_EQ(float_to_e4m3(7.5f * least), 0x08);          // into the first normal binade
  EXPECT_EQ(float_to_e4m3(std::ldexp(1.0f, -20)), 0x00);
  EXPECT_EQ(float_to_e4m3(std::numeric_limits<float>::denorm_min()), 0x00);
  EXPECT_EQ(float_to_e4m3(-3 * least), 0x83);
}

TEST(E4m3, BeyondTheLargestValueSaturatesAndNanStaysNan) {
  EXPECT_EQ(float_to_e4m3(448.0f), 0x7e);
  EXPECT_EQ(float_to_e4m3(440.0f), 0x7e);  // between 416 and 448, nearer 448
  EXPECT_EQ(float_to_e4m3(432.0f), 0x7e);  // halfway between 416 (0x7d) and 448 (0x7e): the even code
  EXPECT_EQ(float_to_e4m3(std::nextafter(432.0f, 0.0f)), 0x7d);
  for (const float big : {448.5f, 464.0f, 480.0f, 1000.0f, 1e30f, std::numeric_limits<float>::max(),
                          std::numeric_limits<float>::infinity()}) {
    EXPECT_EQ(float_to_e4m3(big), 0x7e) << big;
    EXPECT_EQ(float_to_e4m3(-big), 0xfe) << big;
  }
  EXPECT_EQ(float_to_e4m3(std::numeric_limits<float>::quiet_NaN()), 0x7f);
  EXPECT_EQ(float_to_e4m3(-std::numeric_limits<float>::quiet_NaN()), 0x7f);
}

TEST(Fp8Activations, ARowOfZerosIsZerosWithAScaleOfZero) {
  const std::vector<float> x(48, 0.0f);
  std::vector<float> q(48, 7.0f);
  EXPECT_EQ(quantize_activation_row_e4m3(x.data(), 48, q.data()), 0.0f);
  for (float v : q) EXPECT_EQ(v, 0.0f);
}

TEST(Fp8Activations, TheLargestMagnitudeMapsTo448AndSignsAreKept) {
  const std::vector<float> x = {-3.0f, 1.5f, -0.75f, 0.0f, 3.0f * 0x1p-10f};
  std::vector<float> q(x.size());
  const float s = quantize_activation_row_e4m3(x.data(), static_cast<int>(x.size()), q.data());
  EXPECT_EQ(s, 3.0f / 448.0f);
  EXPECT_EQ(q[0], -448.0f);
  EXPECT_EQ(q[1], 224.0f);
  EXPECT_EQ(q[2], -112.0f);
  EXPECT_EQ(q[3], 0.0f);
  EXPECT_EQ(q[4], 0.4375f);  // 448 * 2^-10 = 1.75 * 2^-2, an e4m3 value
}

TEST(Fp8Activations, RowsFollowTheDefinitionAtEveryMagnitude) {
  std::mt19937 rng(5);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const int K = 200;
  std::vector<float> x(K), q(K);
  for (int row = 0; row < 300; ++row) {
    const float magnitude = std::ldexp(1.0f, row % 40 - 20);  // 2^-20 .. 2^19
    for (float& v : x) v = normal(rng) * magnitude;
    const float s = quantize_activation_row_e4m3(x.data(), K, q.data());
    float amax = 0;
    int at = 0;
    for (int k = 0; k < K; ++k)
      if (std::fabs(x[k]) > amax) amax = std::fabs(x[k]), at = k;
    ASSERT_EQ(s, amax / 448.0f);
    ASSERT_EQ(std::fabs(q[at]), 448.0f) << "row " << row;  // x * (448 / a) rounds to 448 at the largest
    const float inv = 448.0f / amax;
    for (int k = 0; k < K; ++k) {
      ASSERT_TRUE(std::isfinite(q[k]));
      ASSERT_EQ(q[k], e4m3_to_float(float_to_e4m3(x[k] * inv))) << k;  // the definition, value by value
      // q * s is within half a step of x: 1/16 of |x| above 2^-6 of the scale, a subnormal step below.
      const float tolerance = std::max(std::fabs(x[k]) / 16.0f, std::ldexp(1.0f, -10) * s) * 1.001f;
      ASSERT_LE(std::fabs(q[k] * s - x[k]), tolerance) << "row " << row << " k " << k;
    }
  }
}

}  // namespace
}  // namespace voxrt
