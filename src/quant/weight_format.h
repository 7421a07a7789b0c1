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
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace voxrt {

enum class QuantKind : uint8_t { None, Int4, Int8 };

struct WeightFormat {
  QuantKind kind = QuantKind::None;
  int group_size = 0;  // elements a group along K (a scale each); 0 when kind is None
  bool quantized() const { return kind != QuantKind::None; }
  bool operator==(const WeightFormat&) const = default;
};

// "4w", "8w", or "bf16" for None: the names of the command line and of a quantized file's metadata.
std::string_view quant_kind_name(QuantKind kind);
// The reverse ("none" and "bf16" both give None); nullopt-like: throws voxrt::Error naming `what`.
QuantKind parse_quant_kind(std::string_view name, const std::string& what);
// "4w/32" style: the kind and its group size (for messages and metadata).
std::string format_name(const WeightFormat& format);

// The group sizes a kind takes: 4w 32, 64 or 128; 8w any multiple of 32 (a row's length: one an
// output channel). Throws naming `what` otherwise, or when the group does not divide K.
void check_group_size(const WeightFormat& format, int64_t K, const std::string& what);

// A quantized matrix [rows, cols] on the host, in the files' layout.
struct QuantizedMatrix {
  WeightFormat format;
  int rows = 0, cols = 0;
  std::vector<uint8_t> packed;   // rows * packed_row_bytes(): 4w two values a byte, 8w int8
  std::vector<uint16_t> scales;  // bf16 [rows, groups()]
  std::vector<uint16_t> biases;  // bf16 [rows, groups()] (4w); empty (8w)

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
// Whether the format has a bias a group (4w) or is symmetric (8w).
bool has_biases(QuantKind kind);

// The stored integer of element k of a packed row.
inline int quantized_value(QuantKind kind, const uint8_t* row, int k) {
  if (kind == QuantKind::Int4) return (row[k / 2] >> (4 * (k % 2))) & 0xf;
  return static_cast<int8_t>(row[k]);
}

// bf16(q * scale + bias), the product and sum exact, rounded once (the definition above).
uint16_t dequantized_bf16(int q, uint16_t scale, uint16_t bias);

// Row r of the matrix as the floats its elements stand for (cols values; exactly bf16 values).
void dequantize_row(const QuantizedMatrix& m, int r, float* out);
// The whole matrix as bf16 bits [rows, cols] (what a bf16 checkpoint of the same values holds).
std::vector<uint16_t> dequantize_bf16(const QuantizedMatrix& m);

}  // namespace voxrt
