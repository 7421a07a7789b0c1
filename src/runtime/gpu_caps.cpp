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
// Memory is what the board has; the driver leaves a little less free.
const std::array<KnownGpu, 9>& table() {
  static const std::array<KnownGpu, 9> gpus{{
      {"A100", {"NVIDIA A100-SXM4-80GB", 8, 0, 108, 164 * kKiB, 163 * kKiB, 40 * kMiB, 80 * kGiB}},
      {"A10G", {"NVIDIA A10G", 8, 6, 80, 100 * kKiB, 99 * kKiB, 6 * kMiB, 24 * kGiB}},
      {"L4", {"NVIDIA L4", 8, 9, 58, 100 * kKiB, 99 * kKiB, 48 * kMiB, 24 * kGiB}},
      {"L40S", {"NVIDIA L40S", 8, 9, 142, 100 * kKiB, 99 * kKiB, 96 * kMiB, 48 * kGiB}},
      {"RTX4090", {"NVIDIA GeForce RTX 4090", 8, 9, 128, 100 * kKiB, 99 * kKiB, 72 * kMiB, 24 * kGiB}},
      {"H100", {"NVIDIA H100 80GB HBM3", 9, 0, 132, 228 * kKiB, 227 * kKiB, 50 * kMiB, 80 * kGiB}},
      {"H200", {"NVIDIA H200", 9, 0, 132, 228 * kKiB, 227 * kKiB, 60 * kMiB, 141 * kGiB}},
      {"T4", {"Tesla T4", 7, 5, 40, 64 * kKiB, 64 * kKiB, 4 * kMiB, 16 * kGiB}},
      {"V100", {"Tesla V100-SXM2-32GB", 7, 0, 80, 96 * kKiB, 96 * kKiB, 6 * kMiB, 32 * kGiB}},
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
