// The tiled GEMM of kernels_gemm_mma.cu on Hopper's warpgroup MMA (wgmma, sm_90a): the same plan,
// the same tiles, the same workspace and fold, and for every output the same bits as the GEMV
// (kernels_gemv_mma.cu), only faster. mma.sync makes every warp load its fragments from shared
// memory into registers before each mma (the integer and load pipes busier than the tensor pipe);
// wgmma reads both operands from shared memory itself, asynchronously, a 64 x BR x 16 product per
// instruction, so the threads only copy, wait and fold.
//
// Why the same bits. The tensor cores round a sum of 16 products the same whatever their order
// inside one instruction, and wgmma rounds as mma.sync does; what changes the bits is which 16
// products share an instruction (tools/probes/mma_numerics.cu, bench/results/2026-12-02-mma-
// numerics.txt). The GEMV multiplies each 32-element chunk by tc::mma_chunk: its first mma takes,
// for every row, elements {8v + 0..3 : v = 0..3} of the chunk (the low 8 bytes of each of the
// chunk's four 16-byte vectors: lane t's a0/b0 hold elements 8t, 8t+1 and a2/b1 hold 8t+2, 8t+3),
// its second mma elements {8v + 4..7} (the high 8 bytes). So here the chunk's first k16 step is
// staged from the low halves and its second from the high halves: in shared memory, step s of a
// row is two 16-byte core-matrix rows, [half s of vector 0 | half s of vector 1] and
// [half s of vector 2 | half s of vector 3], the same placement for the weights and for x (so
// each k-slot pairs the same element of both). Each step runs on the running chain value, in the
// GEMV's order (kernels_gemm_mma.cu's top comment: chains, pieces, folds, epilogue), from a zeroed
// accumulator with scale-d = 1, as the GEMV's first mma adds its products to a zero C.
//
// The block: one warpgroup copies, two multiply (warp specialisation). The copying warpgroup
// stages one chunk of the tile's 128 weight rows (gated: per 16 rows, 8 gate then the same 8
// features' up rows, so that a thread holds both halves of silu(gate) * up) and BR (64 or 128) x
// rows per stage, in the block's chain order, with 8-byte copies (cp.async.ca: each 16-byte vector
// of K feeds two steps), stage_count(BR) stages deep. A stage is handed over through a pair of mbarriers:
// "full" once every copying thread's copies have landed and been fenced for the async proxy,
// "empty" once both multiplying warpgroups' wgmma that read it are done; no block-wide barrier is
// left in the main loop. Each multiplying warpgroup owns 64 of the weight rows times all BR x rows:
// one m64nBRk16 wgmma per k16 step, and three sets of BR / 2 accumulators a thread: two chains in
// turn and the folded total. A chain's first wgmma go into the set the chain before did not use,
// while that one's last wgmma finish (wgmma.wait_group 1); it is then folded into the total and
// zeroed, so the tensor cores never wait for a fold. The copying warpgroup gives its registers to
// the multiplying ones (setmaxnreg: 40 against 232).
#include <cuda_bf16.h>

#include <cstdint>

#include "runtime/cuda/cuda_check.h"
#include "runtime/cuda/cuda_kernels.h"
#include "runtime/cuda/gemm_tiles.cuh"
#include "runtime/cuda/gemv_common.cuh"
#include "runtime/cuda/launch.cuh"
#include "runtime/cuda/tensor_core.cuh"

// wgmma exists on sm_90a only: a plain sm_90 build is a mistake in the architecture list; other
// targets compile a kernel that traps (it is only launched when VOXRT_CUDA_GEMM=wgmma asks).
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

