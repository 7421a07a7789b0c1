// The tiled GEMM of kernels_gemm_mma.cu on Hopper's warpgroup MMA (wgmma, sm_90a): the same plan,
// the same tiles, the same workspace and fold, and for every output the same bits as the GEMV
// (kernels_gemv_mma.cu), only faster.
//
// Why the same bits. The tensor cores round a sum of 16 products the same whatever their order
// inside one instruction, and wgmma rounds as mma.sync does; what changes the bits is which 16
// products share an instruction (tools/probes/mma_numerics.cu, bench/results/2026-12-02-mma-
// numerics.txt). The GEMV multiplies each 32-element chunk by tc::mma_chunk: lane (g, t) holds
// elements 8t .. 8t+7 of weight rows g and g + 8 (one 16-byte vector each) and feeds the low 8
// bytes to the first mma, the high 8 bytes to the second. Here the weights take the same path:
// A, the weight side of every wgmma, comes from registers (the "RS" form), loaded from the staged
// chunk 16 bytes a row as the GEMV loads them, in the mma.sync fragment layout that wgmma's
// register A shares. x, B, comes from shared memory, so it is staged in the order those
// registers imply: k16 step h of a chunk pairs register k-slot 2t + i with element 8t + i + 4h
// and k-slot 8 + 2t + i with element 8t + 2 + i + 4h (i = 0, 1). gemm_input_kernel writes x that
// way ([vector][row][8 elements], "wgmma input"), so that a tensor-memory copy (TMA) stages it
// straight into wgmma's core-matrix layout. Each step runs on the running chain value, in the
// GEMV's order (kernels_gemm_mma.cu's top comment: chains, pieces, folds, epilogue), from a
// zeroed accumulator with scale-d = 1, as the GEMV's first mma adds its products to a zero C.
//
// The block: one thread copies, two warpgroups multiply (warp specialisation). The copying thread
// stages, per chunk, the tile's 128 weight rows (gated: the 64 features' gate rows, then their up
// rows) and BR (64 or 128) x rows with two or three TMA copies, stage_count(BR) stages deep, in
// the block's chain order. TMA reads global memory without the L1: the 8-byte copies through it
// that staged the GEMV's halves before were the limit (Nsight Compute: L1 71 % busy, the tensor
// pipe mostly idle; bench/results/2026-12-02-wgmma-tma.txt). A stage is handed over through a
// pair of mbarriers: "full" when its bytes have landed, "empty" once both multiplying warpgroups'
// wgmma that read it are done; no block-wide barrier is left in the main loop. Each multiplying
// warpgroup owns 64 of the weight rows times all BR x rows: two m64nBRk16 wgmma per chunk into
// the running chain, whose A fragments alternate between two register sets (a chunk's stay
// untouched until its wgmma are waited for, one chunk later). At a chain's end its wgmma are
// drained and it is folded into the total. (Running the next chain into a second accumulator set
// meanwhile, so that no fold drains the tensor cores, needs a third set of BR / 2 registers: at
// BR = 128 that spills, and measured slower than the drain.) The copying warpgroup gives its
// registers to the multiplying ones (setmaxnreg: 24 against 240).

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

// wgmma exists on sm_90a only: a plain sm_90 build is a mistake in the architecture list; other
// targets compile a kernel that traps, and gemm_wgmma_available() tells the backend not to use it.
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ == 900 && !defined(__CUDA_ARCH_FEAT_SM90_ALL)
#error "kernels_gemm_wgmma.cu needs sm_90a: set CMAKE_CUDA_ARCHITECTURES to 90a (CMakePresets.json)"
#endif
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define VOXRT_HAS_WGMMA 1
#else
#define VOXRT_HAS_WGMMA 0
#endif

