// The tiled GEMM on Hopper's warpgroup MMA (wgmma, sm_90a) and tensor-memory copies (TMA): for every
// output the same bits as the GEMV (kernels_gemv_mma.cu), at the matrix rate rather than the
// weight's read rate once there are more than a few dozen rows.
//
// Why the same bits. Both follow the products' order (tensor_core.cuh): each piece of K one chain of
// k16 groups in their natural order, from a zero accumulator, the pieces added in order. The tensor
// cores round a sum of 16 products and the running value the same whatever their order inside one
// instruction, and wgmma rounds as mma.sync does; what would change the bits is which 16 products
// share an instruction, or where a chain restarts from zero (tools/probes/mma_numerics.cu,
// bench/results/2026-12-02-mma-numerics.txt). Here every wgmma is one k16 group of the chain, with
// scale-d 1 on an accumulator zeroed at the piece's start, as the GEMV's first mma adds its products
// to a zero C.
//
// The block: one thread copies, two warpgroups multiply (warp specialisation). The copying thread
// stages, per 64-element chunk, the tile's 128 weight rows (gated: the 64 features' gate rows, then
// their up rows) and BR (64 or 128) x rows, each a TMA box in the 128-byte swizzle that wgmma reads
// without bank conflicts, stage_count stages deep. A stage is handed over through a pair of
// mbarriers: "full" when its bytes have landed, "empty" once both warpgroups' wgmma that read it
// are done. Each warpgroup owns 64 weight rows times all BR x rows: four m64nBRk16 wgmma a chunk
// into the running chain, at most two chunks in flight; only at a piece's end is the chain drained
// and added into the total. The copying warpgroup gives its registers to the multiplying ones
// (setmaxnreg). Gated, warpgroup 0 multiplies the gate rows and 1 the up rows of the same 64
// features; the up totals cross through shared memory at the end, where silu(gate) * up is formed.
//
// Quantized weights (4w, 8w; quant_layout.h), Marlin's idea on wgmma with A in registers: a stage
// holds, for each warpgroup's 4 tiles of 16 features, the packed values of the chunk as they are
// stored (each lane's fragments in one 16- or 32-byte piece, copied by TMA as a 2-D box of tiles x
// words) and the scale blocks of the chunk's two halves; each warp dequantizes its own tile's
// fragments into registers (quant_fragments.cuh), exactly the A fragments the GEMV and the mma.sync
// GEMM make of them, and the warpgroup's wgmma takes them as its A operand. Every packed value is
// dequantized once a block, against the mma.sync kernel's four times (each of its row warps), and
// the weights' part of a stage is a quarter (4w) or a half (8w) of bf16's, so more chunks are in
// flight. The fragments are double-buffered: a chunk's are made while the previous chunk's wgmma
// still read theirs.
//
// fp8 weights (W8A8, Hopper's every fp8 product: kernels_gemm_launch.cu): the e4m3 codes of the
// weights and of x staged as bf16's bytes are (quant_layout.h), each group an e4m3 wgmma of k32;
// a chunk's sum starts from zero and is added to the chain in fp32 (tensor_core.cuh).

#include <cuda.h>
#include <cuda_bf16.h>
#include <cudaTypedefs.h>

#include <algorithm>
#include <cstdint>
#include <string>

#include "runtime/cuda/cuda_check.h"
#include "runtime/cuda/cuda_kernels.h"
#include "runtime/cuda/gemm_tiles.cuh"
#include "runtime/cuda/gemv_common.cuh"
#include "runtime/cuda/hopper.cuh"
#include "runtime/cuda/launch.cuh"
#include "runtime/cuda/quant_fragments.cuh"
#include "runtime/cuda/tensor_core.cuh"

// wgmma exists in sm_90a code only: every other target (a plain sm_90, compute_80 PTX the driver
// compiles for a Hopper GPU, Ada, Ampere) compiles a kernel that traps, and gemm_wgmma_available()
// tells the backend not to use it.
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define VOXRT_HAS_WGMMA 1
#else
#define VOXRT_HAS_WGMMA 0
#endif

