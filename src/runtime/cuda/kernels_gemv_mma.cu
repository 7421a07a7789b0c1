// The GEMV on the tensor cores: up to 32 rows of x against a bf16 weight, bound by reading the
// weight once. A block owns 16 output features (a tile) and one piece of K; its 8 warps split the
// piece (warp w takes the 32-element chunks w, w + 8, ... of it), each multiplying its 16 x 32
// weight pieces with the x rows by mma.sync.m16n8k16 (bf16 in, fp32 accumulate), and the warps'
// partial sums are added in warp order at the end. On the CUDA cores (kernels_gemv.cu) every
// weight element costs an unpack and one FMA per row of x, which for 4 encoder rows is more than
// the memory system delivers; here one mma covers 16 features x 16 K x 8 rows.
//
// Split K. A product with fewer 16-feature tiles than the SMs can hold two blocks of (a decoder
// w2 has 192 tiles for 132 SMs) leaves the SMs unevenly loaded. So a long row's K (>= 4096) is
// cut into S pieces, S chosen per weight (from its tiles, its K and the SM count) for about
// GemvTuning::split_blocks_per_sm (default 2) blocks per SM, each piece at least min_piece_units
// (default 4) units of 256 elements. Each piece's block writes its 16 x M partial sums to the
// workspace and counts itself in on the tile's counter; the last to arrive adds the S partials in
// piece order, applies the epilogue and resets the counter. The order of every addition is fixed
// by (K, the weight's tiles, the SM count): a row's result never depends on M, on the other rows
// in the launch or on which block finishes last (batch invariance, cuda_backend.cpp), and a
// weight gives the same result alone or in a fused launch. The pieces are few and long: every block
// of a split pays a round trip through the workspace, so many small pieces lose (bench/README.md).
//
// Within each 32-element chunk, lane (g, t) = (lane / 4, lane % 4) takes elements 8t .. 8t+7 of
// weight rows g and g + 8 (16 bytes each) and of x row g, and uses them as fragment k-slots
// {2t, 2t+1, 2t+8, 2t+9} of the chunk's two k16 halves. The same permutation of K on both
// operands leaves every dot product unchanged, and keeps each weight load a full 16-byte vector.
//
// The weight streams through a ring in shared memory (cp.async, 4-8 units ahead, 64 KiB a block):
// each thread copies its own 16-byte pieces and reads back only those, so the ring needs no
// barrier, and the loads of the next units are in flight while the current one is multiplied.
// Loading straight into registers, a round at a time, would let the stream drain at every round: a
// DRAM round trip per round, a large share of a small product's time (bench/README.md).
#include <cuda_bf16.h>

#include <algorithm>
#include <cstdint>

#include "runtime/cuda/cuda_check.h"
#include "runtime/cuda/cuda_kernels.h"
#include "runtime/cuda/gemv_common.cuh"
#include "runtime/cuda/launch.cuh"
#include "runtime/cuda/tensor_core.cuh"

