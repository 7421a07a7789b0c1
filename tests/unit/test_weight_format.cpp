// The quantized formats' one definition of a value (quant/weight_format.h) and the quantizer
// (quant/quantizer.h): exact dequantization, packing, the search never worse than rounding, and
// fp8's rows (a scale from the row's largest magnitude, rounded up; the e4m3 codes) and their cost.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <random>
#include <utility>
#include <vector>

#include "common/bf16.h"
#include "quant/fp8_e4m3.h"
#include "quant/quantizer.h"
#include "quant/weight_format.h"
#include "voxrt/error.h"

namespace voxrt {
namespace {

// bf16 of an exact value (long double holds q * s + b exactly for these operands), rounded to
// nearest even by hand.
uint16_t exact_bf16(long double x) {
  if (x == 0) return std::signbit(static_cast<double>(x)) ? 0x8000 : 0;
  // Candidates: the bf16 values around x, from the float nearest x truncated to bf16.
  const float f = static_cast<float>(x);
  uint16_t lo = static_cast<uint16_t>(std::bit_cast<uint32_t>(f) >> 16);
  auto value = [](uint16_t h) { return static_cast<long double>(bf16_to_float(h)); };
  // Step to the pair (a, b) of consecutive bf16 with |a| <= |x| <= |b|.
  while (std::fabs(value(lo)) > std::fabs(x)) --lo;
  uint16_t hi = lo;
  while (std::fabs(value(hi)) < std::fabs(x)) ++hi;
  if (hi == lo) return lo;
  const long double dl = std::fabs(x - value(lo)), dh = std::fabs(value(hi) - x);
  if (dl < dh) return lo;
  if (dh < dl) return hi;
  return (lo & 1) ? hi : lo;
}

TEST(WeightFormat, DequantizationIsTheExactValueRoundedOnce) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> mag(-8, 2);
  for (int i = 0; i < 200000; ++i) {
    const uint16_t s = float_to_bf16(std::ldexp(1.0f + (rng() % 128) / 128.0f, static_cast<int>(mag(rng))));
    const uint16_t b = float_to_bf16(-std::ldexp(1.0f + (rng() % 128) / 128.0f, static_cast<int>(mag(rng))));
    const int q = static_cast<int>(rng() % 16);
    const long double exact = static_cast<long double>(q) * bf16_to_float(s) + bf16_to_float(b);
    const uint16_t want = exact_bf16(exact);
    ASSERT_EQ(dequantized_bf16(q, s, b), want) << "q " << q << " scale " << bf16_to_float(s) << " bias " << bf16_to_float(b);
  }
  // 3 * (1 + 2^-7) is halfway between two bf16 values (3 + 2^-6 and 3 + 2^-5); a bias of -2^-40 puts
  // the exact value just below, where it rounds down. Through fp32 first, the sum would round back
  // to the halfway point and then up (to even): the double rounding dequantized_bf16 avoids.
  const uint16_t s = float_to_bf16(1.0f + 0x1p-7f), b = float_to_bf16(-0x1p-40f);
  EXPECT_EQ(bf16_to_float(dequantized_bf16(3, s, b)), 3.0f + 0x1p-6f);
  EXPECT_EQ(bf16_to_float(float_to_bf16(3.0f * (1.0f + 0x1p-7f) - 0x1p-40f)), 3.0f + 0x1p-5f);
}

TEST(WeightFormat, RowsUnpackAsTheFormatSays) {
  QuantizedMatrix m;
  m.format = {QuantKind::Int4, 32};
  m.rows = 1;
  m.cols = 64;
  m.packed.resize(32);
  for (int k = 0; k < 64; ++k) m.packed[k / 2] |= static_cast<uint8_t>((k % 16) << (4 * (k % 2)));
  m.scales = {float_to_bf16(0.5f), float_to_bf16(2.0f)};
  m.biases = {float_to_bf16(-1.0f), float_to_bf16(3.0f)};
  m.check_consistent("test");
  std::vector<float> row(64);
  dequantize_row(m, 0, row.data());
  for (int k = 0; k < 64; ++k) EXPECT_EQ(row[k], (k % 16) * (k < 32 ? 0.5f : 2.0f) + (k < 32 ? -1.0f : 3.0f)) << k;

  QuantizedMatrix e;
  e.format = {QuantKind::Int8, 32};
  e.rows = 1;
  e.cols = 32;
  for (int k = 0; k < 32; ++k) e.packed.push_back(static_cast<uint8_t>(static_cast<int8_t>(k - 16)));
  e.scales = {float_to_bf16(0.25f)};
  e.check_consistent("test");
  dequantize_row(e, 0, row.data());
  for (int k = 0; k < 32; ++k) EXPECT_EQ(row[k], (k - 16) * 0.25f);
}

TEST(WeightFormat, InconsistentSizesAndGroupSizesAreRefusedNamingThem) {
  QuantizedMatrix m;
  m.format = {QuantKind::Int4, 32};
  m.rows = 2;
  m.cols = 64;
  m.packed.resize(64);
  m.scales.resize(4);
  m.biases.resize(3);
  try {
    m.check_consistent("w");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("biases: 3 values, expected 4"), std::string::npos) << e.what();
  }
  try {
    check_group_size({QuantKind::Int4, 48}, 96, "tensor x");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("32, 64 or 128, not 48"), std::string::npos) << e.what();
  }
  try {
    check_group_size({QuantKind::Int4, 128}, 64, "tensor x");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("does not divide the input dimension 64"), std::string::npos) << e.what();
  }
  EXPECT_THROW(parse_quant_kind("3w", "field"), Error);
}

