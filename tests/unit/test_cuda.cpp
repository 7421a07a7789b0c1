// GPU tests. They run on a machine with an NVIDIA GPU and a CUDA build (scripts/gpu_check.sh);
// elsewhere each reports itself skipped and says why.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "safetensors/safetensors.h"
#ifdef VOXRT_WITH_CUDA
#include "runtime/cuda/cuda_device.h"
#endif

namespace voxrt {
namespace {

TEST(CudaDevice, Bf16ConversionOnTheGpuMatchesTheCpu) {
#ifndef VOXRT_WITH_CUDA
  GTEST_SKIP() << "built without CUDA (cmake --preset cuda builds it)";
#else
  if (cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device on this machine: GPU test skipped";
  std::printf("device 0: %s\n", cuda::device_description(0).c_str());
  std::mt19937 rng(7);
  std::vector<uint16_t> bits(1 << 20);
  for (auto& b : bits) b = static_cast<uint16_t>(rng());
  std::vector<float> gpu(bits.size()), cpu(bits.size());
  cuda::bf16_to_f32_on_device(0, bits.data(), gpu.data(), bits.size());
  convert_to_f32(DType::BF16, reinterpret_cast<const uint8_t*>(bits.data()), cpu.data(), cpu.size());
  for (size_t i = 0; i < bits.size(); ++i) {
    if (std::isnan(cpu[i])) {
      EXPECT_TRUE(std::isnan(gpu[i])) << i;
    } else {
      ASSERT_EQ(gpu[i], cpu[i]) << i;
    }
  }
#endif
}

}  // namespace
}  // namespace voxrt
