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
// without bank conflicts, stage_count(BR) stages deep. A stage is handed over through a pair of
// mbarriers: "full" when its bytes have landed, "empty" once both warpgroups' wgmma that read it
// are done. Each warpgroup owns 64 weight rows times all BR x rows: four m64nBRk16 wgmma a chunk
// into the running chain, at most two chunks in flight; only at a piece's end is the chain drained
// and added into the total. The copying warpgroup gives its registers to the multiplying ones
// (setmaxnreg). Gated, warpgroup 0 multiplies the gate rows and 1 the up rows of the same 64
// features; the up totals cross through shared memory at the end, where silu(gate) * up is formed.

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
using namespace hopper;

constexpr int kConsumers = 2;                     // multiplying warpgroups, 64 weight rows each
constexpr int kThreads = (kConsumers + 1) * 128;  // and the copying warpgroup
constexpr int kRowBytes = kChunkK8 * 16;          // a staged row: one chunk, 128 bytes
constexpr int kBarrierBytes = 256;                // the stages' mbarriers
constexpr int kAlign = 1024;                      // the 128-byte swizzle's period: stages start on it
constexpr int kProducerRegisters = 24, kConsumerRegisters = 240;  // 24 + 2 x 240 = 3 x 168
static_assert(kProducerRegisters + kConsumers * kConsumerRegisters <= 3 * 168, "setmaxnreg: the block's registers");

// A stage: the weights' chunk [128 rows][128 bytes] (gated: 64 gate rows, then 64 up rows), then
// x's [BR rows][128 bytes], both as TMA's 128-byte swizzle lays them out.
constexpr int kWeightStageBytes = kWeightRows * kRowBytes;
__host__ __device__ constexpr int stage_bytes(int BR) { return kWeightStageBytes + BR * kRowBytes; }
// Stages in flight: 192 KiB of them either way (6 of 32 KiB, or 8 of 24 KiB).
__host__ __device__ constexpr int stage_count(int BR) { return BR == 128 ? 6 : 8; }
static_assert(2 * 8 * 8 <= kBarrierBytes, "the mbarriers must fit their room");
__host__ __device__ constexpr size_t smem_bytes(int BR) {
  return kBarrierBytes + kAlign + static_cast<size_t>(stage_count(BR)) * stage_bytes(BR);
}
// Gated: the up totals, [accumulator][thread of the warpgroup], in the stages' memory once they are done.
static_assert(128 * 64 * 4 <= 6 * (kWeightStageBytes + 128 * kRowBytes), "the up totals must fit the stages");

// The tensor maps of a launch: one per weight (gated: gate, up), and x.
struct TmaMaps {
  CUtensorMap w[kGemvMaxOutputs];
  CUtensorMap x;
};

// The copying thread: every chunk of the block, in order, into stage i % stage_count once the
// multiplying warpgroups have released it.
template <int BR, bool GATED>
__device__ __forceinline__ void copy_chunks(const TmaMaps& maps, const BlockJob& b, uint32_t full0, uint32_t empty0,
                                            uint32_t stage0) {
  constexpr int NS = stage_count(BR);
  const CUtensorMap* w = &maps.w[GATED ? 0 : b.seg];
  for (int c = b.chunk0, i = 0; c < b.chunk1; ++c, ++i) {
    const int s = i % NS;
    if (i >= NS) mbar_wait(empty0 + 8 * s, (i / NS - 1) & 1);
    const uint32_t stage = stage0 + s * stage_bytes(BR), bar = full0 + 8 * s;
    const int k = c * kChunkK8 * 8;
    mbar_arrive_expect_bytes(bar, stage_bytes(BR));
    tma_load_2d(stage, w, k, b.f0, bar);  // gated: the gate rows, then the up rows
    if (GATED) tma_load_2d(stage + kWeightStageBytes / 2, w + 1, k, b.f0, bar);
    tma_load_2d(stage + kWeightStageBytes, &maps.x, k, b.r0, bar);
  }
}