// Weights shaped like a trained layer's: mostly Gaussian, a few large outliers.
std::vector<float> layer_like(int rows, int cols, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> n(0, 0.02f);
  std::vector<float> w(static_cast<size_t>(rows) * cols);
  for (float& x : w) x = n(rng);
  for (size_t i = 0; i < w.size(); i += 97) w[i] *= 8;
  return w;
}

TEST(Quantizer, TheSearchIsNeverWorseThanRoundingAndBothStayInRange) {
  const int rows = 64, cols = 256;
  const std::vector<float> w = layer_like(rows, cols, 3);
  for (const WeightFormat f : {WeightFormat{QuantKind::Int4, 32}, WeightFormat{QuantKind::Int4, 128},
                               WeightFormat{QuantKind::Int8, 256}, WeightFormat{QuantKind::Int8, 32}}) {
    const QuantizedMatrix rtn = quantize(w.data(), rows, cols, f, QuantMethod::Rtn);
    const QuantizedMatrix search = quantize(w.data(), rows, cols, f, QuantMethod::Search);
    rtn.check_consistent("rtn");
    search.check_consistent("search");
    const double e_rtn = quantization_error(w.data(), rtn).relative();
    const double e_search = quantization_error(w.data(), search).relative();
    std::printf("[quantizer] %s: relative error rtn %.5f, search %.5f\n", format_name(f).c_str(), e_rtn, e_search);
    EXPECT_LE(e_search, e_rtn) << format_name(f);
    EXPECT_LT(e_search, f.kind == QuantKind::Int4 ? 0.2 : 0.03) << format_name(f);
    for (uint8_t b : search.packed)
      if (f.kind == QuantKind::Int8) EXPECT_NE(static_cast<int8_t>(b), -128);
  }
}

TEST(Quantizer, ANumberThatIsNotFiniteIsNamedByRowAndColumn) {
  std::vector<float> w(2 * 64, 0.5f);
  w[64 + 37] = std::nanf("");
  try {
    quantize(w.data(), 2, 64, {QuantKind::Int4, 32});
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("row 1 column 37"), std::string::npos) << e.what();
  }
}