constexpr int kConsumers = 2;                     // multiplying warpgroups, 64 weight rows each
constexpr int kThreads = (kConsumers + 1) * 128;  // and the copying warpgroup
constexpr int kCoreRow = 16;                      // bytes of a core-matrix row: 8 elements of K
constexpr int kCopiesInFlight = 4;                // a copying thread's stages not yet waited for
constexpr int kBarrierBytes = 256;                // the stages' mbarriers, before the stages
constexpr int kProducerRegisters = 40, kConsumerRegisters = 232;  // 40 + 2 x 232 = 3 x 168
static_assert(kProducerRegisters + kConsumers * kConsumerRegisters <= 3 * 168, "setmaxnreg: the block's registers");

// A chunk of `rows` rows in shared memory: [step][pair][row][16 bytes], pair p of step s holding
// half s of vectors 2p and 2p + 1. A stage: the weights' chunk, then x's.
__host__ __device__ constexpr int chunk_bytes(int rows) { return rows * kChunkK8 * 16; }
__host__ __device__ constexpr int stage_bytes(int BR) { return chunk_bytes(kWeightRows + BR); }
// Stages in flight: as many as fit beside the pieces' running sum (at most 16: kBarrierBytes).
__host__ __device__ constexpr int stage_count(int BR) { return BR == 128 ? 10 : 12; }
static_assert(2 * 12 * 8 <= kBarrierBytes, "the mbarriers must fit their room");
static_assert(stage_count(128) >= kCopiesInFlight + 2 && stage_count(64) >= kCopiesInFlight + 2,
              "a stage is refilled only after the chunk after it has been handed over (no deadlock)");
// The pieces' running sum: every multiplying thread's BR / 2 totals, [warp][accumulator][lane].
__host__ __device__ constexpr size_t piece_sum_bytes(int BR) { return static_cast<size_t>(kConsumers) * 128 * (BR / 2) * 4; }

__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}
// Keeps the compiler from moving reads or writes of the accumulators across this point: the
// hardware writes them asynchronously, between the wgmma and its wait, behind the compiler's back.
template <int NA>
__device__ __forceinline__ void pin(float (&d)[NA]) {
#pragma unroll
  for (int i = 0; i < NA; ++i) asm volatile("" : "+f"(d[i])::"memory");
}
// v, as a value the compiler cannot see through nor compute ahead of this point.
__device__ __forceinline__ int opaque(int v) {
  asm volatile("mov.b32 %0, %0;\n" : "+r"(v));
  return v;
}
__device__ __forceinline__ float* opaque(float* v) {
  asm volatile("mov.b64 %0, %0;\n" : "+l"(v));
  return v;
}
// cp.async writes shared memory through the generic proxy, wgmma reads it through the async one.
__device__ __forceinline__ void fence_proxy_async() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }

// 8 bytes global -> shared, asynchronously; zeros (nothing read) when !valid.
__device__ __forceinline__ void cp_async8(uint32_t dst, const void* src, bool valid) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 8, %2;\n" ::"r"(dst), "l"(src), "r"(valid ? 8 : 0) : "memory");
}

// mbarriers in shared memory (addresses from __cvta_generic_to_shared): one phase completes when
// `count` threads have arrived; a waiter names the phase's parity.
__device__ __forceinline__ void mbar_init(uint32_t bar, int count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}
__device__ __forceinline__ void mbar_arrive(uint32_t bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}
__device__ __forceinline__ void mbar_wait(uint32_t bar, int parity) {
  asm volatile(
      "{\n"
      ".reg .pred done;\n"
      "WAIT:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
      "@!done bra WAIT;\n"
      "}\n" ::"r"(bar),
      "r"(parity)
      : "memory");
}
// A warpgroup's registers per thread from here on (all its warps execute it).
template <int N>
__device__ __forceinline__ void registers_down() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(N));
}
template <int N>
__device__ __forceinline__ void registers_up() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(N));
}

