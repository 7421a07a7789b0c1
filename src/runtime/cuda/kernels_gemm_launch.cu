// The tiled GEMM's launch, whichever kernel multiplies (kernels_gemm_wgmma.cu on Hopper,
// kernels_gemm_mma.cu elsewhere): its plan (rows a block, whether to split K across blocks), and
// the fold that ends a split launch. Both kernels take the same plan and leave the same workspace,
// and both follow the products' order (tensor_core.cuh), so that switching between them, or from
// the GEMV to either, changes nothing but the speed.
//
// Few tiles (a product of 1280 features over 130 rows is 20 tiles for 132 SMs): the launch is
// split by piece of K. Each block computes one piece's chain of one tile and writes it to the
// workspace; gemm_fold_kernel then adds the pieces in order and applies the epilogue, as the
// GEMV's last-arriving block does.
#include <cuda_bf16.h>

#include <algorithm>
#include <cstdint>

#include "runtime/cuda/cuda_check.h"
#include "runtime/cuda/cuda_kernels.h"
#include "runtime/cuda/gemm_tiles.cuh"
#include "runtime/cuda/gemv_common.cuh"
#include "runtime/cuda/launch.cuh"
#include "runtime/cuda/tensor_core.cuh"

namespace voxrt::cuda {
namespace {

using gemm::block_features;
using gemm::block_rows;
using gemm::Params;

// The split products' last step: per output element, the workspace's pieces added in piece order,
// then the epilogue.
template <bool GATED>
__global__ void gemm_fold_kernel(const Params p) {
  pdl_trigger();
  pdl_wait();
  long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
  for (int seg = 0; seg < p.n_outs; ++seg) {
    const GemvOut& o = p.out[seg];
    const long long outputs = static_cast<long long>(p.M) * o.n;
    if (i >= outputs) {
      i -= outputs;
      continue;
    }
    const int m = static_cast<int>(i / o.n), f = static_cast<int>(i % o.n), S = p.pieces[seg];
    const int width = GATED ? 2 * o.n : o.n;
    const float* w = p.workspace + p.workspace_at[seg] + static_cast<size_t>(m) * width + f;
    const size_t piece_stride = static_cast<size_t>(p.M) * width;
    // Eight pieces' loads issued before their adds: an L2 round trip per eight pieces, not per piece.
    constexpr int kV = GATED ? 2 : 1, kFoldPieces = 8;
    float sum[kV] = {};
    for (int q0 = 0; q0 < S; q0 += kFoldPieces) {
      float piece[kFoldPieces][kV];
#pragma unroll
      for (int i = 0; i < kFoldPieces; ++i)
#pragma unroll
        for (int v = 0; v < kV; ++v) piece[i][v] = q0 + i < S ? __ldcg(w + (q0 + i) * piece_stride + v * o.n) : 0.f;
#pragma unroll
      for (int i = 0; i < kFoldPieces; ++i)
#pragma unroll
        for (int v = 0; v < kV; ++v)
          if (q0 + i < S) sum[v] = q0 + i == 0 ? piece[i][v] : sum[v] + piece[i][v];
    }
    if constexpr (GATED) o.y[static_cast<size_t>(m) * o.ldy + f] = gemv::gated_output(o, p.out[1], m, f, sum[0], sum[1]);
    else gemv::store_output(o, m, f, sum[0]);
    return;
  }
}

void launch_fold(const Params& p, bool gated, Stream s) {
  long long outputs = 0;
  for (int i = 0; i < p.n_outs; ++i) outputs += static_cast<long long>(p.M) * p.out[i].n;
  const dim3 grid(static_cast<unsigned>((outputs + 255) / 256));
  if (gated) launch_kernel("gemm_fold", gemm_fold_kernel<true>, grid, dim3(256), 0, s, p);
  else launch_kernel("gemm_fold", gemm_fold_kernel<false>, grid, dim3(256), 0, s, p);
}

// Whether the wgmma kernel multiplies: on Hopper, for every format (4w and 8w dequantized in
// registers into its A operand; fp8 for every row count: ProductDispatch::tiled).
bool wgmma(const GemvTuning& t) { return t.wgmma_gemm; }

// The launch's shape: rows per block (nt: block_rows(nt)), whether to split by piece, and the
// split's workspace (workspace_floats; 0 unsplit).
Params plan(int M, int K, const GemvOut* outs, int n_outs, bool gated, const GemvTuning& t, int& nt,
            size_t& workspace_floats) {
  check(K > 0 && K % 8 == 0 && M > 0 && n_outs >= 1 && n_outs <= kGemvMaxOutputs && (!gated || n_outs == 2),
        "cuda gemm", "unsupported shape");
  Params p{};
  p.M = M;
  p.K8 = K / 8;
  p.chunks = tc::chunks_of(p.K8);
  p.n_outs = gated ? 1 : n_outs;  // gated: one output range, the up weight rides along in out[1]
  for (int i = 0; i < n_outs; ++i) p.out[i] = outs[i];
  int feature_tiles = 0, pieces = 1;
  for (int i = 0; i < p.n_outs; ++i) {
    feature_tiles += (outs[i].n + block_features(gated) - 1) / block_features(gated);
    p.pieces[i] = gemv_mma_pieces(outs[i].n, K, t, outs[i].format);
    check(p.pieces[i] >= 1 && p.pieces[i] <= p.chunks, "cuda gemm", "a piece of K without a chunk");
    pieces = std::max(pieces, p.pieces[i]);
  }
  // 128 rows a block when that still gives every SM a block, else 64 (twice the blocks), except at
  // 65 to 128 rows, which take one 128-row tile where two 64-row tiles would be too many to split K
  // while one splits, or would need a second wave: two tiles read every weight twice (decoder wo and
  // w2 at 76 rows 25.8 -> 20.0 and 59.7 -> 33.7 us, bench/results/2026-12-04-gemm-one-row-tile.txt),
  // but where neither splits and both fit in one wave the 64-row tiles' twice as many blocks share
  // the weight reads in L2 and are faster (q/k/v, 48 feature tiles: 96 blocks).
  // Fewer tiles than GemvTuning::gemm_split_percent of the SMs: a block a piece, when there are
  // pieces. (35 %: with fewer tiles the split's shorter chains pay for its fold through the
  // workspace; with more, the fold costs more than the SMs left idle. Measured per product at 64 to
  // 1024 rows: bench/results/2026-12-03-gemv-ring-gemm-split.txt.)
  auto row_tiles = [&](int nt_) { return (M + block_rows(nt_) - 1) / block_rows(nt_); };
  auto tiles = [&](int nt_) { return static_cast<long long>(feature_tiles) * row_tiles(nt_); };
  auto splits = [&](long long tiles_) {
    return tiles_ * 100 < static_cast<long long>(t.gemm_split_percent) * t.sm_count && pieces > 1;
  };
  const bool one_row_tile =
      M > block_rows(2) && M <= block_rows(4) && (splits(tiles(4)) || tiles(2) > t.sm_count);
  // The mma.sync kernel's 128-row blocks stage 128 KiB, more than a block may have on Ampere's 8.6
  // and Ada (99 KiB): there, 64 rows a block.
  const bool fits4 = wgmma(t) || gemm::mma_smem_bytes(4, outs[0].format) <= static_cast<size_t>(t.smem_per_block);
  nt = fits4 && (tiles(4) >= t.sm_count || one_row_tile) ? 4 : 2;
  p.row_tiles = row_tiles(nt);
  p.split = splits(tiles(nt));
  int blocks = 0;
  size_t workspace = 0;
  for (int i = 0; i < p.n_outs; ++i) {
    const int per_tile = p.split ? p.pieces[i] : 1;
    blocks += (outs[i].n + block_features(gated) - 1) / block_features(gated) * p.row_tiles * per_tile;
    p.block_end[i] = blocks;
    p.workspace_at[i] = workspace;
    if (p.split) workspace += static_cast<size_t>(p.pieces[i]) * M * outs[i].n * (gated ? 2 : 1);
  }
  workspace_floats = workspace;
  return p;
}

}  // namespace

size_t gemm_workspace_floats(int M, int K, const GemvOut* outs, int n_outs, bool gated, const GemvTuning& t) {
  int nt = 0;
  size_t floats = 0;
  plan(M, K, outs, n_outs, gated, t, nt, floats);
  return floats;
}

size_t gemm_block_smem_bytes(int M, int K, const GemvOut* outs, int n_outs, bool gated, const GemvTuning& t) {
  int nt = 0;
  size_t floats = 0;
  plan(M, K, outs, n_outs, gated, t, nt, floats);
  return wgmma(t) ? gemm::wgmma_smem_bytes(nt, outs[0].format) : gemm::mma_smem_bytes(nt, outs[0].format);
}

void launch_gemm(const __nv_bfloat16* x, size_t ldx, int M, int K, const GemvOut* outs, int n_outs, bool gated,
                 float* workspace, size_t workspace_floats, const GemvTuning& t, Stream s) {
  check(t.tensor_cores, "cuda gemm", "the tiled GEMM reproduces the tensor-core GEMV only");
  check((reinterpret_cast<uintptr_t>(x) & 15) == 0 && ldx % 8 == 0, "cuda gemm", "x must be 16-byte aligned per row");
  for (int i = 0; i < n_outs; ++i)
    check((reinterpret_cast<uintptr_t>(outs[i].data()) & 15) == 0 && outs[i].format == outs[0].format, "cuda gemm",
          "weights must be 16-byte aligned and of one format");
  int nt = 0;
  size_t need = 0;
  Params p = plan(M, K, outs, n_outs, gated, t, nt, need);
  for (int i = 0; i < n_outs; ++i)
    if (packed_format(p.out[i].format)) p.out[i].group_div = qlayout::divider(p.out[i].group);
  if (p.block_end[p.n_outs - 1] == 0) return;
  check(workspace_floats >= need, "cuda gemm", "split workspace too small");
  p.x = x;
  p.ldx8 = static_cast<long long>(ldx / 8);
  p.workspace = workspace;
  if (wgmma(t)) gemm::launch_gemm_wgmma(p, nt, gated, s);
  else gemm::launch_gemm_mma(p, nt, gated, s);
  if (p.split) launch_fold(p, gated, s);
}

}  // namespace voxrt::cuda