namespace voxrt::cuda::gemm {

// 1 in the code the kernel's body was compiled into (read by gemm_wgmma_available()).
__device__ int g_wgmma_compiled = VOXRT_HAS_WGMMA;

namespace {

using tc::kChunkK8;
using tc::kGroupsPerChunk;
using tc::mbar_init;
using tc::mbar_wait_parity;
using namespace hopper;

constexpr int kConsumers = 2;                     // multiplying warpgroups, 64 weight rows each
constexpr int kThreads = (kConsumers + 1) * 128;  // and the copying warpgroup
constexpr int kRowBytes = kChunkK8 * 16;          // a staged row: one chunk, 128 bytes
constexpr int kBarrierBytes = 256;                // the stages' mbarriers
constexpr int kAlign = 1024;                      // the 128-byte swizzle's period: stages start on it
constexpr int kProducerRegisters = 24, kConsumerRegisters = 240;  // 24 + 2 x 240 = 3 x 168
static_assert(kProducerRegisters + kConsumers * kConsumerRegisters <= 3 * 168, "setmaxnreg: the block's registers");

// A stage: the weights' chunk, then x's [BR rows][128 bytes] as TMA's 128-byte swizzle lays it out
// (1024-byte aligned). bf16 weights: [128 rows][128 bytes] (gated: 64 gate rows, then 64 up rows),
// swizzled as x. Quantized: the packed values [warpgroup][tile of 4][32 lanes][lane_bytes], then
// the scale blocks [half of the chunk][warpgroup][tile of 4][64 bytes] (quant_layout.h; gated,
// warpgroup 0's tiles are the gate weight's and 1's the up weight's of the same features).
constexpr int kTilesPerWarpgroup = 4;
constexpr int kScaleBlockBytes = 64;
__host__ __device__ constexpr int packed_tile_bytes(int fmt) { return 32 * qlayout::lane_bytes(fmt); }
__host__ __device__ constexpr int packed_values_bytes(int fmt) {
  return kConsumers * kTilesPerWarpgroup * packed_tile_bytes(fmt);
}
__host__ __device__ constexpr int weight_stage_bytes(int fmt) {
  return !packed_format(fmt) ? kWeightRows * kRowBytes
                             : packed_values_bytes(fmt) + 2 * kConsumers * kTilesPerWarpgroup * kScaleBlockBytes;
}
__host__ __device__ constexpr int stage_bytes(int BR, int fmt) { return weight_stage_bytes(fmt) + BR * kRowBytes; }
// Stages in flight: as many as 192 KiB hold (bf16: 6 of 32 KiB, or 8 of 24 KiB; 4w: 9 or 14).
constexpr int kStagesBytes = 192 * 1024, kMaxStages = 16;
__host__ __device__ constexpr int stage_count(int BR, int fmt) {
  return kStagesBytes / stage_bytes(BR, fmt) < kMaxStages ? kStagesBytes / stage_bytes(BR, fmt) : kMaxStages;
}
static_assert(2 * 8 * kMaxStages <= kBarrierBytes, "the mbarriers must fit their room");
static_assert(weight_stage_bytes(kGemvInt4) % kAlign == 0 && weight_stage_bytes(kGemvInt8) % kAlign == 0,
              "x's part of a stage on the swizzle's period");
__host__ __device__ constexpr size_t smem_bytes(int BR, int fmt) {
  return kBarrierBytes + kAlign + static_cast<size_t>(stage_count(BR, fmt)) * stage_bytes(BR, fmt);
}
// Gated: the up totals, [accumulator][thread of the warpgroup], in the stages' memory once they are done.
static_assert(128 * 64 * 4 <= kStagesBytes - stage_bytes(128, kGemvBf16), "the up totals must fit the stages");

// The tensor maps of a launch: one per weight (gated: gate, up), and x; quantized weights, their
// packed values in w and their scale blocks in scales.
struct TmaMaps {
  CUtensorMap w[kGemvMaxOutputs];
  CUtensorMap scales[kGemvMaxOutputs];
  CUtensorMap x;
};

// The copying thread: every chunk of the block, in order, into stage i % stage_count once the
// multiplying warpgroups have released it.
template <int BR, bool GATED, int FMT>
__device__ __forceinline__ void copy_chunks(const Params& p, const TmaMaps& maps, const BlockJob& b, uint32_t full0,
                                            uint32_t empty0, uint32_t stage0) {
  constexpr int NS = stage_count(BR, FMT);
  const int m = GATED ? 0 : b.seg;
  const int K = 8 * p.K8, groups = packed_format(FMT) ? qlayout::groups_of(K, p.out[b.seg].group) : 0;
  for (int c = b.chunk0, i = 0; c < b.chunk1; ++c, ++i) {
    const int s = i % NS;
    if (i >= NS) mbar_wait_parity(empty0 + 8 * s, (i / NS - 1) & 1);
    const uint32_t stage = stage0 + s * stage_bytes(BR, FMT), bar = full0 + 8 * s;
    const int k = c * kChunkK8 * 8;
    mbar_arrive_expect_bytes(bar, stage_bytes(BR, FMT));
    if constexpr (!packed_format(FMT)) {
      tma_load_2d(stage, &maps.w[m], k, b.f0, bar);  // gated: the gate rows, then the up rows
      if (GATED) tma_load_2d(stage + weight_stage_bytes(FMT) / 2, &maps.w[1], k, b.f0, bar);
    } else {
      // Each warpgroup's 4 tiles (gated: the gate's, then the up weight's same tiles), their values
      // of chunk c and the scale blocks of its halves' groups; a half past K gets a block past the
      // last group, which arrives as zeros (zero weights, as the GEMV's).
#pragma unroll
      for (int wg = 0; wg < kConsumers; ++wg) {
        const int map = GATED ? wg : m, tile = b.f0 / 16 + (GATED ? 0 : kTilesPerWarpgroup * wg);
        tma_load_2d(stage + wg * kTilesPerWarpgroup * packed_tile_bytes(FMT), &maps.w[map],
                    c * packed_tile_bytes(FMT) / 4, tile, bar);
#pragma unroll
        for (int half = 0; half < 2; ++half) {
          const int kh = k + 32 * half;
          const int group = kh < K ? qlayout::divide(kh, p.out[b.seg].group_div) : groups;
          tma_load_2d(stage + packed_values_bytes(FMT) + (half * kConsumers + wg) * kTilesPerWarpgroup * kScaleBlockBytes,
                      &maps.scales[map], group * kScaleBlockBytes / 4, tile, bar);
        }
      }
    }
    tma_load_2d(stage + weight_stage_bytes(FMT), &maps.x, k, b.r0, bar);
  }
}

template <int BR, bool GATED, int FMT>
__global__ void __launch_bounds__(kThreads, 1) gemm_wgmma_kernel(const __grid_constant__ Params p,
                                                                 const __grid_constant__ TmaMaps maps) {
#if !VOXRT_HAS_WGMMA
  __trap();
#else
  pdl_trigger();
  constexpr bool kQuantized = packed_format(FMT);  // 4w, 8w: dequantized into A in registers
  constexpr int NA = BR / 2;  // accumulators a thread: 64 x BR a warpgroup over 128 threads
  constexpr int NS = stage_count(BR, FMT);
  const BlockJob b = block_job<GATED>(p, BR);
  extern __shared__ uint4 smem[];
  const uint32_t smem0 = static_cast<uint32_t>(__cvta_generic_to_shared(smem));
  const uint32_t full0 = smem0, empty0 = smem0 + 8 * NS;
  const uint32_t stage0 = (smem0 + kBarrierBytes + kAlign - 1) / kAlign * kAlign;
  if (threadIdx.x == 0) {
    for (int s = 0; s < NS; ++s) {
      mbar_init(full0 + 8 * s, 1);                // the copying thread, and the stage's bytes
      mbar_init(empty0 + 8 * s, kConsumers * 4);  // one lane of every multiplying warp
    }
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  __syncthreads();
  pdl_wait();  // x (and y, for accumulating outputs) come from the previous kernel
  if (threadIdx.x < 128) {
    registers_down<kProducerRegisters>();
    if (threadIdx.x == 0) copy_chunks<BR, GATED, FMT>(p, maps, b, full0, empty0, stage0);
    return;
  }
  registers_up<kConsumerRegisters>();

  const GemvOut& o = p.out[b.seg];
  const int n = o.n, S = p.pieces[b.seg];
  const int tid = threadIdx.x - 128, wg = tid / 128, wq = (tid / 32) % 4, lane = tid % 32, g = lane / 4, t = lane % 4;

  // Accumulator a = 4 i + e: weight row 16 wq + g (+ 8 for e >= 2) of this warpgroup's 64, x row
  // 8 i + 2 t (+ 1 for odd e). Gated, both warpgroups' row r is feature r of the block's 64.
  auto feature_of = [&](int a) { return b.f0 + (GATED ? 0 : 64 * wg) + 16 * wq + g + (a & 2 ? 8 : 0); };
  auto row_of = [&](int a) { return b.r0 + 8 * (a / 4) + 2 * t + (a & 1); };

  float acc[NA], total[NA];  // the running chain, the pieces' sum
#pragma unroll
  for (int a = 0; a < NA; ++a) acc[a] = total[a] = 0;

  // Chunk i's four wgmma are issued, then chunk i - 1's waited for and its stage released; at a
  // piece's end its chain is drained and added into the total. The chunks of a piece are a loop of
  // their own, with nothing but wgmma touching the accumulators inside it: a path into the loop
  // that wrote them otherwise would make the compiler drain every chunk (its warning C7517).
  const uint32_t a_off = wg * 64 * kRowBytes;  // this warpgroup's 64 weight rows (bf16)
  // Quantized: this lane's packed vectors and the scale blocks of its tile (warp wq of warpgroup wg).
  const int tile_slot = wg * kTilesPerWarpgroup + wq;
  auto release = [&](int s) {
    if (lane == 0) mbar_arrive(empty0 + 8 * s);
  };
  // Chunk i's stage, once its bytes have landed.
  auto landed = [&](int i) {
    mbar_wait_parity(full0 + 8 * (i % NS), (i / NS) & 1);
    return stage0 + (i % NS) * stage_bytes(BR, FMT);
  };
  // Chunk i into the chain; quantized, its fragments made into `a` while the previous chunk's wgmma
  // still read `previous`, which the wait then frees.
  auto multiply = [&](int i, bool release_previous, uint32_t (&a)[kGroupsPerChunk][4],
                      uint32_t (&previous)[kGroupsPerChunk][4]) {
    const uint32_t stage = landed(i);
    const uint64_t db = smem_desc_sw128(stage + weight_stage_bytes(FMT));
    if constexpr (kQuantized) {
      const char* st = reinterpret_cast<const char*>(smem) + (stage - smem0);
      constexpr int kLaneVecs = qfrag::Traits<FMT>::kLaneVecs;
      uint32_t qw[4 * kLaneVecs];
      const uint4* mine = reinterpret_cast<const uint4*>(st + tile_slot * packed_tile_bytes(FMT)) + lane * kLaneVecs;
#pragma unroll
      for (int v = 0; v < kLaneVecs; ++v) {
        const uint4 q = mine[v];
        qw[4 * v] = q.x, qw[4 * v + 1] = q.y, qw[4 * v + 2] = q.z, qw[4 * v + 3] = q.w;
      }
      uint2 sb[2];
#pragma unroll
      for (int half = 0; half < 2; ++half)
        sb[half] = reinterpret_cast<const uint2*>(st + packed_values_bytes(FMT) +
                                                  ((half * kConsumers + wg) * kTilesPerWarpgroup + wq) *
                                                      kScaleBlockBytes)[g];
#pragma unroll
      for (int h = 0; h < kGroupsPerChunk; ++h) qfrag::fragments<FMT>(qw, h, sb[h / 2], a[h]);
    }
    pin(acc);
    wgmma_fence();
    if constexpr (kQuantized) {
#pragma unroll
      for (int h = 0; h < kGroupsPerChunk; ++h) wgmma_rs<BR>(acc, a[h], db + 2 * h);
    } else {
      const uint64_t da = smem_desc_sw128(stage + a_off);
#pragma unroll
      for (int h = 0; h < kGroupsPerChunk; ++h) wgmma_ss<BR>(acc, da + 2 * h, db + 2 * h);
    }
    wgmma_commit();
    wgmma_wait<1>();
    pin(acc);
    if constexpr (kQuantized) pin_u32(previous);
    if (release_previous) release((i - 1) % NS);
  };
  // fp8: each chunk's four k32 wgmma summed from zero into a part of its own, added to the piece's
  // chain in fp32 once they are done: wgmma's e4m3 sum keeps too few bits to carry a whole piece
  // (tools/probes/mma_fp8_numerics.cu). The add waits for the chunk's wgmma (ptxas would serialize
  // them anyway, reading accumulators between wgmma and wait: its C7514); the other warpgroup's
  // wgmma run meanwhile.
  float part[NA];
  auto multiply_fp8 = [&](int i) {
    const uint32_t stage = landed(i);
    const uint64_t da = smem_desc_sw128(stage + a_off), db = smem_desc_sw128(stage + weight_stage_bytes(FMT));
    pin(part);
    wgmma_fence();
#pragma unroll
    for (int h = 0; h < kGroupsPerChunk; ++h) wgmma_ss_e4m3<BR>(part, da + 2 * h, db + 2 * h, h);
    wgmma_commit();
    wgmma_wait<0>();
    pin(part);
#pragma unroll
    for (int a = 0; a < NA; ++a) acc[a] += part[a];
    release(i % NS);
  };
  uint32_t frag0[kGroupsPerChunk][4], frag1[kGroupsPerChunk][4];
  int i = 0;  // chunks multiplied so far
  for (int q = b.piece0; q < b.piece1; ++q) {
    const int chunks = tc::piece_begin(q + 1, p.chunks, S) - tc::piece_begin(q, p.chunks, S);
    if constexpr (FMT == kGemvFp8) {
      for (int c = 0; c < chunks; ++c) multiply_fp8(i++);
    } else {
      // Two chunks a turn, so that each fragment buffer is a fixed set of registers.
      int c = 0;
      for (; c + 1 < chunks; c += 2, i += 2) {
        multiply(i, c > 0, frag0, frag1);
        multiply(i + 1, true, frag1, frag0);
      }
      if (c < chunks) multiply(i++, c > 0, frag0, frag1);
      wgmma_wait<0>();
      pin(acc);
      if constexpr (kQuantized) {
        pin_u32(frag0);
        pin_u32(frag1);
      }
      release((i - 1) % NS);
    }
    const bool first = q == b.piece0;
#pragma unroll
    for (int a = 0; a < NA; ++a) {
      total[a] = first ? acc[a] : total[a] + acc[a];
      acc[a] = 0;
    }
  }

  if (p.split) {
    // One piece: its chain, as it is, to the workspace; gemm_fold_kernel adds the pieces.
    const int width = GATED ? 2 * n : n;
    float* w = p.workspace + p.workspace_at[b.seg] + static_cast<size_t>(b.piece0) * p.M * width + (GATED && wg ? n : 0);
#pragma unroll
    for (int a = 0; a < NA; ++a) {
      const int f = feature_of(a), m = row_of(a);
      if (f < n && m < p.M) w[static_cast<size_t>(m) * width + f] = total[a];
    }
    return;
  }
  if constexpr (GATED) {
    // The up totals (warpgroup 1) to the gate's threads (warpgroup 0), through the stages' memory
    // once both warpgroups are done with it.
    float* up = reinterpret_cast<float*>(smem) + (stage0 - smem0) / 4;
    named_barrier(1, kConsumers * 128);
    if (wg == 1) {
#pragma unroll
      for (int a = 0; a < NA; ++a) up[a * 128 + tid % 128] = total[a];
    }
    named_barrier(1, kConsumers * 128);
    if (wg == 1) return;
#pragma unroll
    for (int a = 0; a < NA; ++a) {
      const int f = feature_of(a), m = row_of(a);
      if (f < n && m < p.M)
        o.y[static_cast<size_t>(m) * o.ldy + f] = gemv::gated_output(o, p.out[1], m, f, total[a], up[a * 128 + tid]);
    }
  } else {
#pragma unroll
    for (int a = 0; a < NA; ++a) {
      const int f = feature_of(a), m = row_of(a);
      if (f < n && m < p.M) gemv::store_output(o, m, f, total[a]);
    }
  }
#endif
}

// cuTensorMapEncodeTiled, from the driver the runtime loaded (no link against libcuda).
PFN_cuTensorMapEncodeTiled_v12000 encode_tiled() {
  static PFN_cuTensorMapEncodeTiled_v12000 fn = [] {
    void* f = nullptr;
    cudaDriverEntryPointQueryResult found{};
    check_cuda(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &f, 12000, cudaEnableDefault, &found),
               "cudaGetDriverEntryPointByVersion", __FILE__, __LINE__);
    check(f && found == cudaDriverEntryPointSuccess, "cuda gemm (wgmma)", "the driver has no cuTensorMapEncodeTiled");
    return reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(f);
  }();
  return fn;
}

// A row-major matrix [rows, cols] of `type` (row stride `stride` bytes) for boxes of box_cols x
// box_rows, in `swizzle`; what lies outside it arrives as zeros.
void encode(CUtensorMap& map, CUtensorMapDataType type, const void* base, long long cols, long long rows, size_t stride,
            int box_cols, int box_rows, CUtensorMapSwizzle swizzle, const char* what) {
  const cuuint64_t dims[2] = {static_cast<cuuint64_t>(cols), static_cast<cuuint64_t>(rows)};
  const cuuint64_t strides[1] = {static_cast<cuuint64_t>(stride)};
  const cuuint32_t box[2] = {static_cast<cuuint32_t>(box_cols), static_cast<cuuint32_t>(box_rows)};
  const cuuint32_t ones[2] = {1, 1};
  const CUresult r = encode_tiled()(&map, type, 2, const_cast<void*>(base), dims, strides, box, ones,
                                    CU_TENSOR_MAP_INTERLEAVE_NONE, swizzle, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                                    CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  check(r == CUDA_SUCCESS, "cuda gemm (wgmma)", std::string("cannot describe ") + what + " to the TMA (error " +
                                                    std::to_string(static_cast<int>(r)) + ")");
}
// bf16 rows of K, 64 columns a box, in the 128-byte swizzle wgmma's descriptors read.
void encode_bf16(CUtensorMap& map, const void* base, int cols, int rows, size_t stride, int box_rows, const char* what) {
  encode(map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, base, cols, rows, stride, kChunkK8 * 8, box_rows,
         CU_TENSOR_MAP_SWIZZLE_128B, what);
}
// A quantized weight (quant_layout.h) as two matrices of 32-bit words, a row a tile of 16 features:
// its packed values (a chunk's a box column) and its scale blocks (a group's 64 bytes a box
// column), 4 tiles a box, unswizzled (each lane reads its own 16 bytes).
void encode_packed(TmaMaps& maps, int i, const GemvOut& w, int K, int chunks) {
  const int tiles = qlayout::tiles_of(w.n), groups = qlayout::groups_of(K, w.group);
  const int tile_words = packed_tile_bytes(w.format) / 4;
  encode(maps.w[i], CU_TENSOR_MAP_DATA_TYPE_UINT32, w.packed, static_cast<long long>(chunks) * tile_words, tiles,
         static_cast<size_t>(chunks) * packed_tile_bytes(w.format), tile_words, kTilesPerWarpgroup,
         CU_TENSOR_MAP_SWIZZLE_NONE, "a weight's packed values");
  encode(maps.scales[i], CU_TENSOR_MAP_DATA_TYPE_UINT32, w.scales, static_cast<long long>(groups) * kScaleBlockBytes / 4,
         tiles, static_cast<size_t>(groups) * kScaleBlockBytes, kScaleBlockBytes / 4, kTilesPerWarpgroup,
         CU_TENSOR_MAP_SWIZZLE_NONE, "a weight's scales");
}

template <int BR, bool GATED, int FMT>
void launch_instance(const Params& p, const TmaMaps& maps, Stream s) {
  const auto kernel = gemm_wgmma_kernel<BR, GATED, FMT>;
  allow_dynamic_smem(reinterpret_cast<const void*>(kernel), smem_bytes(BR, FMT), "gemm_wgmma shared memory");
  launch_kernel("gemm_wgmma", kernel, dim3(static_cast<unsigned>(p.block_end[p.n_outs - 1])), dim3(kThreads),
                smem_bytes(BR, FMT), s, p, maps);
}

template <int BR, bool GATED>
void launch_format(const Params& p, const TmaMaps& maps, Stream s) {
  with_format(p.out[0].format, [&](auto format) { launch_instance<BR, GATED, decltype(format)::value>(p, maps, s); });
}

template <int BR>
void launch_rows(const Params& p, const TmaMaps& maps, bool gated, Stream s) {
  if (gated) launch_format<BR, true>(p, maps, s);
  else launch_format<BR, false>(p, maps, s);
}

}  // namespace

size_t wgmma_smem_bytes(int nt, int format) { return smem_bytes(block_rows(nt), format); }

void launch_gemm_wgmma(const Params& p, int nt, bool gated, Stream s) {
  check(nt == 2 || nt == 4, "cuda gemm (wgmma)", "64 or 128 rows a block");
  const int BR = block_rows(nt);
  TmaMaps maps{};
  const int K = p.K8 * 8;
  const int weights = gated ? 2 : p.n_outs;
  for (int i = 0; i < weights; ++i) {
    if (!packed_format(p.out[i].format))  // bf16, or fp8's codes read as bf16 pairs
      encode_bf16(maps.w[i], p.out[i].w, K, p.out[i].n, static_cast<size_t>(K) * 2, gated ? 64 : 128, "a weight");
    else
      encode_packed(maps, i, p.out[i], K, p.chunks);
  }
  encode_bf16(maps.x, p.x, K, p.M, static_cast<size_t>(p.ldx8) * 16, BR, "x");
  if (nt == 4) launch_rows<block_rows(4)>(p, maps, gated, s);
  else launch_rows<block_rows(2)>(p, maps, gated, s);
}

}  // namespace voxrt::cuda::gemm

namespace voxrt::cuda {

bool gemm_wgmma_available() {
  // Whether the code the driver loaded for the current device has the kernel's body: read from the
  // device, because a compute_80 build JIT-compiled for a Hopper GPU reports that GPU's binary
  // version while its kernel traps.
  int compiled = 0;
  if (cudaMemcpyFromSymbol(&compiled, gemm::g_wgmma_compiled, sizeof compiled) != cudaSuccess) {
    (void)cudaGetLastError();
    return false;
  }
  return compiled == 1;
}

}  // namespace voxrt::cuda