namespace voxrt::cuda {
namespace {

using gemv::load_x8;
using gemv::Params;
using tc::cp_async16;
using tc::cp_async_commit;
using tc::cp_async_wait;
using tc::l2_evict_first_policy;
using tc::mma_chunk;

using tc::kUnitK8;
using tc::units_of;
constexpr int kWarps = tc::kChains;           // warp w runs chain w
constexpr int kChunk8 = tc::kChunkK8;         // a warp's chunk: 32 elements = 4 loads of 8
constexpr int kMaxTiles8 = 4;                 // tiles of 8 x rows: 32 rows
constexpr int kPartialFloats = 2 * kMaxTiles8 * 4 * 32;  // one block's partials, gated, 32 rows
constexpr int kMinSplitUnits = 16;                       // K >= 4096
// Three blocks of ring + staged x + the 1 KiB the driver reserves a block fill the SM's 228 KiB.
constexpr int kXStageMaxBytes = 11 * 1024;


// Units in flight per block: 64 KiB of ring either way (ring_bytes), so that three blocks fit an SM
// with their staged x. A larger ring leaves room for only two blocks an SM, a smaller one keeps fewer
// units in flight; both lose (bench/README.md).
__host__ __device__ constexpr int ring_stages(int weights) { return weights == 2 ? 4 : 8; }
__host__ __device__ constexpr int ring_bytes(int weights) { return ring_stages(weights) * weights * 2 * kWarps * 32 * 16; }

// NT: tiles of 8 x rows (M <= 8 NT). GATED: out[0] is the gate weight and the destination, out[1].w
// the up weight, y = silu(gate) * up.
template <int NT, typename XT, bool GATED>
__global__ void __launch_bounds__(kWarps * 32) gemv_mma_kernel(const Params p) {
  pdl_trigger();
  constexpr int NV = GATED ? 2 : 1;  // weights multiplied
  constexpr int R = ring_stages(NV);
  constexpr int kAcc = NV * NT * 4;   // accumulators per lane
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;

  // Which output, tile and piece of K this block computes (blocks: output-major, then tile, then piece).
  int seg = 0;
  while (seg + 1 < p.n_outs && static_cast<int>(blockIdx.x) >= p.block_end[seg]) ++seg;
  const int S = p.pieces[seg];
  const int local = blockIdx.x - (seg ? p.block_end[seg - 1] : 0);
  const int tile = local / S, piece = local % S;
  const int f0 = tile * 16;
  const GemvOut& o = p.out[seg];
  const int n = o.n, K8 = p.K8, units = units_of(K8);
  const int u0 = piece * units / S, u1 = (piece + 1) * units / S;
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

  // This warp's chunk of unit u starts at 8-element index k_of(u); past K its loads are zeros.
  auto k_of = [&](int u) { return u * kUnitK8 + warp * kChunk8 + t; };
  // The weight ring: stage s holds, per weight v and row r (g or g + 8), this thread's 16 bytes of
  // one unit. A thread reads back only what it copied itself, so no barrier guards the ring.
  extern __shared__ uint4 smem[];
  auto ring = [&](int s, int v, int r) -> uint4& { return smem[((s * NV + v) * 2 + r) * (kWarps * 32) + threadIdx.x]; };
  const uint64_t evict_first = l2_evict_first_policy();  // weights are read once a step
  auto fill = [&](int u, int s) {
    const int k = k_of(u);
#pragma unroll
    for (int v = 0; v < NV; ++v)
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        const bool live = k < K8 && w[v][r];
        cp_async16(&ring(s, v, r), live ? w[v][r] + k : reinterpret_cast<const uint4*>(o.w), live, evict_first);
      }
  };
  // x, rounded to bf16: staged for the whole piece after the wait below, when it fits (one round
  // trip for the block rather than one per unit), else read per unit, one unit ahead.
  uint4* xs = smem + ring_bytes(NV) / 16;  // [row][p.x_stage_stride], from 8-element index k0
  const int k0 = u0 * kUnitK8;
  auto load_x = [&](int u, uint4 (&xv)[NT]) {
    const int k = k_of(u);
#pragma unroll
    for (int j = 0; j < NT; ++j) {
      const int m = 8 * j + g;
      if (k < K8 && m < p.M)
        xv[j] = p.x_stage_stride ? xs[m * p.x_stage_stride + (k - k0)] : load_x8<XT>(p, m, k);
      else
        xv[j] = uint4{0, 0, 0, 0};
    }
  };
  // The first R units are in flight before waiting for the previous kernel (launch.cuh); then
  // every unit consumed frees its stage for the unit R ahead, so the weight stream never drains
  // between units. One commit group per unit (empty past the piece) keeps the wait count fixed.
#pragma unroll
  for (int i = 0; i < R; ++i) {
    if (u0 + i < u1) fill(u0 + i, i);
    cp_async_commit();
  }
  pdl_wait();
  if (p.x_stage_stride) {
    const int len = min(u1 * kUnitK8, K8) - k0;
    for (int i = threadIdx.x; i < p.M * len; i += kWarps * 32)
      xs[(i / len) * p.x_stage_stride + i % len] = load_x8<XT>(p, i / len, k0 + i % len);
    __syncthreads();
  }
  uint4 xv[NT];
  if (u0 < u1) load_x(u0, xv);
  int stage = 0;
  for (int u = u0; u < u1; ++u) {
    cp_async_wait<R - 1>();  // unit u's group has landed
    uint4 wv[NV][2];
#pragma unroll
    for (int v = 0; v < NV; ++v) wv[v][0] = ring(stage, v, 0), wv[v][1] = ring(stage, v, 1);
    uint4 xn[NT] = {};
    if (u + 1 < u1) load_x(u + 1, xn);
#pragma unroll
    for (int j = 0; j < NT; ++j)
#pragma unroll
      for (int v = 0; v < NV; ++v) mma_chunk(acc[v][j], wv[v][0], wv[v][1], xv[j]);
    // The stage's registers have been consumed by the mma above, so its refill cannot overtake them.
    if (u + R < u1) fill(u + R, stage);
    cp_async_commit();
#pragma unroll
    for (int j = 0; j < NT; ++j) xv[j] = xn[j];
    stage = stage + 1 == R ? 0 : stage + 1;
  }
  cp_async_wait<0>();
  __syncthreads();  // every thread is done with the ring

