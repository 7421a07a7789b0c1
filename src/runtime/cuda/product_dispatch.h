// One job: which kernels compute a matrix product, and launching them. linear, linears (a layer's
// q, k and v in one launch), gated_linear (SwiGLU's gate and up products with the silu product
// fused) and conv1d_k3 (a linear over im2col patches) all come here. route() is the one place a
// weight's storage format and K pick the kernels: the GEMV (tensor cores: kernels_gemv_mma.cu, 32
// rows per launch, long rows split across blocks with a fixed-order sum; or kernels_gemv.cu) when
// K % 8 == 0, or, from CudaOptions::gemm_min_rows rows on (gemm_packed_min_rows for 4w and 8w
// weights, gemm_fp8_min_rows for fp8; tiled()), the tiled GEMM (kernels_gemm_launch.cu: wgmma on
// Hopper, else mma.sync; 4w and 8w dequantized in registers; fp8 on mma.sync, its x rows quantized
// first, launch_quantize_rows_e4m3) that computes the same bits (the
// products' order, tensor_core.cuh), which keeps every row's result independent of the batch;
// otherwise x is rounded into a bf16 scratch copy and cublasGemmEx (bf16 A and B, fp32 C,
// CUBLAS_COMPUTE_32F) runs with a small bias kernel. The choice lives in one place because batch
// invariance (Backend::batch_invariant) depends on every path it can take. Quantized weight
// formats (int4/int8/fp8) land here: a new DeviceWeight format adds its case to route() and its
// launches to linear_impl() beside the others. CudaOptions::library_products
// (VOXRT_CUDA_GEMV_MAX_ROWS=0) and set_kernels (the bench's ProductKernels) send products
// elsewhere, for measurements.
#pragma once

#include <cublas_v2.h>

#include <cstddef>
#include <span>

#include "runtime/backend.h"
#include "runtime/cuda/cuda_kernels.h"
#include "runtime/cuda/device_memory.h"
#include "runtime/cuda/device_stream.h"
#include "runtime/cuda/device_weights.h"
#include "runtime/cuda/op_repeat.h"
#include "runtime/cuda/recorder.h"
#include "runtime/kernel_switches.h"

namespace voxrt::cuda {

// The kernels that compute a product with a weight (ProductDispatch::route).
enum class ProductRoute {
  Fp32Weight,  // a weight stored as a vector ([N, 1], so K == 1): launch_linear_f32_weight
  Kernels,     // bf16 with K % 8 == 0, or quantized: the GEMV in groups of rows, or the tiled GEMM (the same bits)
  Library,     // bf16 otherwise, or every product asked of cuBLAS: cublasGemmEx
};

class ProductDispatch {
 public:
  // Creates the cuBLAS handle on the stream and reads the device's limits into the kernels' tuning.
  ProductDispatch(const DeviceStream& device, DeviceMemory& memory, Recorder& recorder, const CudaOptions& options,
                  const OpRepeat& repeat);
  ~ProductDispatch();
  ProductDispatch(const ProductDispatch&) = delete;
  ProductDispatch& operator=(const ProductDispatch&) = delete;

  // Which kernels compute products with w over rows of K elements, with every product sent to
  // cuBLAS or not (library()). The one place a weight's storage picks its kernels.
  static ProductRoute route(const DeviceWeight& w, int K, bool library);

  // Backend's products (linears and gated_linear: false when they cannot be one launch per group
  // of rows, and the backend computes them product by product).
  void linear(Mat x, const Weight& w, const Weight* bias, Mat y, bool accumulate);
  bool linears(Mat x, std::span<const LinearOut> outs);
  bool gated_linear(Mat x, const Weight& w_gate, const Weight& w_up, Mat y);
  void conv1d_k3(Mat x, const Weight& w, const Weight& bias, int stride, Mat y);

  // Records an uploaded weight: one whose products cuBLAS computes ends batch invariance.
  void admit(const Weight& w);
  // Every product goes through the GEMV kernels (see linear_impl()) unless cuBLAS was asked for or
  // a matrix's K is not a multiple of 8.
  bool batch_invariant() const { return !library() && !cublas_weights_; }
  bool set_kernels(KernelSwitches::ProductKernels k);

  cublasHandle_t cublas() const { return cublas_; }

 private:
  static constexpr size_t kCublasWorkspace = size_t{32} << 20;

  // Whether x [M, K] (fp32, aligned rows) can go to the product kernels in one GEMV launch per
  // group of rows (or the tiled GEMM) against w.
  bool kernels_take(Mat x, const Weight& w, const char* where) const;
  // y [M, N] (row stride ldy) = x [M, K] (row stride ldx) W^T (+ y) (+ bias).
  void linear_impl(const float* x, int M, int K, size_t ldx, const Weight& w, const Weight* bias, float* y, int ldy,
                   bool accumulate, const char* where);
  GemvOut gemv_out(const Weight& w, const Weight* bias, float* y, int ldy, bool accumulate, const char* where);
  // Whether every product goes through cuBLAS: asked for, or the options' default for Automatic.
  bool library() const;
  // Whether M rows of a weight of this format (GemvWeightFormat) go through the tiled GEMM rather
  // than the GEMV in groups of 32.
  bool tiled(int M, int format) const;
  // x [M, K] (row stride ldx) rounded into the packed bf16 scratch copy the product kernels read.
  const __nv_bfloat16* bf16_copy(const float* x, int M, int K, size_t ldx);
  // The products of M rows of fp32 x: the tiled GEMM or the GEMV in groups (tiled()), over x as
  // the kernels read it (bf16, fp32, or fp8 weights' quantized rows).
  void run_products(const float* x, int M, int K, size_t ldx, GemvOut* outs, int n_outs, bool gated);
  void launch_products(const void* x, bool x_bf16, size_t ld, int M, int K, GemvOut* outs, int n_outs, bool gated);
  // fp8 weights' x: its rows as e4m3 codes [M, K] in a scratch buffer, their scales given to outs.
  const uint8_t* fp8_rows(const float* x, int M, int K, size_t ldx, GemvOut* outs, int n_outs);
  GemvWorkspace gemv_workspace(int K, const GemvOut* outs, int n_outs, bool gated);

  const DeviceStream& device_;
  DeviceMemory& memory_;
  Recorder& recorder_;
  CudaOptions options_;
  OpRepeat repeat_;    // VOXRT_CUDA_REPEAT (op_repeat.h): launches per operation kind, for measurements
  GemvTuning tuning_;  // the products' kernels (from options_ and the device)
  cublasHandle_t cublas_ = nullptr;
  void* cublas_workspace_ = nullptr;
  Scratch xbf_, fp8_rows_, gemv_partials_, gemv_counters_, gemm_workspace_;
  bool cublas_weights_ = false;  // a matrix whose products cuBLAS computes (batch_invariant)
  KernelSwitches::ProductKernels products_ = KernelSwitches::ProductKernels::Automatic;  // set_kernels
};

}  // namespace voxrt::cuda
