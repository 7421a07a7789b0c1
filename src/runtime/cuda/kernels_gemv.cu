// Matrix-vector products for the decode step (M <= 8 rows of activations against a bf16 weight).
// cuBLAS tiles for large M, which wastes most of a tile and a pass over the weight per few rows
// when M is tiny; these products are bound by reading the weight once, so a warp per output
// feature streams its weight row with 16-byte loads (8 bf16, several in flight) and multiplies it
// with all M rows of x (bf16, the same rounding as the cuBLAS path, read through L1 where the
// block's warps share them), accumulating in fp32. Bias and accumulate are fused in the epilogue.
#include <cuda_bf16.h>

#include <algorithm>
#include <cstdint>

#include "runtime/cuda/cuda_check.h"
#include "runtime/cuda/cuda_kernels.h"

namespace voxrt::cuda {
namespace {

constexpr int kWarps = 8;   // output features per block
constexpr int kUnroll = 4;  // 16-byte weight loads in flight per lane

// acc += w . x over 8 bf16 pairs (bf16 -> fp32 is a 16-bit shift).
__device__ __forceinline__ float dot8(uint4 w, uint4 x, float acc) {
  const uint32_t wa[4] = {w.x, w.y, w.z, w.w};
  const uint32_t xa[4] = {x.x, x.y, x.z, x.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    acc = fmaf(__uint_as_float(wa[i] << 16), __uint_as_float(xa[i] << 16), acc);
    acc = fmaf(__uint_as_float(wa[i] & 0xffff0000u), __uint_as_float(xa[i] & 0xffff0000u), acc);
  }
  return acc;
}

__device__ __forceinline__ float vec_at(DevVec v, int i) {
  return v.bf16 ? __bfloat162float(static_cast<const __nv_bfloat16*>(v.data)[i]) : static_cast<const float*>(v.data)[i];
}

// One warp per output feature n: y[m, n] = sum_k W[n, k] x[m, k] for the M rows of x.
template <int M>
__global__ void __launch_bounds__(kWarps * 32) gemv_bf16_kernel(const uint4* __restrict__ W,
                                                                  const uint4* __restrict__ x, int N, int K8,
                                                                  DevVec bias, float* __restrict__ y, int ldy,
                                                                  int accumulate) {
  const int n = blockIdx.x * kWarps + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (n >= N) return;  // whole warps only
  const uint4* wr = W + static_cast<size_t>(n) * K8;
  float acc[M];
#pragma unroll
  for (int m = 0; m < M; ++m) acc[m] = 0;
  for (int k0 = lane; k0 < K8; k0 += 32 * kUnroll) {
    uint4 wv[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int k = k0 + u * 32;
      wv[u] = k < K8 ? __ldcs(wr + k) : uint4{0, 0, 0, 0};  // streamed once: evict first
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int k = k0 + u * 32;
      if (k < K8) {
#pragma unroll
        for (int m = 0; m < M; ++m) acc[m] = dot8(wv[u], __ldg(x + static_cast<size_t>(m) * K8 + k), acc[m]);
      }
    }
  }
#pragma unroll
  for (int m = 0; m < M; ++m) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) acc[m] += __shfl_xor_sync(0xffffffffu, acc[m], o);
  }
  if (lane < M) {
    // Lane m writes row m (a compile-time-indexed select keeps acc in registers).
    float v = 0;
#pragma unroll
    for (int m = 0; m < M; ++m)
      if (m == lane) v = acc[m];
    float* out = y + static_cast<size_t>(lane) * ldy + n;
    if (accumulate) v += *out;  // as sgemv: (W x + beta y), then the bias
    if (bias.data) v += vec_at(bias, n);
    *out = v;
  }
}

// One thread per output, fp32 weights: the rare linear over a weight stored as a vector.
__global__ void linear_f32_kernel(const float* __restrict__ x, int M, int K, size_t ldx, const float* __restrict__ W,
                                  int N, DevVec bias, float* __restrict__ y, int ldy, int accumulate) {
  const size_t total = static_cast<size_t>(M) * N;
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < total; i += stride) {
    const int m = static_cast<int>(i / N), n = static_cast<int>(i % N);
    float s = 0;
    for (int k = 0; k < K; ++k) s = fmaf(x[static_cast<size_t>(m) * ldx + k], W[static_cast<size_t>(n) * K + k], s);
    float* out = y + static_cast<size_t>(m) * ldy + n;
    if (accumulate) s += *out;
    if (bias.data) s += vec_at(bias, n);
    *out = s;
  }
}

template <int M>
void launch_m(const __nv_bfloat16* W, const __nv_bfloat16* x, int N, int K, DevVec bias, float* y, int ldy,
              bool accumulate, cudaStream_t s) {
  const unsigned blocks = static_cast<unsigned>((N + kWarps - 1) / kWarps);
  gemv_bf16_kernel<M><<<blocks, kWarps * 32, 0, s>>>(reinterpret_cast<const uint4*>(W),
                                                     reinterpret_cast<const uint4*>(x), N, K / 8, bias, y, ldy,
                                                     accumulate ? 1 : 0);
  VOXRT_CUDA_CHECK_LAUNCH("gemv_bf16");
}

}  // namespace

bool gemv_supported(int M, int K) { return M >= 1 && M <= kGemvMaxRows && K > 0 && K % 8 == 0; }

void launch_gemv_bf16(const __nv_bfloat16* W, const __nv_bfloat16* x, int M, int N, int K, DevVec bias, float* y,
                      int ldy, bool accumulate, cudaStream_t s) {
  if (N <= 0) return;
  check(gemv_supported(M, K), "cuda gemv", "unsupported shape");
  check((reinterpret_cast<uintptr_t>(W) & 15) == 0 && (reinterpret_cast<uintptr_t>(x) & 15) == 0, "cuda gemv",
        "operands must be 16-byte aligned");
  switch (M) {
    case 1: launch_m<1>(W, x, N, K, bias, y, ldy, accumulate, s); break;
    case 2: launch_m<2>(W, x, N, K, bias, y, ldy, accumulate, s); break;
    case 3: launch_m<3>(W, x, N, K, bias, y, ldy, accumulate, s); break;
    case 4: launch_m<4>(W, x, N, K, bias, y, ldy, accumulate, s); break;
    case 5: launch_m<5>(W, x, N, K, bias, y, ldy, accumulate, s); break;
    case 6: launch_m<6>(W, x, N, K, bias, y, ldy, accumulate, s); break;
    case 7: launch_m<7>(W, x, N, K, bias, y, ldy, accumulate, s); break;
    default: launch_m<8>(W, x, N, K, bias, y, ldy, accumulate, s); break;
  }
}

void launch_linear_f32_weight(const float* x, int M, int K, size_t ldx, const float* W, int N, DevVec bias, float* y,
                              int ldy, bool accumulate, cudaStream_t s) {
  const size_t total = static_cast<size_t>(M) * N;
  if (total == 0) return;
  const unsigned blocks = static_cast<unsigned>(std::min<size_t>((total + 255) / 256, 65536));
  linear_f32_kernel<<<blocks, 256, 0, s>>>(x, M, K, ldx, W, N, bias, y, ldy, accumulate ? 1 : 0);
  VOXRT_CUDA_CHECK_LAUNCH("linear_f32_weight");
}

}  // namespace voxrt::cuda
