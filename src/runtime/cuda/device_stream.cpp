#include "runtime/cuda/device_stream.h"

#include "common/error.h"
#include "runtime/cuda/cuda_check.h"
#include "runtime/cuda/cuda_device.h"

namespace voxrt::cuda {

bool make_current(int device) {
  int current = -1;
  return (cudaGetDevice(&current) == cudaSuccess && current == device) || cudaSetDevice(device) == cudaSuccess;
}

namespace {

// The figures the backend decides by: the device's own, or those of the GPU it is told to act as.
GpuCaps deciding_caps(const GpuCaps& own, const std::string& as_gpu) {
  if (as_gpu.empty()) return own;
  const GpuCaps* known = known_gpu(as_gpu);
  if (!known) {
    std::string names;
    for (const std::string& n : known_gpu_names()) names += (names.empty() ? "" : ", ") + n;
    throw Error("cuda backend: VOXRT_CUDA_AS_GPU (CudaOptions::as_gpu) names \"" + as_gpu +
                "\", not a GPU voxrt knows (" + names + ")");
  }
  return *known;
}

}  // namespace

DeviceStream::DeviceStream(int device, bool programmatic, const std::string& as_gpu) : device_(device) {
  const int n = device_count();
  check(n > 0, "cuda backend", "no CUDA device available");
  check(device_ >= 0 && device_ < n, "cuda backend",
        "device " + std::to_string(device_) + " out of range (" + std::to_string(n) + " devices)");
  VOXRT_CUDA_CHECK(cudaSetDevice(device_));
  const GpuCaps own = device_caps(device_);
  caps_ = deciding_caps(own, as_gpu);
  description_ = describe(own);
  if (!as_gpu.empty()) description_ += ", deciding as " + describe(caps_);
  // Before anything runs on it: a GPU too old gets its answer here, not a kernel launch failure.
  check_gpu_supported(caps_);
  check_gpu_supported(own);
  code_arch_ = device_code_arch(device_);
  VOXRT_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  // The kernels wait for their predecessor (launch.cuh) only in code compiled for 9.0 or later:
  // compute_80 code JIT-compiled for a Hopper GPU has no waits, so it must launch plainly.
  launch_ = Stream{stream_, programmatic && has_programmatic_launch(caps_) && code_arch_ >= 900};
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
