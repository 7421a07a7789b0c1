// One job: attention over the K/V cache, and which kernel computes it. The choice (the tensor-core
// kernel for bf16 and fp8 caches, or the CUDA-core kernel; how many rows share a block; the key
// split, flash-decoding style) is made here because it must depend on the model and the options
// alone, never on the batch: the plan is made for a full window whatever the rows' positions
// (blocks past a row's keys return at once), so a row's bits do not depend on what shares its
// launch and a recording replays at any position. set_kernels is the bench's switch
// (AttentionKernels) between the two kernels.
#pragma once

#include <span>

#include "runtime/backend.h"
#include "runtime/cuda/device_memory.h"
#include "runtime/cuda/device_stream.h"
#include "runtime/cuda/op_repeat.h"
#include "runtime/cuda/recorder.h"
#include "runtime/kernel_switches.h"
#include "runtime/kv_cache.h"

namespace voxrt::cuda {

class AttentionDispatch {
 public:
  AttentionDispatch(const DeviceStream& device, DeviceMemory& memory, Recorder& recorder, const CudaOptions& options,
                    const OpRepeat& repeat)
      : device_(device), memory_(memory), recorder_(recorder), options_(options), repeat_(repeat) {}
  ~AttentionDispatch();
  AttentionDispatch(const AttentionDispatch&) = delete;
  AttentionDispatch& operator=(const AttentionDispatch&) = delete;

  // Backend::attention.
  void attention(const KvCache& cache, int layer, Mat q, std::span<const RowRef> rows, const AttentionParams& p,
                 Mat out);
  // KernelSwitches::set_attention_kernels; kv_bytes: how the backend's caches store an element (the
  // tensor-core kernel takes bf16 and fp8 caches only).
  bool set_kernels(KernelSwitches::AttentionKernels k, size_t kv_bytes);

 private:
  const DeviceStream& device_;
  DeviceMemory& memory_;
  Recorder& recorder_;
  CudaOptions options_;
  OpRepeat repeat_;  // VOXRT_CUDA_REPEAT (op_repeat.h): launches per operation kind, for measurements
  Scratch attn_;     // the split plans' partial results
  Scratch arrivals_;  // the tensor-core plans' arrival counters (AttentionArgs::arrivals)
  KernelSwitches::AttentionKernels attention_kernels_ = KernelSwitches::AttentionKernels::Automatic;  // set_kernels
};

}  // namespace voxrt::cuda