template <int BR, bool GATED>
__global__ void __launch_bounds__(kThreads, 1) gemm_wgmma_kernel(const __grid_constant__ Params p,
                                                                 const __grid_constant__ TmaMaps maps) {
#if !VOXRT_HAS_WGMMA
  __trap();
#else
  pdl_trigger();
  constexpr int NA = BR / 2;  // accumulators a thread: 64 x BR a warpgroup over 128 threads
  constexpr int NS = stage_count(BR);
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
    if (threadIdx.x == 0) copy_chunks<BR, GATED>(maps, b, full0, empty0, stage0);
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
  const uint32_t a_off = wg * 64 * kRowBytes;  // this warpgroup's 64 weight rows
  auto release = [&](int s) {
    if (lane == 0) mbar_arrive(empty0 + 8 * s);
  };
  int i = 0;  // chunks multiplied so far
  for (int q = b.piece0; q < b.piece1; ++q) {
    const int chunks = tc::piece_begin(q + 1, p.chunks, S) - tc::piece_begin(q, p.chunks, S);
    for (int c = 0; c < chunks; ++c, ++i) {
      const int s = i % NS;
      const uint32_t stage = stage0 + s * stage_bytes(BR);
      mbar_wait(full0 + 8 * s, (i / NS) & 1);
      const uint64_t da = smem_desc_sw128(stage + a_off), db = smem_desc_sw128(stage + kWeightStageBytes);
      pin(acc);
      wgmma_fence();
#pragma unroll
      for (int h = 0; h < kGroupsPerChunk; ++h) wgmma_ss<BR>(acc, da + 2 * h, db + 2 * h);
      wgmma_commit();
      wgmma_wait<1>();
      pin(acc);
      if (c > 0) release((i - 1) % NS);
    }
    wgmma_wait<0>();
    pin(acc);
    release((i - 1) % NS);
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
      if (f < n && m < p.M) o.y[static_cast<size_t>(m) * o.ldy + f] = gemv::silu_times(total[a], up[a * 128 + tid]);
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

// A row-major bf16 matrix [rows, cols] (row stride `stride` bytes) for boxes of 64 columns x
// box_rows rows, in the 128-byte swizzle; what lies outside it arrives as zeros.
void encode(CUtensorMap& map, const void* base, int cols, int rows, size_t stride, int box_rows, const char* what) {
  const cuuint64_t dims[2] = {static_cast<cuuint64_t>(cols), static_cast<cuuint64_t>(rows)};
  const cuuint64_t strides[1] = {static_cast<cuuint64_t>(stride)};
  const cuuint32_t box[2] = {static_cast<cuuint32_t>(kChunkK8 * 8), static_cast<cuuint32_t>(box_rows)};
  const cuuint32_t ones[2] = {1, 1};
  const CUresult r = encode_tiled()(&map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, const_cast<void*>(base), dims, strides,
                                    box, ones, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                                    CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  check(r == CUDA_SUCCESS, "cuda gemm (wgmma)", std::string("cannot describe ") + what + " to the TMA (error " +
                                                    std::to_string(static_cast<int>(r)) + ")");
}

template <int BR, bool GATED>
void launch_instance(const Params& p, const TmaMaps& maps, Stream s) {
  const auto kernel = gemm_wgmma_kernel<BR, GATED>;
  allow_dynamic_smem(reinterpret_cast<const void*>(kernel), smem_bytes(BR), "gemm_wgmma shared memory");
  launch_kernel("gemm_wgmma", kernel, dim3(static_cast<unsigned>(p.block_end[p.n_outs - 1])), dim3(kThreads),
                smem_bytes(BR), s, p, maps);
}

template <int BR>
void launch_rows(const Params& p, const TmaMaps& maps, bool gated, Stream s) {
  if (gated) launch_instance<BR, true>(p, maps, s);
  else launch_instance<BR, false>(p, maps, s);
}

}  // namespace

size_t wgmma_smem_bytes(int nt) { return smem_bytes(block_rows(nt)); }

void launch_gemm_wgmma(const Params& p, int nt, bool gated, Stream s) {
  check(nt == 2 || nt == 4, "cuda gemm (wgmma)", "64 or 128 rows a block");
  const int BR = block_rows(nt);
  TmaMaps maps{};
  const int K = p.K8 * 8;
  const int weights = gated ? 2 : p.n_outs;
  for (int i = 0; i < weights; ++i)
    encode(maps.w[i], p.out[i].w, K, p.out[i].n, static_cast<size_t>(K) * 2, gated ? 64 : 128, "a weight");
  encode(maps.x, p.x, K, p.M, static_cast<size_t>(p.ldx8) * 16, BR, "x");
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
