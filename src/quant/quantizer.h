// One job: turning a float weight matrix into a QuantizedMatrix (quant/weight_format.h).
// Two ways to choose a group's scale and bias:
//   - Rtn: round to nearest over the group's range (min to max for 4w, 0 to the largest magnitude
//     for 8w), the baseline every quantizer has;
//   - Search: the error-minimizing search that is the default. For each of a few clipped ranges
//     (the range shrunk toward its middle, or toward 0 for 8w, by 1, 0.95, ... 0.7), round to
//     nearest, then fit the scale (and bias) to the rounded integers by least squares and round
//     again, twice; keep whichever candidate's dequantized values (the bf16 values the model will
//     use) are closest to the group's in squared error. The unclipped range without a refit is one
//     of the candidates, so a group never comes out worse than Rtn's.
// fp8 has one way for both: a row's scale from its largest magnitude, rounded up to bf16, and each
// element rounded to the nearest e4m3 value (quant/fp8_e4m3.h). Per-channel amax scaling is the
// standard fp8 recipe, and e4m3's rounding error is relative (3 mantissa bits at every magnitude),
// so clipping the range buys little: a clipped element's error grows with what is cut off.
// Rows are quantized side by side on the process's thread team.
#pragma once

#include <string_view>

#include "quant/weight_format.h"

namespace voxrt {

enum class QuantMethod : uint8_t { Search, Rtn };

std::string_view quant_method_name(QuantMethod method);  // "search", "rtn"
QuantMethod parse_quant_method(std::string_view name, const std::string& what);

// w: rows x cols floats, row-major. format.group_size must divide cols (check_group_size).
QuantizedMatrix quantize(const float* w, int rows, int cols, const WeightFormat& format,
                         QuantMethod method = QuantMethod::Search);

// The squared error of a quantized matrix against the floats it was made from, summed, and the
// floats' own sum of squares: error / energy is the relative error a report gives.
struct QuantError {
  double error = 0, energy = 0;
  double relative() const;  // sqrt(error / energy)
};
QuantError quantization_error(const float* w, const QuantizedMatrix& q);

}  // namespace voxrt
