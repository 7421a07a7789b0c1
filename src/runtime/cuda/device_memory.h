// One job: the CUDA backend's memory on its device and the transfers into it. Activations come from
// a stream-ordered pool (cudaMallocFromPoolAsync / cudaFreeAsync): plain cudaMalloc/cudaFree would
// synchronise the device on every free, the pool reuses memory in stream order without
// synchronising, and keeps freed memory cached (its high-water mark). Host data goes through pinned
// memory (a staging buffer for the ops' small arguments and uploads, two chunks that take turns for
// large bf16 uploads) so that copies stay asynchronous. Everything that allocates or copies is here
// because it is also where a recording (recorder.h) must be told: memory cannot be allocated
// while a recording goes through a graph (RecordingNeedsEager), memory freed inside one is freed
// after it, and host data goes into the recording's arena instead of the staging buffer.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "common/error.h"
#include "runtime/cuda/cuda_check.h"
#include "runtime/cuda/device_stream.h"
#include "runtime/cuda/recorder.h"

namespace voxrt::cuda {

// A grow-only device buffer from the pool (stream-ordered, so growing while earlier kernels still
// read the old one is safe). Owned by the part that uses it, which gives it back with
// DeviceMemory::drop.
struct Scratch {
  void* ptr = nullptr;
  size_t bytes = 0;
};

class DeviceMemory {
 public:
  // The pool on the device, and the pinned staging buffer. recorder: the backend's, asked whether
  // a recording is going through a graph.
  DeviceMemory(const DeviceStream& device, Recorder& recorder);
  ~DeviceMemory();  // after the stream's work: the staging buffers, the pool
  DeviceMemory(const DeviceMemory&) = delete;
  DeviceMemory& operator=(const DeviceMemory&) = delete;

  // Backend's memory ops, on activations.
  float* allocate(size_t floats);
  void release(float* p);
  void upload(float* dst, const float* src, size_t n);
  void download(float* dst, const float* src, size_t n);
  void copy(float* dst, const float* src, size_t n);
  void fill(float* dst, float value, size_t n);

  // The device's bytes in use and free; 0 when CUDA cannot tell (monitoring asks, so no throw).
  size_t in_use() const;
  size_t available() const;

  // Waits for the stream; every copy out of the staging buffer has then completed.
  void sync();
  // After the stream's work, the pool's memory no allocation holds goes back to the device.
  void release_unused();

  // Host staging space for an asynchronous host -> device copy. Regions are handed out in order and
  // only reused after a stream synchronisation, when every copy out of them has completed.
  void* stage(size_t bytes);

  // At least `bytes` of device scratch in s (its contents are not kept when it grows).
  void* grow(Scratch& s, size_t bytes);
  // Gives s back to the pool (in stream order); never throws.
  void drop(Scratch& s) noexcept;

  struct HostArg {
    const void* data;
    size_t bytes;
  };
  // Copies small host arrays to the device in one transfer; returns their device addresses, valid
  // for kernels enqueued before the next upload_args (the argument buffer is reused in stream order).
  std::vector<void*> upload_args(std::initializer_list<HostArg> args);

  // n bf16 values to dst through the two pinned chunks, which take turns: fill(host, offset, len)
  // writes one chunk while the other's copy is in flight. Returns with the last copy queued.
  template <typename Fill>
  void upload_bf16_chunks(uint16_t* dst, size_t n, Fill fill) {
    for (size_t off = 0, turn = 0; off < n; off += kChunk, turn ^= 1) {
      const size_t len = std::min(kChunk, n - off);
      uint16_t* host = chunk(turn);
      fill(host, off, len);
      VOXRT_CUDA_CHECK(cudaMemcpyAsync(dst + off, host, len * 2, cudaMemcpyHostToDevice, device_.stream()));
      VOXRT_CUDA_CHECK(cudaEventRecord(chunk_copied_[turn], device_.stream()));
    }
  }

  // "cuda: out of memory allocating N bytes<what> on <device>" (clears the error: allocation
  // failures are not sticky, the backend stays usable).
  Error allocation_error(cudaError_t e, size_t bytes, const std::string& what) const;

 private:
  static constexpr size_t kMaxStagedUpload = size_t{4} << 20;
  static constexpr size_t kChunk = size_t{1} << 24;  // elements per pinned bf16 chunk

  // Pinned chunk `turn` (0 or 1) of upload_bf16_chunks, once the copy last made from it is done.
  uint16_t* chunk(size_t turn);
  // The device's free and total bytes; false (without throwing: monitoring asks) when it cannot tell.
  bool device_memory(size_t& free, size_t& total) const;

  const DeviceStream& device_;
  Recorder& recorder_;
  cudaMemPool_t pool_ = nullptr;
  void* staging_ = nullptr;  // pinned host memory
  size_t staging_cap_ = 0, staging_used_ = 0;
  Scratch args_;                             // upload_args' device buffer
  uint16_t* chunk_[2] = {nullptr, nullptr};  // pinned, for upload_bf16_chunks
  cudaEvent_t chunk_copied_[2] = {nullptr, nullptr};
};

}  // namespace voxrt::cuda
