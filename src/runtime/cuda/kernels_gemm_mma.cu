// The product for many rows on mma.sync: x [M, K] (bf16) against bf16 weights, in tiles on the
// tensor cores, computing for every output exactly the bits the GEMV (kernels_gemv_mma.cu) and the
// wgmma GEMM (kernels_gemm_wgmma.cu) compute for it. The GEMV reads all the weights once per 32
// rows of x; here a block stages a tile of 128 weight rows and 64 or 128 x rows in shared memory
// and multiplies every pair, so the weights are read once per 64-128 rows, and each 16 x 16 weight
// fragment staged feeds 8 or 16 mma (one per 8 x rows), each x fragment 8. It is the GEMM wherever
// the wgmma one is not used (kernels_gemm_launch.cu picks).
//
// Why the same bits, and how. A row's result must not depend on how many rows share its launch
// (batch invariance, cuda_backend.cpp), so every product kernel follows the products' order of
// summation (tensor_core.cuh). What decides an output's bits is which 16 products share an
// instruction and in which order the instructions reach its accumulator, not which lanes hold
// the operands nor how many other outputs an instruction computes. Here:
//   - a block walks its chunks (64 elements of K, zeros past K) in order, and each chunk's four k16
//     groups in order, one mma16816 each on every accumulator, A the weight rows and B the x rows
//     (as the GEMV's: accumulator e of lane (g, t) is feature g (+ 8 for e >= 2), row 2t (+ 1 for
//     odd e)); each accumulator is one piece's chain, started from zero;
//   - at a piece's end (Cursor::piece_ends) the chain is added to the total in piece order, the
//     first piece's chain being the total, and the next chain starts from zero again;
//   - the epilogue is the shared gemv::store_output / silu_times.
// The tests compare this kernel, the GEMV and the wgmma GEMM bit for bit.
//
// Few tiles (a product of 1280 features over 130 rows is 20 tiles for 132 SMs): the launch is
// split (kernels_gemm_launch.cu's plan). A block then runs one piece of one tile and writes its
// chain, never a sum the products' order would not form, to the workspace; gemm_fold_kernel adds
// the pieces in order and applies the epilogue.
//
// The block: 8 warps, 2 along the features x 4 along the rows; a warp owns 64 features (4 tiles
// of 16) x 8 NT rows (NT tiles of 8), holding each accumulator twice: the running chain and the
// pieces' total. Gated products stage 64 gate rows and the same 64 features' up rows, a warp taking
// 32 features of each (its tiles alternate gate, up), so that silu(gate) * up is formed in the
// registers that hold both. A stage holds one chunk of every staged row, 128 bytes a row, filled by
// cp.async (zeros past K, past the last feature and past the last row) and read by ldmatrix: the
// 16-byte vector v of row r sits at v ^ (r % 8), so the 8 rows of an ldmatrix phase, and the 8
// copies that fill one row, fall in different banks. kStages - 1 chunks are in flight while one is
// multiplied; the first ones' weights are requested before waiting for the previous kernel
// (launch.cuh).
//
// fp8 weights are staged and read as bf16 ones (quant_layout.h: the same bytes), each group's mma an
// e4m3 one (tc::mma_group).
//
// Quantized weights (4w, 8w; quant_layout.h). The stage holds, in place of the 128 bf16 rows, the
// packed values of the block's 8 feature tiles for the chunk (each lane's fragments in one piece)
// and their scale blocks, copied as they are stored; a warp dequantizes its 4 tiles' fragments
// into registers (quant_fragments.cuh), exactly the A fragments the GEMV makes of them, and runs
// the same mma on them. A quarter (4w) to a half (8w) of the bytes a stage, at the price of each
// of the 4 row warps dequantizing the same fragments.
#include <cuda_bf16.h>

#include <cstdint>

#include "runtime/cuda/cuda_check.h"
#include "runtime/cuda/cuda_kernels.h"
#include "runtime/cuda/gemm_tiles.cuh"
#include "runtime/cuda/gemv_common.cuh"
#include "runtime/cuda/launch.cuh"
#include "runtime/cuda/quant_fragments.cuh"
#include "runtime/cuda/tensor_core.cuh"

