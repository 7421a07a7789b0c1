// Error checking for CUDA runtime and cuBLAS calls: every call's status is checked and a failure
// becomes a voxrt::Error naming the call, the source location and CUDA's own message. Usable from
// both the .cu kernel files (C++17) and the backend's .cpp files.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <string>

#include "common/error.h"

namespace voxrt::cuda {

[[noreturn]] inline void throw_cuda(const char* what, const char* file, int line, const std::string& msg) {
  throw Error(std::string("cuda: ") + what + " failed at " + file + ":" + std::to_string(line) + ": " + msg);
}

inline void check_cuda(cudaError_t e, const char* what, const char* file, int line) {
  if (e != cudaSuccess) throw_cuda(what, file, line, cudaGetErrorString(e));
}

inline void check_cublas(cublasStatus_t s, const char* what, const char* file, int line) {
  if (s != CUBLAS_STATUS_SUCCESS) throw_cuda(what, file, line, cublasGetStatusString(s));
}

}  // namespace voxrt::cuda

// VOXRT_CUDA_CHECK(cudaMemcpyAsync(...)); throws voxrt::Error on failure.
#define VOXRT_CUDA_CHECK(expr) ::voxrt::cuda::check_cuda((expr), #expr, __FILE__, __LINE__)
// VOXRT_CUBLAS_CHECK(cublasGemmEx(...)); throws voxrt::Error on failure.
#define VOXRT_CUBLAS_CHECK(expr) ::voxrt::cuda::check_cublas((expr), #expr, __FILE__, __LINE__)
// After a kernel launch: reports a bad launch configuration (and any earlier asynchronous error).
#define VOXRT_CUDA_CHECK_LAUNCH(name) ::voxrt::cuda::check_cuda(cudaGetLastError(), name " launch", __FILE__, __LINE__)
