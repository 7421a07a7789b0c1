// The GEMV on the tensor cores: up to 32 rows of x against a bf16 weight, bound by reading the
// weight once. On the CUDA cores (kernels_gemv.cu) every weight element costs an unpack and one FMA
// per row of x, which for 4 encoder rows is more than the memory system delivers; here one mma
// covers 16 features x 16 K x 8 rows.
//
// The order of summation is the products' (tensor_core.cuh): K in pieces, each piece one chain of
// k16 groups in their natural order, the pieces added in order. So a warp owns a 16-feature tile
// and one piece of K and runs that chain alone; a block's 8 warps take 8 neighbouring tiles of the
// same piece, sharing the x rows they stage. The memory system is kept busy across features
// (every warp streams its own 16 weight rows) and across pieces (gemv_mma_pieces cuts K so that
// there are about GemvTuning::split_warps_per_sm warps an SM), never by splitting a chain: a chain
// split across warps is a different order of summation, which the tiled GEMM would have to
// reproduce at the cost of most of its rate (docs/scheduler.md).
//
// Split K. With S > 1 pieces, each warp writes its tile's 16 x M partial sums to the workspace and
// counts itself in on the tile's counter; the last to arrive adds the S partials in piece order,
// applies the epilogue and resets the counter. The order of every addition is fixed by the
// weight's shape and the SM count: a row's result never depends on M, on the other rows in the
// launch or on which block finishes last, and a weight gives the same result alone or in a fused
// launch.
//
// The weights stream through a ring in shared memory, each warp its own (cp.async, 64-element
// chunks of its 16 rows, as many in flight as the launch can give it: ring_stages; each stage's
// arrival tracked by an mbarrier, whose wait costs the same whatever the ring's depth), read back by
// ldmatrix: a 16-byte vector v of row r sits at v ^ (r % 8) within the row's 128 bytes, so the 8
// rows of an ldmatrix phase fall in different banks. The loads of the next chunks are in flight
// while the current one is multiplied; loading straight into registers, a round at a time, would
// let the stream drain at every round.
#include <cuda_bf16.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "runtime/cuda/cuda_check.h"
#include "runtime/cuda/cuda_kernels.h"
#include "runtime/cuda/gemv_common.cuh"
#include "runtime/cuda/launch.cuh"
#include "runtime/cuda/quant_fragments.cuh"
#include "runtime/cuda/tensor_core.cuh"