  // Partial sums of the 8 warps, added in warp order by warp 0 (in the ring's memory, now idle).
  auto part = reinterpret_cast<float (*)[kAcc][32]>(smem);
#pragma unroll
  for (int v = 0; v < NV; ++v)
#pragma unroll
    for (int j = 0; j < NT; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) part[warp][(v * NT + j) * 4 + e][lane] = acc[v][j][e];
  __syncthreads();
  if (warp != 0) return;
  float* sum = &acc[0][0][0];  // acc viewed as kAcc floats, index (v * NT + j) * 4 + e
#pragma unroll
  for (int a = 0; a < kAcc; ++a) {
    float s = part[0][a][lane];
#pragma unroll
    for (int ww = 1; ww < kWarps; ++ww) s += part[ww][a][lane];
    sum[a] = s;
  }

  if (S > 1) {
    // Publish this piece; the tile's last piece to arrive adds all S in piece order.
    float* mine = p.partials + static_cast<size_t>(blockIdx.x) * kPartialFloats;
#pragma unroll
    for (int a = 0; a < kAcc; ++a) mine[a * 32 + lane] = sum[a];
    __threadfence();
    __syncwarp();
    const int tile_id = (seg ? p.tile_end[seg - 1] : 0) + tile;
    int arrived = 0;
    if (lane == 0) arrived = atomicAdd(&p.counters[tile_id], 1);
    arrived = __shfl_sync(0xffffffffu, arrived, 0);
    if (arrived != S - 1) return;
    __threadfence();
    const float* first = p.partials + static_cast<size_t>(blockIdx.x - piece) * kPartialFloats;
#pragma unroll
    for (int a = 0; a < kAcc; ++a) {
      float s = 0;
      for (int q = 0; q < S; ++q) {
        const float val = q == piece ? sum[a] : __ldcg(first + static_cast<size_t>(q) * kPartialFloats + a * 32 + lane);
        s = q == 0 ? val : s + val;
      }
      sum[a] = s;
    }
    if (lane == 0) p.counters[tile_id] = 0;  // ready for the next launch
  }

  // Fragment element e of tile j: feature f0 + g (+ 8 for e >= 2), x row 8j + 2t (+ 1 for odd e).
#pragma unroll
  for (int j = 0; j < NT; ++j) {
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int f = f0 + g + (e >= 2 ? 8 : 0), m = 8 * j + 2 * t + (e & 1);
      if (f >= n || m >= p.M) continue;
      if constexpr (GATED) o.y[static_cast<size_t>(m) * o.ldy + f] = gemv::silu_times(sum[j * 4 + e], sum[(NT + j) * 4 + e]);
      else gemv::store_output(o, m, f, sum[j * 4 + e]);
    }
  }
}

