// Matrix-vector products (a few rows of activations against a bf16 weight), the whole cost of a
// decode step. Two kernels: this file's, one warp per output feature on the CUDA cores, and the
// tensor-core one (kernels_gemv_mma.cu), used unless GemvTuning::tensor_cores is off
// (VOXRT_CUDA_GEMV=simt); one of them serves every product of a backend, so rows never depend on
// their batch. cuBLAS tiles for large M, which wastes most of a tile and a pass over the weight per
// few rows when M is tiny; these products are bound by reading the weight once, so a warp per
// output feature streams its weight row with 16-byte loads (8 bf16, several in flight) and multiplies
// it with all M rows of x, accumulating in fp32.
//
// x is read as it is stored: fp32 activations are rounded to bf16 (nearest even) as they are loaded,
// which gives bit for bit what rounding them into a bf16 copy first would, without the extra kernel
// and its round trip through memory. Bias, accumulate (y += ...) and, for the SwiGLU gate, the
// silu(gate) * up product are fused in the epilogue. One launch can cover up to three weights over
// the same x (a layer's q, k and v): the grid spans their outputs end to end.
//
// Each output's reduction order depends only on K (lane-strided 8-element chunks, then a butterfly
// across the warp), never on M or on which other rows share the launch: the basis of the backend's
// batch invariance (cuda_backend.cpp).
#include <cuda_bf16.h>

#include <algorithm>
#include <cstdint>

#include "runtime/cuda/cuda_check.h"
#include "runtime/cuda/cuda_kernels.h"
#include "runtime/cuda/gemv_common.cuh"
#include "runtime/cuda/launch.cuh"

namespace voxrt::cuda {
namespace {

using gemv::Params;
using gemv::dot8;
using gemv::load_x8;

constexpr int kWarps = 8;  // output features per block
constexpr int kSimtMaxRows = 8;
// 16-byte weight loads in flight per lane (per weight row): a decode row of K = 3072 is 12 loads
// per lane, so at 8 a warp waits for memory twice rather than three times; more rows of x need the
// registers for their accumulators.
template <int M>
__host__ __device__ constexpr int unroll_for() { return M <= 2 ? 8 : 4; }

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// One warp per output feature n (over the outputs end to end): y[m, n] = sum_k W[n, k] x[m, k] for
// the M rows of x. GATED: out[0] is the gate weight and the destination, out[1].w the up weight, and
// y = silu(gate) * up.
template <int M, typename XT, bool GATED>
__global__ void __launch_bounds__(kWarps * 32) gemv_kernel(const Params p) {
  pdl_trigger();
  int n = blockIdx.x * kWarps + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (n >= p.n_total) {  // whole warps only
    pdl_wait();  // (exits only after the previous kernel: nothing may overtake it)
    return;
  }
  int seg = 0;
  while (seg + 1 < p.n_outs && n >= p.out[seg].n) n -= p.out[seg++].n;
  const GemvOut& o = p.out[seg];
  const int K8 = p.K8;
  const uint4* wr = reinterpret_cast<const uint4*>(o.w) + static_cast<size_t>(n) * K8;
  const uint4* ur = GATED ? reinterpret_cast<const uint4*>(p.out[1].w) + static_cast<size_t>(n) * K8 : nullptr;
  float acc[M], accu[GATED ? M : 1];
#pragma unroll
  for (int m = 0; m < M; ++m) acc[m] = 0;
#pragma unroll
  for (int m = 0; m < (GATED ? M : 1); ++m) accu[m] = 0;
  constexpr int kUnroll = unroll_for<M>();
  uint4 wv[kUnroll], uv[GATED ? kUnroll : 1];
  auto load_weights = [&](int k0) {
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int k = k0 + u * 32;
      wv[u] = k < K8 ? __ldcs(wr + k) : uint4{0, 0, 0, 0};  // streamed once: evict first
      if constexpr (GATED) uv[u] = k < K8 ? __ldcs(ur + k) : uint4{0, 0, 0, 0};
    }
  };
  // The first weights are in flight before waiting for the previous kernel (launch.cuh): weights
  // are never written by a kernel, x and y are.
  load_weights(lane);
  pdl_wait();
  for (int k0 = lane; k0 < K8; k0 += 32 * kUnroll) {
    if (k0 != lane) load_weights(k0);
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int k = k0 + u * 32;
      if (k < K8) {
#pragma unroll
        for (int m = 0; m < M; ++m) {
          const uint4 xv = load_x8<XT>(p, m, k);
          acc[m] = dot8(wv[u], xv, acc[m]);
          if constexpr (GATED) accu[m] = dot8(uv[u], xv, accu[m]);
        }
      }
    }
  }
#pragma unroll
  for (int m = 0; m < M; ++m) acc[m] = warp_sum(acc[m]);
  if constexpr (GATED) {
#pragma unroll
    for (int m = 0; m < M; ++m) accu[m] = warp_sum(accu[m]);
  }
  if (lane < M) {
    // Lane m writes row m (a compile-time-indexed select keeps acc in registers).
    float v = 0, up = 0;
#pragma unroll
    for (int m = 0; m < M; ++m) {
      if (m == lane) {
        v = acc[m];
        if constexpr (GATED) up = accu[m];
      }
    }
    if constexpr (GATED) o.y[static_cast<size_t>(lane) * o.ldy + n] = gemv::silu_times(v, up);
    else gemv::store_output(o, lane, n, v);
  }
}