namespace voxrt::cuda::gemm {
namespace {

using tc::cp_async16;
using tc::cp_async_commit;
using tc::cp_async_wait;
using tc::kChunkK8;  // a chunk: 64 elements, 8 vectors of 8 (128 bytes a staged row)
using tc::kGroupsPerChunk;
using tc::ldmatrix_x4;
using tc::mma16816;

constexpr int kWarps = 8;
constexpr int kThreads = kWarps * 32;
constexpr int kStages = 4;
constexpr int kFeatureTiles = 4;  // 16-feature tiles a warp
constexpr int kRowBytes = kChunkK8 * 16;
constexpr int kCopyRows = kThreads / kChunkK8;  // rows one pass of the block's copies fills: 32

constexpr int kSlots = kWeightRows / 16;  // 16-feature tiles a block stages (gated: 4 gate, then 4 up)
// A quantized tile's part of a stage: the 32 lanes' packed vectors of the chunk, then the scale
// blocks of the chunk's two halves (4 vectors each; the same group's twice when they share one).
constexpr int kScaleVecs = 8;
__host__ __device__ constexpr int lane_vecs(int fmt) { return qlayout::lane_bytes(fmt) / 16; }
__host__ __device__ constexpr int slot_vecs(int fmt) { return 32 * lane_vecs(fmt) + kScaleVecs; }
__host__ __device__ constexpr int weight_stage_bytes(int fmt) {
  return packed_format(fmt) ? kSlots * slot_vecs(fmt) * 16 : kWeightRows * kRowBytes;
}
__host__ __device__ constexpr int stage_bytes(int NT, int fmt) { return weight_stage_bytes(fmt) + block_rows(NT) * kRowBytes; }
__host__ __device__ constexpr size_t smem_bytes(int NT, int fmt) {
  return static_cast<size_t>(kStages) * stage_bytes(NT, fmt);
}
static_assert(kWeightRows % kCopyRows == 0 && block_rows(2) % kCopyRows == 0, "whole copy passes");
static_assert(kSlots * kScaleVecs <= kThreads, "one scale vector a thread at most");

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

template <int NT, bool GATED, int FMT>
__global__ void __launch_bounds__(kThreads, 1) gemm_mma_kernel(const __grid_constant__ Params p) {
  pdl_trigger();
  constexpr bool kQuantized = packed_format(FMT);  // dequantized in registers (fp8: staged as bf16 is)
  constexpr int BR = block_rows(NT);
  constexpr int kWCopies = kWeightRows / kCopyRows, kXCopies = BR / kCopyRows;  // rows a thread fills
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const int wf = warp / 4, wr = warp % 4;

  const BlockJob b = block_job<GATED>(p, BR);
  const int seg = b.seg, f0 = b.f0, r0 = b.r0, S = p.pieces[seg];
  const GemvOut& o = p.out[seg];
  const int n = o.n, K8 = p.K8;

  // This thread's copies, vector c of every staged row row0 + 32 i: weight rows (gated: rows 0-63
  // the gate rows of features f0 .., rows 64-127 their up rows), then x rows. Null past the last
  // feature or row.
  const int c = threadIdx.x % kChunkK8, row0 = threadIdx.x / kChunkK8;
  const int c_swizzled = c ^ (row0 % 8);  // row0 + 32 i: the same row % 8
  // Quantized: slot s of a stage is tile f0 / 16 + s of the weight (gated: s % 4 of the gate
  // weight, then of the up one); this thread copies packed vectors threadIdx.x + 256 i of the
  // stage's values, and (threads 0-63) scale vector threadIdx.x % 8 of slot threadIdx.x / 8: lanes
  // 0-3 of a slot the block of the chunk's first half's group, 4-7 the second half's.
  constexpr int kVCopies = kQuantized ? 32 * lane_vecs(FMT) * kSlots / kThreads : 1;
  auto slot_tile = [&](int s, const uint8_t*& base, const __nv_bfloat16*& scales) {
    const bool up = GATED && s >= kSlots / 2;
    const GemvOut& w = up ? p.out[1] : o;
    const int tile = f0 / 16 + (up ? s - kSlots / 2 : s);
    base = w.packed;
    scales = w.scales;
    return 16 * tile < n ? tile : -1;
  };
  const uint4* w_src[kQuantized ? kVCopies : kWCopies];
  int w_dst[kQuantized ? kVCopies : 1];
  const uint4* scale_src = nullptr;
  if constexpr (kQuantized) {
#pragma unroll
    for (int i = 0; i < kVCopies; ++i) {
      const int v = threadIdx.x + kThreads * i, s = v / (32 * lane_vecs(FMT)), within = v % (32 * lane_vecs(FMT));
      const uint8_t* base;
      const __nv_bfloat16* scales;
      const int tile = slot_tile(s, base, scales);
      w_src[i] = tile >= 0 ? reinterpret_cast<const uint4*>(base) + static_cast<size_t>(tile) * p.chunks * 32 *
                                                                         lane_vecs(FMT) + within
                           : nullptr;
      w_dst[i] = s * slot_vecs(FMT) + within;
    }
    if (threadIdx.x < kSlots * kScaleVecs) {
      const uint8_t* base;
      const __nv_bfloat16* scales;
      const int tile = slot_tile(threadIdx.x / kScaleVecs, base, scales);
      if (tile >= 0)
        scale_src = reinterpret_cast<const uint4*>(scales) +
                    static_cast<size_t>(tile) * qlayout::groups_of(8 * K8, o.group) * 4 + threadIdx.x % 4;
    }
  } else {
#pragma unroll
    for (int i = 0; i < kWCopies; ++i) {
      const int r = row0 + kCopyRows * i;
      const bool up = GATED && r >= kWeightRows / 2;
      const int f = f0 + (up ? r - kWeightRows / 2 : r);
      const void* w = up ? p.out[1].w : o.w;
      w_src[i] = f < n ? reinterpret_cast<const uint4*>(w) + static_cast<size_t>(f) * K8 : nullptr;
    }
  }
  const uint4* x_src[kXCopies];
#pragma unroll
  for (int i = 0; i < kXCopies; ++i) {
    const int m = r0 + row0 + kCopyRows * i;
    x_src[i] = m < p.M ? reinterpret_cast<const uint4*>(p.x) + static_cast<size_t>(m) * p.ldx8 : nullptr;
  }

  extern __shared__ __align__(128) uint4 smem[];
  constexpr int kStageVecs = stage_bytes(NT, FMT) / 16, kWeightVecs = weight_stage_bytes(FMT) / 16;
  const void* any = o.data();  // a valid address for the copies that read nothing
  auto load_weights = [&](int chunk, int s) {
    uint4* stage = smem + s * kStageVecs;
    if constexpr (kQuantized) {
#pragma unroll
      for (int i = 0; i < kVCopies; ++i)
        cp_async16(stage + w_dst[i], w_src[i] ? w_src[i] + chunk * 32 * lane_vecs(FMT) : any, w_src[i] != nullptr);
      if (threadIdx.x < kSlots * kScaleVecs) {
        const int k = chunk * 64 + (threadIdx.x & 4 ? 32 : 0);
        const bool live = scale_src && k < 8 * K8;
        const uint4* block = live ? scale_src + qlayout::divide(k, o.group_div) * 4 : static_cast<const uint4*>(any);
        cp_async16(stage + (threadIdx.x / kScaleVecs) * slot_vecs(FMT) + 32 * lane_vecs(FMT) + threadIdx.x % kScaleVecs,
                   block, live);
      }
    } else {
      const int k = chunk * kChunkK8 + c;
      uint4* dst = stage + row0 * kChunkK8 + c_swizzled;
#pragma unroll
      for (int i = 0; i < kWCopies; ++i) {
        const bool live = k < K8 && w_src[i];
        cp_async16(dst + i * kCopyRows * kChunkK8, live ? w_src[i] + k : any, live);
      }
    }
  };
  auto load_x = [&](int chunk, int s) {
    const int k = chunk * kChunkK8 + c;
    uint4* dst = smem + s * kStageVecs + kWeightVecs + row0 * kChunkK8 + c_swizzled;
#pragma unroll
    for (int i = 0; i < kXCopies; ++i) {
      const bool live = k < K8 && x_src[i];
      cp_async16(dst + i * kCopyRows * kChunkK8, live ? x_src[i] + k : any, live);
    }
  };

  // The staged weight row of this warp's tile i (its slot: the row / 16). Gated: tiles 2h and
  // 2h + 1 are the gate and the up rows of features wf * 32 + 16 h.
  auto tile_row = [&](int i) { return GATED ? (i % 2) * 64 + wf * 32 + (i / 2) * 16 : wf * 64 + i * 16; };
  // Accumulator element e of tile (i, j): feature row g (+ 8 for e >= 2) of tile i, x row 2t (+ 1
  // for odd e) of tile j.
  auto feature_of = [&](int i, int e) {
    return f0 + (GATED ? wf * 32 + (i / 2) * 16 : wf * 64 + i * 16) + g + (e >= 2 ? 8 : 0);
  };
  auto row_of = [&](int j, int e) { return r0 + wr * 8 * NT + 8 * j + 2 * t + (e & 1); };

  // ldmatrix addresses in stage 0, k16 group 0 (group h: vector + 2h, whose swizzle is an xor of the
  // same row % 8 = lane % 8). A, tile i: lane L gives row L % 16 of the tile, vector L / 16 (the
  // matrices a0 .. a3: rows 0-7 and 8-15 at k 0-7, then at k 8-15). B, tiles j and j + 1 (x rows as
  // the mma's n): lane L gives row L % 8 of tile j + L / 16, vector L / 8 % 2 (the matrices b0, b1
  // of tile j, then of tile j + 1: x row g, k 2t, 2t + 1 and 2t + 8, 2t + 9, the column-major
  // fragment of B).
  const uint32_t smem0 = static_cast<uint32_t>(__cvta_generic_to_shared(smem));
  const int a_vec = lane / 16, b_vec = lane / 8 % 2, sw = lane % 8;
  const uint32_t a_at = smem0 + (lane % 16) * kRowBytes;
  const uint32_t b_at = smem0 + weight_stage_bytes(FMT) + (wr * 8 * NT + 8 * (lane / 16) + lane % 8) * kRowBytes;

  float acc[kFeatureTiles][NT][4], total[kFeatureTiles][NT][4];
  each_element<NT>([&](int i, int j, int e) { acc[i][j][e] = total[i][j][e] = 0; });

  // The first stages' weights are requested before the wait (launch.cuh: weights are never written
  // by a kernel), x after it; commit group s holds stage s's x (group 0 also all their weights),
  // one group a stage, empty past the block's chunks, so the wait count below stays fixed.
  const int jobs = b.chunk1 - b.chunk0;
#pragma unroll
  for (int s = 0; s < kStages - 1; ++s)
    if (s < jobs) load_weights(b.chunk0 + s, s);
  pdl_wait();  // x (and y, for accumulating outputs) come from the previous kernel
#pragma unroll
  for (int s = 0; s < kStages - 1; ++s) {
    if (s < jobs) load_x(b.chunk0 + s, s);
    cp_async_commit();
  }

  Cursor running(p, b, S);
  for (int job = 0; job < jobs; ++job) {
    cp_async_wait<kStages - 2>();  // this job's chunk has landed (this thread's copies) ...
    __syncthreads();               // ... and everyone's; the stage read last job is free again
    if (job + kStages - 1 < jobs) {
      const int s = (job + kStages - 1) % kStages;
      load_weights(b.chunk0 + job + kStages - 1, s);
      load_x(b.chunk0 + job + kStages - 1, s);
    }
    cp_async_commit();
    const uint32_t stage = (job % kStages) * stage_bytes(NT, FMT);
    // Quantized: this lane's packed words and scale words of each tile, for the whole chunk.
    uint32_t qw[kFeatureTiles][kQuantized ? 4 * lane_vecs(FMT) : 1];
    uint2 sb[kFeatureTiles][2];
    if constexpr (kQuantized) {
      const uint4* st = smem + (job % kStages) * kStageVecs;
#pragma unroll
      for (int i = 0; i < kFeatureTiles; ++i) {
        const uint4* slot = st + (tile_row(i) / 16) * slot_vecs(FMT);
#pragma unroll
        for (int v = 0; v < lane_vecs(FMT); ++v) {
          const uint4 q = slot[lane * lane_vecs(FMT) + v];
          qw[i][4 * v] = q.x, qw[i][4 * v + 1] = q.y, qw[i][4 * v + 2] = q.z, qw[i][4 * v + 3] = q.w;
        }
        const uint2* blocks = reinterpret_cast<const uint2*>(slot + 32 * lane_vecs(FMT));
        sb[i][0] = blocks[g];
        sb[i][1] = blocks[8 + g];
      }
    }
    // The chunk's k16 groups in order, each on every accumulator before the next.
#pragma unroll
    for (int h = 0; h < kGroupsPerChunk; ++h) {
      uint32_t a[kFeatureTiles][4], bx[NT][2];
#pragma unroll
      for (int i = 0; i < kFeatureTiles; ++i) {
        if constexpr (kQuantized) qfrag::fragments<FMT>(qw[i], h, sb[i][h / 2], a[i]);
        else ldmatrix_x4(a[i], a_at + stage + tile_row(i) * kRowBytes + (((2 * h + a_vec) ^ sw) << 4));
      }
#pragma unroll
      for (int j = 0; j < NT; j += 2) {
        uint32_t r[4];
        ldmatrix_x4(r, b_at + stage + 8 * j * kRowBytes + (((2 * h + b_vec) ^ sw) << 4));
        bx[j][0] = r[0];
        bx[j][1] = r[1];
        bx[j + 1][0] = r[2];
        bx[j + 1][1] = r[3];
      }
#pragma unroll
      for (int i = 0; i < kFeatureTiles; ++i)
#pragma unroll
        for (int j = 0; j < NT; ++j) tc::mma_group<FMT>(acc[i][j], a[i], bx[j][0], bx[j][1]);
    }

    if (running.piece_ends()) {
      if (p.split) {
        // The block's one piece: its chain to the workspace, [piece][row][feature] (gated: the n up
        // features after the n gate features), for gemm_fold_kernel.
        const int width = GATED ? 2 * n : n;
        float* w = p.workspace + p.workspace_at[seg] + static_cast<size_t>(running.q) * p.M * width;
        each_element<NT>([&](int i, int j, int e) {
          const int f = feature_of(i, e), m = row_of(j, e);
          if (f < n && m < p.M) w[static_cast<size_t>(m) * width + f + (GATED && i % 2 ? n : 0)] = acc[i][j][e];
        });
      } else {
        // The pieces in order: total = p0, then total + p1, ...
        const bool first = running.q == 0;
        each_element<NT>([&](int i, int j, int e) {
          total[i][j][e] = first ? acc[i][j][e] : total[i][j][e] + acc[i][j][e];
        });
      }
      each_element<NT>([&](int i, int j, int e) { acc[i][j][e] = 0; });
    }
    running.next(p, S);
  }
  cp_async_wait<0>();  // (only empty groups are left)
  if (p.split) return;

  each_element<NT>([&](int i, int j, int e) {
    const int f = feature_of(i, e), m = row_of(j, e);
    if (f >= n || m >= p.M || (GATED && i % 2)) return;  // gated: tile i + 1 is tile i's up
    if constexpr (GATED)
      o.y[static_cast<size_t>(m) * o.ldy + f] = gemv::gated_output(o, p.out[1], m, f, total[i][j][e], total[i + 1][j][e]);
    else
      gemv::store_output(o, m, f, total[i][j][e]);
  });
}

template <int NT, bool GATED, int FMT>
void launch_instance(const Params& p, Stream s) {
  const auto kernel = gemm_mma_kernel<NT, GATED, FMT>;
  allow_dynamic_smem(reinterpret_cast<const void*>(kernel), smem_bytes(NT, FMT), "gemm_mma shared memory");
  launch_kernel("gemm_mma", kernel, dim3(static_cast<unsigned>(p.block_end[p.n_outs - 1])), dim3(kThreads),
                smem_bytes(NT, FMT), s, p);
}

template <int NT, bool GATED>
void launch_format(const Params& p, Stream s) {
  with_format(p.out[0].format, [&](auto format) { launch_instance<NT, GATED, decltype(format)::value>(p, s); });
}

template <int NT>
void launch_nt(const Params& p, bool gated, Stream s) {
  if (gated) launch_format<NT, true>(p, s);
  else launch_format<NT, false>(p, s);
}

}  // namespace

size_t mma_smem_bytes(int nt, int format) { return smem_bytes(nt, format); }

void launch_gemm_mma(const Params& p, int nt, bool gated, Stream s) {
  check(nt == 2 || nt == 4, "cuda gemm (mma)", "64 or 128 rows a block");
  check(!gated || p.n_outs == 1, "cuda gemm (mma)", "a gated product is one output range");
  if (nt == 4) launch_nt<4>(p, gated, s);
  else launch_nt<2>(p, gated, s);
}

}  // namespace voxrt::cuda::gemm
