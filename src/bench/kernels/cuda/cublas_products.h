// The backend's library path for products (cuda_backend.cpp's linear_impl: every product with
// VOXRT_CUDA_GEMV_MAX_ROWS=0, and those whose K is not a multiple of 8): x rounded into a bf16 copy
// where it is fp32, then cublasGemmEx on bf16 x and W with fp32 accumulation. Gated products are
// two of them and the silu_mul kernel, as the backend runs gated_linear when it cannot fuse.
#pragma once

#include "bench/kernels/cuda/kernel_runs.h"
#include "bench/kernels/cuda/product_inputs.h"

namespace voxrt::bench {

// --kernel cublas of gemv and gemm, on the run's weights and output.
LaunchedKernel cublas_products(const KernelArgs& a, const Gpu& gpu, DeviceProducts& products, const ProductInputs& in);

}  // namespace voxrt::bench