template <int NT, typename XT, bool GATED>
void launch_instance(const Params& p, Stream s) {
  constexpr int NV = GATED ? 2 : 1;
  // The ring (reused for the warps' partial sums), then the staged x.
  constexpr size_t ring = ring_bytes(NV);
  static_assert(sizeof(float) * kWarps * NV * NT * 4 * 32 <= ring, "the warps' partial sums must fit the ring");
  const size_t smem = ring + static_cast<size_t>(p.M) * p.x_stage_stride * 16;
  const auto kernel = gemv_mma_kernel<NT, XT, GATED>;
  allow_dynamic_smem(reinterpret_cast<const void*>(kernel), ring + kXStageMaxBytes, "gemv_mma shared memory");
  launch_kernel("gemv_mma", kernel, dim3(static_cast<unsigned>(p.block_end[p.n_outs - 1])), dim3(kWarps * 32), smem, s,
                p);
}

template <int NT, typename XT>
void launch_nt(const Params& p, bool gated, Stream s) {
  if (gated) launch_instance<NT, XT, true>(p, s);
  else launch_instance<NT, XT, false>(p, s);
}

template <typename XT>
void launch_typed(const Params& p, bool gated, Stream s) {
  if (p.M <= 8) launch_nt<1, XT>(p, gated, s);
  else if (p.M <= 16) launch_nt<2, XT>(p, gated, s);
  else launch_nt<4, XT>(p, gated, s);
}

}  // namespace

// Pieces of K per tile for a weight of n features: enough blocks to fill the SMs several times
// over, at least t.min_piece_units 256-element units per piece. Depends on the weight and
// the device only.
int gemv_mma_pieces(int n, int K, const GemvTuning& t) {
  const int tiles = (n + 15) / 16, units = units_of(K / 8);
  const int target = t.split_blocks_per_sm * t.sm_count;
  // Splitting costs each block a round trip through the workspace; it pays only for long rows
  // (K >= 4096) of weights with fewer tiles than the target's blocks (bench/README.md).
  if (tiles == 0 || target <= tiles || units < kMinSplitUnits) return 1;
  return std::clamp((target + tiles - 1) / tiles, 1, std::max(units / t.min_piece_units, 1));
}

GemvWorkspaceSize gemv_mma_workspace(const Params& p, const GemvTuning& t) {
  GemvWorkspaceSize need;
  size_t blocks = 0, tiles = 0;
  bool split = false;
  for (int i = 0; i < p.n_outs; ++i) {
    const int S = gemv_mma_pieces(p.out[i].n, p.K8 * 8, t);
    blocks += static_cast<size_t>((p.out[i].n + 15) / 16) * S;
    tiles += (p.out[i].n + 15) / 16;
    split = split || S > 1;
  }
  if (split) {
    need.partial_floats = blocks * kPartialFloats;
    need.counters = tiles;
  }
  return need;
}

void launch_gemv_mma(const gemv::Params& params, bool x_bf16, bool gated, const GemvWorkspace& ws,
                     const GemvTuning& t, Stream s) {
  gemv::Params p = params;
  const GemvWorkspaceSize need = gemv_mma_workspace(p, t);
  check(ws.partial_floats >= need.partial_floats && ws.counter_count >= need.counters, "cuda gemv",
        "split-K workspace too small");
  p.partials = ws.partials;
  p.counters = ws.counters;
  int tiles = 0, blocks = 0;
  for (int i = 0; i < p.n_outs; ++i) {
    const int n_tiles = (p.out[i].n + 15) / 16;
    p.pieces[i] = gemv_mma_pieces(p.out[i].n, p.K8 * 8, t);
    tiles += n_tiles;
    blocks += n_tiles * p.pieces[i];
    p.tile_end[i] = tiles;
    p.block_end[i] = blocks;
  }
  if (blocks == 0) return;
  // Stage x when the longest piece's rows fit; a 16-byte pad per row keeps the rows' reads off one bank.
  int longest = 0;
  for (int i = 0; i < p.n_outs; ++i) longest = std::max(longest, (units_of(p.K8) + p.pieces[i] - 1) / p.pieces[i]);
  const int stride = std::min(longest * kUnitK8, p.K8) + 1;
  p.x_stage_stride = static_cast<size_t>(p.M) * stride * 16 <= kXStageMaxBytes ? stride : 0;
  if (x_bf16) launch_typed<__nv_bfloat16>(p, gated, s);
  else launch_typed<float>(p, gated, s);
}

}  // namespace voxrt::cuda