namespace voxrt::cuda {
namespace {

using gemv::Params;
using tc::chunks_of;
using tc::cp_async16_shared;
using tc::kChunkK8;
using tc::kGroupsPerChunk;
using tc::l2_evict_first_policy;
using tc::ldmatrix_x4;
using tc::mma16816;
using tc::piece_begin;

constexpr int kWarps = 8;                 // 16-feature tiles a block: 128 features
constexpr int kTileRows = 16;             // weight rows a warp streams
constexpr int kMaxTiles8 = 4;             // tiles of 8 x rows: 32 rows
constexpr int kWarpPartialFloats = 2 * kMaxTiles8 * 4 * 32;  // one warp's partials, gated, 32 rows
// A warp's 16 rows x 64 elements of one weight as bf16: 128 16-byte vectors, a bf16 weight's
// ring stage. A quantized weight's stage holds the 32 lanes' packed vectors of the (tile, chunk)
// (quant_layout.h), then the scale blocks of the chunk's groups: the first half's, and the second
// half's when it is another group (8 vectors).
constexpr int kStageVecs = kTileRows * kChunkK8;
constexpr int kScaleBlockVecs = 8;
__host__ __device__ constexpr int lane_vecs(int fmt) { return qlayout::lane_bytes(fmt) / 16; }
__host__ __device__ constexpr int packed_values_vecs(int fmt) { return 32 * lane_vecs(fmt); }
__host__ __device__ constexpr int packed_stage_vecs(int fmt) {
  return packed_format(fmt) ? packed_values_vecs(fmt) + kScaleBlockVecs : kStageVecs;
}
constexpr int kXStageMaxBytes = 11 * 1024;
constexpr int kMaxRingStages = 16;
// Each warp's ring stages' mbarriers, at the front of the block's shared memory.
constexpr int kBarrierBytes = kWarps * kMaxRingStages * 8;
constexpr int kDriverSmemPerBlock = 1024;  // shared memory the driver reserves for each block of an SM

// A block's ring: R stages of every weight for each warp.
__host__ __device__ constexpr int ring_bytes(int R, int weights, int fmt) {
  return kWarps * weights * R * packed_stage_vecs(fmt) * 16;
}
__host__ __device__ constexpr int stage_bytes(int weights, int fmt) { return kWarps * weights * packed_stage_vecs(fmt) * 16; }

// Chunks in flight a warp (the ring's stages), picked by the launch: as many as the shared memory
// of an SM holds for the blocks it will host, and no more than the longest piece has. One weight
// row's latency is hidden by the chunks in flight, so a launch of few blocks (a product of few
// features, the encoder's) runs each warp's whole piece in one round trip instead of a round trip
// per 4 chunks, and a launch of many keeps several chunks a warp in flight. The order of summation
// does not depend on it.
// `resident`: the most blocks of the kernel an SM holds by its registers and threads; `max_dynamic`:
// the most dynamic shared memory a block of it may have.
int ring_stages(int blocks, int resident, size_t max_dynamic, int longest_piece, int weights, int fmt,
                size_t x_stage_bytes, const GemvTuning& t) {
  const int per_sm = std::clamp((blocks + t.sm_count - 1) / std::max(t.sm_count, 1), 1, std::max(resident, 1));
  const long long per_sm_share = static_cast<long long>(t.smem_per_sm) * t.ring_smem_percent / 100 / per_sm - kDriverSmemPerBlock;
  const long long per_block = std::min<long long>(per_sm_share, static_cast<long long>(max_dynamic)) -
                              static_cast<long long>(x_stage_bytes) - kBarrierBytes;
  const int fit = static_cast<int>(std::max<long long>(per_block, 0) / stage_bytes(weights, fmt));
  return std::clamp(std::min(fit, longest_piece), 1, kMaxRingStages);
}

// Two bf16 of row m of x, elements k and k + 1 (k even), packed as an mma operand register; zeros
// past K.
template <typename XT>
__device__ __forceinline__ uint32_t load_x2(const Params& p, int m, int k, int K) {
  if (k >= K) return 0;
  if constexpr (sizeof(XT) == 2) {
    return __ldg(reinterpret_cast<const unsigned*>(static_cast<const XT*>(p.x) + m * p.ldx + k));
  } else {
    const float2 v = __ldg(reinterpret_cast<const float2*>(static_cast<const float*>(p.x) + m * p.ldx + k));
    return gemv::pack_bf16(v.x, v.y);
  }
}

// NT: tiles of 8 x rows (M <= 8 NT). GATED: out[0] is the gate weight and the destination, out[1].w
// the up weight, y = silu(gate) * up.
template <int NT, typename XT, bool GATED, int FMT>
__global__ void __launch_bounds__(kWarps * 32) gemv_mma_kernel(const Params p) {
  pdl_trigger();
  constexpr int NV = GATED ? 2 : 1;  // weights multiplied
  const int R = p.ring_stages;
  constexpr int kAcc = NV * NT * 4;  // accumulators per lane
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;

  // Which output, group of kWarps tiles and piece of K this block computes (blocks: output-major, then
  // group, then piece), and which tile this warp takes.
  int seg = 0;
  while (seg + 1 < p.n_outs && static_cast<int>(blockIdx.x) >= p.block_end[seg]) ++seg;
  const int S = p.pieces[seg];
  const int local = blockIdx.x - (seg ? p.block_end[seg - 1] : 0);
  const int group = local / S, piece = local % S;
  const GemvOut& o = p.out[seg];
  const int n = o.n, K8 = p.K8, K = 8 * K8, chunks = chunks_of(K8);
  const int f0 = (group * kWarps + warp) * kTileRows;
  const int c0 = piece_begin(piece, chunks, S), c1 = piece_begin(piece + 1, chunks, S);
  const bool idle = f0 >= n;  // a tile past the last feature (the last group's)

  constexpr bool kQuantized = packed_format(FMT);  // dequantized in registers (fp8: read as bf16 is)
  constexpr int kPackedVecs = packed_stage_vecs(FMT);
  extern __shared__ uint4 smem[];
  // The warp's ring: stage s of weight v, [row][vector ^ (row % 8)] (bf16) or the packed vectors of
  // the 32 lanes and the scale blocks (quantized).
  uint4* ring = smem + kBarrierBytes / 16 + warp * NV * R * kPackedVecs;
  // Stage s's mbarrier (tensor_core.cuh: cp_async_arrive); lane 0 readies the warp's before any copy.
  const uint32_t bars = static_cast<uint32_t>(__cvta_generic_to_shared(smem)) + warp * kMaxRingStages * 8;
  if (lane == 0)
    for (int i = 0; i < R; ++i) tc::mbar_init(bars + 8 * i, 32);
  __syncwarp();
  auto stage_of = [&](int s, int v) { return ring + (s * NV + v) * kPackedVecs; };
  // The copies address the ring as a shared-memory offset computed once: with a generic address
  // converted at every copy, ptxas (CUDA 13.0) gave one copy of the bf16 gated 17-32-row instance
  // uniform registers it never set (an illegal instruction at run time).
  const uint32_t ring_shared = static_cast<uint32_t>(__cvta_generic_to_shared(ring));
  auto stage_at = [&](int s, int v, int vec) {
    return ring_shared + static_cast<uint32_t>(((s * NV + v) * kPackedVecs + vec) * 16);
  };
  const uint64_t evict_first = l2_evict_first_policy();  // weights are read once a step
  const uint4* any = reinterpret_cast<const uint4*>(o.data());  // a valid address for copies that read nothing

  // bf16: this lane copies vector lane % 8 of rows lane / 8 + 4 i, i = 0 .. 3, of each weight (null
  // past the last feature). Quantized: its own packed vectors of the warp's tile (quant_layout.h
  // pads the storage to whole tiles and chunks), and lanes 0-7 a scale block: lanes 0-3 the one of
  // the chunk's first half's group of K, lanes 4-7 the second half's (the same block again when the
  // halves share a group: the two copies are one request; zeros past K).
  constexpr int kCopies = kQuantized ? 1 : 4;
  const int copy_v = lane % 8;
  const uint4* w_rows[NV][kCopies];
  const uint4* scale_rows[NV];
  const int half_k = lane & 4 ? 32 : 0;
  const qlayout::Divider group_div = o.group_div;  // read once: o is indexed by a run-time segment
#pragma unroll
  for (int v = 0; v < NV; ++v) {
    const char* base = static_cast<const char*>(v == 0 ? o.data() : p.out[1].data());
    if constexpr (kQuantized) {
      const size_t tile = f0 / kTileRows;
      w_rows[v][0] = reinterpret_cast<const uint4*>(base) + tile * chunks * packed_values_vecs(FMT) + lane * lane_vecs(FMT);
      scale_rows[v] = reinterpret_cast<const uint4*>(p.out[v == 0 ? seg : 1].scales) +
                      tile * qlayout::groups_of(K, o.group) * 4 + lane % 4;
    } else {
#pragma unroll
      for (int i = 0; i < kCopies; ++i) {
        const int f = f0 + lane / 8 + 4 * i;
        w_rows[v][i] = f < n ? reinterpret_cast<const uint4*>(base + static_cast<size_t>(f) * K * 2) : nullptr;
      }
    }
  }
  auto fill = [&](int c, int s) {
#pragma unroll
    for (int v = 0; v < NV; ++v) {
      if constexpr (kQuantized) {
        const uint4* values = w_rows[v][0] + c * packed_values_vecs(FMT);
#pragma unroll
        for (int i = 0; i < lane_vecs(FMT); ++i)
          cp_async16_shared(stage_at(s, v, lane * lane_vecs(FMT) + i), values + i, true, evict_first);
        if (lane < kScaleBlockVecs) {
          const int k = c * 64 + half_k;
          const bool live = k < K;
          const uint4* block = scale_rows[v] + qlayout::divide(k, group_div) * 4;
          cp_async16_shared(stage_at(s, v, packed_values_vecs(FMT) + lane), live ? block : any, live, evict_first);
        }
      } else {
#pragma unroll
        for (int i = 0; i < kCopies; ++i) {
          const int r = lane / 8 + 4 * i, k8 = c * kChunkK8 + copy_v;
          const bool live = k8 < K8 && w_rows[v][i];
          cp_async16_shared(stage_at(s, v, r * kChunkK8 + (copy_v ^ (r % 8))), live ? w_rows[v][i] + k8 : any, live,
                            evict_first);
        }
      }
    }
  };
  // The first R chunks are in flight before waiting for the previous kernel (launch.cuh); then
  // every chunk consumed frees its stage for the chunk R ahead, so the weight stream never drains.
  for (int i = 0; i < R; ++i) {
    if (!idle && c0 + i < c1) {
      fill(c0 + i, i);
      tc::cp_async_arrive(bars + 8 * i);
    }
  }
  pdl_wait();

  // x, rounded to bf16: staged for the whole piece when it fits (one round trip for the block),
  // else read per group from global memory (L1/L2). A staged row holds the piece's chunks, 32
  // words each (x_stage_stride words from row to row: 4 more than the chunks need, so that the 8
  // rows of a fragment load fall in different banks), each chunk's words in the order its B
  // fragments are taken: word 8t + 2h + i is the one lane t's register i of k16 group h needs
  // (elements 16h + 8i + 2t and the next), so a lane loads its whole chunk in two 16-byte reads.
  // Staged 16-byte vector v of a chunk (elements 8v ...) is words 4v + t, to 8t + v.
  unsigned* const xw = reinterpret_cast<unsigned*>(smem + (kBarrierBytes + ring_bytes(R, NV, FMT)) / 16);
  const unsigned* const xs = xw;
  if (p.x_stage_stride) {
    const int vecs = (c1 - c0) * kChunkK8;
    for (int i = threadIdx.x; i < p.M * vecs; i += kWarps * 32) {
      const int m = i / vecs, v = i % vecs, k8 = c0 * kChunkK8 + v;
      const uint4 val = k8 < K8 ? gemv::load_x8<XT>(p, m, k8) : uint4{0, 0, 0, 0};
      unsigned* chunk = xw + m * p.x_stage_stride + (v / kChunkK8) * 32 + v % kChunkK8;
      chunk[0] = val.x, chunk[8] = val.y, chunk[16] = val.z, chunk[24] = val.w;
    }
    __syncthreads();
  }
  // The B fragments of k16 group h of chunk c for tile j: b[h][j] = x row 8j + g, elements 2t,
  // 2t + 1 and 2t + 8, 2t + 9 of the group (zeros past M and K). Staged, a chunk's four groups are
  // loaded at once (load_staged_b); from global memory, a group's as it is multiplied (load_b),
  // each load only for a row below M.
  int x_row[NT];  // staged: the word of this lane's first chunk in its row of tile j
#pragma unroll
  for (int j = 0; j < NT; ++j) x_row[j] = min(8 * j + g, p.M - 1) * p.x_stage_stride + 8 * t;
  // A lane of a row past M loads row M - 1's words (x_row): an mma's output column depends on its
  // own B column only, and those columns are never stored, so no zeros (and no select) are needed.
  auto load_staged_b = [&](int c, uint32_t (&b)[kGroupsPerChunk][NT][2]) {
#pragma unroll
    for (int j = 0; j < NT; ++j) {
      const uint4* at = reinterpret_cast<const uint4*>(xs + x_row[j] + (c - c0) * 32);
      const uint4 lo = at[0], hi = at[1];
      b[0][j][0] = lo.x, b[0][j][1] = lo.y, b[1][j][0] = lo.z, b[1][j][1] = lo.w;
      b[2][j][0] = hi.x, b[2][j][1] = hi.y, b[3][j][0] = hi.z, b[3][j][1] = hi.w;
    }
  };
  auto load_b = [&](int c, int h, uint32_t (&b)[NT][2]) {
    const int k = c * kChunkK8 * 8 + 16 * h + 2 * t;
#pragma unroll
    for (int j = 0; j < NT; ++j) {
      const int m = 8 * j + g;
      if (m >= p.M) {
        b[j][0] = b[j][1] = 0;
      } else {
        b[j][0] = load_x2<XT>(p, m, k, K);
        b[j][1] = load_x2<XT>(p, m, k + 8, K);
      }
    }
  };

  float acc[NV][NT][4];
#pragma unroll
  for (int v = 0; v < NV; ++v)
#pragma unroll
    for (int j = 0; j < NT; ++j) acc[v][j][0] = acc[v][j][1] = acc[v][j][2] = acc[v][j][3] = 0;

  // ldmatrix of group h: lane L gives row L % 16's vector 2h + L / 16.
  const int a_row = lane % 16, a_half = lane / 16;
  // The chunk loop, compiled twice: for staged x and for x from global memory, so that neither
  // pays the other's branches, selects and index arithmetic in every k16 group (the run-time test
  // inside the loop cost ~20 instructions a chunk, a quarter of the loop's non-arithmetic).
  auto chunk_loop = [&](auto staged_tag) {
    constexpr bool kStaged = decltype(staged_tag)::value;
    int stage = 0;
    uint32_t parity = 0;  // of the stages' current filling: flips as the ring wraps
    for (int c = c0; !idle && c < c1; ++c) {
      tc::mbar_wait_parity(bars + 8 * stage, parity);  // chunk c has landed, every lane's copies
      // Quantized: this lane's packed words and its scale words of each half of the chunk.
      [[maybe_unused]] uint32_t qw[NV][kQuantized ? 4 * lane_vecs(FMT) : 1];
      [[maybe_unused]] uint2 sb[NV][2];
      if constexpr (kQuantized) {
#pragma unroll
        for (int v = 0; v < NV; ++v) {
          const uint4* st = stage_of(stage, v);
#pragma unroll
          for (int i = 0; i < lane_vecs(FMT); ++i) {
            const uint4 q = st[lane * lane_vecs(FMT) + i];
            qw[v][4 * i] = q.x, qw[v][4 * i + 1] = q.y, qw[v][4 * i + 2] = q.z, qw[v][4 * i + 3] = q.w;
          }
          const uint2* blocks = reinterpret_cast<const uint2*>(st + packed_values_vecs(FMT));
          sb[v][0] = blocks[g];
          sb[v][1] = blocks[8 + g];
        }
      }
      uint32_t b[kGroupsPerChunk][NT][2];
      if constexpr (kStaged) load_staged_b(c, b);
#pragma unroll
      for (int h = 0; h < kGroupsPerChunk; ++h) {
        if constexpr (!kStaged) load_b(c, h, b[h]);
        uint32_t a[NV][4];
#pragma unroll
        for (int v = 0; v < NV; ++v) {
          if constexpr (kQuantized) {
            qfrag::fragments<FMT>(qw[v], h, sb[v][h / 2], a[v]);
          } else {
            const uint4* row = stage_of(stage, v) + a_row * kChunkK8;
            ldmatrix_x4(a[v], static_cast<uint32_t>(__cvta_generic_to_shared(row + ((2 * h + a_half) ^ (a_row % 8)))));
          }
        }
#pragma unroll
        for (int j = 0; j < NT; ++j)
#pragma unroll
          for (int v = 0; v < NV; ++v) tc::mma_group<FMT>(acc[v][j], a[v], b[h][j][0], b[h][j][1]);
      }
      __syncwarp();  // every lane has read the stage before any refills it
      if (c + R < c1) {
        fill(c + R, stage);
        tc::cp_async_arrive(bars + 8 * stage);
      }
      if (++stage == R) stage = 0, parity ^= 1;
    }
  };
  if (p.x_stage_stride) chunk_loop(std::true_type{});
  else chunk_loop(std::false_type{});

  float* sum = &acc[0][0][0];  // acc viewed as kAcc floats, index (v * NT + j) * 4 + e
  if (S > 1) {
    // Publish this piece; the tile's last piece to arrive adds all S in piece order. Each warp
    // counts in on its own tile's counter, so a warp that finishes early neither waits for the
    // others of its block nor makes them wait (a block barrier here was the kernel's top stall).
    if (idle) return;  // no tile: nothing to publish, and no warp of another piece waits for it
    float* mine = p.partials + (static_cast<size_t>(blockIdx.x) * kWarps + warp) * kWarpPartialFloats;
#pragma unroll
    for (int a = 0; a < kAcc; ++a) mine[a * 32 + lane] = sum[a];
    // The lanes' stores are ordered before lane 0's count (the warp barrier), a release atomic at
    // GPU scope; the last piece's lane 0 then acquires every other piece's (gemv_common.cuh), in
    // place of a sequentially consistent fence in every lane on both sides (MEMBAR.SC.GPU, which
    // also emptied L1, at the end of every split product).
    __syncwarp();
    const int counter = ((seg ? p.group_end[seg - 1] : 0) + group) * kWarps + warp;
    int last = 0;
    if (lane == 0) {
      last = gemv::count_in_release(&p.counters[counter]) == S - 1;
      if (last) gemv::acquire_arrivals();
    }
    if (!__shfl_sync(0xffffffffu, last, 0)) return;
    __syncwarp();  // lane 0's acquire, before every lane's loads
    const float* first = p.partials + (static_cast<size_t>(blockIdx.x - piece) * kWarps + warp) * kWarpPartialFloats;
    // The partials are loaded kFoldPieces pieces at a time, every load issued before the first add,
    // so that the fold costs an L2 round trip per kFoldPieces pieces, not one per value.
    constexpr int kFoldPieces = kAcc >= 64 ? 1 : 64 / kAcc;
    float total[kAcc];
    for (int q0 = 0; q0 < S; q0 += kFoldPieces) {
      float val[kFoldPieces][kAcc];
#pragma unroll
      for (int i = 0; i < kFoldPieces; ++i) {
        const int q = q0 + i;
        const float* from = first + static_cast<size_t>(q) * kWarps * kWarpPartialFloats + lane;
#pragma unroll
        for (int a = 0; a < kAcc; ++a) val[i][a] = q < S && q != piece ? __ldcg(from + a * 32) : sum[a];
      }
#pragma unroll
      for (int i = 0; i < kFoldPieces; ++i)
#pragma unroll
        for (int a = 0; a < kAcc; ++a)
          if (q0 + i < S) total[a] = q0 + i == 0 ? val[i][a] : total[a] + val[i][a];
    }
#pragma unroll
    for (int a = 0; a < kAcc; ++a) sum[a] = total[a];
    if (lane == 0) p.counters[counter] = 0;  // ready for the next launch
  }
  if (idle) return;

  // Fragment element e of tile j: feature f0 + g (+ 8 for e >= 2), x row 8j + 2t (+ 1 for odd e).
#pragma unroll
  for (int j = 0; j < NT; ++j) {
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int f = f0 + g + (e >= 2 ? 8 : 0), m = 8 * j + 2 * t + (e & 1);
      if (f >= n || m >= p.M) continue;
      if constexpr (GATED)
        o.y[static_cast<size_t>(m) * o.ldy + f] = gemv::gated_output(o, p.out[1], m, f, sum[j * 4 + e], sum[(NT + j) * 4 + e]);
      else gemv::store_output(o, m, f, sum[j * 4 + e]);
    }
  }
}

// `longest`: the chunks of the launch's longest piece.
template <int NT, typename XT, bool GATED, int FMT>
void launch_instance(Params p, int longest, const GemvTuning& t, Stream s) {
  constexpr int NV = GATED ? 2 : 1;
  const auto kernel = gemv_mma_kernel<NT, XT, GATED, FMT>;
  // What the kernel allows, by its registers, threads and static shared memory (the same on every
  // device of a process, as the backend runs on one kind).
  struct Limits {
    int resident = 1;
    size_t max_dynamic = 0;
  };
  static const Limits limits = [&] {
    Limits l;
    cudaFuncAttributes attributes{};
    check_cuda(cudaFuncGetAttributes(&attributes, kernel), "gemv_mma attributes", __FILE__, __LINE__);
    l.max_dynamic = static_cast<size_t>(t.smem_per_block) - attributes.sharedSizeBytes;
    check_cuda(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&l.resident, kernel, kWarps * 32, 0), "gemv_mma occupancy",
               __FILE__, __LINE__);
    return l;
  }();
  allow_dynamic_smem(reinterpret_cast<const void*>(kernel), limits.max_dynamic, "gemv_mma shared memory");
  const int blocks = p.block_end[p.n_outs - 1];
  const size_t x_bytes = static_cast<size_t>(p.M) * p.x_stage_stride * 4;
  p.ring_stages = ring_stages(blocks, limits.resident, limits.max_dynamic, longest, NV, FMT, x_bytes, t);
  launch_kernel("gemv_mma", kernel, dim3(static_cast<unsigned>(blocks)), dim3(kWarps * 32),
                kBarrierBytes + ring_bytes(p.ring_stages, NV, FMT) + x_bytes, s, p);
}

