// Device memory for one voxrt_kernel run: a buffer freed with its owner, filled from host vectors,
// and copies of a buffer's contents laid end to end (the timed launches rotate through them, so
// that each reads its inputs from memory rather than from L2, as the engine's launches do).
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <string>
#include <vector>

#include "runtime/cuda/cuda_check.h"

namespace voxrt::bench {

class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(size_t bytes, const std::string& what) : bytes_(bytes) {
    const cudaError_t e = cudaMalloc(&ptr_, std::max<size_t>(bytes, 256));
    if (e != cudaSuccess) {
      ptr_ = nullptr;
      cuda::throw_cuda("cudaMalloc", __FILE__, __LINE__,
                       std::string(cudaGetErrorString(e)) + " (" + std::to_string(bytes) + " bytes for " + what + ")");
    }
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& o) noexcept : ptr_(o.ptr_), bytes_(o.bytes_) { o.ptr_ = nullptr; }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    std::swap(ptr_, o.ptr_);
    std::swap(bytes_, o.bytes_);
    return *this;
  }
  ~DeviceBuffer() {
    if (ptr_) cudaFree(ptr_);
  }
  template <typename T = void>
  T* get(size_t byte_offset = 0) const {
    return reinterpret_cast<T*>(static_cast<char*>(ptr_) + byte_offset);
  }
  size_t bytes() const { return bytes_; }

 private:
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
};

// NaN bytes over the buffer (0xff...: an output a kernel leaves unwritten then fails any comparison).
inline void poison(const DeviceBuffer& b) {
  VOXRT_CUDA_CHECK(cudaMemset(b.get(), 0xff, b.bytes()));
  VOXRT_CUDA_CHECK(cudaDeviceSynchronize());
}

// `copies` copies of host's contents end to end, each starting at a multiple of `stride` bytes
// (>= the contents, 256-byte aligned).
template <typename T>
DeviceBuffer upload_copies(const std::vector<T>& host, int copies, size_t stride, const std::string& what) {
  DeviceBuffer d(stride * copies, what);
  VOXRT_CUDA_CHECK(cudaMemcpy(d.get(), host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice));
  for (int i = 1; i < copies; ++i)
    VOXRT_CUDA_CHECK(cudaMemcpy(d.get(stride * i), d.get(), host.size() * sizeof(T), cudaMemcpyDeviceToDevice));
  // The copies go on the legacy default stream, which the run's non-blocking stream does not wait for.
  VOXRT_CUDA_CHECK(cudaDeviceSynchronize());
  return d;
}
template <typename T>
DeviceBuffer upload(const std::vector<T>& host, const std::string& what) {
  return upload_copies(host, 1, host.size() * sizeof(T), what);
}

template <typename T>
std::vector<T> download(const T* device, size_t n) {
  std::vector<T> host(n);
  VOXRT_CUDA_CHECK(cudaMemcpy(host.data(), device, n * sizeof(T), cudaMemcpyDeviceToHost));
  return host;
}

// A stride for data of `bytes`: rounded up to 256 bytes (every kernel's alignment and more).
inline size_t copy_stride(size_t bytes) { return (bytes + 255) / 256 * 256; }

}  // namespace voxrt::bench
