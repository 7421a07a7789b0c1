// What both GEMV kernels share (kernels_gemv.cu: one warp per output feature on the CUDA cores;
// kernels_gemv_mma.cu: 16 output features per block on the tensor cores): the launch parameters
// and the loads of x, rounded to bf16 as they are read.
#pragma once

#include <cuda_bf16.h>

#include <cstdint>

#include "runtime/cuda/cuda_kernels.h"
#include "runtime/cuda/dev_vec.cuh"

namespace voxrt::cuda::gemv {

struct Params {
  const void* x;
  long long ldx;  // elements
  int K8;         // K / 8
  GemvOut out[kGemvMaxOutputs];
  int n_outs, n_total;
  int M;                             // rows of x
  // Tensor-core kernel only (kernels_gemv_mma.cu): up to the end of output i, its groups of
  // 16-feature tiles (a block's) and its blocks (groups x pieces of K); the pieces of K of output
  // i; the split-K workspace.
  int group_end[kGemvMaxOutputs];
  int block_end[kGemvMaxOutputs];
  int pieces[kGemvMaxOutputs];
  float* partials;
  int* counters;
  // Tensor-core kernel: > 0 when the block's rows of x, over its piece of K, are staged in shared
  // memory as bf16 (row stride in 32-bit words); 0 when they are read from global memory.
  int x_stage_stride;
  int ring_stages;  // tensor-core kernel: chunks in flight a warp (kernels_gemv_mma.cu: ring_stages)
};

// The split-K fold's arrival count: *counter + 1, returning the old value, a release atomic at GPU
// scope (publishes what this thread, and what a warp barrier ordered before it, wrote). Only the
// last arrival reads the others' partials, so only it acquires them (acquire_arrivals: a fence
// after the atomic that read their releases); the others skip the acquire's L1 invalidation
// (CCTL.IVALL), which every warp of every split product paid when the count was acq_rel.
__device__ __forceinline__ int count_in_release(int* counter) {
  int old;
  asm volatile("atom.release.gpu.global.add.s32 %0, [%1], 1;\n" : "=r"(old) : "l"(counter) : "memory");
  return old;
}
__device__ __forceinline__ void acquire_arrivals() { asm volatile("fence.acq_rel.gpu;\n" ::: "memory"); }

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

__device__ __forceinline__ uint32_t pack_bf16(float lo, float hi) {
  const __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);  // .x (low half) = lo
  return *reinterpret_cast<const uint32_t*>(&h);
}

// A product's sum for row m, feature f as the value it stands for: itself, or for fp8 weights
// (acc * s_x[m]) * s_w[f], in that order (quant/fp8_e4m3.h).
__device__ __forceinline__ float finish(const GemvOut& o, int m, int f, float acc) {
  return o.format == kGemvFp8 ? (acc * o.x_scales[m]) * o.row_scales[f] : acc;
}
// The epilogue of every product kernel, in one place so that each computes the same bits: y[m, f]
// of a plain output (+ y when accumulating, as sgemv's W x + beta y, then the bias) ...
__device__ __forceinline__ void store_output(const GemvOut& o, int m, int f, float val) {
  val = finish(o, m, f, val);
  float* out = o.y + static_cast<size_t>(m) * o.ldy + f;
  if (o.accumulate) val += *out;
  if (o.bias.data) val += vec_at(o.bias, f);
  *out = val;
}
// ... and of a gated one: silu(gate) * up, as the silu_mul kernel computes it (gate and up are
// finished sums: gated_output() finishes them).
__device__ __forceinline__ float silu_times(float gate, float up) { return gate / (1.0f + expf(-gate)) * up; }
__device__ __forceinline__ float gated_output(const GemvOut& gate_w, const GemvOut& up_w, int m, int f, float gate,
                                              float up) {
  return silu_times(finish(gate_w, m, f, gate), finish(up_w, m, f, up));
}

// Elements 8k .. 8k+7 of row m of x, as 8 packed bf16.
template <typename XT>
__device__ __forceinline__ uint4 load_x8(const Params& p, int m, int k) {
  if constexpr (sizeof(XT) == 2) {
    return __ldg(reinterpret_cast<const uint4*>(static_cast<const XT*>(p.x) + m * p.ldx) + k);
  } else {
    const float4* r = reinterpret_cast<const float4*>(static_cast<const float*>(p.x) + m * p.ldx) + 2 * k;
    const float4 a = __ldg(r), b = __ldg(r + 1);
    return uint4{pack_bf16(a.x, a.y), pack_bf16(a.z, a.w), pack_bf16(b.x, b.y), pack_bf16(b.z, b.w)};
  }
}

}  // namespace voxrt::cuda::gemv
