// The GEMV on the tensor cores: up to 32 rows of x against a bf16 weight, bound by reading the
// weight once. A block owns 16 output features; its 8 warps split K (warp w takes the 32-element
// chunks w, w + 8, ...), each multiplying its 16 x 32 weight pieces with the x rows by
// mma.sync.m16n8k16 (bf16 in, fp32 accumulate), and the warps' partial sums are added in warp order
// at the end. On the CUDA cores (kernels_gemv.cu) every weight element costs an unpack and one FMA
// per row of x, which for 4 encoder rows is more than the memory system delivers; here one mma
// covers 16 features x 16 K x 8 rows.
//
// Loads go straight from global memory to the mma fragments. Within each 32-element chunk, lane
// (g, t) = (lane / 4, lane % 4) loads elements 8t .. 8t+7 of weight rows g and g + 8 (16 bytes each)
// and of x row g, and uses them as fragment k-slots {2t, 2t+1, 2t+8, 2t+9} of the chunk's two
// k16 halves. The same permutation of K on both operands leaves every dot product unchanged, and
// keeps each weight load a full 16-byte vector.
//
// A row's result depends only on K (the chunk split, the mma order, the warp order), never on M or
// on the other rows in the launch: batch invariance (cuda_backend.cpp).
#include <cuda_bf16.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "runtime/cuda/cuda_check.h"
#include "runtime/cuda/cuda_kernels.h"
#include "runtime/cuda/gemv_common.cuh"
#include "runtime/cuda/launch.cuh"

namespace voxrt::cuda {
namespace {

using gemv::load_x8;
using gemv::Params;

constexpr int kWarps = 8;

__device__ __forceinline__ void mma16816(float (&c)[4], uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3,
                                         uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

// acc += rows (g, g + 8) of the weight chunk times the x chunk, both k16 halves.
__device__ __forceinline__ void mma_chunk(float (&acc)[4], uint4 wa, uint4 wb, uint4 x) {
  mma16816(acc, wa.x, wb.x, wa.y, wb.y, x.x, x.y);
  mma16816(acc, wa.z, wb.z, wa.w, wb.w, x.z, x.w);
}

// NT: tiles of 8 x rows (M <= 8 NT). GATED: out[0] is the gate weight and the destination, out[1].w
// the up weight, y = silu(gate) * up.
template <int NT, typename XT, bool GATED, bool PIPE>
__global__ void __launch_bounds__(kWarps * 32) gemv_mma_kernel(const Params p) {
  pdl_trigger();
  constexpr int NV = GATED ? 2 : 1;  // weights multiplied
  // Chunks loaded per round. PIPE (VOXRT_CUDA_GEMV_PIPELINE=1, one tile of x only): the next
  // round's weights are loaded before this round's are used (two register sets), so a warp always
  // has a round in flight, at the cost of registers and so of resident blocks.
  constexpr bool kPipelined = PIPE && NT == 1;
  constexpr int U = NT >= 4 ? 2 : (kPipelined && GATED ? 2 : 4);
  constexpr int kSets = kPipelined ? 2 : 1;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;

  int seg = 0;
  while (seg + 1 < p.n_outs && static_cast<int>(blockIdx.x) >= p.tile_end[seg]) ++seg;
  const int f0 = (blockIdx.x - (seg ? p.tile_end[seg - 1] : 0)) * 16;
  const GemvOut& o = p.out[seg];
  const int n = o.n, K8 = p.K8, chunks = (K8 + 3) / 4;
  const uint4* w[NV][2];  // [weight][row g or g + 8], null past the last feature
#pragma unroll
  for (int v = 0; v < NV; ++v) {
    const uint4* base = reinterpret_cast<const uint4*>(v == 0 ? o.w : p.out[1].w);
    w[v][0] = f0 + g < n ? base + static_cast<size_t>(f0 + g) * K8 : nullptr;
    w[v][1] = f0 + g + 8 < n ? base + static_cast<size_t>(f0 + g + 8) * K8 : nullptr;
  }

  float acc[NV][NT][4];
#pragma unroll
  for (int v = 0; v < NV; ++v)
#pragma unroll
    for (int j = 0; j < NT; ++j) acc[v][j][0] = acc[v][j][1] = acc[v][j][2] = acc[v][j][3] = 0;

  uint4 wv[kSets][U][NV][2];
  auto load_weights = [&](uint4 (&dst)[U][NV][2], int c0) {
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int k = (c0 + u * kWarps) * 4 + t;  // in 8-element units
#pragma unroll
      for (int v = 0; v < NV; ++v)
#pragma unroll
        for (int r = 0; r < 2; ++r)
          dst[u][v][r] = (k < K8 && w[v][r]) ? __ldcs(w[v][r] + k) : uint4{0, 0, 0, 0};  // streamed once
    }
  };
  // The first weights are in flight before waiting for the previous kernel (launch.cuh).
  load_weights(wv[0], warp);
  pdl_wait();
  for (int c0 = warp; c0 < chunks; c0 += kWarps * U) {
    if constexpr (kPipelined) {
      if (c0 + kWarps * U < chunks) load_weights(wv[1], c0 + kWarps * U);
    } else {
      if (c0 != warp) load_weights(wv[0], c0);
    }
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int k = (c0 + u * kWarps) * 4 + t;
#pragma unroll
      for (int j = 0; j < NT; ++j) {
        const int m = 8 * j + g;
        const uint4 xv = (k < K8 && m < p.M) ? load_x8<XT>(p, m, k) : uint4{0, 0, 0, 0};
#pragma unroll
        for (int v = 0; v < NV; ++v) mma_chunk(acc[v][j], wv[0][u][v][0], wv[0][u][v][1], xv);
      }
    }
    if constexpr (kPipelined) {
#pragma unroll
      for (int u = 0; u < U; ++u)
#pragma unroll
        for (int v = 0; v < NV; ++v) wv[0][u][v][0] = wv[1][u][v][0], wv[0][u][v][1] = wv[1][u][v][1];
    }
  }

