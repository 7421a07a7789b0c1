#include "bench/kernels/random_data.h"

#include <algorithm>
#include <cmath>

#include "quant/fp8_e4m3.h"
#include "common/bf16.h"

namespace voxrt::bench {

uint64_t RandomData::next() {
  uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

std::vector<float> RandomData::uniform(size_t n, float scale) {
  std::vector<float> v(n);
  // 24 random bits: every value a float holds exactly in [-1, 1).
  for (float& x : v) x = scale * (static_cast<float>(next() >> 40) * 0x1p-23f - 1.0f);
  return v;
}

std::vector<float> RandomData::uniform_bf16(size_t n, float scale) {
  std::vector<float> v = uniform(n, scale);
  for (float& x : v) x = bf16_to_float(float_to_bf16(x));
  return v;
}

std::vector<uint16_t> to_bf16_bits(const std::vector<float>& v) {
  std::vector<uint16_t> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = float_to_bf16(v[i]);
  return out;
}

Fp8Heads quantize_fp8_heads(const std::vector<float>& values, int head_dim) {
  Fp8Heads out;
  const size_t heads = values.size() / head_dim;
  out.codes.resize(values.size());
  out.values.resize(values.size());
  out.scales.resize(heads);
  for (size_t h = 0; h < heads; ++h) {
    const float* x = values.data() + h * head_dim;
    float amax = 0.0f;
    for (int i = 0; i < head_dim; ++i) amax = std::max(amax, std::fabs(x[i]));
    const float scale = amax > 0.0f ? amax / kE4m3Max : 1.0f, inv = 1.0f / scale;
    out.scales[h] = scale;
    for (int i = 0; i < head_dim; ++i) {
      const size_t j = h * head_dim + i;
      out.codes[j] = float_to_e4m3(x[i] * inv);
      out.values[j] = e4m3_to_float(out.codes[j]) * scale;
    }
  }
  return out;
}

}  // namespace voxrt::bench
