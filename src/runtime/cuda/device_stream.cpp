#include "runtime/cuda/device_stream.h"

#include "common/error.h"
#include "runtime/cuda/cuda_check.h"
#include "runtime/cuda/cuda_device.h"

namespace voxrt::cuda {

bool make_current(int device) {
  int current = -1;
  return (cudaGetDevice(&current) == cudaSuccess && current == device) || cudaSetDevice(device) == cudaSuccess;
}

DeviceStream::DeviceStream(int device, bool programmatic) : device_(device) {
  const int n = device_count();
  check(n > 0, "cuda backend", "no CUDA device available");
  check(device_ >= 0 && device_ < n, "cuda backend",
        "device " + std::to_string(device_) + " out of range (" + std::to_string(n) + " devices)");
  VOXRT_CUDA_CHECK(cudaSetDevice(device_));
  VOXRT_CUDA_CHECK(cudaDeviceGetAttribute(&sm_count_, cudaDevAttrMultiProcessorCount, device_));
  description_ = device_description(device_);
  VOXRT_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  launch_ = Stream{stream_, programmatic};
}

DeviceStream::~DeviceStream() {
  if (!stream_) return;
  // A destructor cannot throw; an error here would be a sticky earlier one.
  make_current(device_);
  cudaStreamSynchronize(stream_);
  cudaStreamDestroy(stream_);
}

void DeviceStream::use() const {
  if (!make_current(device_)) VOXRT_CUDA_CHECK(cudaSetDevice(device_));
}

}  // namespace voxrt::cuda