template <int NT, typename XT, bool GATED>
void launch_format(const Params& p, int longest, const GemvTuning& t, Stream s) {
  with_format(p.out[0].format, [&](auto format) {
    constexpr int FMT = decltype(format)::value;
    // fp8's x is the e4m3 codes of launch_quantize_rows_e4m3, read as bf16 pairs.
    if constexpr (FMT == kGemvFp8 && !std::is_same_v<XT, __nv_bfloat16>)
      check(false, "cuda gemv", "fp8 weights take quantized rows of x, not fp32 ones");
    else
      launch_instance<NT, XT, GATED, FMT>(p, longest, t, s);
  });
}

template <int NT, typename XT>
void launch_nt(const Params& p, bool gated, int longest, const GemvTuning& t, Stream s) {
  if (gated) launch_format<NT, XT, true>(p, longest, t, s);
  else launch_format<NT, XT, false>(p, longest, t, s);
}

template <typename XT>
void launch_typed(const Params& p, bool gated, int longest, const GemvTuning& t, Stream s) {
  if (p.M <= 8) launch_nt<1, XT>(p, gated, longest, t, s);
  else if (p.M <= 16) launch_nt<2, XT>(p, gated, longest, t, s);
  else launch_nt<4, XT>(p, gated, longest, t, s);
}

