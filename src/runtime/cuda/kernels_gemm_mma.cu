// The product for many rows: x [M, K] (bf16) against bf16 weights, in tiles on the tensor cores,
// computing for every output exactly the bits the GEMV (kernels_gemv_mma.cu) computes for it. The
// GEMV reads all the weights once per 32 rows of x; here a block stages a tile of 128 weight rows
// and 64 or 128 x rows in shared memory and multiplies every pair, so the weights are read once
// per 64-128 rows and each staged byte feeds 16-32 mma instead of 2.
//
// Why the same bits, and how. A row's result must not depend on how many rows share its launch
// (batch invariance, cuda_backend.cpp), so the GEMM takes over from the GEMV at some row count
// without changing a single output. It therefore reproduces the GEMV's arithmetic per output:
//   - K is cut into the same pieces (gemv_mma_pieces: a function of the weight and the SM count);
//   - within a piece, the GEMV's warp w accumulates chunk w (32 elements) of every 256-element unit,
//     in unit order, from zero: eight chains. Here the block runs chain 0 over the piece, then
//     chain 1, ..., each from zero, each chunk multiplied by tc::mma_chunk with the same lane
//     layout (so the same products share each mma), and folds the chains in order:
//     total = ((c0 + c1) + c2) + ... as the GEMV's warp 0 adds its warps' partial sums;
//   - pieces are folded in order, p0 + p1 + ..., as the GEMV's last-arriving block does, and the
//     epilogue is the shared gemv::store_output / silu_times.
// The chunk-strided order costs nothing in shared memory or registers beyond one more set of
// accumulators (the chain being run beside the folded total); the pieces' running sum, needed
// only for long rows, lives in shared memory. The tests compare the two kernels bit for bit.
//
// Few tiles (a product of 1280 features over 130 rows is 20 tiles for 132 SMs): the launch is
// split. Each block computes one piece of K, or one group of a piece's chains, and writes what it
// has to a workspace (a piece's total, or each chain's sum, never a sum that the GEMV's order
// would not form); gemm_fold_kernel then folds them in the GEMV's order and applies the epilogue.
//
// The block: 8 warps, 2 along the features x 4 along the rows; a warp owns 64 features (4 tiles
// of 16) x 8 NT rows (NT tiles of 8). Gated products stage 64 gate rows and the same 64 features'
// up rows, a warp taking 32 features of each, so that silu(gate) * up is formed in registers. A
// stage holds one 32-element chunk of every staged row (64 bytes a row, no padding: the 8 lanes of
// a 16-byte load phase read 2 rows x 64 bytes, all 32 banks once); kStages chunks are in flight.
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
using gemm::Cursor;
using gemm::kWeightRows;
using gemm::Params;
using gemm::slots_of;
using tc::cp_async16;
using tc::cp_async_commit;
using tc::cp_async_wait;

constexpr int kWarps = 8;
constexpr int kThreads = kWarps * 32;
using tc::kChains;   // the GEMV's warps per block: chain w takes chunk w of each unit
using tc::kChunkK8;  // a chunk: 32 elements, 4 vectors of 8
using tc::kUnitK8;   // a unit: 256 elements
using tc::units_of;
constexpr int kStages = 5;
constexpr int kFeatureTiles = 4;  // 16-feature tiles per warp

__host__ __device__ constexpr size_t stage_bytes(int NT) {
  return static_cast<size_t>(kWeightRows + block_rows(NT)) * kChunkK8 * 16;
}
// The pieces' running sum: every lane's accumulators, [warp][accumulator][lane].
__host__ __device__ constexpr size_t piece_sum_bytes(int NT) {
  return static_cast<size_t>(kWarps) * kFeatureTiles * NT * 4 * 32 * 4;
}

// f(i, j, e) for every accumulator element a lane holds: tile i of features, tile j of rows, element e.
template <int NT, typename F>
__device__ __forceinline__ void each_element(F&& f) {
#pragma unroll
  for (int i = 0; i < kFeatureTiles; ++i)
#pragma unroll
    for (int j = 0; j < NT; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) f(i, j, e);
}

template <int NT, bool GATED>
__global__ void __launch_bounds__(kThreads, 1) gemm_mma_kernel(const Params p) {
  pdl_trigger();
  constexpr int BR = block_rows(NT);
  constexpr int kBCopies = BR / 64;  // x rows a thread copies per stage
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const int wf = warp / 4, wr = warp % 4;

  const gemm::BlockJob b = gemm::block_job<GATED>(p, BR);
  const int seg = b.seg, f0 = b.f0, r0 = b.r0, piece = b.piece, chain0 = b.chain0, jobs = b.chunks;
  const GemvOut& o = p.out[seg];
  const int n = o.n, K8 = p.K8, units = p.units, S = p.pieces[seg];

  // This thread's copies, column c of every stage: weight rows row0 and row0 + 64 (gated: the gate
  // and the up row of one feature), x rows row0 + 64 i.
  const int c = threadIdx.x % kChunkK8, row0 = threadIdx.x / kChunkK8;
  const uint4* a_src[2];
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    const int f = f0 + (GATED ? row0 : row0 + 64 * i);
    const void* w = GATED && i == 1 ? p.out[1].w : o.w;
    a_src[i] = f < n ? reinterpret_cast<const uint4*>(w) + static_cast<size_t>(f) * K8 : nullptr;
  }
  const uint4* b_src[kBCopies];
