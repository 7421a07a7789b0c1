// One job: what a quantized weight matrix is, on the host, and the one definition of the value each
// of its elements stands for. Every backend's kernels, the quantizer and the checkpoint files agree
// on this file; a backend may repack the bytes for its kernels, never change the values.
//
// The integer formats are affine per group of `group_size` consecutive elements of a row (along the
// input dimension K), as MLX's and tinygemm's are: element k of row n stands for
//     w = bf16(q * scale + bias)
// with q the stored integer, scale and bias the group's bf16 values, the product and sum exact and
// rounded once to bf16 (round to nearest even). Exact arithmetic rounded once is what a GPU's
// fma.rn.bf16x2 computes, and on the CPU dequantize_row() computes the same bits; so a quantized
// product is a bf16 product over these values, and every backend's result can be compared with one
// reference (the model run on the dequantized weights).
//   - Int4 ("4w"): q unsigned, 0..15, two a byte, element 2j in the low nibble of byte j (MLX's
//     order, read as bytes); a scale and a bias a group (asymmetric).
//   - Int8 ("8w"): q signed, -127..127, one a byte; a scale a group and no bias (symmetric). A group
//     as long as the row is one scale an output channel.
//
// Fp8 ("fp8", W8A8) is not affine: q is an e4m3 code (quant/fp8_e4m3.h: OCP E4M3 "fn", as CUDA's
// __nv_fp8_e4m3), one a byte, with one bf16 scale s an output channel (the group is always the row)
// and no bias. Element k of row n stands for
//     w = e4m3_to_float(q) * s
// exact in fp32 (4 x 8 significant bits), not a bf16 value. The quantizer's s is the smallest bf16
// value not below max_k |w[n, k]| / 448 (448: e4m3's largest finite value; rounded up so that nothing
// clips) and q = float_to_e4m3(w / s) (0 for a row of zeros). Its products quantize the activations
// too, per row (token) m of x on the fly: a = max_k |x[m, k]|, x_q = float_to_e4m3(x * (448 / a)),
// s_x = a / 448 (all 0 when a is 0), and
//     y[m, n] = (acc * s_x[m]) * s[n],  acc = sum_k e4m3_to_float(x_q[m, k]) * e4m3_to_float(q[n, k])
// in fp32, then the bias and accumulation as any product. quant/fp8_e4m3.h computes all of it; a
// backend sums acc in its own order (the CPU's sgemm, the GPU's fp8 tensor cores), so backends agree
// within a tolerance, not bit for bit, and the model on the dequantized weights is a reference only
// within the activations' rounding (e4m3: 3 mantissa bits).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace voxrt {

enum class QuantKind : uint8_t { None, Int4, Int8, Fp8 };

struct WeightFormat {
  QuantKind kind = QuantKind::None;
  int group_size = 0;  // elements a group along K (a scale each); 0 when kind is None
  bool quantized() const { return kind != QuantKind::None; }
  bool operator==(const WeightFormat&) const = default;
};

// "4w", "8w", "fp8", or "bf16" for None: the names of the command line and of a quantized file's metadata.
std::string_view quant_kind_name(QuantKind kind);
// The reverse ("none" and "bf16" both give None); nullopt-like: throws voxrt::Error naming `what`.
QuantKind parse_quant_kind(std::string_view name, const std::string& what);
// "4w/32" style: the kind and its group size (for messages and metadata); "fp8" alone (its group is
// always the row).
std::string format_name(const WeightFormat& format);

// The group sizes a kind takes: 4w 32, 64 or 128; 8w any multiple of 32 (a row's length: one an
// output channel); fp8 the row's length K alone. Throws naming `what` otherwise, or when the group
// does not divide K.
void check_group_size(const WeightFormat& format, int64_t K, const std::string& what);

// A plan (and the options) name one scale an output channel by a group size of 0, whatever the
// width of each weight: 8w's choice, fp8's only form. Whether a kind takes that.
bool takes_channel_scales(QuantKind kind);
// A plan's format for a weight of K columns: a group of 0 (an output channel) becomes K.
WeightFormat format_for_width(WeightFormat format, int64_t K);
// And back: a weight's format as a plan names it (a group as long as the row, K, becomes 0).
WeightFormat plan_format_of(WeightFormat format, int64_t K);

// A quantized matrix [rows, cols] on the host, in the files' layout.
struct QuantizedMatrix {
  WeightFormat format;
  int rows = 0, cols = 0;
  std::vector<uint8_t> packed;   // rows * packed_row_bytes(): 4w two values a byte, 8w int8, fp8 e4m3 codes
  std::vector<uint16_t> scales;  // bf16 [rows, groups()] (fp8: [rows, 1])
  std::vector<uint16_t> biases;  // bf16 [rows, groups()] (4w); empty (8w, fp8)

  int groups() const { return format.group_size > 0 ? cols / format.group_size : 0; }
  size_t packed_row_bytes() const;
  // What the matrix takes: packed values, scales and biases.
  size_t bytes() const { return packed.size() + 2 * (scales.size() + biases.size()); }
  // Throws naming `what` unless the sizes agree with the format and shape.
  void check_consistent(const std::string& what) const;
};

// Bytes a packed row of `cols` elements takes in this format.
size_t packed_row_bytes(QuantKind kind, int cols);
// Bytes an element of a weight takes in this format, scales and biases included (the floor of
// reading it); `unquantized` for None (the backend's storage).
double bytes_per_element(const WeightFormat& format, double unquantized);
// Whether the format has a bias a group (4w) or is symmetric (8w, fp8).
bool has_biases(QuantKind kind);

// The stored integer of element k of a packed row (the integer kinds; fp8's byte is a code).
inline int quantized_value(QuantKind kind, const uint8_t* row, int k) {
  if (kind == QuantKind::Int4) return (row[k / 2] >> (4 * (k % 2))) & 0xf;
  return static_cast<int8_t>(row[k]);
}

// bf16(q * scale + bias), the product and sum exact, rounded once (the definition above).
uint16_t dequantized_bf16(int q, uint16_t scale, uint16_t bias);

// Row r of the matrix as the floats its elements stand for (cols values; exactly bf16 values for
// 4w and 8w, e4m3 values times the row's scale for fp8).
void dequantize_row(const QuantizedMatrix& m, int r, float* out);
// The whole matrix as bf16 bits [rows, cols] (what a bf16 checkpoint of the same values holds): 4w
// and 8w; fp8's values are not bf16 values, and it throws for them.
std::vector<uint16_t> dequantize_bf16(const QuantizedMatrix& m);

}  // namespace voxrt
