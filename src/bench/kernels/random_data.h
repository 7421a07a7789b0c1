// The driver's inputs: uniform random values from a seed, the same on every machine (SplitMix64,
// not <random>'s distributions, whose results the standard leaves to the library), rounded to the
// formats the kernels read, so that the CPU reference computes on exactly the kernel's inputs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace voxrt::bench {

class RandomData {
 public:
  explicit RandomData(uint64_t seed) : state_(seed) {}
  // n values uniform in [-scale, scale).
  std::vector<float> uniform(size_t n, float scale = 1.0f);
  // The same, each rounded to bf16 (nearest even): values a bf16 array holds exactly.
  std::vector<float> uniform_bf16(size_t n, float scale = 1.0f);

 private:
  uint64_t next();
  uint64_t state_;
};

// bf16 bits of values that are already bf16 (uniform_bf16's); any other value is rounded.
std::vector<uint16_t> to_bf16_bits(const std::vector<float>& v);

// An fp8 cache's contents for values [entries][heads][head_dim]: each (entry, head) scaled by
// max|x| / 448 (1 for an all-zero head), as the backend's store_kv_fp8 does, and rounded to e4m3.
struct Fp8Heads {
  std::vector<uint8_t> codes;  // like the values
  std::vector<float> scales;   // [entries][heads]
  std::vector<float> values;   // what they hold: e4m3 value times its head's scale
};
Fp8Heads quantize_fp8_heads(const std::vector<float>& values, int head_dim);

}  // namespace voxrt::bench