// A wgmma shared-memory descriptor, K-major, no swizzle: core matrices of 8 rows x 16 bytes (128
// contiguous bytes); lbo: bytes between the two core matrices of a k16 step along K; sbo: bytes
// between consecutive groups of 8 rows. Addresses and offsets in 16-byte units, 14 bits each.
__device__ __forceinline__ uint64_t smem_desc(uint32_t addr, uint32_t lbo, uint32_t sbo) {
  return static_cast<uint64_t>((addr >> 4) & 0x3fff) | (static_cast<uint64_t>((lbo >> 4) & 0x3fff) << 16) |
         (static_cast<uint64_t>((sbo >> 4) & 0x3fff) << 32);
}
// The same descriptor `bytes` further on (the address field never carries: shared memory < 256 KiB).
__device__ __forceinline__ uint64_t desc_at(uint64_t desc, uint32_t bytes) { return desc + (bytes >> 4); }

// d (64 x N, fp32) += a (64 x 16) b (N x 16)^T, bf16 from shared memory, both K-major.
template <int N>
__device__ __forceinline__ void wgmma_ss(float (&d)[N / 2], uint64_t a, uint64_t b);
template <>
__device__ __forceinline__ void wgmma_ss<64>(float (&d)[32], uint64_t a, uint64_t b) {
  asm volatile(
      
      "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {"
      "%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,"
      "%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31"
      "}, %32, %33, 1, 1, 1, 0, 0;\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
      : "l"(a), "l"(b));
}
template <>
__device__ __forceinline__ void wgmma_ss<128>(float (&d)[64], uint64_t a, uint64_t b) {
  asm volatile(
      
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {"
      "%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,"
      "%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,"
      "%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,"
      "%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63"
      "}, %64, %65, 1, 1, 1, 0, 0;\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
        "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
        "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
        "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
      : "l"(a), "l"(b));
}

// Staged weight row `row` (0 .. kWeightRows - 1) of the block's tile, from feature f0: its first
// element, or null past the last feature. Gated: rows 16 i .. 16 i + 7 are the gate rows of
// features f0 + 8 i .., rows 16 i + 8 .. 16 i + 15 the up rows of the same features.
template <bool GATED>
__device__ __forceinline__ const char* weight_row(const Params& p, const GemvOut& o, int f0, int row) {
  const int f = GATED ? f0 + (row / 16) * 8 + row % 8 : f0 + row;
  const __nv_bfloat16* w = GATED && row % 16 >= 8 ? p.out[1].w : o.w;
  return f < o.n ? reinterpret_cast<const char*>(w + static_cast<size_t>(f) * p.K8 * 8) : nullptr;
}

// The copying warpgroup: every chunk of the block, in its chain order, into stage c % stage_count(BR) once
// the multiplying warpgroups have released it; stage c is announced full kCopiesInFlight chunks
// later, when this thread's copies of it have landed (each of the 128 threads announces its own).
template <int BR, bool GATED>
__device__ __forceinline__ void copy_chunks(const Params& p, const BlockJob& b, uint32_t full0, uint32_t empty0,
                                            uint32_t stage0) {
  constexpr int NS = stage_count(BR);
  const GemvOut& o = p.out[b.seg];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  // Half h of vectors 2 vh + vl (vh = 0, 1) of rows 8 (warp + 4 i) + r8: a warp's copy covers 32
  // bytes (one sector) of each of 8 rows and writes 2 x 128 contiguous bytes of shared memory.
  const int h = lane & 1, vl = (lane >> 1) & 1, r8 = lane >> 2;
  const void* any = o.w;  // a valid address for the copies that read nothing
  Cursor at(p.units, p.pieces[b.seg], b.piece, b.chain0);
  for (int c = 0; c < b.chunks; ++c) {
    const int s = c % NS;
    if (c >= NS) mbar_wait(empty0 + 8 * s, (c / NS - 1) & 1);
    const uint32_t chunk = stage0 + s * stage_bytes(BR);
    const int k0 = at.u * kUnitK8 + at.j * kChunkK8;
#pragma unroll
    for (int vh = 0; vh < 2; ++vh) {
      const int k = k0 + 2 * vh + vl;
      const bool in_k = k < p.K8;
      const size_t from = static_cast<size_t>(k) * 16 + h * 8;
#pragma unroll
      for (int i = 0; i < kWeightRows / 32; ++i) {
        const int row = 8 * (warp + 4 * i) + r8;
        const char* src = weight_row<GATED>(p, o, b.f0, row);
        const bool live = in_k && src;
        cp_async8(chunk + h * kWeightRows * 2 * kCoreRow + vh * kWeightRows * kCoreRow + row * kCoreRow + vl * 8,
                  live ? src + from : any, live);
      }
#pragma unroll
      for (int i = 0; i < BR / 32; ++i) {
        const int row = 8 * (warp + 4 * i) + r8, m = b.r0 + row;
        const bool live = in_k && m < p.M;
        const char* src = reinterpret_cast<const char*>(p.x + static_cast<size_t>(live ? m : 0) * p.ldx8 * 8);
        cp_async8(chunk + chunk_bytes(kWeightRows) + h * BR * 2 * kCoreRow + vh * BR * kCoreRow + row * kCoreRow +
                      vl * 8,
                  live ? src + from : any, live);
      }
    }
    tc::cp_async_commit();
    if (c >= kCopiesInFlight) {
      tc::cp_async_wait<kCopiesInFlight>();  // chunk c - kCopiesInFlight's copies have landed ...
      fence_proxy_async();                   // ... are visible to wgmma (async proxy) ...
      mbar_arrive(full0 + 8 * ((c - kCopiesInFlight) % NS));  // ... and are announced
    }
    at.next(p.units, p.pieces[b.seg]);
  }
  tc::cp_async_wait<0>();
  fence_proxy_async();
  for (int c = b.chunks > kCopiesInFlight ? b.chunks - kCopiesInFlight : 0; c < b.chunks; ++c)
    mbar_arrive(full0 + 8 * (c % NS));
}

template <int BR, bool GATED>
__global__ void __launch_bounds__(kThreads, 1) gemm_wgmma_kernel(const Params p) {
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
      mbar_init(full0 + 8 * s, 128);                 // every copying thread
      mbar_init(empty0 + 8 * s, kConsumers * 4);  // one lane of every multiplying warp
    }
  }
  __syncthreads();
  pdl_wait();  // x (and y, for accumulating outputs) come from the previous kernel
  if (threadIdx.x < 128) {
    registers_down<kProducerRegisters>();
    copy_chunks<BR, GATED>(p, b, full0, empty0, stage0);
    return;
  }
  registers_up<kConsumerRegisters>();

  const GemvOut& o = p.out[b.seg];
  const int n = o.n, units = p.units, S = p.pieces[b.seg];
  const int warp = threadIdx.x / 32 - 4, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const int wg = warp / 4, wq = warp % 4;

  // Step s of a staged chunk: this warpgroup's 64 weight rows (A) and all BR x rows (B).
  const uint64_t a_desc = smem_desc(stage0 + wg * 64 * kCoreRow, kWeightRows * kCoreRow, 8 * kCoreRow);
  const uint64_t b_desc = smem_desc(stage0 + chunk_bytes(kWeightRows), BR * kCoreRow, 8 * kCoreRow);
  // The descriptors are formed before the fence: a register written between the fence and a
  // wgmma makes ptxas insert another fence there.
  auto multiply = [&](float (&acc)[NA], uint32_t stage_offset) {
    uint64_t a[2], bd[2];
#pragma unroll
    for (int s = 0; s < 2; ++s) {
      a[s] = desc_at(a_desc, stage_offset + s * kWeightRows * 2 * kCoreRow);
      bd[s] = desc_at(b_desc, stage_offset + s * BR * 2 * kCoreRow);
    }
    wgmma_fence();
#pragma unroll
    for (int s = 0; s < 2; ++s) wgmma_ss<BR>(acc, a[s], bd[s]);
    wgmma_commit();
  };

  // Accumulator a = 4 i + e: weight row 64 wg + 16 wq + g (+ 8 for e >= 2) of the tile, x row
  // 8 i + 2 t (+ 1 for odd e). Gated: e >= 2 is the up value of e - 2's feature.
  auto feature_of = [&](int a) {
    return GATED ? b.f0 + (4 * wg + wq) * 8 + g : b.f0 + 64 * wg + 16 * wq + g + (a & 2 ? 8 : 0);
  };
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

  float acc0[NA], acc1[NA], total[NA];
