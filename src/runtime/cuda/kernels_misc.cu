// Token embedding gather, the greedy sampler's argmax and the logit boosts before it. (The conv stem's im2col needs no kernel of
// its own: a patch row is 3 consecutive input rows, so the fp32 -> bf16 conversion in
// kernels_elementwise.cu reads the patches straight from x with a row stride of stride * cin.)
#include <cuda_bf16.h>

#include <cfloat>
#include <climits>
#include <cstdint>

#include "runtime/cuda/cuda_check.h"
#include "runtime/cuda/cuda_kernels.h"
#include "runtime/cuda/launch.cuh"

namespace voxrt::cuda {
namespace {

constexpr int kArgmaxThreads = 1024;
constexpr int kArgmaxWave = 16;

// y[r] = table[ids[r]], one block per row; bf16 rows are read 8 values (16 bytes) at a time when
// the row length allows it.
__global__ void embed_kernel(DevVec table, int cols, const int32_t* __restrict__ ids, float* __restrict__ y, int ldy) {
  pdl_trigger();
  pdl_wait();
  const int r = blockIdx.x;
  float* yr = y + static_cast<size_t>(r) * ldy;
  const size_t row = static_cast<size_t>(ids[r]) * cols;
  if (table.bf16) {
    const __nv_bfloat16* t = static_cast<const __nv_bfloat16*>(table.data) + row;
    if (cols % 8 == 0) {
      const uint4* t8 = reinterpret_cast<const uint4*>(t);
      for (int c = threadIdx.x; c < cols / 8; c += blockDim.x) {
        const uint4 v = t8[c];
        const uint32_t w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          yr[8 * c + 2 * i] = __uint_as_float(w[i] << 16);
          yr[8 * c + 2 * i + 1] = __uint_as_float(w[i] & 0xffff0000u);
        }
      }
    } else {
      for (int c = threadIdx.x; c < cols; c += blockDim.x) yr[c] = __bfloat162float(t[c]);
    }
  } else {
    const float* t = static_cast<const float*>(table.data) + row;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) yr[c] = t[c];
  }
}

// Running top-2 of a sequence: the best value and its (first) index, and the runner-up counted
// with multiplicity. Empty: i1 == INT_MAX.
struct Top2 {
  float v1, v2;
  int i1;
};

// Merges two disjoint parts: the larger best wins (the smaller index on equal values), and the
// runner-up is the best of what remains: the loser's best or either runner-up.
__device__ __forceinline__ Top2 merge(Top2 a, Top2 b) {
  const bool b_wins = b.v1 > a.v1 || (b.v1 == a.v1 && b.i1 < a.i1);
  const Top2 top = b_wins ? b : a, other = b_wins ? a : b;
  return Top2{top.v1, fmaxf(top.v2, other.v1), top.i1};
}

// One block per row. Each thread scans its columns in increasing order exactly as the CPU loop does
// (a later equal value does not replace the best but becomes the runner-up), then the block merges.
__global__ void __launch_bounds__(kArgmaxThreads) argmax_kernel(const float* __restrict__ x, int cols,
                                                                int32_t* __restrict__ ids, float* __restrict__ margins) {
  pdl_trigger();
  pdl_wait();
  __shared__ Top2 warp_best[kArgmaxThreads / 32];
  const float* xr = x + static_cast<size_t>(blockIdx.x) * cols;
  Top2 t{-INFINITY, -INFINITY, INT_MAX};
  // A thread's columns c = tid, tid + 1024, ... are loaded kArgmaxWave at a time, all before any is
  // compared, so a 131072-entry row costs a few memory round trips rather than one per column.
  for (int base = threadIdx.x; base < cols; base += kArgmaxThreads * kArgmaxWave) {
    float v[kArgmaxWave];
#pragma unroll
    for (int i = 0; i < kArgmaxWave; ++i) {
      const int c = base + i * kArgmaxThreads;
      v[i] = c < cols ? xr[c] : -INFINITY;
    }
#pragma unroll
    for (int i = 0; i < kArgmaxWave; ++i) {
      const int c = base + i * kArgmaxThreads;
      if (c >= cols) break;
      if (t.i1 == INT_MAX) {  // the thread's first column
        t.v1 = v[i];
        t.i1 = c;
      } else if (v[i] > t.v1) {
        t.v2 = t.v1;
        t.v1 = v[i];
        t.i1 = c;
      } else if (v[i] > t.v2) {
        t.v2 = v[i];
      }
    }
  }
  for (int o = 16; o > 0; o >>= 1) {
    Top2 u;
    u.v1 = __shfl_xor_sync(0xffffffffu, t.v1, o);
    u.v2 = __shfl_xor_sync(0xffffffffu, t.v2, o);
    u.i1 = __shfl_xor_sync(0xffffffffu, t.i1, o);
    t = merge(t, u);
  }
  if (threadIdx.x % 32 == 0) warp_best[threadIdx.x / 32] = t;
  __syncthreads();
  if (threadIdx.x == 0) {
    Top2 b = warp_best[0];
    for (int w = 1; w < kArgmaxThreads / 32; ++w) b = merge(b, warp_best[w]);
    ids[blockIdx.x] = b.i1;
    if (margins) margins[blockIdx.x] = b.v1 - b.v2;
  }
}

