// CUDA device discovery and weight conversion on the GPU. The full CUDA backend (every Backend op
// on the device, CUDA graphs) is built on these; without a GPU the functions report none.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace voxrt::cuda {

// Number of usable CUDA devices (0 when there is no driver or no device).
int device_count();
// "NVIDIA H200 (sm_90, 139.8 GiB)".
std::string device_description(int device);
// Converts n bf16 values (raw bits) to fp32 on the given device, through device memory.
// Throws voxrt::Error on any CUDA failure.
void bf16_to_f32_on_device(int device, const uint16_t* host_src, float* host_dst, size_t n);

}  // namespace voxrt::cuda
