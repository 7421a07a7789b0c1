#include "runtime/cuda/ceilings.h"

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <vector>

#include "runtime/cuda/cuda_check.h"
#include "runtime/cuda/cuda_kernels.h"

namespace voxrt::cuda {
namespace {

// Median time in ms of 10 runs of f on the stream (after 3 warm-up runs), timed with events.
template <typename F>
double median_ms(cudaStream_t stream, F f) {
  for (int i = 0; i < 3; ++i) f();
  cudaEvent_t e0, e1;
  VOXRT_CUDA_CHECK(cudaEventCreate(&e0));
  VOXRT_CUDA_CHECK(cudaEventCreate(&e1));
  std::vector<float> times;
  for (int i = 0; i < 10; ++i) {
    VOXRT_CUDA_CHECK(cudaEventRecord(e0, stream));
    f();
    VOXRT_CUDA_CHECK(cudaEventRecord(e1, stream));
    VOXRT_CUDA_CHECK(cudaEventSynchronize(e1));
    float ms = 0;
    VOXRT_CUDA_CHECK(cudaEventElapsedTime(&ms, e0, e1));
    times.push_back(ms);
  }
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

}  // namespace

Ceilings measure_ceilings(const DeviceStream& device, DeviceMemory& memory, cublasHandle_t cublas) {
  device.use();
  const cudaStream_t stream = device.stream();
  Ceilings c;
  const size_t copy_bytes = size_t{2} << 30;
  void *a = nullptr, *b = nullptr;
  VOXRT_CUDA_CHECK(cudaMalloc(&a, copy_bytes));
  VOXRT_CUDA_CHECK(cudaMalloc(&b, copy_bytes));
  VOXRT_CUDA_CHECK(cudaMemsetAsync(a, 0x3c, copy_bytes, stream));
  c.copy_gbps =
      2.0 * copy_bytes /
      median_ms(stream,
                [&] { VOXRT_CUDA_CHECK(cudaMemcpyAsync(b, a, copy_bytes, cudaMemcpyDeviceToDevice, stream)); }) /
      1e6;
  const int n = 8192;
  const size_t elems = static_cast<size_t>(n) * n;
  // a as fp32 random-ish values, converted to bf16 into b (operands) and used again for C.
  std::vector<float> host(static_cast<size_t>(n) * 64);
  for (size_t i = 0; i < host.size(); ++i) host[i] = static_cast<float>((i * 2654435761u) % 2000) / 1000.0f - 1.0f;
  for (int r = 0; r < n; r += 64)
    VOXRT_CUDA_CHECK(cudaMemcpyAsync(static_cast<float*>(a) + static_cast<size_t>(r) * n, host.data(),
                                     host.size() * sizeof(float), cudaMemcpyHostToDevice, stream));
  auto* ab = static_cast<__nv_bfloat16*>(b);
  launch_f32_to_bf16(static_cast<const float*>(a), n, n, n, ab, device.launch());
  auto* cf = static_cast<float*>(a);  // fp32 C (the first 256 MiB of a)
  const float alpha = 1.0f, beta = 0.0f;
  const double ms = median_ms(stream, [&] {
    VOXRT_CUBLAS_CHECK(cublasGemmEx(cublas, CUBLAS_OP_T, CUBLAS_OP_N, n, n, n, &alpha, ab, CUDA_R_16BF, n, ab + elems,
                                    CUDA_R_16BF, n, &beta, cf, CUDA_R_32F, n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  });
  c.matmul_tflops = 2.0 * n * n * static_cast<double>(n) / (ms * 1e-3) / 1e12;
  c.matmul_what = "cublasGemmEx 8192^3 bf16 (fp32 accumulate)";
  memory.sync();
  cudaFree(a);
  cudaFree(b);
  return c;
}

}  // namespace voxrt::cuda
