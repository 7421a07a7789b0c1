#include "bench/kernels/cuda/kernel_runs.h"

#include <algorithm>

#include "runtime/cuda/cuda_check.h"
#include "runtime/cuda/cuda_device.h"

namespace voxrt::bench {

Gpu::Gpu() {
  VOXRT_CUDA_CHECK(cudaSetDevice(0));
  VOXRT_CUDA_CHECK(cudaDeviceGetAttribute(&sm_count, cudaDevAttrMultiProcessorCount, 0));
  int l2 = 0;
  VOXRT_CUDA_CHECK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, 0));
  l2_bytes = static_cast<size_t>(l2);
  VOXRT_CUDA_CHECK(cudaDeviceGetAttribute(&smem_per_sm, cudaDevAttrMaxSharedMemoryPerMultiprocessor, 0));
  VOXRT_CUDA_CHECK(cudaDeviceGetAttribute(&smem_per_block, cudaDevAttrMaxSharedMemoryPerBlockOptin, 0));
  description = cuda::device_description(0);
  options = cuda_options_from_environment();
  VOXRT_CUDA_CHECK(cudaStreamCreateWithFlags(&stream.stream, cudaStreamNonBlocking));
  stream.programmatic = options.programmatic_launch;
}

Gpu::~Gpu() {
  if (stream.stream) cudaStreamDestroy(stream.stream);
}

cuda::GemvTuning Gpu::product_tuning(bool tensor_cores, bool wgmma) const {
  cuda::GemvTuning t;
  t.tensor_cores = tensor_cores;
  t.split_warps_per_sm = options.gemv_split_warps_per_sm;
  t.min_piece_chunks = options.gemv_min_piece_chunks;
  t.sm_count = sm_count;
  t.smem_per_sm = smem_per_sm;
  t.smem_per_block = smem_per_block;
  t.wgmma_gemm = wgmma;
  t.gemm_split_percent = options.gemm_split_percent;
  return t;
}

void Gpu::finish() const {
  VOXRT_CUDA_CHECK(cudaStreamSynchronize(stream.stream));
  VOXRT_CUDA_CHECK(cudaGetLastError());
}

int data_copies(const KernelArgs& a, const Gpu& gpu, size_t bytes) {
  if (a.hot || bytes == 0) return 1;
  size_t free_bytes = 0, total = 0;
  VOXRT_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total));
  if (bytes >= 2 * gpu.l2_bytes) return 1;  // a launch streams it from memory already
  const size_t wanted = 2 * gpu.l2_bytes / bytes + 2;
  const size_t room = std::max<size_t>(1, free_bytes / 4 / bytes);
  return static_cast<int>(std::clamp<size_t>(std::min(wanted, room), 1, 256));
}

double time_launches(const KernelArgs& a, const Gpu& gpu, int copies, const std::function<void(int copy)>& launch) {
  cudaEvent_t start = nullptr, stop = nullptr;
  VOXRT_CUDA_CHECK(cudaEventCreate(&start));
  VOXRT_CUDA_CHECK(cudaEventCreate(&stop));
  float ms = 0;
  try {
    for (int i = 0; i < a.warmup; ++i) launch(i % copies);
    VOXRT_CUDA_CHECK(cudaEventRecord(start, gpu.stream.stream));
    for (int i = 0; i < a.repeat; ++i) launch(i % copies);
    VOXRT_CUDA_CHECK(cudaEventRecord(stop, gpu.stream.stream));
    gpu.finish();
    VOXRT_CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
  } catch (...) {
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
    throw;
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return ms * 1e-3 / a.repeat;
}

KernelRun check_and_time(const KernelArgs& a, const Gpu& gpu, const std::string& shape, const std::vector<float>& want,
                         const Tolerance& tolerance, const KernelCost& cost, const LaunchedKernel& k) {
  KernelRun r;
  r.args = a;
  r.shape = shape;
  r.device = gpu.description;
  k.poison_output();
  k.launch(0);
  gpu.finish();
  r.tolerance = tolerance;
  r.accuracy = compare(k.output(), want, tolerance);
  r.copies = k.copies;
  r.copy_bytes = static_cast<double>(k.copy_bytes);
  r.seconds = time_launches(a, gpu, k.copies, k.launch);
  r.cost = cost;
  return r;
}

}  // namespace voxrt::bench
