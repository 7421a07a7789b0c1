#include "runtime/cuda/device_memory.h"

#include <cstdio>
#include <cstring>
#include <limits>

#include "runtime/cuda/cuda_kernels.h"

namespace voxrt::cuda {
namespace {

std::string bytes_str(size_t bytes) { return std::to_string(bytes) + " bytes"; }

}  // namespace

DeviceMemory::DeviceMemory(const DeviceStream& device, Recorder& recorder) : device_(device), recorder_(recorder) {
  auto release_all = [this]() noexcept {
    if (staging_) cudaFreeHost(staging_);
    if (pool_) cudaMemPoolDestroy(pool_);
  };
  try {
    cudaMemPoolProps props{};
    props.allocType = cudaMemAllocationTypePinned;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = device_.device();
    VOXRT_CUDA_CHECK(cudaMemPoolCreate(&pool_, &props));
    uint64_t keep = std::numeric_limits<uint64_t>::max();  // never trim freed memory at syncs
    VOXRT_CUDA_CHECK(cudaMemPoolSetAttribute(pool_, cudaMemPoolAttrReleaseThreshold, &keep));

    staging_cap_ = 1 << 20;
    VOXRT_CUDA_CHECK(cudaMallocHost(&staging_, staging_cap_));
  } catch (...) {
    release_all();
    throw;
  }
}

DeviceMemory::~DeviceMemory() {
  make_current(device_.device());
  drop(args_);
  cudaStreamSynchronize(device_.stream());
  if (staging_) cudaFreeHost(staging_);
  for (int i = 0; i < 2; ++i) {
    if (chunk_[i]) cudaFreeHost(chunk_[i]);
    if (chunk_copied_[i]) cudaEventDestroy(chunk_copied_[i]);
  }
  if (pool_) cudaMemPoolDestroy(pool_);  // outstanding allocations keep it alive until freed
}

float* DeviceMemory::allocate(size_t floats) {
  if (recorder_.through_graph()) throw RecordingNeedsEager{};
  device_.use();
  const size_t bytes = std::max<size_t>(256, floats * sizeof(float));
  void* p = nullptr;
  const cudaError_t e = cudaMallocFromPoolAsync(&p, bytes, pool_, device_.stream());
  if (e != cudaSuccess) throw allocation_error(e, floats * sizeof(float), "");
  return static_cast<float*>(p);
}

void DeviceMemory::release(float* p) {
  if (!p) return;
  if (recorder_.through_graph()) {  // freed inside a recording: after it
    recorder_.defer_release(p);
    return;
  }
  make_current(device_.device());
  const cudaError_t e = cudaFreeAsync(p, device_.stream());
  if (e != cudaSuccess) std::fprintf(stderr, "voxrt: cuda: cudaFreeAsync failed: %s\n", cudaGetErrorString(e));
}

void DeviceMemory::upload(float* dst, const float* src, size_t n) {
  if (n == 0) return;
  device_.use();
  const size_t bytes = n * sizeof(float);
  if (recorder_.through_graph()) {  // into the recording's argument arena, then a device-side copy
    char* from = recorder_.arena_put(src, bytes);
    if (recorder_.recorded(3, dst, from, bytes)) return;
    VOXRT_CUDA_CHECK(cudaMemcpyAsync(dst, from, bytes, cudaMemcpyDeviceToDevice, device_.stream()));
    return;
  }
  if (bytes <= kMaxStagedUpload) {
    // Through pinned memory: asynchronous, and the caller may free src as soon as we return.
    void* host = stage(bytes);
    std::memcpy(host, src, bytes);
    VOXRT_CUDA_CHECK(cudaMemcpyAsync(dst, host, bytes, cudaMemcpyHostToDevice, device_.stream()));
  } else {
    VOXRT_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, device_.stream()));
    sync();  // src is pageable and the caller's: done with it before returning
  }
}

void DeviceMemory::download(float* dst, const float* src, size_t n) {
  check(!recorder_.in_recording(), "cuda download", "not allowed inside a recording");
  if (n == 0) return;
  device_.use();
  VOXRT_CUDA_CHECK(cudaMemcpyAsync(dst, src, n * sizeof(float), cudaMemcpyDeviceToHost, device_.stream()));
  sync();
}

void DeviceMemory::copy(float* dst, const float* src, size_t n) {
  if (n == 0 || dst == src) return;
  device_.use();
  if (recorder_.recorded(4, dst, src, n)) return;
  VOXRT_CUDA_CHECK(cudaMemcpyAsync(dst, src, n * sizeof(float), cudaMemcpyDeviceToDevice, device_.stream()));
}

void DeviceMemory::fill(float* dst, float value, size_t n) {
  device_.use();
  if (recorder_.recorded(5, dst, value, n)) return;
  launch_fill(dst, value, n, device_.launch());
}

// cudaMemGetInfo reads the calling thread's current device: a monitoring thread (/metrics) asks
// every device's backend in turn, so each first makes its own device current.
size_t DeviceMemory::in_use() const {
  size_t free = 0, total = 0;
  if (!device_memory(free, total)) return 0;
  return total - free;
}

