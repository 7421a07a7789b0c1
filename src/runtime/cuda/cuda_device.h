// CUDA device discovery and weight conversion on the GPU. The full CUDA backend (every Backend op
// on the device, CUDA graphs) is built on these; without a GPU the functions report none.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "runtime/gpu_caps.h"

namespace voxrt::cuda {

// Number of usable CUDA devices (0 when there is no driver or no device).
int device_count();
// "NVIDIA H200 (sm_90, 139.8 GiB)".
std::string device_description(int device);
// The device's capability and limits, as the driver reports them.
GpuCaps device_caps(int device);
// The __CUDA_ARCH__ of the device code this build runs on `device` (900 for sm_90a code, 800 for
// compute_80 PTX the driver compiled for it): what the kernels were compiled to use, which may be
// less than the device has. Throws voxrt::Error naming the device and the build's architectures
// when the build has no code the device can run.
int device_code_arch(int device);
// Converts n bf16 values (raw bits) to fp32 on the given device, through device memory.
// Throws voxrt::Error on any CUDA failure.
void bf16_to_f32_on_device(int device, const uint16_t* host_src, float* host_dst, size_t n);

}  // namespace voxrt::cuda
