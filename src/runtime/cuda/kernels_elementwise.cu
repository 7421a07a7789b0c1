// Element-wise kernels: fill, add, GELU, SiLU-gate, per-row scaling, bias add and the fp32 -> bf16
// conversion that feeds the matrix products. All are memory-bound: grid-stride loops with 16-byte
// (float4) accesses when every pointer involved is 16-byte aligned, a scalar loop otherwise (views
// of a Buffer can start at any row, so alignment is checked at run time, never assumed).
#include <cuda_bf16.h>

#include <algorithm>
#include <cstdint>

#include "runtime/cuda/cuda_check.h"
#include "runtime/cuda/cuda_kernels.h"
#include "runtime/cuda/dev_vec.cuh"
#include "runtime/cuda/launch.cuh"

namespace voxrt::cuda {
namespace {

constexpr int kThreads = 256;

bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15) == 0; }

unsigned blocks_for(size_t work) {
  const size_t b = (work + kThreads - 1) / kThreads;
  return static_cast<unsigned>(std::clamp<size_t>(b, 1, 65536));  // grid-stride beyond this
}

__device__ __forceinline__ float gelu_f(float v) {
  return 0.5f * v * (1.0f + erff(v * 0.707106781186547524f));  // as the CPU: erf of x / sqrt(2) in fp32
}
__device__ __forceinline__ float silu_mul_f(float g, float u) { return g / (1.0f + expf(-g)) * u; }

// Op codes of the fused element-wise kernel: y = f(y, x).
enum class Ew { Fill, Add, Gelu, SiluMul };

template <Ew op>
__device__ __forceinline__ float ew_apply(float y, float x, float value) {
  if constexpr (op == Ew::Fill) return value;
  if constexpr (op == Ew::Add) return y + x;
  if constexpr (op == Ew::Gelu) return gelu_f(y);
  if constexpr (op == Ew::SiluMul) return silu_mul_f(y, x);
  return y;
}

// One element-wise op over n floats of y (and x when the op reads it), 4 floats per thread step.
template <Ew op>
__global__ void ew_vec_kernel(float* __restrict__ y, const float* __restrict__ x, float value, size_t n4) {
  pdl_trigger();
  pdl_wait();
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n4; i += stride) {
    float4 a = op == Ew::Fill ? float4{} : reinterpret_cast<const float4*>(y)[i];
    float4 b = (op == Ew::Add || op == Ew::SiluMul) ? reinterpret_cast<const float4*>(x)[i] : float4{};
    a.x = ew_apply<op>(a.x, b.x, value);
    a.y = ew_apply<op>(a.y, b.y, value);
    a.z = ew_apply<op>(a.z, b.z, value);
    a.w = ew_apply<op>(a.w, b.w, value);
    reinterpret_cast<float4*>(y)[i] = a;
  }
}

// The scalar version: unaligned pointers, and the tail after the float4 part.
template <Ew op>
__global__ void ew_scalar_kernel(float* __restrict__ y, const float* __restrict__ x, float value, size_t n) {
  pdl_trigger();
  pdl_wait();
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n; i += stride) {
    const float b = (op == Ew::Add || op == Ew::SiluMul) ? x[i] : 0.0f;
    y[i] = ew_apply<op>(op == Ew::Fill ? 0.0f : y[i], b, value);
  }
}

template <Ew op>
void launch_ew(float* y, const float* x, float value, size_t n, Stream s, const char* name) {
  if (n == 0) return;
  const bool reads_x = op == Ew::Add || op == Ew::SiluMul;
  size_t done = 0;
  if (aligned16(y) && (!reads_x || aligned16(x))) {
    const size_t n4 = n / 4;
    if (n4 > 0) {
      launch_kernel(name, ew_vec_kernel<op>, dim3(blocks_for(n4)), dim3(kThreads), 0, s, y, x, value, n4);
    }
    done = n4 * 4;
  }
  if (done < n) {
    launch_kernel(name, ew_scalar_kernel<op>, dim3(blocks_for(n - done)), dim3(kThreads), 0, s, y + done,
                  reads_x ? x + done : nullptr, value, n - done);
  }
}