TEST(Fp8Weights, EachRowsScaleIsItsLargestMagnitudeOver448RoundedUpToBf16) {
  const int rows = 64, cols = 256;
  std::vector<float> w = layer_like(rows, cols, 9);
  for (int c = 0; c < cols; ++c) w[5 * cols + c] = 0.0f;  // a row of zeros
  const QuantizedMatrix q = quantize(w.data(), rows, cols, {QuantKind::Fp8, cols});
  q.check_consistent("fp8");
  EXPECT_EQ(q.packed.size(), static_cast<size_t>(rows) * cols);
  EXPECT_EQ(q.scales.size(), static_cast<size_t>(rows));
  EXPECT_TRUE(q.biases.empty());
  std::vector<float> row(cols);
  for (int r = 0; r < rows; ++r) {
    float amax = 0;
    int at = 0;
    for (int c = 0; c < cols; ++c)
      if (std::fabs(w[r * cols + c]) > amax) amax = std::fabs(w[r * cols + c]), at = c;
    const uint8_t* codes = q.packed.data() + static_cast<size_t>(r) * cols;
    dequantize_row(q, r, row.data());
    if (amax == 0) {
      EXPECT_EQ(q.scales[r], 0) << r;
      for (int c = 0; c < cols; ++c) EXPECT_EQ(codes[c], 0) << c;
      for (float v : row) EXPECT_EQ(v, 0.0f);
      continue;
    }
    const float s = bf16_to_float(q.scales[r]);
    EXPECT_GE(s, amax / 448.0f) << r;                                // nothing clips
    EXPECT_LT(bf16_to_float(q.scales[r] - 1), amax / 448.0f) << r;  // the smallest bf16 that does so
    // Rounded up by less than a bf16 step, the largest lands on +-448 itself.
    EXPECT_EQ(std::fabs(e4m3_to_float(codes[at])), 448.0f) << r;
    for (int c = 0; c < cols; ++c) {
      ASSERT_NE(codes[c] & 0x7f, 0x7f) << r << " " << c;
      ASSERT_EQ(codes[c], float_to_e4m3(w[r * cols + c] / s));  // the definition
      ASSERT_EQ(row[c], e4m3_to_float(codes[c]) * s);           // what the element stands for
    }
  }
  // Search and round-to-nearest are one method for fp8.
  EXPECT_EQ(quantize(w.data(), rows, cols, {QuantKind::Fp8, cols}, QuantMethod::Rtn).packed, q.packed);
}

TEST(Fp8Weights, TheirErrorIsE4m3sFewPercent) {
  const int rows = 128, cols = 512;
  const std::vector<float> w = layer_like(rows, cols, 4);
  std::mt19937 rng(2);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> uniform(w.size());
  for (float& v : uniform) v = u(rng);
  using Named = std::pair<const char*, const std::vector<float>*>;
  for (const auto& [name, values] : {Named{"layer-like", &w}, Named{"uniform", &uniform}}) {
    const QuantizedMatrix q = quantize(values->data(), rows, cols, {QuantKind::Fp8, cols});
    const double e = quantization_error(values->data(), q).relative();
    const QuantizedMatrix w8 = quantize(values->data(), rows, cols, {QuantKind::Int8, cols}, QuantMethod::Rtn);
    std::printf("[quantizer] fp8 on %s weights: relative error %.4f (8w a channel, rtn: %.4f)\n", name, e,
                quantization_error(values->data(), w8).relative());
    // 3 mantissa bits: a relative rounding error of at most 1/16, some 2-4 % in the mean square.
    EXPECT_GT(e, 0.01) << name;
    EXPECT_LT(e, 0.045) << name;
  }
}

TEST(Fp8Weights, TheFormatIsNamedAndTakesOneScaleAnOutputChannelAlone) {
  EXPECT_EQ(parse_quant_kind("fp8", "x"), QuantKind::Fp8);
  EXPECT_EQ(quant_kind_name(QuantKind::Fp8), "fp8");
  EXPECT_EQ(format_name({QuantKind::Fp8, 3072}), "fp8");
  EXPECT_EQ(packed_row_bytes(QuantKind::Fp8, 96), 96u);
  EXPECT_FALSE(has_biases(QuantKind::Fp8));
  EXPECT_DOUBLE_EQ(bytes_per_element({QuantKind::Fp8, 1024}, 2.0), 1.0 + 2.0 / 1024);
  EXPECT_TRUE(format_for_width({QuantKind::Fp8, 0}, 64) == (WeightFormat{QuantKind::Fp8, 64}));
  EXPECT_TRUE(plan_format_of({QuantKind::Fp8, 64}, 64) == (WeightFormat{QuantKind::Fp8, 0}));
  check_group_size({QuantKind::Fp8, 64}, 64, "tensor x");
  try {
    check_group_size({QuantKind::Fp8, 32}, 64, "tensor x");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("fp8 takes one scale an output channel"), std::string::npos) << e.what();
  }
  // Its values are not bf16 values: no bf16 copy of them.
  std::vector<float> w(64, 0.3f);
  const QuantizedMatrix q = quantize(w.data(), 1, 64, {QuantKind::Fp8, 64});
  EXPECT_THROW(dequantize_bf16(q), Error);
}

}  // namespace
}  // namespace voxrt
