// How the backend's kernels are launched: with programmatic dependent launch (Hopper), so that a
// kernel's blocks can be scheduled while the kernel before it on the stream finishes, and the gap
// between the two (drain, launch, the first loads' latency) mostly disappears; captured in a CUDA
// graph, the dependency becomes a programmatic edge. The contract every kernel here keeps: call
// pdl_trigger() first (lets the next kernel be scheduled once all blocks of this one run), then
// pdl_wait() before touching any memory a kernel writes or reads; pdl_wait() returns once the
// previous kernel has completed and its writes are visible. Only reads of weights (never written
// by a kernel) may come before it: the GEMV streams its first weight loads while waiting.
// A Stream with programmatic off (CudaOptions, VOXRT_CUDA_PDL=0) launches plainly, for
// measurements; the waits are then no-ops.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <mutex>
#include <set>
#include <utility>

#include "runtime/cuda/cuda_check.h"
#include "runtime/cuda/cuda_kernels.h"

namespace voxrt::cuda {

// griddepcontrol is an instruction of 9.0 and later; code compiled for an older target launches
// plainly (DeviceStream turns programmatic launch off for it), so the calls are no-ops there.
__device__ __forceinline__ void pdl_trigger() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}
__device__ __forceinline__ void pdl_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

template <typename... KernelArgs, typename... Args>
void launch_kernel(const char* name, void (*kernel)(KernelArgs...), dim3 grid, dim3 block, size_t smem,
                   Stream s, Args... args) {
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr[0].val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t cfg{};
  cfg.gridDim = grid;
  cfg.blockDim = block;
  cfg.dynamicSmemBytes = smem;
  cfg.stream = s.stream;
  cfg.attrs = attr;
  cfg.numAttrs = s.programmatic ? 1 : 0;
  check_cuda(cudaLaunchKernelEx(&cfg, kernel, static_cast<KernelArgs>(args)...), name, __FILE__, __LINE__);
}

// Lets a kernel use `bytes` of dynamic shared memory (more than the default 48 KiB) on the current
// device: once per (kernel, device), the first launch there being an eager one (a recording is
// captured after it has run once), so no capture sees the call.
// At most what the device gives a block: a kernel whose plans stay within the GPU's limit (GpuCaps)
// may name its own larger cap here.
inline void allow_dynamic_smem(const void* kernel, size_t bytes, const char* what) {
  int device = 0;
  check_cuda(cudaGetDevice(&device), "cudaGetDevice", __FILE__, __LINE__);
  static std::mutex mutex;
  static std::set<std::pair<const void*, int>> done;
  const std::lock_guard<std::mutex> lock(mutex);
  if (done.count({kernel, device})) return;
  int most = 0;
  check_cuda(cudaDeviceGetAttribute(&most, cudaDevAttrMaxSharedMemoryPerBlockOptin, device), what, __FILE__, __LINE__);
  check_cuda(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                  static_cast<int>(std::min(bytes, static_cast<size_t>(most)))),
             what, __FILE__, __LINE__);
  done.insert({kernel, device});
}

}  // namespace voxrt::cuda
