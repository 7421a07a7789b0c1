#include "runtime/gpu_caps.h"

#include <array>
#include <cstdio>

#include "common/error.h"

namespace voxrt {
namespace {

constexpr int kKiB = 1024;
constexpr int kMiB = 1024 * 1024;
constexpr size_t kGiB = size_t{1} << 30;

struct KnownGpu {
  const char* short_name;
  GpuCaps caps;
};

// From NVIDIA's data sheets and the CUDA programming guide's per-capability limits (shared memory
// an SM: 164 KB on 8.0, 100 KB on 8.6 and 8.9, 228 KB on 9.0; a block may take 1 KB less).
// Memory is the total nvidia-smi reports for the board (what VOXRT_CUDA_AS_GPU's memory figures
// start from); the driver and its context leave a little less free.
const std::array<KnownGpu, 9>& table() {
  static const std::array<KnownGpu, 9> gpus{{
      {"A100", {"NVIDIA A100-SXM4-80GB", 8, 0, 108, 164 * kKiB, 163 * kKiB, 40 * kMiB, size_t{81920} * kMiB}},
      {"A10G", {"NVIDIA A10G", 8, 6, 80, 100 * kKiB, 99 * kKiB, 6 * kMiB, size_t{23028} * kMiB}},
      {"L4", {"NVIDIA L4", 8, 9, 58, 100 * kKiB, 99 * kKiB, 48 * kMiB, size_t{23034} * kMiB}},
      {"L40S", {"NVIDIA L40S", 8, 9, 142, 100 * kKiB, 99 * kKiB, 96 * kMiB, size_t{46068} * kMiB}},
      {"RTX4090", {"NVIDIA GeForce RTX 4090", 8, 9, 128, 100 * kKiB, 99 * kKiB, 72 * kMiB, size_t{24564} * kMiB}},
      {"H100", {"NVIDIA H100 80GB HBM3", 9, 0, 132, 228 * kKiB, 227 * kKiB, 50 * kMiB, size_t{81559} * kMiB}},
      {"H200", {"NVIDIA H200", 9, 0, 132, 228 * kKiB, 227 * kKiB, 60 * kMiB, size_t{143771} * kMiB}},
      {"T4", {"Tesla T4", 7, 5, 40, 64 * kKiB, 64 * kKiB, 4 * kMiB, size_t{15360} * kMiB}},
      {"V100", {"Tesla V100-SXM2-32GB", 7, 0, 80, 96 * kKiB, 96 * kKiB, 6 * kMiB, size_t{32768} * kMiB}},
  }};
  return gpus;
}

}  // namespace

std::string describe(const GpuCaps& gpu) {
  char buf[256];
  std::snprintf(buf, sizeof buf, "%s (sm_%d%d, %.1f GiB)", gpu.name.c_str(), gpu.major, gpu.minor,
                static_cast<double>(gpu.memory_bytes) / static_cast<double>(kGiB));
  return buf;
}

void check_gpu_supported(const GpuCaps& gpu) {
  if (gpu.compute() >= kMinCompute) return;
  char need[160];
  std::snprintf(need, sizeof need, "compute capability %d.%d or newer (Ampere, Ada or Hopper: bf16 tensor cores)",
                kMinCompute / 10, kMinCompute % 10);
  throw Error("cuda backend: " + describe(gpu) + " has compute capability " + std::to_string(gpu.major) + "." +
              std::to_string(gpu.minor) + ", older than voxrt's CUDA code needs: " + need +
              "; --device cpu runs on any machine");
}

bool converts_fp8_in_hardware(const GpuCaps& gpu) { return gpu.compute() >= 89; }
bool has_fp8_tensor_cores(const GpuCaps& gpu) { return gpu.compute() >= 89; }

void check_fp8_weights_supported(const GpuCaps& gpu) {
  check(has_fp8_tensor_cores(gpu), "cuda backend",
        "fp8 weights need a GPU with fp8 tensor cores (sm_89 or later); this is " + gpu.name + " (sm_" +
            std::to_string(gpu.major) + std::to_string(gpu.minor) + "): use 8w or 4w");
}

bool has_wgmma(const GpuCaps& gpu) { return gpu.major == 9; }
bool has_programmatic_launch(const GpuCaps& gpu) { return gpu.major >= 9; }

const GpuCaps* known_gpu(std::string_view short_name) {
  for (const KnownGpu& g : table())
    if (short_name == g.short_name) return &g.caps;
  return nullptr;
}

std::vector<std::string> known_gpu_names() {
  std::vector<std::string> names;
  for (const KnownGpu& g : table()) names.emplace_back(g.short_name);
  return names;
}

}  // namespace voxrt
