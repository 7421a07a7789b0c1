// What the two tiled GEMM kernels share (kernels_gemm_mma.cu on mma.sync, kernels_gemm_wgmma.cu on
// wgmma): the launch's plan (tiles, pieces of K, the split through a workspace;
// kernels_gemm_launch.cu) and the walk of a block through its chunks in the products' order
// (tensor_core.cuh). Both kernels take the same Params, give a block the same tile, write the same
// workspace and leave it to the same gemm_fold_kernel, so that switching between them changes
// nothing but the speed.
#pragma once

#include <cuda_bf16.h>

#include <cstddef>

#include "runtime/cuda/cuda_kernels.h"
#include "runtime/cuda/tensor_core.cuh"

namespace voxrt::cuda::gemm {

constexpr int kWeightRows = 128;  // weight rows a block stages: 128 features, or 64 gated (gate and up)

// x rows a block takes: 64 or 128 (NT tiles of 8 rows for each of the mma kernel's 4 row warps).
__host__ __device__ constexpr int block_rows(int NT) { return 4 * 8 * NT; }
__host__ __device__ constexpr int block_features(bool gated) { return gated ? kWeightRows / 2 : kWeightRows; }

struct Params {
  const __nv_bfloat16* x;  // bf16, row-major [M, K], row stride ldx8 vectors of 8
  long long ldx8;
  int M, K8, chunks;  // chunks: tc::chunks_of(K8), 64 elements each
  GemvOut out[kGemvMaxOutputs];
  int n_outs;
  int block_end[kGemvMaxOutputs];  // blocks up to the end of output i
  int pieces[kGemvMaxOutputs];     // pieces of K of output i, as the GEMV cuts them
  int row_tiles;
  // Split: each block computes one piece of one tile and writes its chain to the workspace,
  // [output][piece][row][feature] (features: n, then the n up features when gated);
  // gemm_fold_kernel then adds the pieces in order and applies the epilogue. Otherwise a block
  // runs all of its tile's pieces and adds them itself.
  bool split;
  float* workspace;
  size_t workspace_at[kGemvMaxOutputs];
};

// The block's place in the launch: its output, tile of features (f0) and rows (r0), its pieces
// (first and one past the last: all of them unless split) and the chunks they span.
struct BlockJob {
  int seg, f0, r0, piece0, piece1, chunk0, chunk1;
};
template <bool GATED>
__device__ __forceinline__ BlockJob block_job(const Params& p, int rows_per_block) {
  BlockJob b{};
  while (b.seg + 1 < p.n_outs && static_cast<int>(blockIdx.x) >= p.block_end[b.seg]) ++b.seg;
  const int S = p.pieces[b.seg];
  int rest = blockIdx.x - (b.seg ? p.block_end[b.seg - 1] : 0);
  b.piece0 = 0;
  b.piece1 = S;
  if (p.split) {
    b.piece0 = rest % S;
    b.piece1 = b.piece0 + 1;
    rest /= S;
  }
  b.f0 = (rest / p.row_tiles) * block_features(GATED);
  b.r0 = (rest % p.row_tiles) * rows_per_block;
  b.chunk0 = tc::piece_begin(b.piece0, p.chunks, S);
  b.chunk1 = tc::piece_begin(b.piece1, p.chunks, S);
  return b;
}

// Where a block is in its chunks: chunk c of piece q, which ends before chunk `end`. Pieces are
// never empty (gemv_mma_pieces gives at most one piece a chunk).
struct Cursor {
  int q, c, end;
  __device__ Cursor(const Params& p, const BlockJob& b, int S)
      : q(b.piece0), c(b.chunk0), end(tc::piece_begin(b.piece0 + 1, p.chunks, S)) {}
  __device__ void next(const Params& p, int S) {
    if (++c < end) return;
    ++q;
    end = tc::piece_begin(q + 1, p.chunks, S);
  }
  __device__ bool piece_ends() const { return c + 1 == end; }
};

// The main kernel of a planned launch (block_rows(nt) rows a block); kernels_gemm_launch.cu
// launches gemm_fold_kernel after it when p.split. kernels_gemm_wgmma.cu, on wgmma (sm_90a; bf16 and
// quantized weights), and the shared memory its blocks take:
void launch_gemm_wgmma(const Params& p, int nt, bool gated, Stream s);
size_t wgmma_smem_bytes(int nt, int format = kGemvBf16);
// kernels_gemm_mma.cu, on mma.sync (any tensor-core GPU; bf16 and quantized weights), and the
// shared memory its blocks of block_rows(nt) rows take for weights of that format:
void launch_gemm_mma(const Params& p, int nt, bool gated, Stream s);
size_t mma_smem_bytes(int nt, int format = kGemvBf16);

}  // namespace voxrt::cuda::gemm
