#include "runtime/cuda/device_weights.h"

#include <cstring>
#include <memory>
#include <string>

#include "common/bf16.h"
#include "common/error.h"
#include "common/thread_team.h"
#include "runtime/cuda/cuda_check.h"

namespace voxrt::cuda {

DeviceWeight::~DeviceWeight() {
  if (!data) return;
  // A destructor cannot throw; an error here would be a sticky earlier one.
  make_current(device);
  cudaFree(data);
}

const DeviceWeight& device_weight(const Weight& w, const char* where) {
  check(!w.empty(), where, "empty weight");
  const auto* d = static_cast<const DeviceWeight*>(w.storage.get());
  check(d->magic == kWeightMagic, where, "weight was not uploaded by the CUDA backend");
  return *d;
}

DevVec vec_of(const Weight& w, const char* where) {
  const DeviceWeight& d = device_weight(w, where);
  return DevVec{d.data, d.bf16};
}

Weight WeightStore::upload(std::vector<float>&& values, int rows, int cols) {
  const size_t n = static_cast<size_t>(rows) * cols;
  check(rows >= 0 && cols >= 0 && values.size() == n, "cuda upload_weight",
        "expected " + std::to_string(n) + " values, got " + std::to_string(values.size()));
  Weight w = new_weight(rows, cols, cols > 1);
  auto& d = *static_cast<DeviceWeight*>(w.storage.get());
  if (n > 0 && !d.bf16) {
    VOXRT_CUDA_CHECK(
        cudaMemcpyAsync(d.data, values.data(), n * sizeof(float), cudaMemcpyHostToDevice, device_.stream()));
    memory_.sync();  // values is the caller's pageable memory
  } else if (n > 0) {
    // Rounded to bf16 on the host (all cores) on the way into the pinned chunks.
    memory_.upload_bf16_chunks(static_cast<uint16_t*>(d.data), n, [&](uint16_t* host, size_t off, size_t len) {
      float_to_bf16(values.data() + off, host, len);
    });
  }
  std::vector<float>().swap(values);  // the host copy is not needed any more
  return w;
}

Weight WeightStore::upload_bf16(std::vector<uint16_t>&& bits, int rows, int cols) {
  const size_t n = static_cast<size_t>(rows) * cols;
  check(rows >= 0 && cols > 1 && bits.size() == n, "cuda upload_weight_bf16",
        "expected a matrix of " + std::to_string(n) + " values, got " + std::to_string(bits.size()));
  Weight w = new_weight(rows, cols, true);
  memory_.upload_bf16_chunks(static_cast<uint16_t*>(static_cast<DeviceWeight*>(w.storage.get())->data), n,
                             [&](uint16_t* host, size_t off, size_t len) {
                               ThreadTeam::shared().parallel_for(len, size_t{1} << 20, [&](size_t i0, size_t i1) {
                                 std::memcpy(host + i0, bits.data() + off + i0, (i1 - i0) * 2);
                               });
                             });
  std::vector<uint16_t>().swap(bits);
  return w;
}

Weight WeightStore::new_weight(int rows, int cols, bool bf16) {
  check(!recorder_.in_recording(), "cuda upload_weight", "not allowed inside a recording");
  device_.use();
  const size_t n = static_cast<size_t>(rows) * cols;
  auto d = std::make_shared<DeviceWeight>();
  d->bf16 = bf16;
  d->device = device_.device();
  const size_t bytes = std::max<size_t>(256, n * (bf16 ? 2 : 4));
  const cudaError_t e = cudaMalloc(&d->data, bytes);
  if (e != cudaSuccess) {
    d->data = nullptr;
    throw memory_.allocation_error(e, bytes,
                                   " for a weight [" + std::to_string(rows) + ", " + std::to_string(cols) + "]");
  }
  Weight w;
  w.storage = std::shared_ptr<void>(d, d.get());
  w.rows = rows;
  w.cols = cols;
  return w;
}

}  // namespace voxrt::cuda
