// One job: the CUDA backend's device and the one stream all its work is enqueued on. Every part of
// the backend (memory, weights, products, attention, the other ops) gets this object rather than a
// device index, so that "which device is current" and "where launches go" are decided here alone:
// the threads that call a backend (the scheduler's, sessions', monitoring) may have used another
// device last, so every entry point makes this one current first (use()).
#pragma once

#include <cuda_runtime.h>

#include <string>

#include "runtime/cuda/cuda_kernels.h"
#include "runtime/gpu_caps.h"

namespace voxrt::cuda {

// Makes `device` the calling thread's current one unless it is already; false when CUDA refuses.
// Every backend call goes through it, and so does freeing a weight (on whichever thread drops it).
bool make_current(int device);

class DeviceStream {
 public:
  // Checks that `device` exists and that voxrt runs on it (its capability, and code for it in this
  // build), makes it current and creates the stream. programmatic: launches may use programmatic
  // dependent launch (CudaOptions::programmatic_launch), where the device and the code both have it.
  // as_gpu: decide as on that known GPU instead (CudaOptions::as_gpu; empty: the device's own figures).
  DeviceStream(int device, bool programmatic, const std::string& as_gpu = {});
  ~DeviceStream();  // waits for the stream, then destroys it
  DeviceStream(const DeviceStream&) = delete;
  DeviceStream& operator=(const DeviceStream&) = delete;

  int device() const { return device_; }
  int sm_count() const { return caps_.sms; }
  // What the backend decides by: the device's capability and limits (or the GPU it was told to act as).
  const GpuCaps& caps() const { return caps_; }
  int code_arch() const { return code_arch_; }  // device_code_arch: what the kernels were compiled to use
  const std::string& description() const { return description_; }  // "NVIDIA H200 (sm_90, ...)"
  cudaStream_t stream() const { return stream_; }
  Stream launch() const { return launch_; }  // the stream, with the launches' programmatic flag

  // This backend's device current before every call that allocates, copies, launches or asks it
  // (make_current); throws when CUDA refuses.
  void use() const;

 private:
  int device_;
  GpuCaps caps_;
  int code_arch_ = 0;
  std::string description_;
  cudaStream_t stream_ = nullptr;
  Stream launch_;
};

}  // namespace voxrt::cuda
