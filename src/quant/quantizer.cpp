#include "quant/quantizer.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <mutex>

#include "common/bf16.h"
#include "common/error.h"
#include "common/thread_team.h"
#include "quant/fp8_e4m3.h"

namespace voxrt {
namespace {

// The range of the integers of a format: 0..15 (4w), -127..127 (8w).
struct Levels {
  int lo, hi;
};
Levels levels_of(QuantKind kind) { return kind == QuantKind::Int4 ? Levels{0, 15} : Levels{-127, 127}; }

// One group's parameters and integers.
struct GroupFit {
  uint16_t scale = 0, bias = 0;
  double error = std::numeric_limits<double>::infinity();
};

// The integers nearest (w - bias) / scale, clamped to the levels, and their squared error against w
// as the dequantized bf16 values.
double assign(const float* w, int n, uint16_t scale, uint16_t bias, Levels lv, int* q) {
  const float s = bf16_to_float(scale), b = bf16_to_float(bias);
  double err = 0;
  for (int i = 0; i < n; ++i) {
    const float x = s != 0 ? std::nearbyint((w[i] - b) / s) : 0.0f;
    q[i] = static_cast<int>(std::clamp(x, static_cast<float>(lv.lo), static_cast<float>(lv.hi)));
    const double d = static_cast<double>(bf16_to_float(dequantized_bf16(q[i], scale, bias))) - w[i];
    err += d * d;
  }
  return err;
}

// The least-squares scale (and bias, when the format has one) for fixed integers q; false when
// the integers do not determine them (all equal).
bool refit(const float* w, const int* q, int n, bool with_bias, float* scale, float* bias) {
  double sq = 0, sqq = 0, sw = 0, sqw = 0;
  for (int i = 0; i < n; ++i) {
    sq += q[i];
    sqq += static_cast<double>(q[i]) * q[i];
    sw += w[i];
    sqw += static_cast<double>(q[i]) * w[i];
  }
  if (!with_bias) {
    if (sqq == 0) return false;
    *scale = static_cast<float>(sqw / sqq);
    *bias = 0;
    return true;
  }
  const double det = n * sqq - sq * sq;
  if (det <= 0) return false;
  const double s = (n * sqw - sq * sw) / det;
  *scale = static_cast<float>(s);
  *bias = static_cast<float>((sw - s * sq) / n);
  return true;
}

// Scale and bias covering [lo, hi] with the format's levels (bias 0 and lo = -hi when symmetric).
void range_params(float lo, float hi, QuantKind kind, uint16_t* scale, uint16_t* bias) {
  if (kind == QuantKind::Int4) {
    *scale = float_to_bf16((hi - lo) / 15.0f);
    *bias = float_to_bf16(lo);
  } else {
    *scale = float_to_bf16(hi / 127.0f);
    *bias = 0;
  }
}

GroupFit fit_group(const float* w, int n, QuantKind kind, QuantMethod method, int* q, int* scratch) {
  const Levels lv = levels_of(kind);
  const bool with_bias = has_biases(kind);
  float lo = w[0], hi = w[0], amax = 0;
  for (int i = 0; i < n; ++i) {
    lo = std::min(lo, w[i]);
    hi = std::max(hi, w[i]);
    amax = std::max(amax, std::fabs(w[i]));
  }
  GroupFit best;
  auto consider = [&](uint16_t scale, uint16_t bias) {
    const double err = assign(w, n, scale, bias, lv, scratch);
    if (err < best.error) {
      best = GroupFit{scale, bias, err};
      std::copy(scratch, scratch + n, q);
    }
    return err;
  };
  uint16_t scale, bias;
  range_params(with_bias ? lo : -amax, with_bias ? hi : amax, kind, &scale, &bias);
  consider(scale, bias);
  if (method == QuantMethod::Rtn) return best;
  const float mid = with_bias ? 0.5f * (lo + hi) : 0.0f;
  for (const float clip : {1.0f, 0.95f, 0.9f, 0.85f, 0.8f, 0.75f, 0.7f}) {
    const float l = with_bias ? mid + (lo - mid) * clip : -amax * clip;
    const float h = with_bias ? mid + (hi - mid) * clip : amax * clip;
    range_params(l, h, kind, &scale, &bias);
    consider(scale, bias);
    // Two rounds of: the least-squares scale and bias for the integers just chosen, then the
    // integers for them.
    for (int round = 0; round < 2; ++round) {
      float s, b;
      if (!refit(w, scratch, n, with_bias, &s, &b) || !(s > 0) || !std::isfinite(s) || !std::isfinite(b)) break;
      consider(float_to_bf16(s), float_to_bf16(b));
    }
  }
  return best;
}

}  // namespace

std::string_view quant_method_name(QuantMethod method) { return method == QuantMethod::Rtn ? "rtn" : "search"; }

QuantMethod parse_quant_method(std::string_view name, const std::string& what) {
  if (name == "search") return QuantMethod::Search;
  if (name == "rtn") return QuantMethod::Rtn;
  throw Error(what + ": unknown quantization method '" + std::string(name) + "' (expected search or rtn)");
}

QuantizedMatrix quantize(const float* w, int rows, int cols, const WeightFormat& format, QuantMethod method) {
  check_group_size(format, cols, "quantize");
  check(rows > 0, "quantize", "empty matrix");
  QuantizedMatrix m;
  m.format = format;
  m.rows = rows;
  m.cols = cols;
  const int g = format.group_size, groups = m.groups();
  m.packed.assign(static_cast<size_t>(rows) * m.packed_row_bytes(), 0);
  m.scales.resize(static_cast<size_t>(rows) * groups);
  if (has_biases(format.kind)) m.biases.resize(static_cast<size_t>(rows) * groups);
  // The team's bodies must not throw: the first element that is not a finite number is noted and
  // reported after the loop.
  std::mutex bad_mutex;
  size_t bad = SIZE_MAX;
  auto note_bad = [&](size_t i) {
    std::lock_guard<std::mutex> lock(bad_mutex);
    bad = std::min(bad, i);
  };
  ThreadTeam::shared().parallel_for(rows, 4, [&](size_t r0, size_t r1) {
    std::vector<int> q(g), scratch(g);
    for (size_t r = r0; r < r1; ++r) {
      uint8_t* row = m.packed.data() + r * m.packed_row_bytes();
      for (int j = 0; j < groups; ++j) {
        const float* x = w + r * cols + static_cast<size_t>(j) * g;
        for (int i = 0; i < g; ++i)
          if (!std::isfinite(x[i])) note_bad(r * cols + static_cast<size_t>(j) * g + i);
        if (format.kind == QuantKind::Fp8) {  // the definition's scale, whatever the method (quantizer.h)
          m.scales[r * groups + j] = quantize_weight_row_e4m3(x, g, row + static_cast<size_t>(j) * g);
          continue;
        }
        const GroupFit fit = fit_group(x, g, format.kind, method, q.data(), scratch.data());
        m.scales[r * groups + j] = fit.scale;
        if (!m.biases.empty()) m.biases[r * groups + j] = fit.bias;
        for (int i = 0; i < g; ++i) {
          const int k = j * g + i;
          if (format.kind == QuantKind::Int4) row[k / 2] |= static_cast<uint8_t>(q[i] << (4 * (k % 2)));
          else row[k] = static_cast<uint8_t>(static_cast<int8_t>(q[i]));
        }
      }
    }
  });
  check_with(bad == SIZE_MAX, "quantize", [&] {
    return "row " + std::to_string(bad / cols) + " column " + std::to_string(bad % cols) + " is not a finite number";
  });
  return m;
}

double QuantError::relative() const { return energy > 0 ? std::sqrt(error / energy) : 0.0; }

QuantError quantization_error(const float* w, const QuantizedMatrix& q) {
  QuantError e;
  std::vector<float> row(q.cols);
  for (int r = 0; r < q.rows; ++r) {
    dequantize_row(q, r, row.data());
    for (int c = 0; c < q.cols; ++c) {
      const double x = w[static_cast<size_t>(r) * q.cols + c];
      e.error += (row[c] - x) * (row[c] - x);
      e.energy += x * x;
    }
  }
  return e;
}

}  // namespace voxrt