int groups_of(int n) { return (n + kWarps * kTileRows - 1) / (kWarps * kTileRows); }

}  // namespace

// Pieces of K for a weight of n features: enough warps (tiles x pieces) for about
// t.split_warps_per_sm an SM, each piece at least t.min_piece_chunks chunks (a quantized weight:
// the packed_ pair, its chunks being fewer bytes). Depends on the weight and the device only.
int gemv_mma_pieces(int n, int K, const GemvTuning& t, int format) {
  const bool packed = packed_format(format);  // fp8's chunks are bf16's bytes: bf16's tuning
  const int tiles = (n + kTileRows - 1) / kTileRows, chunks = chunks_of(K / 8);
  const int target = (packed ? t.packed_split_warps_per_sm : t.split_warps_per_sm) * t.sm_count;
  const int min_chunks = packed ? t.packed_min_piece_chunks : t.min_piece_chunks;
  if (tiles == 0 || target <= tiles) return 1;
  return std::clamp((target + tiles - 1) / tiles, 1, std::max(chunks / std::max(min_chunks, 1), 1));
}

GemvWorkspaceSize gemv_mma_workspace(const Params& p, const GemvTuning& t) {
  GemvWorkspaceSize need;
  size_t blocks = 0, groups = 0;
  bool split = false;
  for (int i = 0; i < p.n_outs; ++i) {
    const int S = gemv_mma_pieces(p.out[i].n, p.K8 * 8, t, p.out[i].format);
    blocks += static_cast<size_t>(groups_of(p.out[i].n)) * S;
    groups += groups_of(p.out[i].n);
    split = split || S > 1;
  }
  if (split) {
    need.partial_floats = blocks * kWarps * kWarpPartialFloats;
    need.counters = groups * kWarps;  // one a tile (kernel: the split-K fold)
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
  int groups = 0, blocks = 0, longest = 0;
  const int chunks = chunks_of(p.K8);
  for (int i = 0; i < p.n_outs; ++i) {
    p.pieces[i] = gemv_mma_pieces(p.out[i].n, p.K8 * 8, t, p.out[i].format);
    groups += groups_of(p.out[i].n);
    blocks += groups_of(p.out[i].n) * p.pieces[i];
    p.group_end[i] = groups;
    p.block_end[i] = blocks;
    longest = std::max(longest, (chunks + p.pieces[i] - 1) / p.pieces[i]);
  }
  if (blocks == 0) return;
  for (int i = 0; i < p.n_outs; ++i)
    if (packed_format(p.out[i].format)) p.out[i].group_div = qlayout::divider(p.out[i].group);
  // Stage x when the longest piece's rows fit (top comment of the kernel's x staging).
  const int stride = longest * kChunkK8 * 4 + 4;
  p.x_stage_stride = static_cast<size_t>(p.M) * stride * 4 <= kXStageMaxBytes ? stride : 0;
  if (x_bf16) launch_typed<__nv_bfloat16>(p, gated, longest, t, s);
  else launch_typed<float>(p, gated, longest, t, s);
}

}  // namespace voxrt::cuda