// One thread per output, fp32 weights: the rare linear over a weight stored as a vector.
__global__ void linear_f32_kernel(const float* __restrict__ x, int M, int K, size_t ldx, const float* __restrict__ W,
                                  int N, DevVec bias, float* __restrict__ y, int ldy, int accumulate) {
  pdl_trigger();
  pdl_wait();
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

template <int M, typename XT, bool GATED>
void launch_m(const Params& p, Stream s) {
  const unsigned blocks = static_cast<unsigned>((p.n_total + kWarps - 1) / kWarps);
  launch_kernel("gemv", gemv_kernel<M, XT, GATED>, dim3(blocks), dim3(kWarps * 32), 0, s, p);
}

template <typename XT, bool GATED>
void launch_typed(const Params& p, int M, Stream s) {
  switch (M) {
    case 1: launch_m<1, XT, GATED>(p, s); break;
    case 2: launch_m<2, XT, GATED>(p, s); break;
    case 3: launch_m<3, XT, GATED>(p, s); break;
    case 4: launch_m<4, XT, GATED>(p, s); break;
    case 5: launch_m<5, XT, GATED>(p, s); break;
    case 6: launch_m<6, XT, GATED>(p, s); break;
    case 7: launch_m<7, XT, GATED>(p, s); break;
    default: launch_m<8, XT, GATED>(p, s); break;
  }
}

bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15) == 0; }

}  // namespace

// Defined in kernels_gemv_mma.cu.
void launch_gemv_mma(const gemv::Params& p, bool x_bf16, bool gated, const GemvWorkspace& ws, const GemvTuning& t,
                     Stream s);
GemvWorkspaceSize gemv_mma_workspace(const gemv::Params& p, const GemvTuning& t);

int gemv_max_rows(const GemvTuning& t) { return t.tensor_cores ? 32 : kSimtMaxRows; }

bool gemv_supports_k(int K) { return K > 0 && K % 8 == 0; }

bool gemv_reads_f32(const float* x, size_t ldx) { return aligned16(x) && ldx % 4 == 0; }

namespace {

Params make_params(const void* x, size_t ldx, int M, int K, const GemvOut* outs, int n_outs, bool gated) {
  check(K > 0 && K % 8 == 0 && n_outs >= 1 && n_outs <= kGemvMaxOutputs && (!gated || n_outs == 2), "cuda gemv",
        "unsupported shape");
  Params p{};
  p.x = x;
  p.ldx = static_cast<long long>(ldx);
  p.K8 = K / 8;
  p.n_outs = gated ? 1 : n_outs;  // gated: one output range, the up weight rides along in out[1]
  for (int i = 0; i < n_outs; ++i) p.out[i] = outs[i];
  p.n_total = 0;
  for (int i = 0; i < p.n_outs; ++i) p.n_total += outs[i].n;
  p.M = M;
  return p;
}

}  // namespace

GemvWorkspaceSize gemv_workspace_size(int K, const GemvOut* outs, int n_outs, bool gated, const GemvTuning& t) {
  if (!t.tensor_cores) return {};
  return gemv_mma_workspace(make_params(nullptr, 0, 1, K, outs, n_outs, gated), t);
}

void launch_gemv(const void* x, bool x_bf16, size_t ldx, int M, int K, const GemvOut* outs, int n_outs, bool gated,
                 const GemvWorkspace& ws, const GemvTuning& t, Stream s) {
  check(M >= 1 && M <= gemv_max_rows(t) && gemv_supports_k(K), "cuda gemv", "unsupported shape");
  check(aligned16(x) && (x_bf16 ? ldx % 8 == 0 : ldx % 4 == 0), "cuda gemv", "x must be 16-byte aligned per row");
  for (int i = 0; i < n_outs; ++i) {
    check(aligned16(outs[i].data()), "cuda gemv", "weights must be 16-byte aligned");
    check(outs[i].format == outs[0].format, "cuda gemv", "the weights of one launch must share a format");
  }
  check(outs[0].format == kGemvBf16 || t.tensor_cores, "cuda gemv", "quantized weights need the tensor-core GEMV");
  const Params p = make_params(x, ldx, M, K, outs, n_outs, gated);
  if (p.n_total == 0) return;
  if (t.tensor_cores) {
    launch_gemv_mma(p, x_bf16, gated, ws, t, s);
    return;
  }
  if (gated) {
    if (x_bf16) launch_typed<__nv_bfloat16, true>(p, M, s);
    else launch_typed<float, true>(p, M, s);
  } else {
    if (x_bf16) launch_typed<__nv_bfloat16, false>(p, M, s);
    else launch_typed<float, false>(p, M, s);
  }
}

void launch_linear_f32_weight(const float* x, int M, int K, size_t ldx, const float* W, int N, DevVec bias, float* y,
                              int ldy, bool accumulate, Stream s) {
  const size_t total = static_cast<size_t>(M) * N;
  if (total == 0) return;
  const unsigned blocks = static_cast<unsigned>(std::min<size_t>((total + 255) / 256, 65536));
  launch_kernel("linear_f32_weight", linear_f32_kernel, dim3(blocks), dim3(256), 0, s, x, M, K, ldx, W, N, bias, y, ldy,
                accumulate ? 1 : 0);
}

}  // namespace voxrt::cuda
