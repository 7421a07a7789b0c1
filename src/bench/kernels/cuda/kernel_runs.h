// One function per kernel family (run_gemv.cpp, run_gemm.cpp, run_attention.cpp): each makes the
// family's random inputs, runs the chosen kernel once on the GPU and the same operation on the CPU
// (reference_ops.h), compares them, then times the kernel. What they share is here
// (kernel_runs.cpp): the device, the backend's tuning of it, and the timing.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "bench/kernels/kernel_args.h"
#include "bench/kernels/kernel_report.h"
#include "runtime/cuda/cuda_kernels.h"
#include "runtime/cuda_options.h"

namespace voxrt::bench {

// Device 0, a stream on it, and what the engine's backend takes from it (cuda_backend.cpp's init).
class Gpu {
 public:
  Gpu();
  ~Gpu();
  Gpu(const Gpu&) = delete;
  Gpu& operator=(const Gpu&) = delete;

  int sm_count = 0;
  size_t l2_bytes = 0;
  int smem_per_sm = 0, smem_per_block = 0;
  std::string description;
  // The backend's switches: the VOXRT_CUDA_* variables that tune a kernel (docs/cuda.md) apply
  // here as in the engine; --kernel replaces those that choose one.
  CudaOptions options;
  cuda::Stream stream;

  // The products' tuning the backend would use, on the tensor cores or not, wgmma or not.
  cuda::GemvTuning product_tuning(bool tensor_cores, bool wgmma) const;
  // Waits for the stream and reports any error of its kernels.
  void finish() const;
};

KernelRun run_gemv(const KernelArgs& a, const Gpu& gpu);
KernelRun run_gemm(const KernelArgs& a, const Gpu& gpu);
KernelRun run_attention(const KernelArgs& a, const Gpu& gpu);

// How many copies of data of `bytes` the timed launches rotate through: enough that twice the L2
// lies between two reads of one copy, within a quarter of the device's free memory (1 where one
// copy is that large already, and with --hot).
int data_copies(const KernelArgs& a, const Gpu& gpu, size_t bytes);

// A kernel as a family's run hands it over: its launch (on copy `copy` of the data), the output's
// poisoning before the checked launch and its download after it.
struct LaunchedKernel {
  std::function<void(int copy)> launch;
  std::function<void()> poison_output;
  std::function<std::vector<float>()> output;
  int copies = 1;
  size_t copy_bytes = 0;
};
// The run's figures: one launch on copy 0 compared with want, then the launches timed.
KernelRun check_and_time(const KernelArgs& a, const Gpu& gpu, const std::string& shape, const std::vector<float>& want,
                         const Tolerance& tolerance, const KernelCost& cost, const LaunchedKernel& k);

// Seconds a launch: `launch(copy)` warmup times, then repeat times between two CUDA events, copy
// going round 0 .. copies - 1.
double time_launches(const KernelArgs& a, const Gpu& gpu, int copies, const std::function<void(int copy)>& launch);

}  // namespace voxrt::bench