size_t DeviceMemory::available() const {
  size_t free = 0, total = 0;
  if (!device_memory(free, total)) return 0;
  // Deciding as a smaller GPU (CudaOptions::as_gpu): free as on that GPU's memory, with what this
  // device has in use, so that the cache budgets and the load's checks are that GPU's.
  const size_t as_total = device_.caps().memory_bytes;
  if (as_total > 0 && as_total < total) {
    const size_t used = total - free;
    return as_total > used ? std::min(free, as_total - used) : 0;
  }
  return free;
}

bool DeviceMemory::device_memory(size_t& free, size_t& total) const {
  return make_current(device_.device()) && cudaMemGetInfo(&free, &total) == cudaSuccess;
}

void DeviceMemory::sync() {
  VOXRT_CUDA_CHECK(cudaStreamSynchronize(device_.stream()));
  staging_used_ = 0;  // every copy out of the staging buffer has completed
}

void DeviceMemory::release_unused() {
  sync();  // the frees queued so far have happened: their memory is the pool's to give back
  // Not fatal: the memory stays the pool's (the caches then grow within less), nothing is lost.
  const cudaError_t e = cudaMemPoolTrimTo(pool_, 0);
  if (e != cudaSuccess) std::fprintf(stderr, "voxrt: cuda: cudaMemPoolTrimTo failed: %s\n", cudaGetErrorString(e));
}

void* DeviceMemory::stage(size_t bytes) {
  bytes = (bytes + 255) / 256 * 256;
  if (staging_used_ + bytes > staging_cap_) {
    sync();
    if (bytes > staging_cap_) {
      VOXRT_CUDA_CHECK(cudaFreeHost(staging_));
      staging_ = nullptr;
      staging_cap_ = std::max(bytes, 2 * staging_cap_);
      VOXRT_CUDA_CHECK(cudaMallocHost(&staging_, staging_cap_));
    }
  }
  void* p = static_cast<char*>(staging_) + staging_used_;
  staging_used_ += bytes;
  return p;
}

void* DeviceMemory::grow(Scratch& s, size_t bytes) {
  if (s.bytes >= bytes) return s.ptr;
  if (recorder_.through_graph()) throw RecordingNeedsEager{};
  if (s.ptr) VOXRT_CUDA_CHECK(cudaFreeAsync(s.ptr, device_.stream()));
  s.ptr = nullptr;
  s.bytes = 0;
  const size_t want = std::max<size_t>(bytes + bytes / 2, 4096);
  const cudaError_t e = cudaMallocFromPoolAsync(&s.ptr, want, pool_, device_.stream());
  if (e != cudaSuccess) {
    s.ptr = nullptr;
    throw allocation_error(e, want, " of scratch");
  }
  s.bytes = want;
  return s.ptr;
}

void DeviceMemory::drop(Scratch& s) noexcept {
  if (s.ptr) cudaFreeAsync(s.ptr, device_.stream());
  s.ptr = nullptr;
  s.bytes = 0;
}

std::vector<void*> DeviceMemory::upload_args(std::initializer_list<HostArg> args) {
  if (recorder_.through_graph()) {  // a recording: the arena, copied to the device before it runs
    std::vector<void*> out;
    for (const HostArg& a : args) out.push_back(recorder_.arena_put(a.data, a.bytes));
    return out;
  }
  size_t total = 0;
  for (const HostArg& a : args) total += (a.bytes + 15) / 16 * 16;
  char* host = static_cast<char*>(stage(total));
  char* dev = static_cast<char*>(grow(args_, total));
  std::vector<void*> out;
  size_t off = 0;
  for (const HostArg& a : args) {
    std::memcpy(host + off, a.data, a.bytes);
    out.push_back(dev + off);
    off += (a.bytes + 15) / 16 * 16;
  }
  VOXRT_CUDA_CHECK(cudaMemcpyAsync(dev, host, total, cudaMemcpyHostToDevice, device_.stream()));
  return out;
}

uint16_t* DeviceMemory::chunk(size_t turn) {
  if (!chunk_[turn]) {
    VOXRT_CUDA_CHECK(cudaMallocHost(reinterpret_cast<void**>(&chunk_[turn]), kChunk * 2));
    VOXRT_CUDA_CHECK(cudaEventCreateWithFlags(&chunk_copied_[turn], cudaEventDisableTiming));
  } else {
    VOXRT_CUDA_CHECK(cudaEventSynchronize(chunk_copied_[turn]));
  }
  return chunk_[turn];
}

Error DeviceMemory::allocation_error(cudaError_t e, size_t bytes, const std::string& what) const {
  cudaGetLastError();
  std::string msg = "cuda: out of memory allocating " + bytes_str(bytes) + what + " on " + device_.description();
  if (e != cudaErrorMemoryAllocation) msg += " (" + std::string(cudaGetErrorString(e)) + ")";
  return Error(msg);
}

}  // namespace voxrt::cuda
