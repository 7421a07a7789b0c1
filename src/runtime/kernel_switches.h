// What the benchmarks switch on a backend that has more than one way to run an op: force one of its
// kernel paths, so that `voxrt bench --figures products` and `--figures attention` time the paths
// side by side on the same weights and caches, and mark the part of a run a profiler should look
// at. The engine never touches them, so they are not part of Backend: a backend that has them (the
// CUDA backend) implements this too, and Backend::kernel_switches() hands it out.
#pragma once

namespace voxrt {

class KernelSwitches {
 public:
  // Which kernels compute the matrix products: Automatic is what the backend chooses itself; the
  // others force one path (the CUDA backend's GEMV, its tiled GEMM, or the vendor library). False
  // (and nothing changed) when the backend has no such path. Library gives up batch invariance.
  enum class ProductKernels { Automatic, Gemv, Gemm, Library };
  virtual bool set_product_kernels(ProductKernels k) = 0;
  // The same for attention: the CUDA backend's tensor-core kernel (bf16 and fp8 caches) or its
  // CUDA-core kernel.
  enum class AttentionKernels { Automatic, TensorCores, CudaCores };
  virtual bool set_attention_kernels(AttentionKernels k) = 0;
  // Marks a benchmark's measured part: the CUDA backend starts and stops the profiler's collection
  // (`ncu --profile-from-start off`).
  virtual void profile_window(bool open) = 0;

 protected:
  ~KernelSwitches() = default;
};

}  // namespace voxrt