#pragma unroll
  for (int a = 0; a < NA; ++a) acc0[a] = acc1[a] = total[a] = 0;
  float* piece_sum =
      reinterpret_cast<float*>(smem + (kBarrierBytes + NS * stage_bytes(BR)) / 16) + warp * (NA * 32) + lane;
  // The chain `at` has been multiplied into acc, whose wgmma are done: fold it as kernels_gemm_mma.cu
  // does, and zero acc for the chain after next.
  auto chain_done = [&](float (&acc)[NA], const Cursor& at) {
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

  // Chains run into acc0 and acc1 in turn. Chunk c's wgmma are issued, then chunk c - 1's waited
  // for and its stage released; after a chain's first chunk is issued, the chain before it (in the
  // other set) is complete and folded. The first chunk of each chain is peeled off, so that every
  // read of a set is straight-line code after the wait that completes it and ptxas can see that
  // the set being read is not in flight (where it cannot, it serializes every wgmma).
  Cursor running(units, S, b.piece, b.chain0), ended = running;
  int c = 0;
  auto issue = [&](float (&run)[NA]) {
    const int s = c % NS;
    mbar_wait(full0 + 8 * s, (c / NS) & 1);
    multiply(run, s * stage_bytes(BR));
    wgmma_wait<1>();
    if (c > 0 && lane == 0) mbar_arrive(empty0 + 8 * ((c - 1) % NS));
    const bool last = running.chain_ends();
    running.next(units, S);
    ++c;
    return last;
  };
  auto run_chain = [&](float (&run)[NA], float (&other)[NA]) {
    const Cursor chain = running;
    const bool after_another = c > 0;
    bool last = issue(run);
    if (after_another) chain_done(other, ended);
    while (!last) last = issue(run);
    ended = chain;
  };
  for (;;) {
    run_chain(acc0, acc1);
    if (c == b.chunks) {
      wgmma_wait<0>();
      chain_done(acc0, ended);
      break;
    }
    run_chain(acc1, acc0);
    if (c == b.chunks) {
      wgmma_wait<0>();
      chain_done(acc1, ended);
      break;
    }
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

template <int BR, bool GATED>
void launch_instance(const Params& p, Stream s) {
  const size_t stages = kBarrierBytes + static_cast<size_t>(stage_count(BR)) * stage_bytes(BR);
  const size_t smem = stages + (folds_pieces(p) ? piece_sum_bytes(BR) : 0);
  const auto kernel = gemm_wgmma_kernel<BR, GATED>;
  allow_dynamic_smem(reinterpret_cast<const void*>(kernel), stages + piece_sum_bytes(BR), "gemm_wgmma shared memory");
  launch_kernel("gemm_wgmma", kernel, dim3(static_cast<unsigned>(p.block_end[p.n_outs - 1])), dim3(kThreads), smem, s,
                p);
}

template <int BR>
void launch_rows(const Params& p, bool gated, Stream s) {
  if (gated) launch_instance<BR, true>(p, s);
  else launch_instance<BR, false>(p, s);
}

}  // namespace

void launch_gemm_wgmma(const Params& p, int nt, bool gated, Stream s) {
  check(nt == 2 || nt == 4, "cuda gemm (wgmma)", "64 or 128 rows a block");
  if (nt == 4) launch_rows<block_rows(4)>(p, gated, s);
  else launch_rows<block_rows(2)>(p, gated, s);
}

}  // namespace voxrt::cuda::gemm