namespace voxrt::cuda::gemm {
namespace {

using tc::kChunkK8;  // a chunk: 32 elements, 4 vectors of 8 (64 bytes a row)
using tc::kUnitK8;   // a unit: 256 elements, chain j taking its chunk j
using namespace hopper;

constexpr int kConsumers = 2;                     // multiplying warpgroups, 64 weight rows each
constexpr int kThreads = (kConsumers + 1) * 128;  // and the copying warpgroup
constexpr int kCoreRow = 16;                      // bytes of a core-matrix row: 8 elements of K
constexpr int kBarrierBytes = 256;                // the stages' mbarriers, before the stages
constexpr int kProducerRegisters = 24, kConsumerRegisters = 240;  // 24 + 2 x 240 = 3 x 168
static_assert(kProducerRegisters + kConsumers * kConsumerRegisters <= 3 * 168, "setmaxnreg: the block's registers");

// A stage: the weights' chunk, [row][64 bytes] (128 rows; gated: 64 gate rows, then 64 up rows),
// then x's, [vector][row][16 bytes] (BR rows): each vector a core matrix column of wgmma's
// no-swizzle K-major layout.
constexpr int kWeightChunkBytes = kWeightRows * kChunkK8 * 16;
__host__ __device__ constexpr int x_chunk_bytes(int BR) { return BR * kChunkK8 * 16; }
__host__ __device__ constexpr int stage_bytes(int BR) { return kWeightChunkBytes + x_chunk_bytes(BR); }
// Stages in flight: as many as fit beside the pieces' running sum (at most 16: kBarrierBytes).
__host__ __device__ constexpr int stage_count(int BR) { return BR == 128 ? 10 : 12; }
static_assert(2 * 16 * 8 <= kBarrierBytes, "the mbarriers must fit their room");
// The pieces' running sum: every multiplying thread's BR / 2 totals, [warp][accumulator][lane].
__host__ __device__ constexpr size_t piece_sum_bytes(int BR) { return static_cast<size_t>(kConsumers) * 128 * (BR / 2) * 4; }

// The tensor maps of a launch: one per weight (gated: gate, up), and x in the wgmma input layout.
struct TmaMaps {
  CUtensorMap w[kGemvMaxOutputs];
  CUtensorMap x;
};

// The copying thread: every chunk of the block, in its chain order, into stage c % stage_count
// once the multiplying warpgroups have released it.
template <int BR, bool GATED>
__device__ __forceinline__ void copy_chunks(const Params& p, const TmaMaps& maps, const BlockJob& b, uint32_t full0,
                                            uint32_t empty0, uint32_t stage0) {
  constexpr int NS = stage_count(BR);
  const CUtensorMap* w = &maps.w[GATED ? 0 : b.seg];
  Cursor at(p.units, p.pieces[b.seg], b.piece, b.chain0);
  for (int c = 0; c < b.chunks; ++c) {
    const int s = c % NS;
    if (c >= NS) mbar_wait(empty0 + 8 * s, (c / NS - 1) & 1);
    const uint32_t stage = stage0 + s * stage_bytes(BR), bar = full0 + 8 * s;
    const int k8 = at.u * kUnitK8 + at.j * kChunkK8;
    mbar_arrive_expect_bytes(bar, stage_bytes(BR));
    tma_load_2d(stage, w, 8 * k8, b.f0, bar);  // gated: the gate rows, then the up rows
    if (GATED) tma_load_2d(stage + kWeightChunkBytes / 2, w + 1, 8 * k8, b.f0, bar);
    tma_load_3d(stage + kWeightChunkBytes, &maps.x, 0, b.r0, k8, bar);
    at.next(p.units, p.pieces[b.seg]);
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
  extern __shared__ __align__(128) uint4 smem[];
  const uint32_t smem0 = static_cast<uint32_t>(__cvta_generic_to_shared(smem));
  const uint32_t full0 = smem0, empty0 = smem0 + 8 * NS, stage0 = smem0 + kBarrierBytes;
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
    if (threadIdx.x == 0) copy_chunks<BR, GATED>(p, maps, b, full0, empty0, stage0);
    return;
  }
  registers_up<kConsumerRegisters>();

  const GemvOut& o = p.out[b.seg];
  const int n = o.n, units = p.units, S = p.pieces[b.seg];
  const int warp = threadIdx.x / 32 - 4, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const int wg = warp / 4, wq = warp % 4;

  // This lane's A rows in a staged weight chunk ([row][64 bytes]): rows g and g + 8 of its warp's
  // 16; gated, the gate and the up row of one feature, so that silu(gate) * up is formed here.
  const int local = (4 * wg + wq) * 8 + g;  // gated: the feature within the block's 64
  const uint32_t a_row0 = (GATED ? local : 64 * wg + 16 * wq + g) * 64 + t * 16;
  const uint32_t a_row1 = (GATED ? 64 + local : 64 * wg + 16 * wq + g + 8) * 64 + t * 16;
  // B of step h: x's vectors 2h and 2h + 1 of the chunk, BR rows each.
  const uint64_t b_desc = smem_desc(stage0 + kWeightChunkBytes, BR * kCoreRow, 8 * kCoreRow);

  // Accumulator a = 4 i + e: weight row 64 wg + 16 wq + g (+ 8 for e >= 2) of the tile, x row
  // 8 i + 2 t (+ 1 for odd e). Gated: e >= 2 is the up value of e - 2's feature.
  auto feature_of = [&](int a) { return GATED ? b.f0 + local : b.f0 + 64 * wg + 16 * wq + g + (a & 2 ? 8 : 0); };
  auto row_of = [&](int a) { return b.r0 + 8 * (a / 4) + 2 * t + (a & 1); };
  // Split: these accumulators to slot `slot` of the block's piece in the workspace. Its addresses
  // are computed here, from an opaque start, so that the compiler does not hoist NA of them out
  // of the main loop (where they would hold as many registers all along).
  auto store_slot = [&](const float (&v)[NA], int slot) {
    const int width = GATED ? 2 * n : n;
    float* w = opaque(p.workspace + p.workspace_at[b.seg] +
                      (static_cast<size_t>(b.piece) * slots_of(p.groups) + slot) * p.M * width);
    const int f0 = opaque(feature_of(0)), m0 = opaque(row_of(0));
#pragma unroll
    for (int a = 0; a < NA; ++a) {
      const int f = f0 + (feature_of(a) - feature_of(0)), m = m0 + (row_of(a) - row_of(0));
      if (f < n && m < p.M) w[static_cast<size_t>(m) * width + f + (GATED && (a & 2) ? n : 0)] = v[a];
    }
  };

  float acc[NA], total[NA];  // the running chain, the folded total
#pragma unroll
  for (int a = 0; a < NA; ++a) acc[a] = total[a] = 0;
  float* piece_sum =
      reinterpret_cast<float*>(smem + (kBarrierBytes + NS * stage_bytes(BR)) / 16) + warp * (NA * 32) + lane;
  // The chain `at` has been multiplied into acc, whose wgmma are done: fold it as kernels_gemm_mma.cu
  // does, and zero acc for the next chain.
  auto chain_done = [&](const Cursor& at) {
    pin(acc);
    const bool first_chain = at.j == 0, piece_ends = at.j == kChains - 1;
    if (p.split && p.groups > 1) {
      store_slot(acc, at.j);  // folded by gemm_fold_kernel
    } else {
#pragma unroll
      for (int a = 0; a < NA; ++a) total[a] = first_chain ? acc[a] : total[a] + acc[a];
    }
#pragma unroll
    for (int a = 0; a < NA; ++a) acc[a] = 0;
    pin(acc);
    if (piece_ends && p.split && p.groups == 1) store_slot(total, 0);
    if (piece_ends && !p.split && S > 1) {
      const bool first_piece = at.q == 0, last_piece = at.q == S - 1;
#pragma unroll
      for (int a = 0; a < NA; ++a) {
        float& sum = piece_sum[a * 32];
        sum = first_piece ? total[a] : sum + total[a];
        if (last_piece) total[a] = sum;
      }
    }
  };

  // Chunks' A fragments go into wa0/wb0 and wa1/wb1 in turn (wgmma reads them asynchronously: a
  // chunk's must stay untouched until its wait). Chunk c's wgmma are issued, then chunk c - 1's
  // waited for and its stage released. At a chain's end its wgmma are drained and it is folded.
  Cursor running(units, S, b.piece, b.chain0);
  int c = 0;
  uint4 wa0, wb0, wa1, wb1;
  auto issue = [&](uint4& wa, uint4& wb) {
    const int s = c % NS;
    const uint32_t stage = stage0 + s * stage_bytes(BR);
    mbar_wait(full0 + 8 * s, (c / NS) & 1);
    wa = load_shared16(stage + a_row0);
    wb = load_shared16(stage + a_row1);
    const uint64_t b0 = b_desc + ((s * stage_bytes(BR)) >> 4);
    const uint64_t b1 = b0 + ((2 * BR * kCoreRow) >> 4);
    wgmma_fence();
    wgmma_rs<BR>(acc, wa.x, wb.x, wa.y, wb.y, b0);
    wgmma_rs<BR>(acc, wa.z, wb.z, wa.w, wb.w, b1);
    wgmma_commit();
    wgmma_wait<1>();
    if (c > 0 && lane == 0) mbar_arrive(empty0 + 8 * ((c - 1) % NS));
    ++c;
  };
  while (c < b.chunks) {
    if (c & 1) issue(wa1, wb1);
    else issue(wa0, wb0);
    if (running.chain_ends()) {
      wgmma_wait<0>();
      chain_done(running);
    }
    running.next(units, S);
  }
  if (p.split) return;

#pragma unroll
  for (int a = 0; a < NA; ++a) {
    const int f = feature_of(a), m = row_of(a);
    if (f >= n || m >= p.M || (GATED && (a & 2))) continue;  // gated: a + 2 is a's up
    if constexpr (GATED)
      o.y[static_cast<size_t>(m) * o.ldy + f] = gemv::silu_times(total[a], total[a + 2]);
    else
      gemv::store_output(o, m, f, total[a]);
  }
#endif
}

// x [M, K] fp32 (row stride ldx) -> the wgmma input: bf16, [vector][row][8 elements], vectors
// counted to whole chunks, grouped within each chunk as the RS fragments pair them (top comment):
// vector 2h + p of a chunk holds elements 8 (i / 2) + 2 p + i % 2 + 4 h, i = 0 .. 7. Elements past K
// are zeros. One thread per 16-byte vector.
__global__ void gemm_input_kernel(const float* __restrict__ x, int M, int K, size_t ldx, int vectors,
                                  uint4* __restrict__ out) {
  pdl_trigger();
  pdl_wait();
  const size_t n = static_cast<size_t>(vectors) * M;
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t idx = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; idx < n; idx += stride) {
    const int v = static_cast<int>(idx / M), m = static_cast<int>(idx % M);
    const int chunk = v / 4, h = (v % 4) / 2, pp = v % 2;
    const float* row = x + static_cast<size_t>(m) * ldx;
    uint32_t word[4];
#pragma unroll
    for (int q = 0; q < 4; ++q) {
      const int e = chunk * 32 + 8 * q + 2 * pp + 4 * h;  // elements e, e + 1
      const float lo = e < K ? row[e] : 0.f, hi = e + 1 < K ? row[e + 1] : 0.f;
      const __nv_bfloat162 pair = __floats2bfloat162_rn(lo, hi);
      word[q] = *reinterpret_cast<const uint32_t*>(&pair);
    }
    out[idx] = uint4{word[0], word[1], word[2], word[3]};
  }
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

void encode(CUtensorMap& map, const void* base, int rank, const cuuint64_t* dims, const cuuint64_t* strides,
            const cuuint32_t* box, const char* what) {
  const cuuint32_t ones[3] = {1, 1, 1};
  const CUresult r = encode_tiled()(&map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, rank, const_cast<void*>(base), dims,
                                    strides, box, ones, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_NONE,
                                    CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  check(r == CUDA_SUCCESS, "cuda gemm (wgmma)", std::string("cannot describe ") + what + " to the TMA (error " +
                                                    std::to_string(static_cast<int>(r)) + ")");
}

template <int BR, bool GATED>
void launch_instance(const Params& p, const TmaMaps& maps, Stream s) {
  const size_t stages = kBarrierBytes + static_cast<size_t>(stage_count(BR)) * stage_bytes(BR);
  const size_t smem = stages + (folds_pieces(p) ? piece_sum_bytes(BR) : 0);
  const auto kernel = gemm_wgmma_kernel<BR, GATED>;
  allow_dynamic_smem(reinterpret_cast<const void*>(kernel), stages + piece_sum_bytes(BR), "gemm_wgmma shared memory");
  launch_kernel("gemm_wgmma", kernel, dim3(static_cast<unsigned>(p.block_end[p.n_outs - 1])), dim3(kThreads), smem, s,
                p, maps);
}

template <int BR>
void launch_rows(const Params& p, const TmaMaps& maps, bool gated, Stream s) {
  if (gated) launch_instance<BR, true>(p, maps, s);
  else launch_instance<BR, false>(p, maps, s);
}

}  // namespace

void launch_gemm_wgmma(const Params& p, int nt, bool gated, Stream s) {
  check(nt == 2 || nt == 4, "cuda gemm (wgmma)", "64 or 128 rows a block");
  const int BR = block_rows(nt);
  TmaMaps maps{};
  const int K = p.K8 * 8;
  const int weights = gated ? 2 : p.n_outs;
  for (int i = 0; i < weights; ++i) {
    const cuuint64_t dims[2] = {static_cast<cuuint64_t>(K), static_cast<cuuint64_t>(p.out[i].n)};
    const cuuint64_t strides[1] = {static_cast<cuuint64_t>(K) * 2};
    const cuuint32_t box[2] = {static_cast<cuuint32_t>(kChunkK8 * 8), static_cast<cuuint32_t>(gated ? 64 : 128)};
    encode(maps.w[i], p.out[i].w, 2, dims, strides, box, "a weight");
  }
  const cuuint64_t xdims[3] = {8, static_cast<cuuint64_t>(p.M), static_cast<cuuint64_t>(cuda::gemm_input_vectors(K))};
  const cuuint64_t xstrides[2] = {16, static_cast<cuuint64_t>(p.M) * 16};
  const cuuint32_t xbox[3] = {8, static_cast<cuuint32_t>(BR), static_cast<cuuint32_t>(kChunkK8)};
  encode(maps.x, p.x, 3, xdims, xstrides, xbox, "x");
  if (nt == 4) launch_rows<block_rows(4)>(p, maps, gated, s);
  else launch_rows<block_rows(2)>(p, maps, gated, s);
}

}  // namespace voxrt::cuda::gemm

namespace voxrt::cuda {

bool gemm_wgmma_available() {
  // The kernel's code for this device: sm_90a (a plain sm_90 build fails to compile, see the top),
  // or another target's, where it traps.
  cudaFuncAttributes a{};
  if (cudaFuncGetAttributes(&a, gemm::gemm_wgmma_kernel<64, false>) != cudaSuccess) {
    (void)cudaGetLastError();
    return false;
  }
  return a.binaryVersion == 90;
}

int gemm_input_vectors(int K) { return (K / 8 + tc::kChunkK8 - 1) / tc::kChunkK8 * tc::kChunkK8; }

void launch_gemm_input(const float* x, int M, int K, size_t ldx, __nv_bfloat16* out, Stream s) {
  const size_t n = static_cast<size_t>(gemm_input_vectors(K)) * M;
  if (n == 0) return;
  const unsigned blocks = static_cast<unsigned>(std::min<size_t>((n + 255) / 256, 65535));
  launch_kernel("gemm_input", gemm::gemm_input_kernel, dim3(blocks), dim3(256), 0, s, x, M, K, ldx, gemm_input_vectors(K),
                reinterpret_cast<uint4*>(out));
}

}  // namespace voxrt::cuda
