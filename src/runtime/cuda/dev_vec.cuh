// Element i of a DevVec (a norm weight or bias stored fp32 or bf16), read in a kernel.
#pragma once

#include <cuda_bf16.h>

#include "runtime/cuda/cuda_kernels.h"

namespace voxrt::cuda {

__device__ __forceinline__ float vec_at(DevVec v, int i) {
  return v.bf16 ? __bfloat162float(static_cast<const __nv_bfloat16*>(v.data)[i]) : static_cast<const float*>(v.data)[i];
}

}  // namespace voxrt::cuda