// One thread an entry. Atomic, so that two entries naming one element both add (the decoder's never
// do: a row's boosted ids are distinct, so each element gets one addition, the CPU's).
__global__ void add_at_kernel(float* __restrict__ x, int cols, const DevMatEntry* __restrict__ entries, int n) {
  pdl_trigger();
  pdl_wait();
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const DevMatEntry e = entries[i];
  atomicAdd(x + static_cast<size_t>(e.row) * cols + e.col, e.value);
}

}  // namespace

// y[r] = the dequantized row ids[r] of a quantized table, one block per row, each element
// bf16(q * scale + bias) rounded once (fma.rn.bf16x2 with the pair's other lane unused), as the
// products' tiles and quant/weight_format.h have it.
__global__ void embed_quantized_kernel(const GemvOut table, int cols, const int32_t* __restrict__ ids,
                                       float* __restrict__ y, int ldy) {
  pdl_trigger();
  pdl_wait();
  const int r = blockIdx.x;
  float* yr = y + static_cast<size_t>(r) * ldy;
  const size_t row = static_cast<size_t>(ids[r]);
  const int groups = qlayout::groups_of(cols, table.group);
  for (int c = threadIdx.x; c < cols; c += blockDim.x) {
    const size_t g = qlayout::scale_index(static_cast<int>(row), c / table.group, groups);
    const __nv_bfloat162 s2 = __bfloat162bfloat162(table.scales[g]), b2 = __bfloat162bfloat162(table.scales[g + 1]);
    const qlayout::Place at = qlayout::value_place(table.format, static_cast<int>(row), c, cols);
    const int q = table.format == kGemvInt4 ? (table.packed[at.byte] >> at.shift) & 0xf
                                            : static_cast<int8_t>(table.packed[at.byte]);
    const __nv_bfloat162 w2 = __hfma2(__floats2bfloat162_rn(static_cast<float>(q), 0.f), s2, b2);
    yr[c] = __low2float(w2);
  }
}

void launch_embed_quantized(const GemvOut& table, int cols, const int32_t* ids, int n_rows, float* y, int ldy,
                            Stream s) {
  if (n_rows <= 0 || cols <= 0) return;
  launch_kernel("embed_quantized", embed_quantized_kernel, dim3(n_rows), dim3(256), 0, s, table, cols, ids, y, ldy);
}

void launch_embed(DevVec table, int cols, const int32_t* ids, int n_rows, float* y, int ldy, Stream s) {
  if (n_rows <= 0 || cols <= 0) return;
  launch_kernel("embed", embed_kernel, dim3(n_rows), dim3(256), 0, s, table, cols, ids, y, ldy);
}

void launch_add_at(float* x, int cols, const DevMatEntry* entries, int n, Stream s) {
  if (n <= 0) return;
  constexpr int kThreads = 256;
  launch_kernel("add_at", add_at_kernel, dim3((n + kThreads - 1) / kThreads), dim3(kThreads), 0, s, x, cols, entries, n);
}

void launch_argmax(const float* x, int rows, int cols, int32_t* ids, float* margins, Stream s) {
  if (rows <= 0 || cols <= 0) return;
  launch_kernel("argmax", argmax_kernel, dim3(rows), dim3(kArgmaxThreads), 0, s, x, cols, ids, margins);
}

}  // namespace voxrt::cuda
