#include "quant/weight_format.h"

#include <bit>
#include <cmath>

#include "common/bf16.h"
#include "common/error.h"
#include "quant/fp8_e4m3.h"

namespace voxrt {

std::string_view quant_kind_name(QuantKind kind) {
  switch (kind) {
    case QuantKind::Int4: return "4w";
    case QuantKind::Int8: return "8w";
    case QuantKind::Fp8: return "fp8";
    case QuantKind::None: break;
  }
  return "bf16";
}

QuantKind parse_quant_kind(std::string_view name, const std::string& what) {
  if (name == "4w") return QuantKind::Int4;
  if (name == "8w") return QuantKind::Int8;
  if (name == "fp8") return QuantKind::Fp8;
  if (name == "none" || name == "bf16") return QuantKind::None;
  throw Error(what + ": unknown weight format '" + std::string(name) + "' (expected 4w, 8w, fp8 or none)");
}

std::string format_name(const WeightFormat& f) {
  if (!f.quantized()) return "bf16";
  if (f.kind == QuantKind::Fp8) return "fp8";
  return std::string(quant_kind_name(f.kind)) + "/" + std::to_string(f.group_size);
}

void check_group_size(const WeightFormat& f, int64_t K, const std::string& what) {
  if (!f.quantized()) return;
  const int g = f.group_size;
  if (f.kind == QuantKind::Int4)
    check(g == 32 || g == 64 || g == 128, what, "4w takes a group size of 32, 64 or 128, not " + std::to_string(g));
  else if (f.kind == QuantKind::Fp8)
    check(g == K, what,
          "fp8 takes one scale an output channel (a group of the row's " + std::to_string(K) + "), not a group of " +
              std::to_string(g));
  else
    check(g > 0 && g % 32 == 0, what, "8w takes a group size that is a multiple of 32, not " + std::to_string(g));
  check(K > 0 && K % g == 0, what,
        "group size " + std::to_string(g) + " does not divide the input dimension " + std::to_string(K));
}

bool takes_channel_scales(QuantKind kind) { return kind == QuantKind::Int8 || kind == QuantKind::Fp8; }

WeightFormat format_for_width(WeightFormat f, int64_t K) {
  if (takes_channel_scales(f.kind) && f.group_size == 0) f.group_size = static_cast<int>(K);
  return f;
}

WeightFormat plan_format_of(WeightFormat f, int64_t K) {
  if (takes_channel_scales(f.kind) && f.group_size == K) f.group_size = 0;
  return f;
}

size_t packed_row_bytes(QuantKind kind, int cols) {
  if (kind == QuantKind::Int4) return static_cast<size_t>(cols) / 2;
  if (kind == QuantKind::Int8 || kind == QuantKind::Fp8) return static_cast<size_t>(cols);
  return 0;
}

double bytes_per_element(const WeightFormat& format, double unquantized) {
  if (!format.quantized()) return unquantized;
  const double per_group = 2.0 * (has_biases(format.kind) ? 2 : 1);  // bf16 scale (and bias)
  return (format.kind == QuantKind::Int4 ? 0.5 : 1.0) + per_group / format.group_size;
}

bool has_biases(QuantKind kind) { return kind == QuantKind::Int4; }

size_t QuantizedMatrix::packed_row_bytes() const { return voxrt::packed_row_bytes(format.kind, cols); }

void QuantizedMatrix::check_consistent(const std::string& what) const {
  check(format.quantized(), what, "not a quantized format");
  check(rows > 0 && cols > 0, what, "empty matrix");
  check_group_size(format, cols, what);
  const size_t groups_total = static_cast<size_t>(rows) * groups();
  check(packed.size() == static_cast<size_t>(rows) * packed_row_bytes(), what,
        "packed values: " + std::to_string(packed.size()) + " bytes, expected " +
            std::to_string(static_cast<size_t>(rows) * packed_row_bytes()));
  check(scales.size() == groups_total, what,
        "scales: " + std::to_string(scales.size()) + " values, expected " + std::to_string(groups_total));
  const size_t want_biases = has_biases(format.kind) ? groups_total : 0;
  check(biases.size() == want_biases, what,
        "biases: " + std::to_string(biases.size()) + " values, expected " + std::to_string(want_biases));
}

uint16_t dequantized_bf16(int q, uint16_t scale, uint16_t bias) {
  const float a = static_cast<float>(q) * bf16_to_float(scale);  // exact: at most 8 x 8 significant bits
  const float b = bf16_to_float(bias);
  // s + e == a + b exactly (TwoSum). Rounding s to bf16 is rounding the exact sum, except where s
  // sits exactly halfway between two bf16 values: the exact sum then lies on e's side of it.
  const float s = a + b;
  const float bb = s - a;
  const float e = (a - (s - bb)) + (b - bb);
  const uint32_t u = std::bit_cast<uint32_t>(s);
  if ((u & 0xffffu) == 0x8000u && e != 0 && std::isfinite(s)) {
    const bool away_from_zero = (e > 0) == (s > 0);
    return static_cast<uint16_t>((u >> 16) + (away_from_zero ? 1 : 0));
  }
  return float_to_bf16(s);
}

void dequantize_row(const QuantizedMatrix& m, int r, float* out) {
  const int g = m.format.group_size, groups = m.groups();
  const uint8_t* row = m.packed.data() + static_cast<size_t>(r) * m.packed_row_bytes();
  const uint16_t* scales = m.scales.data() + static_cast<size_t>(r) * groups;
  const uint16_t* biases = m.biases.empty() ? nullptr : m.biases.data() + static_cast<size_t>(r) * groups;
  if (m.format.kind == QuantKind::Fp8) {
    // e4m3_to_float(q) * s: exact in fp32 (the definition; quant/fp8_e4m3.h).
    e4m3_to_floats(row, m.cols, out);
    const float s = bf16_to_float(scales[0]);
    for (int k = 0; k < m.cols; ++k) out[k] *= s;
    return;
  }
  if (m.format.kind == QuantKind::Int4) {
    // 16 values a group can take: computed once a group, then looked up.
    float table[16];
    for (int j = 0; j < groups; ++j) {
      for (int q = 0; q < 16; ++q) table[q] = bf16_to_float(dequantized_bf16(q, scales[j], biases[j]));
      const uint8_t* bytes = row + static_cast<size_t>(j) * g / 2;
      float* o = out + static_cast<size_t>(j) * g;
      for (int i = 0; i < g / 2; ++i) {
        o[2 * i] = table[bytes[i] & 0xf];
        o[2 * i + 1] = table[bytes[i] >> 4];
      }
    }
    return;
  }
  for (int j = 0; j < groups; ++j) {
    const float s = bf16_to_float(scales[j]);
    const int8_t* q = reinterpret_cast<const int8_t*>(row) + static_cast<size_t>(j) * g;
    float* o = out + static_cast<size_t>(j) * g;
    // q * s is exact in fp32 (at most 8 x 8 significant bits) and the bias is 0: one rounding.
    for (int i = 0; i < g; ++i) o[i] = bf16_to_float(float_to_bf16(static_cast<float>(q[i]) * s));
  }
}

std::vector<uint16_t> dequantize_bf16(const QuantizedMatrix& m) {
  check(m.format.kind != QuantKind::Fp8, "dequantize_bf16",
        "fp8 values (e4m3 times a bf16 scale) are not bf16 values: take them as floats (dequantize_row)");
  std::vector<uint16_t> bits(static_cast<size_t>(m.rows) * m.cols);
  ThreadTeam::shared().parallel_for(m.rows, 16, [&](size_t r0, size_t r1) {
    std::vector<float> row(m.cols);
    for (size_t r = r0; r < r1; ++r) {
      dequantize_row(m, static_cast<int>(r), row.data());
      for (int c = 0; c < m.cols; ++c) bits[r * m.cols + c] = static_cast<uint16_t>(std::bit_cast<uint32_t>(row[c]) >> 16);
    }
  });
  return bits;
}

}  // namespace voxrt
