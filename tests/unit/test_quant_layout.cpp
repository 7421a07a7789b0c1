// The GPU layout's host-side arithmetic (runtime/cuda/quant_layout.h), which the CPU build compiles
// too: the kernels find a chunk's group of K by qlayout::divide, a multiply and a shift standing in
// for a division by a group size known only at run time. It must equal the division for every group
// size a format admits (multiples of 32, the whole row for 8w per channel) and every element index
// a weight can have.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>

#include "runtime/cuda/quant_layout.h"

namespace voxrt::cuda {
namespace {

TEST(QuantLayout, DivideEqualsTheDivisionForEveryGroupSize) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> any(0, INT32_MAX);
  for (int d = 32; d <= 32768; d += 32) {
    const qlayout::Divider dv = qlayout::divider(d);
    // Every chunk half's first element up to 2^20, each side of every multiple of d below it ...
    for (int n = 0; n < (1 << 20); n += 32) ASSERT_EQ(qlayout::divide(n, dv), n / d) << n << " / " << d;
    for (int q = 1; q <= (1 << 20) / d; ++q) {
      ASSERT_EQ(qlayout::divide(q * d - 1, dv), q - 1) << q * d - 1 << " / " << d;
      ASSERT_EQ(qlayout::divide(q * d, dv), q) << q * d << " / " << d;
    }
    // ... and anywhere below 2^31.
    for (int i = 0; i < 64; ++i) {
      const int n = any(rng);
      ASSERT_EQ(qlayout::divide(n, dv), n / d) << n << " / " << d;
    }
    ASSERT_EQ(qlayout::divide(INT32_MAX, dv), INT32_MAX / d) << d;
  }
  // Odd divisors too (the proof does not need a multiple of 32).
  for (int d : {2, 3, 7, 96, 1000, 3071, 9215, 65537}) {
    const qlayout::Divider dv = qlayout::divider(d);
    for (int n = 0; n < 200000; ++n) ASSERT_EQ(qlayout::divide(n, dv), n / d) << n << " / " << d;
    ASSERT_EQ(qlayout::divide(INT32_MAX, dv), INT32_MAX / d) << d;
  }
}

}  // namespace
}  // namespace voxrt::cuda
