#include "runtime/cpu/cpu_loops.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "common/cpu_dispatch.h"

namespace voxrt::cpu_loops {

VOXRT_CPU_DISPATCH void add_bias(float* y, size_t rows, size_t stride, const float* bias, size_t c0, size_t c1) {
  for (size_t r = 0; r < rows; ++r) {
    float* yr = y + r * stride;
    for (size_t c = c0; c < c1; ++c) yr[c] += bias[c];
  }
}

VOXRT_CPU_DISPATCH void rms_norm(const float* x, const float* g, float eps, int cols, size_t r0, size_t r1, float* y) {
  for (size_t r = r0; r < r1; ++r) {
    const float* xr = x + r * cols;
    float* yr = y + r * cols;
    // Accumulate the mean square in double: the reference sums in fp32 with a tree reduction,
    // a double sum is at least as close to the exact value as that.
    double ss = 0;
    for (int c = 0; c < cols; ++c) ss += static_cast<double>(xr[c]) * xr[c];
    const float inv = 1.0f / std::sqrt(static_cast<float>(ss / cols) + eps);
    for (int c = 0; c < cols; ++c) yr[c] = g[c] * (xr[c] * inv);
  }
}

VOXRT_CPU_DISPATCH void scale_row(float* x, const float* s, int cols) {
  for (int c = 0; c < cols; ++c) x[c] *= s[c];
}

VOXRT_CPU_DISPATCH void add(float* y, const float* x, size_t n) {
  for (size_t i = 0; i < n; ++i) y[i] += x[i];
}

VOXRT_CPU_DISPATCH void rope_row(float* row, int n_heads, int head_dim, float pos, const float* inv_freq, float* cs,
                                 float* sn) {
  const int half = head_dim / 2;
  // As the reference: angle = float(pos) * inv_freq in fp32, then cos/sin in fp32.
  for (int i = 0; i < half; ++i) {
    const float a = pos * inv_freq[i];
    cs[i] = std::cos(a);
    sn[i] = std::sin(a);
  }
  for (int h = 0; h < n_heads; ++h) {
    float* v = row + static_cast<size_t>(h) * head_dim;
    for (int i = 0; i < half; ++i) {
      const float a = v[i], b = v[i + half];
      v[i] = a * cs[i] - b * sn[i];
      v[i + half] = b * cs[i] + a * sn[i];
    }
  }
}

VOXRT_CPU_DISPATCH void attend(const KvCache& cache, int layer, int slot, int64_t first, int n, int kv_head,
                               int head_dim, float scale, const float* q, float* scores, double* acc, float* out) {
  const int64_t ring = cache.shape().ring;
  const size_t head_offset = static_cast<size_t>(kv_head) * head_dim;
  const float* keys = cache.keys();
  const float* values = cache.values();
  float mx = -std::numeric_limits<float>::infinity();
  for (int j = 0; j < n; ++j) {
    const float* kv = keys + cache.offset(slot, layer, (first + j) % ring) + head_offset;
    float dot = 0;
    for (int d = 0; d < head_dim; ++d) dot += q[d] * kv[d];
    scores[j] = dot * scale;
    mx = std::max(mx, scores[j]);
  }
  double sum = 0;
  for (int j = 0; j < n; ++j) {
    scores[j] = std::exp(scores[j] - mx);
    sum += scores[j];
  }
  std::fill(acc, acc + head_dim, 0.0);
  for (int j = 0; j < n; ++j) {
    const float* vv = values + cache.offset(slot, layer, (first + j) % ring) + head_offset;
    const double w = scores[j];
    for (int d = 0; d < head_dim; ++d) acc[d] += w * vv[d];
  }
  for (int d = 0; d < head_dim; ++d) out[d] = static_cast<float>(acc[d] / sum);
}

}  // namespace voxrt::cpu_loops