#pragma unroll
  for (int i = 0; i < kBCopies; ++i) {
    const int m = r0 + row0 + 64 * i;
    b_src[i] = m < p.M ? reinterpret_cast<const uint4*>(p.x) + static_cast<size_t>(m) * p.ldx8 : nullptr;
  }

  extern __shared__ uint4 smem[];
  constexpr int kStageVecs = static_cast<int>(stage_bytes(NT) / 16);
  auto weight_at = [&](int s, int row) { return smem + s * kStageVecs + row * kChunkK8; };
  auto x_at = [&](int s, int row) { return smem + s * kStageVecs + (kWeightRows + row) * kChunkK8; };
  const void* any = o.w;  // a valid address for the copies that read nothing
  auto load = [&](const Cursor& at, int s) {
    const int k = at.u * kUnitK8 + at.j * kChunkK8 + c;
    const bool in_k = k < K8;
#pragma unroll
    for (int i = 0; i < 2; ++i)
      cp_async16(weight_at(s, row0 + 64 * i) + c, in_k && a_src[i] ? a_src[i] + k : any, in_k && a_src[i]);
#pragma unroll
    for (int i = 0; i < kBCopies; ++i)
      cp_async16(x_at(s, row0 + 64 * i) + c, in_k && b_src[i] ? b_src[i] + k : any, in_k && b_src[i]);
  };
  // The staged weight row of this warp's tile i (its rows g and g + 8 follow). Gated: tiles 2h and
  // 2h + 1 are the gate and the up rows of features wf * 32 + 16 h.
  auto tile_row = [&](int i) { return GATED ? (i % 2) * 64 + wf * 32 + (i / 2) * 16 : wf * 64 + i * 16; };
  // Fragment element e of tile (i, j): feature row g (+ 8 for e >= 2) of tile i, x row 2t (+ 1 for odd e) of tile j.
  auto feature_of = [&](int i, int e) {
    return f0 + (GATED ? wf * 32 + (i / 2) * 16 : wf * 64 + i * 16) + g + (e >= 2 ? 8 : 0);
  };
  auto row_of = [&](int j, int e) { return r0 + wr * 8 * NT + 8 * j + 2 * t + (e & 1); };
  // Split: this thread's accumulators to slot `slot` of piece `piece` in the workspace.
  auto store_slot = [&](const float (&v)[kFeatureTiles][NT][4], int slot) {
    const int width = GATED ? 2 * n : n;
    float* w = p.workspace + p.workspace_at[seg] + (static_cast<size_t>(piece) * slots_of(p.groups) + slot) * p.M * width;
    each_element<NT>([&](int i, int j, int e) {
      const int f = feature_of(i, e), m = row_of(j, e);
      if (f < n && m < p.M) w[static_cast<size_t>(m) * width + f + (GATED && i % 2 ? n : 0)] = v[i][j][e];
    });
  };

  float acc[kFeatureTiles][NT][4], total[kFeatureTiles][NT][4];
  each_element<NT>([&](int i, int j, int e) { acc[i][j][e] = total[i][j][e] = 0; });

  pdl_wait();  // x (and y, for accumulating outputs) come from the previous kernel
  Cursor loading(units, S, piece, chain0), running(units, S, piece, chain0);
