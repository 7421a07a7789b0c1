// What the two tiled GEMM kernels share (kernels_gemm_mma.cu on mma.sync, kernels_gemm_wgmma.cu on
// wgmma): the launch's plan (tiles, pieces of K, the split through a workspace) and the walk of a
// block through its chunks in the GEMV's order. Both kernels take the same Params, give a block the
// same tile, write the same workspace and leave it to the same gemm_fold_kernel, so that switching
// between them changes nothing but the speed.
#pragma once

#include <cuda_bf16.h>

#include <cstddef>

#include "runtime/cuda/cuda_kernels.h"
#include "runtime/cuda/tensor_core.cuh"

namespace voxrt::cuda::gemm {

using tc::kChains;

constexpr int kWeightRows = 128;  // weight rows a block stages: 128 features, or 64 gated (gate and up)

// x rows a block takes: 64 or 128 (NT tiles of 8 rows for each of the mma kernel's 4 row warps).
__host__ __device__ constexpr int block_rows(int NT) { return 4 * 8 * NT; }
__host__ __device__ constexpr int block_features(bool gated) { return gated ? kWeightRows / 2 : kWeightRows; }

struct Params {
  const __nv_bfloat16* x;
  long long ldx8;  // row stride of x in 8-element vectors
  int M, K8, units;
  GemvOut out[kGemvMaxOutputs];
  int n_outs;
  int block_end[kGemvMaxOutputs];  // blocks up to the end of output i
  int pieces[kGemvMaxOutputs];     // pieces of K of output i, as the GEMV cuts them
  int row_tiles;
  // Split: each block computes one piece, or one group of a piece's chains (groups > 1), and
  // writes it to the workspace, [output][piece][slot][row][feature] (slots: 1, or one per chain
  // when groups > 1; features: n, then n up features when gated); gemm_fold_kernel then folds
  // the slots and pieces in order and applies the epilogue. Otherwise a block folds all of its
  // tile's chains and pieces itself.
  bool split;
  int groups;
  float* workspace;
  size_t workspace_at[kGemvMaxOutputs];
};

__host__ __device__ constexpr int slots_of(int groups) { return groups > 1 ? kChains : 1; }

// Where the block is in its sequence of chunks: piece q (units u0 .. u1), chain j, unit u.
struct Cursor {
  int q, j, u, u0, u1;
  __device__ Cursor(int units, int S, int q_, int j_) : q(q_), j(j_), u0(q_ * units / S), u1((q_ + 1) * units / S) { u = u0; }
  __device__ void next(int units, int S) {
    if (++u < u1) return;
    u = u0;
    if (++j < kChains) return;
    j = 0;
    ++q;
    u0 = u1;
    u1 = (q + 1) * units / S;
    u = u0;
  }
  __device__ bool chain_ends() const { return u + 1 == u1; }
};

// The block's place in the launch: its output, tile of features (f0) and rows (r0), and (split)
// its piece of K and group of chains; chunks: how many 32-element chunks it multiplies.
struct BlockJob {
  int seg, f0, r0, piece, chain0, chunks;
};
template <bool GATED>
__device__ __forceinline__ BlockJob block_job(const Params& p, int rows_per_block) {
  BlockJob b{};
  while (b.seg + 1 < p.n_outs && static_cast<int>(blockIdx.x) >= p.block_end[b.seg]) ++b.seg;
  const int S = p.pieces[b.seg], units = p.units;
  int rest = blockIdx.x - (b.seg ? p.block_end[b.seg - 1] : 0);
  int group = 0;
  if (p.split) {
    group = rest % p.groups;
    rest /= p.groups;
    b.piece = rest % S;
    rest /= S;
  }
  b.f0 = (rest / p.row_tiles) * block_features(GATED);
  b.r0 = (rest % p.row_tiles) * rows_per_block;
  b.chain0 = group * kChains / p.groups;
  const int chain1 = (group + 1) * kChains / p.groups;
  b.chunks = p.split ? (chain1 - b.chain0) * ((b.piece + 1) * units / S - b.piece * units / S) : kChains * units;
  return b;
}

// Whether an unsplit launch folds pieces of K (then a block keeps their running sum in shared memory).
inline bool folds_pieces(const Params& p) {
  if (p.split) return false;
  for (int i = 0; i < p.n_outs; ++i)
    if (p.pieces[i] > 1) return true;
  return false;
}

// kernels_gemm_wgmma.cu: the main kernel of a planned launch (block_rows(nt) rows a block), on
// wgmma; the caller launches gemm_fold_kernel after it when p.split.
void launch_gemm_wgmma(const Params& p, int nt, bool gated, Stream s);

}  // namespace voxrt::cuda::gemm
