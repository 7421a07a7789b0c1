// Whether this test binary has the CUDA backend and this machine a device: GPU test cases run on
// the GPU machine and report themselves skipped elsewhere (CI builds the CUDA backend without one).
#pragma once

#include <gtest/gtest.h>

#ifdef VOXRT_WITH_CUDA
#include "runtime/cuda/cuda_device.h"
#endif

namespace voxrt::test {

inline bool have_gpu() {
#ifdef VOXRT_WITH_CUDA
  return cuda::device_count() > 0;
#else
  return false;
#endif
}

}  // namespace voxrt::test

#define REQUIRE_GPU() \
  if (!::voxrt::test::have_gpu()) GTEST_SKIP() << "no CUDA backend or device here: GPU case skipped (runs on the GPU machine)"