#pragma unroll
  for (int s = 0; s < kStages - 1; ++s) {
    if (s < jobs) {
      load(loading, s);
      loading.next(units, S);
    }
    cp_async_commit();
  }
  float* piece_sum = reinterpret_cast<float*>(smem + kStages * kStageVecs) + warp * (kFeatureTiles * NT * 4 * 32) + lane;
  for (int job = 0; job < jobs; ++job) {
    cp_async_wait<kStages - 2>();  // this job's chunk has landed (for this thread's copies) ...
    __syncthreads();               // ... and for everyone's; the stage read last job is free again
    if (job + kStages - 1 < jobs) {
      load(loading, (job + kStages - 1) % kStages);
      loading.next(units, S);
    }
    cp_async_commit();
    const int s = job % kStages;
    uint4 wa[kFeatureTiles], wb[kFeatureTiles], xv[NT];
#pragma unroll
    for (int i = 0; i < kFeatureTiles; ++i) {
      wa[i] = weight_at(s, tile_row(i) + g)[t];
      wb[i] = weight_at(s, tile_row(i) + g + 8)[t];
    }
#pragma unroll
    for (int j = 0; j < NT; ++j) xv[j] = x_at(s, wr * 8 * NT + 8 * j + g)[t];
    // The chunk's first half on every accumulator, then its second: each accumulator still sees
    // the two halves in the GEMV's order.
#pragma unroll
    for (int i = 0; i < kFeatureTiles; ++i)
#pragma unroll
      for (int j = 0; j < NT; ++j) tc::mma_chunk_half<0>(acc[i][j], wa[i], wb[i], xv[j]);
#pragma unroll
    for (int i = 0; i < kFeatureTiles; ++i)
#pragma unroll
      for (int j = 0; j < NT; ++j) tc::mma_chunk_half<1>(acc[i][j], wa[i], wb[i], xv[j]);

    if (running.chain_ends()) {
      const bool first_chain = running.j == 0, piece_ends = running.j == kChains - 1;
      if (p.split && p.groups > 1) {
        store_slot(acc, running.j);  // folded by gemm_fold_kernel
      } else {
        // Fold the chain into the piece's total, in chain order (the GEMV's warp order).
        each_element<NT>([&](int i, int j, int e) {
          total[i][j][e] = first_chain ? acc[i][j][e] : total[i][j][e] + acc[i][j][e];
        });
      }
      each_element<NT>([&](int i, int j, int e) { acc[i][j][e] = 0; });
      if (piece_ends && p.split && p.groups == 1) store_slot(total, 0);
      if (piece_ends && !p.split && S > 1) {
        // Fold the piece into the pieces' running sum, in piece order; the last one's sum is the result.
        const bool first_piece = running.q == 0, last_piece = running.q == S - 1;
        each_element<NT>([&](int i, int j, int e) {
          float& sum = piece_sum[((i * NT + j) * 4 + e) * 32];
          sum = first_piece ? total[i][j][e] : sum + total[i][j][e];
          if (last_piece) total[i][j][e] = sum;
        });
      }
    }
    running.next(units, S);
  }
  cp_async_wait<0>();
  if (p.split) return;

  each_element<NT>([&](int i, int j, int e) {
    const int f = feature_of(i, e), m = row_of(j, e);
    if (f >= n || m >= p.M || (GATED && i % 2)) return;  // gated: tile i + 1 is tile i's up
    if constexpr (GATED)
      o.y[static_cast<size_t>(m) * o.ldy + f] = gemv::silu_times(total[i][j][e], total[i + 1][j][e]);
    else
      gemv::store_output(o, m, f, total[i][j][e]);
  });
}

// The split products' last step: per output element, the workspace's slots folded in chain order
// within each piece and the pieces in piece order (the GEMV's order), then the epilogue.
template <bool GATED>
__global__ void gemm_fold_kernel(const Params p) {
  pdl_trigger();
  pdl_wait();
  const int slots = slots_of(p.groups);
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
    const size_t slot_stride = static_cast<size_t>(p.M) * width;
    float sum[2] = {0, 0};
    for (int v = 0; v < (GATED ? 2 : 1); ++v) {
      for (int q = 0; q < S; ++q) {
        const float* at = w + static_cast<size_t>(q) * slots * slot_stride + v * o.n;
        float piece = at[0];
        for (int j = 1; j < slots; ++j) piece = piece + at[j * slot_stride];
        sum[v] = q == 0 ? piece : sum[v] + piece;
      }
    }
    if constexpr (GATED) o.y[static_cast<size_t>(m) * o.ldy + f] = gemv::silu_times(sum[0], sum[1]);
    else gemv::store_output(o, m, f, sum[0]);
    return;
  }
}

template <int NT, bool GATED>
void launch_instance(const Params& p, Stream s) {
  const size_t smem = kStages * stage_bytes(NT) + (gemm::folds_pieces(p) ? piece_sum_bytes(NT) : 0);
  const auto kernel = gemm_mma_kernel<NT, GATED>;
  allow_dynamic_smem(reinterpret_cast<const void*>(kernel), kStages * stage_bytes(NT) + piece_sum_bytes(NT),
                     "gemm_mma shared memory");
  launch_kernel("gemm_mma", kernel, dim3(static_cast<unsigned>(p.block_end[p.n_outs - 1])), dim3(kThreads), smem, s,
                p);
}

// A split launch's second kernel, whichever kernel computed the workspace.
void launch_fold(const Params& p, bool gated, Stream s) {
  long long outputs = 0;
  for (int i = 0; i < p.n_outs; ++i) outputs += static_cast<long long>(p.M) * p.out[i].n;
  const dim3 grid(static_cast<unsigned>((outputs + 255) / 256));
  if (gated) launch_kernel("gemm_fold", gemm_fold_kernel<true>, grid, dim3(256), 0, s, p);
  else launch_kernel("gemm_fold", gemm_fold_kernel<false>, grid, dim3(256), 0, s, p);
}