// x[r, c] *= scales[scale_row[r], c]: one block per row (the row's scale vector is one lookup).
__global__ void scale_rows_kernel(float* __restrict__ x, int cols, const float* __restrict__ scales, int scales_ld,
                                  const int* __restrict__ scale_row) {
  pdl_trigger();
  pdl_wait();
  const int r = blockIdx.x;
  float* xr = x + static_cast<size_t>(r) * cols;
  const float* sr = scales + static_cast<size_t>(scale_row[r]) * scales_ld;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) xr[c] *= sr[c];
}

// y[r, c] += bias[c] after a cuBLAS product (the bias may be stored fp32 or bf16).
__global__ void add_bias_kernel(float* __restrict__ y, size_t n, int cols, DevVec bias) {
  pdl_trigger();
  pdl_wait();
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n; i += stride) {
    const int c = static_cast<int>(i % cols);
    y[i] += vec_at(bias, c);
  }
}

// fp32 -> bf16 (round to nearest even) of a row-strided matrix into a packed one, 4 values per step:
// the activation side of a cuBLAS product, and of the GEMV when x's rows are not 16-byte aligned.
__global__ void f32_to_bf16_vec_kernel(const float* __restrict__ x, int cols4, size_t ld4, size_t n4,
                                       __nv_bfloat16* __restrict__ y) {
  pdl_trigger();
  pdl_wait();
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n4; i += stride) {
    const size_t r = i / cols4, c = i % cols4;
    const float4 v = reinterpret_cast<const float4*>(x)[r * ld4 + c];
    __nv_bfloat162 lo = __floats2bfloat162_rn(v.x, v.y);
    __nv_bfloat162 hi = __floats2bfloat162_rn(v.z, v.w);
    uint2 packed;
    packed.x = *reinterpret_cast<uint32_t*>(&lo);
    packed.y = *reinterpret_cast<uint32_t*>(&hi);
    reinterpret_cast<uint2*>(y)[i] = packed;
  }
}

__global__ void f32_to_bf16_scalar_kernel(const float* __restrict__ x, int cols, size_t ld, size_t n,
                                          __nv_bfloat16* __restrict__ y) {
  pdl_trigger();
  pdl_wait();
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n; i += stride) {
    const size_t r = i / cols, c = i % cols;
    y[i] = __float2bfloat16_rn(x[r * ld + c]);
  }
}

}  // namespace

void launch_fill(float* dst, float value, size_t n, Stream s) { launch_ew<Ew::Fill>(dst, nullptr, value, n, s, "fill"); }
void launch_add(float* y, const float* x, size_t n, Stream s) { launch_ew<Ew::Add>(y, x, 0, n, s, "add"); }
void launch_gelu(float* x, size_t n, Stream s) { launch_ew<Ew::Gelu>(x, nullptr, 0, n, s, "gelu"); }
void launch_silu_mul(float* gate, const float* up, size_t n, Stream s) {
  launch_ew<Ew::SiluMul>(gate, up, 0, n, s, "silu_mul");
}

void launch_scale_rows(float* x, int rows, int cols, const float* scales, int scales_ld, const int* scale_row,
                       Stream s) {
  if (rows <= 0 || cols <= 0) return;
  launch_kernel("scale_rows", scale_rows_kernel, dim3(rows), dim3(std::min(1024, (cols + 31) / 32 * 32)), 0, s, x, cols,
                scales, scales_ld, scale_row);
}

void launch_add_bias(float* y, int rows, int cols, DevVec bias, Stream s) {
  const size_t n = static_cast<size_t>(rows) * cols;
  if (n == 0) return;
  launch_kernel("add_bias", add_bias_kernel, dim3(blocks_for(n)), dim3(kThreads), 0, s, y, n, cols, bias);
}

void launch_f32_to_bf16(const float* x, int rows, int cols, size_t ld, __nv_bfloat16* y, Stream s) {
  const size_t n = static_cast<size_t>(rows) * cols;
  if (n == 0) return;
  if (cols % 4 == 0 && ld % 4 == 0 && aligned16(x) && (reinterpret_cast<uintptr_t>(y) & 7) == 0) {
    const size_t n4 = n / 4;
    launch_kernel("f32_to_bf16", f32_to_bf16_vec_kernel, dim3(blocks_for(n4)), dim3(kThreads), 0, s, x, cols / 4, ld / 4, n4,
                  y);
  } else {
    launch_kernel("f32_to_bf16", f32_to_bf16_scalar_kernel, dim3(blocks_for(n)), dim3(kThreads), 0, s, x, cols, ld, n, y);
  }
}

}  // namespace voxrt::cuda
