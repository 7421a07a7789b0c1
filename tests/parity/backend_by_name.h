// The backends a parity test is instantiated over ("cpu", "cuda", "cuda_fp8", "cuda_4w",
// "cuda_w8a8"), and reading a
// backend matrix back to the host. GPU cases check REQUIRE_GPU() (gpu_here.h) before asking for "cuda".
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "runtime/backend.h"  // make_cpu_backend, make_cuda_backend

namespace voxrt::test {

inline std::unique_ptr<Backend> backend_named(const std::string& name) {
#ifdef VOXRT_WITH_CUDA
  if (name == "cuda") return make_cuda_backend(0);
  if (name == "cuda_fp8") {  // fp8 K/V caches
    CudaOptions o = cuda_options_from_environment();
    o.fp8_kv = true;
    o.fp32_kv = false;
    return make_cuda_backend(0, o);
  }
  if (name == "cuda_4w" || name == "cuda_w8a8") {  // for 4w or fp8 weights (the test quantizes them, tiny_model): the tiled GEMM
    CudaOptions o = cuda_options_from_environment();  // from 2 rows on, as bf16 weights take it
    o.gemm_packed_min_rows = o.gemm_fp8_min_rows = o.gemm_min_rows;
    return make_cuda_backend(0, o);
  }
#endif
  return make_cpu_backend();
}

inline std::vector<float> host(Backend& be, Mat m) {
  std::vector<float> v(static_cast<size_t>(m.rows) * m.cols);
  be.download(v.data(), m.data, v.size());
  return v;
}

}  // namespace voxrt::test