template <int NT>
void launch_nt(const Params& p, bool gated, Stream s) {
  if (gated) launch_instance<NT, true>(p, s);
  else launch_instance<NT, false>(p, s);
}

// The launch's shape: rows per block, and whether (and how far) to split.
Params plan(int M, int K, const GemvOut* outs, int n_outs, bool gated, const GemvTuning& t, int& nt) {
  check(K > 0 && K % 8 == 0 && M > 0 && n_outs >= 1 && n_outs <= kGemvMaxOutputs && (!gated || n_outs == 2),
        "cuda gemm", "unsupported shape");
  Params p{};
  p.M = M;
  p.K8 = K / 8;
  p.units = units_of(p.K8);
  p.n_outs = gated ? 1 : n_outs;  // gated: one output range, the up weight rides along in out[1]
  for (int i = 0; i < n_outs; ++i) p.out[i] = outs[i];
  int feature_tiles = 0, pieces = 1;
  for (int i = 0; i < p.n_outs; ++i) {
    feature_tiles += (outs[i].n + block_features(gated) - 1) / block_features(gated);
    p.pieces[i] = gemv_mma_pieces(outs[i].n, K, t);
    pieces = std::max(pieces, p.pieces[i]);
  }
  // 128 rows a block when that still gives every SM a block, else 64 (twice the blocks); fewer
  // tiles than SMs: split the pieces, then the chains, until every SM has a block.
  auto tiles = [&](int nt_) { return static_cast<long long>(feature_tiles) * ((M + block_rows(nt_) - 1) / block_rows(nt_)); };
  nt = tiles(4) >= t.sm_count ? 4 : 2;
  p.row_tiles = (M + block_rows(nt) - 1) / block_rows(nt);
  p.split = tiles(nt) < t.sm_count;
  p.groups = 1;
  while (p.split && p.groups < kChains && tiles(nt) * pieces * p.groups < t.sm_count) p.groups *= 2;
  int blocks = 0;
  size_t workspace = 0;
  for (int i = 0; i < p.n_outs; ++i) {
    const int per_tile = p.split ? p.pieces[i] * p.groups : 1;
    blocks += (outs[i].n + block_features(gated) - 1) / block_features(gated) * p.row_tiles * per_tile;
    p.block_end[i] = blocks;
    p.workspace_at[i] = workspace;
    if (p.split)
      workspace += static_cast<size_t>(p.pieces[i]) * slots_of(p.groups) * M * outs[i].n * (gated ? 2 : 1);
  }
  return p;
}

}  // namespace

size_t gemm_workspace_floats(int M, int K, const GemvOut* outs, int n_outs, bool gated, const GemvTuning& t) {
  int nt = 0;
  const Params p = plan(M, K, outs, n_outs, gated, t, nt);
  if (!p.split) return 0;
  size_t total = 0;
  for (int i = 0; i < p.n_outs; ++i)
    total += static_cast<size_t>(p.pieces[i]) * slots_of(p.groups) * M * outs[i].n * (gated ? 2 : 1);
  return total;
}

void launch_gemm(const __nv_bfloat16* x, size_t ldx, int M, int K, const GemvOut* outs, int n_outs, bool gated,
                 float* workspace, size_t workspace_floats, const GemvTuning& t, Stream s) {
  check(t.tensor_cores, "cuda gemm", "the tiled GEMM reproduces the tensor-core GEMV only");
  check((reinterpret_cast<uintptr_t>(x) & 15) == 0 && ldx % 8 == 0, "cuda gemm", "x must be 16-byte aligned per row");
  for (int i = 0; i < n_outs; ++i)
    check((reinterpret_cast<uintptr_t>(outs[i].w) & 15) == 0, "cuda gemm", "weights must be 16-byte aligned");
  int nt = 0;
  Params p = plan(M, K, outs, n_outs, gated, t, nt);
  if (p.block_end[p.n_outs - 1] == 0) return;
  check(!p.split || workspace_floats >= gemm_workspace_floats(M, K, outs, n_outs, gated, t), "cuda gemm",
        "split workspace too small");
  p.x = x;
  p.ldx8 = static_cast<long long>(ldx / 8);
  p.workspace = workspace;
  if (t.wgmma_gemm) gemm::launch_gemm_wgmma(p, nt, gated, s);  // same plan, same bits (kernels_gemm_wgmma.cu)
  else if (nt == 4) launch_nt<4>(p, gated, s);
  else launch_nt<2>(p, gated, s);
  if (p.split) launch_fold(p, gated, s);
}

}  // namespace voxrt::cuda