  // Partial sums of the 8 warps, added in warp order by warp 0.
  __shared__ float part[kWarps][NV * NT * 4][32];
#pragma unroll
  for (int v = 0; v < NV; ++v)
#pragma unroll
    for (int j = 0; j < NT; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) part[warp][(v * NT + j) * 4 + e][lane] = acc[v][j][e];
  __syncthreads();
  if (warp != 0) return;
#pragma unroll
  for (int v = 0; v < NV; ++v)
#pragma unroll
    for (int j = 0; j < NT; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        float s = part[0][(v * NT + j) * 4 + e][lane];
#pragma unroll
        for (int ww = 1; ww < kWarps; ++ww) s += part[ww][(v * NT + j) * 4 + e][lane];
        acc[v][j][e] = s;
      }
  // Fragment element e of tile j: feature f0 + g (+ 8 for e >= 2), x row 8j + 2t (+ 1 for odd e).
#pragma unroll
  for (int j = 0; j < NT; ++j) {
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int f = f0 + g + (e >= 2 ? 8 : 0), m = 8 * j + 2 * t + (e & 1);
      if (f >= n || m >= p.M) continue;
      float* out = o.y + static_cast<size_t>(m) * o.ldy + f;
      float val = acc[0][j][e];
      if constexpr (GATED) {
        val = val / (1.0f + expf(-val)) * acc[NV - 1][j][e];  // as the silu_mul kernel
      } else {
        if (o.accumulate) val += *out;  // as sgemv: (W x + beta y), then the bias
        if (o.bias.data) val += vec_at(o.bias, f);
      }
      *out = val;
    }
  }
}

bool pipelined() {
  static const bool on = [] {
    const char* e = std::getenv("VOXRT_CUDA_GEMV_PIPELINE");
    return e && std::strcmp(e, "1") == 0;
  }();
  return on;
}

template <int NT, typename XT, bool PIPE>
void launch_pipe(const Params& p, bool gated, cudaStream_t s) {
  const dim3 grid(static_cast<unsigned>(p.tile_end[p.n_outs - 1]));
  if (gated) launch_kernel("gemv_mma", gemv_mma_kernel<NT, XT, true, PIPE>, grid, dim3(kWarps * 32), 0, s, p);
  else launch_kernel("gemv_mma", gemv_mma_kernel<NT, XT, false, PIPE>, grid, dim3(kWarps * 32), 0, s, p);
}

template <int NT, typename XT>
void launch_nt(const Params& p, bool gated, cudaStream_t s) {
  if (NT == 1 && pipelined()) launch_pipe<NT, XT, true>(p, gated, s);
  else launch_pipe<NT, XT, false>(p, gated, s);
}

template <typename XT>
void launch_typed(const Params& p, bool gated, cudaStream_t s) {
  if (p.M <= 8) launch_nt<1, XT>(p, gated, s);
  else if (p.M <= 16) launch_nt<2, XT>(p, gated, s);
  else launch_nt<4, XT>(p, gated, s);
}

}  // namespace

void launch_gemv_mma(const gemv::Params& params, bool x_bf16, bool gated, cudaStream_t s) {
  gemv::Params p = params;
  int tiles = 0;
  for (int i = 0; i < p.n_outs; ++i) {
    tiles += (p.out[i].n + 15) / 16;
    p.tile_end[i] = tiles;
  }
  if (tiles == 0) return;
  if (x_bf16) launch_typed<__nv_bfloat16>(p, gated, s);
  else launch_typed<float>(p, gated, s);
}

}  // namespace voxrt::cuda
