#include "bench/kernels/cuda/cublas_products.h"

#include <cublas_v2.h>

#include <memory>

#include "bench/kernels/random_data.h"

namespace voxrt::bench {
namespace {

constexpr size_t kCublasWorkspace = size_t{32} << 20;  // the backend's

// A cuBLAS handle on the run's stream with its workspace, and the buffers its launches use.
struct Cublas {
  cublasHandle_t handle = nullptr;
  DeviceBuffer workspace, x_f32, x_bf16, up_y;
  ~Cublas() {
    if (handle) cublasDestroy(handle);
  }
};

}  // namespace

LaunchedKernel cublas_products(const KernelArgs& a, const Gpu& gpu, DeviceProducts& products, const ProductInputs& in) {
  auto c = std::make_shared<Cublas>();
  VOXRT_CUBLAS_CHECK(cublasCreate(&c->handle));
  VOXRT_CUBLAS_CHECK(cublasSetStream(c->handle, gpu.stream.stream));
  c->workspace = DeviceBuffer(kCublasWorkspace, "the cuBLAS workspace");
  VOXRT_CUBLAS_CHECK(cublasSetWorkspace(c->handle, c->workspace.get(), kCublasWorkspace));
  const bool from_f32 = a.family == Family::Gemv && a.input == "f32";
  const size_t x_n = static_cast<size_t>(a.batch) * a.cols;
  if (from_f32) c->x_f32 = upload(in.x, "x");
  c->x_bf16 = from_f32 ? DeviceBuffer(x_n * sizeof(uint16_t), "x as bf16") : upload(to_bf16_bits(in.x), "x");
  if (a.gated) c->up_y = DeviceBuffer(static_cast<size_t>(a.batch) * a.rows * sizeof(float), "the up product");

  LaunchedKernel k = products.launched([c, &a, &gpu, &products](int copy) {
    const int M = a.batch, N = a.rows, K = a.cols;
    const cuda::GemvOut* outs = products.outs(copy);
    auto* xb = c->x_bf16.get<__nv_bfloat16>();
    if (c->x_f32.bytes()) cuda::launch_f32_to_bf16(c->x_f32.get<const float>(), M, K, K, xb, gpu.stream);
    // Column-major, as the backend: y^T [N, M] = W [N, K] (stored as W^T [K, N]) times x^T [K, M].
    auto gemm = [&](const __nv_bfloat16* w, float* y) {
      const float alpha = 1.0f, beta = 0.0f;
      VOXRT_CUBLAS_CHECK(cublasGemmEx(c->handle, CUBLAS_OP_T, CUBLAS_OP_N, N, M, K, &alpha, w, CUDA_R_16BF, K, xb,
                                      CUDA_R_16BF, K, &beta, y, CUDA_R_32F, N, CUBLAS_COMPUTE_32F,
                                      CUBLAS_GEMM_DEFAULT));
    };
    gemm(outs[0].w, outs[0].y);
    if (products.gated()) {
      gemm(outs[1].w, c->up_y.get<float>());
      cuda::launch_silu_mul(outs[0].y, c->up_y.get<const float>(), static_cast<size_t>(M) * N, gpu.stream);
    }
  });
  return k;
}

}  // namespace voxrt::bench
