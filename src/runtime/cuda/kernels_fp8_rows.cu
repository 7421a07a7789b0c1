// fp8 products' activations (W8A8, quant/weight_format.h): each row of x quantized on its own to
// e4m3 with its scale, exactly as quant/fp8_e4m3.h's quantize_activation_row_e4m3 does (the same
// fp32 operations in the same order, and cvt.rn.satfinite, which float_to_e4m3 mirrors), so a row's
// codes depend on that row alone and the products over them keep batch invariance.
//
// One block a row: its threads find max |x| together (a max is exact in any order), then each
// converts its elements, four a 32-bit store where the row allows.
#include <cuda_fp8.h>

#include <cstdint>

#include "runtime/cuda/cuda_check.h"
#include "runtime/cuda/cuda_kernels.h"
#include "runtime/cuda/launch.cuh"

namespace voxrt::cuda {

// 1 in code that has the e4m3 mma (sm_89 and later: tensor_core.cuh's mma_e4m3).
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 890
__device__ int g_fp8_mma_compiled = 0;
#else
__device__ int g_fp8_mma_compiled = 1;
#endif

namespace {

constexpr int kThreads = 256;
constexpr float kE4m3Max = 448.0f;

__device__ __forceinline__ uint8_t e4m3(float v) {
  return static_cast<uint8_t>(__nv_cvt_float_to_fp8(v, __NV_SATFINITE, __NV_E4M3));
}

__global__ void __launch_bounds__(kThreads) quantize_rows_e4m3_kernel(const float* __restrict__ x, int K, size_t ldx,
                                                                      uint8_t* __restrict__ q, float* __restrict__ scales) {
  pdl_trigger();
  pdl_wait();
  const int m = blockIdx.x;
  const float* row = x + static_cast<size_t>(m) * ldx;
  float a = 0.0f;
  for (int k = threadIdx.x; k < K; k += kThreads) a = fmaxf(a, fabsf(row[k]));
  for (int o = 16; o > 0; o >>= 1) a = fmaxf(a, __shfl_xor_sync(0xffffffffu, a, o));
  __shared__ float warp_max[kThreads / 32];
  if (threadIdx.x % 32 == 0) warp_max[threadIdx.x / 32] = a;
  __syncthreads();
  a = warp_max[0];
#pragma unroll
  for (int w = 1; w < kThreads / 32; ++w) a = fmaxf(a, warp_max[w]);
  // a == 0: every code 0 and the scale 0 (fmaxf drops NaN, as std::max over |x| may not: a row
  // holding NaN is garbage either way).
  const float inv = a > 0.0f ? kE4m3Max / a : 0.0f;
  uint8_t* out = q + static_cast<size_t>(m) * K;
  if (K % 4 == 0) {
    for (int k = 4 * threadIdx.x; k < K; k += 4 * kThreads) {
      const uint32_t word = e4m3(row[k] * inv) | e4m3(row[k + 1] * inv) << 8 | e4m3(row[k + 2] * inv) << 16 |
                            static_cast<uint32_t>(e4m3(row[k + 3] * inv)) << 24;
      *reinterpret_cast<uint32_t*>(out + k) = word;
    }
  } else {
    for (int k = threadIdx.x; k < K; k += kThreads) out[k] = e4m3(row[k] * inv);
  }
  if (threadIdx.x == 0) scales[m] = a > 0.0f ? a / kE4m3Max : 0.0f;
}

}  // namespace

void launch_quantize_rows_e4m3(const float* x, int M, int K, size_t ldx, uint8_t* q, float* scales, Stream s) {
  check(M > 0 && K > 0 && ldx >= static_cast<size_t>(K), "cuda fp8 rows", "bad shape");
  launch_kernel("quantize_rows_e4m3", quantize_rows_e4m3_kernel, dim3(static_cast<unsigned>(M)), dim3(kThreads), 0, s,
                x, K, ldx, q, scales);
}

bool fp8_products_available() {
  // Read from the device: the code the driver loaded for it, not the build's list, decides (a
  // compute_80 build JIT-compiled for a Hopper GPU has no e4m3 mma).
  int compiled = 0;
  if (cudaMemcpyFromSymbol(&compiled, g_fp8_mma_compiled, sizeof compiled) != cudaSuccess) {
    (void)cudaGetLastError();
    return false;
  }
  return compiled == 1;
}

}  // namespace voxrt::cuda
