// What the two product families (run_gemv.cpp, run_gemm.cpp) share: their random inputs and the
// CPU's result for them, and the weights and output in device memory, as the backend hands them
// to launch_gemv and launch_gemm (GemvOut).
#pragma once

#include <cstdint>
#include <vector>

#include "bench/kernels/accuracy.h"
#include "bench/kernels/cuda/device_memory.h"
#include "bench/kernels/cuda/kernel_runs.h"
#include "bench/kernels/kernel_args.h"

namespace voxrt::bench {

struct ProductInputs {
  std::vector<float> x;       // [batch, cols] fp32, as generated
  std::vector<float> x_bf16;  // the same rounded to bf16: what every product kernel multiplies
  std::vector<float> w, up;   // [rows, cols] bf16 values (up: --gated only)
  std::vector<float> want;    // the CPU's y [batch, rows]
  Tolerance tolerance;
};
ProductInputs make_product_inputs(const KernelArgs& a);

// The weights (data_copies() copies of W, and of the up weight when gated) and y on the device.
class DeviceProducts {
 public:
  DeviceProducts(const KernelArgs& a, const Gpu& gpu, const ProductInputs& in);
  // The launch's outputs (1, or 2 when gated) reading copy `copy` of the weights.
  const cuda::GemvOut* outs(int copy);
  int n_outs() const { return gated_ ? 2 : 1; }
  bool gated() const { return gated_; }
  int copies() const { return copies_; }
  size_t copy_bytes() const { return copy_bytes_; }
  // The kernel for check_and_time: launch, with y as its output.
  LaunchedKernel launched(std::function<void(int copy)> launch) const;

 private:
  bool gated_;
  int rows_, batch_, copies_;
  size_t weight_stride_, copy_bytes_;
  DeviceBuffer weights_, y_;
  cuda::GemvOut outs_[2];
};

// "M 1, N 3072, K 3072, bf16 weights, fp32 x, gated".
std::string product_shape(const KernelArgs& a);

}  // namespace voxrt::bench
