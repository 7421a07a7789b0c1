#include <cuda_runtime.h>

#include <cstdio>
#include <string>

#include "common/error.h"
#include "runtime/cuda/cuda_device.h"

namespace voxrt::cuda {
namespace {

void ok(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw Error(std::string("cuda: ") + what + ": " + cudaGetErrorString(e));
}

// The architecture each piece of device code was compiled for (0 in the host pass, which never
// reads it): the driver loads the piece that matches the device, and with it this value.
#ifdef __CUDA_ARCH__
__device__ int g_code_arch = __CUDA_ARCH__;
#else
__device__ int g_code_arch = 0;
#endif

// One thread per element; bf16 is the top half of an fp32.
__global__ void bf16_to_f32_kernel(const uint16_t* __restrict__ src, float* __restrict__ dst, size_t n) {
  const size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (i < n) dst[i] = __uint_as_float(static_cast<uint32_t>(src[i]) << 16);
}

}  // namespace

int device_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky "no driver" error
    return 0;
  }
  return n;
}

std::string device_description(int device) {
  cudaDeviceProp p{};
  ok(cudaGetDeviceProperties(&p, device), "cudaGetDeviceProperties");
  char buf[256];
  std::snprintf(buf, sizeof buf, "%s (sm_%d%d, %.1f GiB)", p.name, p.major, p.minor,
                static_cast<double>(p.totalGlobalMem) / (1024.0 * 1024.0 * 1024.0));
  return buf;
}

GpuCaps device_caps(int device) {
  cudaDeviceProp p{};
  ok(cudaGetDeviceProperties(&p, device), "cudaGetDeviceProperties");
  GpuCaps c;
  c.name = p.name;
  c.major = p.major;
  c.minor = p.minor;
  c.sms = p.multiProcessorCount;
  c.smem_per_sm = static_cast<int>(p.sharedMemPerMultiprocessor);
  c.smem_per_block = static_cast<int>(p.sharedMemPerBlockOptin);
  c.l2_bytes = p.l2CacheSize;
  c.memory_bytes = p.totalGlobalMem;
  return c;
}

int device_code_arch(int device) {
  ok(cudaSetDevice(device), "cudaSetDevice");
  int arch = 0;
  const cudaError_t e = cudaMemcpyFromSymbol(&arch, g_code_arch, sizeof arch);
  if (e == cudaErrorNoKernelImageForDevice || e == cudaErrorInvalidDeviceFunction ||
      e == cudaErrorUnsupportedPtxVersion || e == cudaErrorInvalidPtx) {
    (void)cudaGetLastError();
    throw Error("cuda backend: this build of voxrt has no code for device " + std::to_string(device) + ", " +
                device_description(device) + " (" + cudaGetErrorString(e) + "; it was built for CUDA architectures " +
                VOXRT_CUDA_ARCHITECTURES + "): build it with cmake --preset cuda-release, or with "
                "-DCMAKE_CUDA_ARCHITECTURES naming this GPU's");
  }
  ok(e, "reading the device code's architecture");
  return arch;
}

void bf16_to_f32_on_device(int device, const uint16_t* host_src, float* host_dst, size_t n) {
  ok(cudaSetDevice(device), "cudaSetDevice");
  uint16_t* src = nullptr;
  float* dst = nullptr;
  ok(cudaMalloc(&src, n * sizeof(uint16_t)), "cudaMalloc");
  try {
    ok(cudaMalloc(&dst, n * sizeof(float)), "cudaMalloc");
    ok(cudaMemcpy(src, host_src, n * sizeof(uint16_t), cudaMemcpyHostToDevice), "cudaMemcpy to device");
    const unsigned threads = 256;
    const unsigned blocks = static_cast<unsigned>((n + threads - 1) / threads);
    bf16_to_f32_kernel<<<blocks, threads>>>(src, dst, n);
    ok(cudaGetLastError(), "bf16_to_f32 launch");
    ok(cudaMemcpy(host_dst, dst, n * sizeof(float), cudaMemcpyDeviceToHost), "cudaMemcpy to host");
  } catch (...) {
    cudaFree(src);
    cudaFree(dst);
    throw;
  }
  cudaFree(src);
  cudaFree(dst);
}

}  // namespace voxrt::cuda
