// gemv: launch_gemv (kernels_gemv_mma.cu on the tensor cores, kernels_gemv.cu on the CUDA cores)
// on one group of rows, as the backend launches it for products of fewer rows than
// CudaOptions::gemm_min_rows (and for every product with VOXRT_CUDA_GEMV=simt); or cuBLAS
// (cublas_products.h).
#include "bench/kernels/cuda/cublas_products.h"
#include "bench/kernels/cuda/device_memory.h"
#include "bench/kernels/cuda/kernel_runs.h"
#include "bench/kernels/cuda/product_inputs.h"
#include "bench/kernels/random_data.h"

namespace voxrt::bench {

KernelRun run_gemv(const KernelArgs& a, const Gpu& gpu) {
  if (a.kernel == "cublas") {
    const ProductInputs in = make_product_inputs(a);
    DeviceProducts products(a, gpu, in);
    return check_and_time(a, gpu, product_shape(a), in.want, in.tolerance, product_cost(a),
                          cublas_products(a, gpu, products, in));
  }
  const bool tensor_cores = a.kernel == "mma";
  const cuda::GemvTuning t = gpu.product_tuning(tensor_cores, false);
  const int most = cuda::gemv_max_rows(t);
  if (a.batch > most)
    throw UsageError("--batch: " + std::to_string(a.batch) + " rows; the " +
                     (tensor_cores ? "tensor-core" : "CUDA-core") + " GEMV (--kernel " + a.kernel + ") takes at most " +
                     std::to_string(most) + " a launch (the backend launches it once per group of that many)");
  const ProductInputs in = make_product_inputs(a);
  DeviceProducts products(a, gpu, in);
  const bool x_bf16 = a.input == "bf16";
  const DeviceBuffer x = x_bf16 ? upload(to_bf16_bits(in.x), "x") : upload(in.x, "x");

  const cuda::GemvWorkspaceSize need =
      cuda::gemv_workspace_size(a.cols, products.outs(0), products.n_outs(), products.gated(), t);
  const DeviceBuffer partials(need.partial_floats * sizeof(float), "the split-K partial sums");
  const DeviceBuffer counters(need.counters * sizeof(int), "the split-K counters");
  VOXRT_CUDA_CHECK(cudaMemset(counters.get(), 0, counters.bytes()));  // every launch leaves them zero
  VOXRT_CUDA_CHECK(cudaDeviceSynchronize());  // (the legacy stream's memset, which the run's stream does not wait for)
  cuda::GemvWorkspace ws;
  ws.partials = partials.get<float>();
  ws.partial_floats = need.partial_floats;
  ws.counters = counters.get<int>();
  ws.counter_count = need.counters;

  auto launch = [&](int copy) {
    cuda::launch_gemv(x.get(), x_bf16, a.cols, a.batch, a.cols, products.outs(copy), products.n_outs(),
                      products.gated(), ws, t, gpu.stream);
  };
  return check_and_time(a, gpu, product_shape(a), in.want, in.tolerance, product_cost(a), products.launched(launch));
}

}  // namespace voxrt::bench
