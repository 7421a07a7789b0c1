// The GPU rules of runtime/gpu_caps.h, on the published figures of the GPUs the issue names: which
// are refused and what the refusal says, which instructions each has, and the table the backend's
// VOXRT_CUDA_AS_GPU reads. Plain data: runs on any machine.
#include <gtest/gtest.h>

#include <string>

#include "common/error.h"
#include "runtime/gpu_caps.h"

namespace voxrt {
namespace {

// What `rule` says of `gpu` ("" where it passes).
std::string refusal(const GpuCaps& gpu, void (*rule)(const GpuCaps&) = check_gpu_supported) {
  try {
    rule(gpu);
  } catch (const Error& e) {
    return e.what();
  }
  return {};
}

TEST(GpuCaps, AmpereAdaAndHopperRun) {
  for (const char* name : {"A100", "A10G", "L4", "L40S", "RTX4090", "H100", "H200"}) {
    const GpuCaps* gpu = known_gpu(name);
    ASSERT_NE(gpu, nullptr) << name;
    EXPECT_EQ(refusal(*gpu), "") << name;
  }
}

TEST(GpuCaps, OlderGpusAreRefusedNamingTheGpuItsCapabilityAndWhatIsNeeded) {
  const std::string t4 = refusal(*known_gpu("T4"));
  EXPECT_NE(t4.find("Tesla T4"), std::string::npos) << t4;
  EXPECT_NE(t4.find("sm_75"), std::string::npos) << t4;
  EXPECT_NE(t4.find("compute capability 7.5"), std::string::npos) << t4;
  EXPECT_NE(t4.find("8.0 or newer"), std::string::npos) << t4;
  EXPECT_NE(t4.find("--device cpu"), std::string::npos) << t4;
  const std::string v100 = refusal(*known_gpu("V100"));
  EXPECT_NE(v100.find("Tesla V100"), std::string::npos) << v100;
  EXPECT_NE(v100.find("compute capability 7.0"), std::string::npos) << v100;
  // A GPU of no name in the table is judged by its capability alone.
  GpuCaps pascal;
  pascal.name = "Quadro P6000";
  pascal.major = 6;
  pascal.minor = 1;
  EXPECT_NE(refusal(pascal).find("Quadro P6000 (sm_61"), std::string::npos);
  GpuCaps blackwell = *known_gpu("H200");
  blackwell.name = "NVIDIA B200";
  blackwell.major = 10;
  EXPECT_EQ(refusal(blackwell), "");
}

TEST(GpuCaps, EachGenerationHasTheInstructionsItHas) {
  EXPECT_FALSE(converts_fp8_in_hardware(*known_gpu("A100")));
  EXPECT_FALSE(converts_fp8_in_hardware(*known_gpu("A10G")));
  EXPECT_TRUE(converts_fp8_in_hardware(*known_gpu("L4")));
  EXPECT_TRUE(converts_fp8_in_hardware(*known_gpu("H200")));
  EXPECT_FALSE(has_wgmma(*known_gpu("L40S")));
  EXPECT_TRUE(has_wgmma(*known_gpu("H100")));
  GpuCaps blackwell = *known_gpu("H200");
  blackwell.major = 10;
  EXPECT_FALSE(has_wgmma(blackwell));  // sm_90a's wgmma is Hopper's alone
  EXPECT_TRUE(has_programmatic_launch(blackwell));
  EXPECT_FALSE(has_programmatic_launch(*known_gpu("RTX4090")));
}

// fp8 weights (W8A8) need fp8 tensor cores: Ada and Hopper on; the refusal names the GPU, its
// capability and the formats that run there.
TEST(GpuCaps, Fp8WeightsAreRefusedWithoutFp8TensorCores) {
  auto fp8_refusal = [](const GpuCaps& gpu) { return refusal(gpu, check_fp8_weights_supported); };
  for (const char* name : {"L4", "L40S", "RTX4090", "H100", "H200"}) {
    EXPECT_TRUE(has_fp8_tensor_cores(*known_gpu(name))) << name;
    EXPECT_EQ(fp8_refusal(*known_gpu(name)), "") << name;
  }
  const std::string a100 = fp8_refusal(*known_gpu("A100"));
  EXPECT_NE(a100.find("fp8 weights need a GPU with fp8 tensor cores (sm_89 or later); this is NVIDIA A100-SXM4-80GB "
                      "(sm_80): use 8w or 4w"),
            std::string::npos)
      << a100;
  EXPECT_NE(fp8_refusal(*known_gpu("A10G")).find("(sm_86)"), std::string::npos);
}

TEST(GpuCaps, TheTableHoldsTheLimitsTheKernelsAreSizedBy) {
  // Shared memory a block may take: what decides the tiles (A10G and L4: 99 KB; A100: 163 KB;
  // Hopper: 227 KB), and the SM counts the splits aim at.
  EXPECT_EQ(known_gpu("A10G")->smem_per_block, 99 * 1024);
  EXPECT_EQ(known_gpu("L4")->smem_per_block, 99 * 1024);
  EXPECT_EQ(known_gpu("A100")->smem_per_block, 163 * 1024);
  EXPECT_EQ(known_gpu("H200")->smem_per_block, 227 * 1024);
  EXPECT_EQ(known_gpu("L4")->sms, 58);
  EXPECT_EQ(known_gpu("A10G")->sms, 80);
  for (const std::string& name : known_gpu_names()) {
    const GpuCaps* gpu = known_gpu(name);
    ASSERT_NE(gpu, nullptr) << name;
    EXPECT_GT(gpu->sms, 0) << name;
    EXPECT_LE(gpu->smem_per_block, gpu->smem_per_sm) << name;
    EXPECT_GT(gpu->memory_bytes, size_t{0}) << name;
  }
  EXPECT_EQ(known_gpu("A10"), nullptr);  // names are exact
  EXPECT_EQ(describe(*known_gpu("A10G")), "NVIDIA A10G (sm_86, 22.5 GiB)");
}

}  // namespace
}  // namespace voxrt
