// gemm: launch_gemm, the tiled GEMM (kernels_gemm_wgmma.cu on Hopper, kernels_gemm_mma.cu on
// mma.sync) with its split-K fold where the plan splits, as the backend launches it for products
// of CudaOptions::gemm_min_rows rows and more (x already rounded into a bf16 copy); or cuBLAS
// (cublas_products.h).
#include "bench/kernels/cuda/cublas_products.h"
#include "bench/kernels/cuda/device_memory.h"
#include "bench/kernels/cuda/kernel_runs.h"
#include "bench/kernels/cuda/product_inputs.h"
#include "bench/kernels/random_data.h"

namespace voxrt::bench {

KernelRun run_gemm(const KernelArgs& a, const Gpu& gpu) {
  const bool wgmma = a.kernel == "wgmma";
  if (wgmma && !cuda::gemm_wgmma_available())
    throw UsageError("--kernel wgmma: the wgmma GEMM needs an sm_90a build on a Hopper GPU, and this is " +
                     gpu.description + "; --kernel mma runs on any tensor-core GPU");
  const ProductInputs in = make_product_inputs(a);
  DeviceProducts products(a, gpu, in);
  if (a.kernel == "cublas")
    return check_and_time(a, gpu, product_shape(a), in.want, in.tolerance, product_cost(a),
                          cublas_products(a, gpu, products, in));
  const cuda::GemvTuning t = gpu.product_tuning(true, wgmma);
  const DeviceBuffer x = upload(to_bf16_bits(in.x), "x");
  const size_t ws_floats =
      cuda::gemm_workspace_floats(a.batch, a.cols, products.outs(0), products.n_outs(), products.gated(), t);
  const DeviceBuffer workspace(ws_floats * sizeof(float), "the split-K workspace");

  auto launch = [&](int copy) {
    cuda::launch_gemm(x.get<const __nv_bfloat16>(), a.cols, a.batch, a.cols, products.outs(copy), products.n_outs(),
                      products.gated(), ws_floats ? workspace.get<float>() : nullptr, ws_floats, t, gpu.stream);
  };
  return check_and_time(a, gpu, product_shape(a) + (ws_floats ? ", K split across blocks" : ""), in.want, in.tolerance, product_cost(a), products.launched(launch));
}

}  // namespace voxrt::bench
