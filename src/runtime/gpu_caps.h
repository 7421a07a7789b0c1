// What an NVIDIA GPU offers that voxrt's CUDA code decides by: its compute capability (which
// instructions exist: bf16 tensor cores from 8.0, fp8 conversions from 8.9, wgmma and programmatic
// dependent launch from 9.0), and the limits the kernels are sized by (SMs, shared memory an SM and
// a block, L2, memory). Plain data with no CUDA in it, so the rules are tested on any machine, and
// so a test can hand the backend another GPU's figures (CudaOptions::as_gpu) and run that GPU's
// choices on the one it has.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace voxrt {

struct GpuCaps {
  std::string name;            // "NVIDIA H200"
  int major = 0, minor = 0;    // compute capability
  int sms = 0;                 // streaming multiprocessors
  int smem_per_sm = 0;         // shared memory an SM, bytes
  int smem_per_block = 0;      // the most one block may ask for (opt-in), bytes
  int l2_bytes = 0;
  size_t memory_bytes = 0;     // device memory
  int compute() const { return major * 10 + minor; }  // 8.6 -> 86
};

// The oldest compute capability voxrt's CUDA code runs on: 8.0 (Ampere), for bf16 mma.sync and
// cp.async, which every product and attention kernel uses.
inline constexpr int kMinCompute = 80;

// "NVIDIA A10G (sm_86, 22.5 GiB)"
std::string describe(const GpuCaps& gpu);

// Throws voxrt::Error when voxrt cannot run on `gpu`, naming the GPU, its capability and what
// voxrt needs (and that --device cpu runs anywhere), before any kernel is launched.
void check_gpu_supported(const GpuCaps& gpu);

// fp8 e4m3 conversions are instructions from 8.9 (Ada, Hopper); below, the kernels convert in
// software (cuda_fp8.h's emulation): the same values, more instructions.
bool converts_fp8_in_hardware(const GpuCaps& gpu);
// fp8 tensor cores (mma of e4m3 operands, what fp8 weights' W8A8 products need): 8.9 (Ada) and 9.0
// (Hopper) on.
bool has_fp8_tensor_cores(const GpuCaps& gpu);
// Throws voxrt::Error when fp8 weights cannot run on `gpu` (no fp8 tensor cores), naming the GPU,
// its capability and the formats that do run there.
void check_fp8_weights_supported(const GpuCaps& gpu);
// Hopper's wgmma (sm_90a) and programmatic dependent launch (9.0).
bool has_wgmma(const GpuCaps& gpu);
bool has_programmatic_launch(const GpuCaps& gpu);

// The published figures of GPUs people run this model on (and two too old for it), by short name:
// A100, A10G, L4, L40S, RTX4090, H100, H200, T4, V100. Null for a name not in the table.
const GpuCaps* known_gpu(std::string_view short_name);
std::vector<std::string> known_gpu_names();

}  // namespace voxrt
