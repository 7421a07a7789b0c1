// One job: the GPU's ceilings that `voxrt bench` reports every time against (Backend::
// measure_ceilings): a large device copy and a large bf16 matrix product through cuBLAS, the
// library the backend's products are weighed against. Apart from the backend's ops: it allocates
// its own 4 GiB and runs nothing the engine runs.
#pragma once

#include <cublas_v2.h>

#include "runtime/backend.h"
#include "runtime/cuda/device_memory.h"
#include "runtime/cuda/device_stream.h"

namespace voxrt::cuda {

// Copy: 2 GiB device to device, counting bytes read and written; matrix product: bf16 8192^3
// through cuBLAS (on the stream) on non-zero data (zeros run faster than real data). Medians of 10
// timed runs after warm-up, with CUDA events.
Ceilings measure_ceilings(const DeviceStream& device, DeviceMemory& memory, cublasHandle_t cublas);

}  // namespace voxrt::cuda
