// Attention chunks on the tensor cores, for bf16 and fp8 caches: the same blocks as kernels_attention.cu's
// CUDA-core kernel (one per rows, kv head, key chunk), with both products as bf16 mma.sync and the
// chunks aligned (attention_split.cuh). A block may take several consecutive chunks,
// double-buffered (AttentionPlan::chunks_per_block). The partial results are merged by the last
// block of each row group to finish (attention_combine.cuh), not by a pass of their own: they are
// read back from L2 and dropped there, where a combine pass read them from memory after they were
// written back (each 64-key fp8 chunk's is 12.7 % of its K and V bytes, each way).
//
// Why. With several queries per block (an encoder step's 4 frames, the decoder's 4 heads per kv
// head) the CUDA-core kernel spends two fp32 FMAs per byte of K/V plus the conversions and shared
// loads around them: at a few hundred live streams its instructions, not its bytes, set its time
// (bench/results/2026-12-03-profile-rounds.txt: 3x the bytes' floor). On the tensor cores the
// arithmetic is nearly free, and a block's time is its copies.
//
// fp8 (e4m3) caches: a chunk's K and V are staged as stored (half the bytes of bf16), with each
// entry's scales, and widened to bf16 in registers as the mma fragments are built (exact: every
// e4m3 value is a bf16 value); each score is multiplied by its key's scale and each probability by
// its value's scale before it is split (as the CUDA-core kernel multiplies them). The same ldmatrix
// instructions read the stored bytes as 16-bit pairs, so the head's dimensions meet the mma in
// another order than bf16's (steps 1 and 3 say which): a sum's bits differ from a bf16 cache's, as
// they may, and stay the same alone or grouped.
//
// Exact as fp32. K and V are bf16 as stored, so they enter the mma as they are. The queries and the
// probabilities are fp32: each is split into three bf16 terms (split_operand.cuh), and the three
// products accumulate in fp32. So a score is q . k to fp32's precision, not to bf16's, as the
// CUDA-core kernel's is and the tolerance against the CPU's double-accumulated reference requires.
// Blocks of up to four queries (a decoder step's GQA group, an encoder step's four frames) pack the
// hi and mid terms into one mma's eight columns (AccPacked): two mma a fragment, the same bits.
//
// Scores: S^T = K Q^T, keys as the mma's M (16 a tile, ldmatrix from the staged rows), the head's
// queries as its N (8: up to 8 queries, the rest zero), the head dimension as K. Values: O^T = V^T
// P^T, the head dimension as M (ldmatrix.trans from the same staged rows), queries as N, keys as K,
// 16 at a time at multiples of 16 from the chunk's start: because chunks are aligned, a key meets
// the same 15 others in its instruction whichever rows share the block, so a row's bits are the
// same alone, grouped, live or offline. Keys of the chunk outside a row's range get score -inf and
// probability 0; positions of the chunk outside every row's range are not read, and their values
// are zeros in shared memory (0 times a stale value that is not finite would not be 0).
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <cmath>
#include <cstdint>
#include <iterator>
#include <string>

#include "runtime/cuda/attention_combine.cuh"
#include "runtime/cuda/attention_split.cuh"
#include "runtime/cuda/cuda_check.h"
#include "runtime/cuda/kv_elem.cuh"
#include "runtime/cuda/launch.cuh"
#include "runtime/cuda/split_operand.cuh"
#include "runtime/cuda/tensor_core.cuh"

namespace voxrt::cuda {
namespace {

constexpr int kWarps = kAttentionThreads / 32;
constexpr int kMaxQueries = 8;  // the mma's N
constexpr size_t kNotStaged = ~size_t{0};

// The byte offset of 16-byte vector v of staged row j, for rows of kVecs vectors (kVecs 4, 8 or
// 16: 64 to 256 bytes), swizzled so that the 8 consecutive rows an ldmatrix phase reads at the same
// vector fall in 8 different bank groups: the vector's place within its 128-byte line is XORed
// with the line's index among 8 (the row's, for rows of 128 bytes or more). Unpadded rows, so that
// three double-buffered bf16 blocks of 128-dimension heads fit an SM where padded rows fit two.
template <int kVecs>
__device__ __forceinline__ int staged_offset(int j, int v) {
  static_assert(kVecs == 4 || kVecs == 8 || kVecs == 16, "rows of 64, 128 or 256 bytes");
  if constexpr (kVecs >= 8) return (j * kVecs + (v ^ (j & 7))) * 16;
  const int linear = j * kVecs + v;
  return ((linear & ~7) | ((linear & 7) ^ ((linear >> 3) & 7))) * 16;
}
// The probabilities' row: chunk + 8 floats, so that a B fragment's 8-byte reads take two phases.
__host__ __device__ constexpr int score_pitch(int chunk) { return chunk + 8; }
// A stage buffer: a chunk's K and V rows as cp.async lands them, as stored (bf16: the mma's rows
// themselves; fp8: bytes, widened as the fragments are built), then for fp8 each row's key and
// value scale. A multiple of 16 bytes (chunks being multiples of 16), so that the second buffer's
// rows stay aligned for cp.async and ldmatrix.
__host__ __device__ constexpr size_t stage_bytes(int head_dim, int chunk, int elem_bytes) {
  return 2 * static_cast<size_t>(chunk) * head_dim * elem_bytes + (elem_bytes == 1 ? 2 * static_cast<size_t>(chunk) * sizeof(float) : 0);
}

// Four bytes from global to shared memory, asynchronously (an fp8 entry's scale).
__device__ __forceinline__ void cp_async4(void* dst, const void* src) {
  const unsigned d = static_cast<unsigned>(__cvta_generic_to_shared(dst));
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" ::"r"(d), "l"(src) : "memory");
}

// Two e4m3 values (the low 16 bits of w, the first in the low byte) as a bf16 pair, exactly (every
// e4m3 value is a bf16 value).
__device__ __forceinline__ uint32_t widen_fp8x2(uint32_t w) {
  const __half2_raw h = __nv_cvt_fp8x2_to_halfraw2(static_cast<__nv_fp8x2_storage_t>(w & 0xffffu), __NV_E4M3);
  const float2 f = __half22float2(__half2(h));
  const __nv_bfloat162 b = __floats2bfloat162_rn(f.x, f.y);
  return *reinterpret_cast<const uint32_t*>(&b);
}

// x 8x8 16-bit matrices from shared memory (x = 2 or 4), each of lanes 0 .. 8x - 1 giving one
// row's address; kTrans hands each one over transposed.
template <int X, bool kTrans>
__device__ __forceinline__ void ldmatrix(uint32_t (&r)[X], const void* p) {
  const unsigned a = static_cast<unsigned>(__cvta_generic_to_shared(p));
  if constexpr (X == 4 && kTrans)
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(a) : "memory");
  else if constexpr (X == 4)
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(a) : "memory");
  else if constexpr (kTrans)
    asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0,%1}, [%2];\n" : "=r"(r[0]), "=r"(r[1]) : "r"(a) : "memory");
  else
    asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0,%1}, [%2];\n" : "=r"(r[0]), "=r"(r[1]) : "r"(a) : "memory");
}

// HD the head dimension, G the query heads per block, R the rows per block (G * R <= 8); query
// i * G + g is row r0 + i, head h0 + g. kChunk: 0, blocks of one chunk of the plan's size; else
// blocks of several chunks (p.chunks_per_block > 1) of kChunk keys (attention_multi_chunk_built).
//
// A block takes up to p.chunks_per_block consecutive chunks of its rows (splits s0, s0 + 1, ...;
// attention_split.cuh's chunk_block), staging chunk k + 1 into the other of two buffers (cp.async)
// while it computes chunk k: each chunk's round trip to memory then hides behind the previous
// chunk's arithmetic, and the prologue (key ranges, ring and page-table lookups) is paid once for
// several chunks. Each chunk is computed exactly as a block of one chunk computes it (the same
// staged rows, the same mma instructions over the same 16-key groups in the same order, the same
// partial result in the same cell), so the number of chunks a block takes never changes a bit.
// Blocks of one chunk are a build of their own (kChunk 0: the loop runs once), so that the
// queries' fragments, live across the loop, do not take the registers of the single-chunk build
// (72 registers a thread at HD 128 and four queries; 95-96 with them live throughout, five blocks
// an SM; 116 to 128 before the chunk was a constant and the terms packed, which held them to four).
template <int HD, typename T, int G, int R, int kChunk>
__global__ void __launch_bounds__(kAttentionThreads) attention_mma_kernel(SplitParams p) {
  constexpr bool kMulti = kChunk > 0;
  constexpr int kChunks = kMulti ? kAttentionMaxChunksPerBlock : 1;
  constexpr int kEl = static_cast<int>(sizeof(T));
  constexpr bool kFp8 = kEl == 1;  // fp8 caches: rows staged as stored, widened in registers (top comment)
  constexpr int Q = G * R;
  static_assert(Q <= kMaxQueries && HD % 32 == 0, "unsupported block shape");
  // A staged row's 16-byte vectors, and the head's 16-dimension steps (slices, for the values).
  constexpr int kVecs = HD * kEl / 16, kSteps = HD / 16;
  pdl_trigger();
  pdl_wait();
  const AttentionArgs& a = p.a;
  // Blocks of several chunks know their chunk when compiled (kChunk): every loop over the chunk's
  // keys below then unrolls, and its shared-memory offsets are constants.
  const int C = kMulti ? kChunk : p.chunk, SP = score_pitch(C);
  const int shift = kMulti ? chunk_shift_of(kChunk) : p.chunk_shift;
  extern __shared__ float4 smem4[];
  // Sized for the block's Q queries (a decoder step's four, not the mma's eight): at 128-key chunks
  // that is what lets one more block share an SM.
  float* sc = reinterpret_cast<float*>(smem4);  // [Q][SP]
  // The probabilities as the values' B operand: three bf16 planes, hi, mid, lo [Q][SP].
  __nv_bfloat16* pb = reinterpret_cast<__nv_bfloat16*>(sc + Q * SP);
  // Each staged row's cache offset [C] (one array: a chunk's are found after the previous chunk's
  // copies were issued); fp8: each staged row's scale index [C]; then the stage buffers, one or two
  // (kMulti): K and V rows as stored [C][kVecs] 16-byte vectors each (staged_offset), then for fp8
  // the key scales [C] and the value scales [C].
  size_t* row_at = reinterpret_cast<size_t*>(pb + 3 * Q * SP);
  size_t* scale_at = row_at + C;
  unsigned char* stages = reinterpret_cast<unsigned char*>(scale_at + (kFp8 ? C : 0));
  auto keys_of = [&](int b) { return stages + b * stage_bytes(HD, C, kEl); };
  auto values_of = [&](int b) { return keys_of(b) + C * HD * kEl; };
  auto key_scales_of = [&](int b) { return reinterpret_cast<float*>(keys_of(b) + 2 * C * HD); };  // fp8
  auto value_scales_of = [&](int b) { return key_scales_of(b) + C; };

  const ChunkBlock block = chunk_block<R>(p);
  const int r0 = block.r0, kvh = block.kvh, hb = block.hb;
  const int h0 = kvh * p.group + hb * G, gcount = min(G, p.group - hb * G);
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32, g = lane / 4, t = lane % 4;

  // The block's chunks: the first row's first chunk plus the splits s0 ..., n of them. The rows are
  // consecutive positions of one slot (attention_rows_per_block), so together they attend one
  // range of keys, from the first row's first to the last row's position: its chunks are the
  // block's, up to the plan's splits (a chunk of the group past that range holds no keys of any
  // row, and a block of no such chunk returns at once). Positions are 64-bit; from here on the
  // chunk's offsets are not (a 64-bit division costs dozens of instructions, and there were several
  // per output).
  long long first0;
  int n0;
  key_range(p, r0, first0, n0);
  long long last = first0 + n0 - 1;
#pragma unroll
  for (int i = 1; i < R; ++i)
    if (r0 + i < a.n_rows) last = max(last, a.rows[r0 + i].pos);
  // The chunks the rows' keys span (at least one: each row attends its own position).
  const long long spanned = (last >> shift) - (first0 >> shift) + 1;
  const long long c0 = (first0 >> shift) + block.split;
  const int per_group = kMulti ? p.chunks_per_block : 1;
  const int n = static_cast<int>(min(static_cast<long long>(min(per_group, p.nsplit - block.split)), spanned - block.split));
  // The fused combine's arrivals: the split groups that hold some of the rows' keys, the blocks with
  // n > 0. A plan is made for a whole window, so a decoder row group at 750 of 8192 keys has 2 such
  // groups of 17; the others return at once, as without the fusion, rather than each paying a
  // fence, two barriers and an atomic to arrive (measured: the decoder up to 16 % slower when they
  // did, bench/results/2026-12-08-issue38-first-gpu-runs-h100.txt). Every block of the group
  // computes the same count from the same rows. Kept in shared memory for the merge at the end, so
  // that it takes no register across the chunks.
  __shared__ int s_arriving;
  if (tid == 0 && a.arrivals != nullptr)  // read by this thread alone, which arrives
    s_arriving = (static_cast<int>(min(spanned, static_cast<long long>(p.nsplit))) + per_group - 1) / per_group;

  // The combine, fused (attention_combine.cuh): every arriving block of the row group (above)
  // arrives once its partial results are written; the last to arrive merges the
  // group's rows and heads, one warp a query, from L2, and writes their outputs. Blocks of one
  // group are numbered together (chunk_block), so they run at about the same time.
  __shared__ bool s_last;
  auto arrive_and_combine = [&] {
    if (a.arrivals == nullptr) return;  // not fused: a combine pass follows (AttentionPlan::arrivals)
    __threadfence();  // this thread's partial results, visible before its block arrives
    __syncthreads();
    if (tid == 0) {
      const unsigned before = atomicAdd(a.arrivals + block.group, 1u);
      s_last = before + 1 == static_cast<unsigned>(s_arriving);
      if (s_last) a.arrivals[block.group] = 0;  // every block of the group has arrived: ready for the next launch
    }
    __syncthreads();
    if (!s_last) return;
    __threadfence();  // the other blocks' results, seen after their arrivals
    const size_t acc_at = ml_floats(a.n_rows, a.n_heads, p.nsplit);
    const bool lines = (reinterpret_cast<uintptr_t>(a.scratch) & 127) == 0;  // whole L2 lines a (row, head)
    for (int q = warp; q < Q; q += kWarps) {
      const int r = r0 + q / G, hg = q % G;
      if (r >= a.n_rows || hg >= gcount) continue;
      const size_t cell0 = (static_cast<size_t>(r) * a.n_heads + h0 + hg) * p.nsplit;
      combine_partials<HD / 32>(a.scratch + cell0 * 2, a.scratch + acc_at + cell0 * HD, row_chunks(p, r), HD / 32,
                                a.out + static_cast<size_t>(r) * a.ldo + static_cast<size_t>(h0 + hg) * HD, lines);
    }
  };
  if (n <= 0) return;  // past the rows' keys: not one of the group's arrivals (above)

  // Each chunk's rows: row i's keys are staged rows s_jf .. s_jl of the chunk (none: jf > jl), its
  // partial result cell s_cell of its own chunks; the chunk stages rows s_lo .. s_hi (every row's
  // keys), the first of them from ring entry s_entry. Thread k finds chunk k's, as a one-chunk
  // block's threads find theirs.
  __shared__ int s_jf[kChunks][R], s_jl[kChunks][R], s_cell[kChunks][R];
  __shared__ int s_lo[kChunks], s_hi[kChunks], s_entry[kChunks];
  const int ring = a.kv.ring;
  if (tid < n) {
    const long long c = c0 + tid, c_lo = c << shift;
    int lo = C, hi = -1;
#pragma unroll
    for (int i = 0; i < R; ++i) {
      int jf = C, jl = -1, cell = 0;
      if (r0 + i < a.n_rows) {
        long long first;
        int nk;
        key_range(p, r0 + i, first, nk);
        const long long from = first - c_lo, to = from + nk - 1;
        if (to >= 0 && from < C) {
          jf = static_cast<int>(max(from, 0LL));
          jl = static_cast<int>(min(to, static_cast<long long>(C - 1)));
          cell = static_cast<int>(c - (first >> shift));
        }
      }
      lo = min(lo, jf);
      hi = max(hi, jl);
      s_jf[tid][i] = jf, s_jl[tid][i] = jl, s_cell[tid][i] = cell;
    }
    s_lo[tid] = lo;
    s_hi[tid] = hi;
    s_entry[tid] = hi < 0 ? 0 : static_cast<int>((c_lo + lo) % ring);  // a 64-bit modulo: once a chunk
  }
  __syncthreads();

  // Each staged row's place in the cache, found once (a page-table read and a division), not once
  // per 16-byte piece: chunk k's, once every thread has issued the previous chunk's copies.
  const int* slot_pages = kv_slot_pages(a.kv, a.rows[r0].slot);
  auto locate = [&](int k) {
    const int lo = s_lo[k], hi = s_hi[k], e_lo = s_entry[k];
    for (int j = tid; j < C; j += kAttentionThreads) {
      const bool staged = j >= lo && j <= hi;
      const int entry = staged ? ring_entry(e_lo, j - lo, ring) : 0;
      row_at[j] = staged ? kv_entry_offset(a.kv, slot_pages, entry) : kNotStaged;
      if constexpr (kFp8) scale_at[j] = staged ? kv_scale_offset(a.kv, slot_pages, entry) + kvh : 0;
    }
  };
  // Stage a chunk into buffer b (its rows located, and the locations seen by every thread): K and
  // V rows of the positions lo .. hi as stored (cp.async, one commit group); elsewhere V's rows are
  // zeros (K's are left as they are: their scores become -inf).
  // A thread copies one 16-byte vector v of every kRowStep-th row from row j0: its vector and the
  // swizzle's key stay the same from row to row (kRowStep is a multiple of the key's period), so
  // each copy costs a location read and two address additions.
  constexpr int kRowStep = kAttentionThreads / kVecs, kStepBytes = kRowStep * kVecs * 16;
  static_assert(kAttentionThreads % kVecs == 0 && (kVecs >= 8 ? kRowStep % 8 == 0 : kRowStep % 16 == 0),
                "a thread's vector and swizzle key must not change from row to row");
  const int v0 = tid % kVecs, j0 = tid / kVecs, at0 = staged_offset<kVecs>(j0, v0);
  const T* kbase = static_cast<const T*>(a.kv.keys) + static_cast<size_t>(kvh) * HD + v0 * (16 / kEl);
  const T* vbase = static_cast<const T*>(a.kv.values) + static_cast<size_t>(kvh) * HD + v0 * (16 / kEl);
  auto stage = [&](int b) {
    unsigned char* ks = keys_of(b) + at0;
    unsigned char* vs = values_of(b) + at0;
#pragma unroll 4
    for (int j = j0, off = 0; j < C; j += kRowStep, off += kStepBytes) {
      const size_t at = row_at[j];
      if (at != kNotStaged) {
        tc::cp_async16(ks + off, kbase + at, true);
        tc::cp_async16(vs + off, vbase + at, true);
      } else {
        *reinterpret_cast<uint4*>(vs + off) = uint4{0, 0, 0, 0};
      }
    }
    if constexpr (kFp8) {
      // Each row's scales; zeros for the rows not staged (0 times a stale scale could be NaN).
      float* kscale = key_scales_of(b);
      float* vscale = value_scales_of(b);
      for (int j = tid; j < C; j += kAttentionThreads) {
        if (row_at[j] != kNotStaged) {
          cp_async4(kscale + j, a.kv.key_scales + scale_at[j]);
          cp_async4(vscale + j, a.kv.value_scales + scale_at[j]);
        } else {
          kscale[j] = vscale[j] = 0.f;
        }
      }
    }
    tc::cp_async_commit();
  };

  // 0. Stage the first chunk, and locate the second's rows while its copies travel.
  locate(0);
  __syncthreads();
  stage(0);
  if (kMulti && n > 1) {
    __syncthreads();  // every thread's reads of the first chunk's locations
    locate(1);
  }

  // This lane's queries as the scores' B fragments (query g; zeros past Q or past the heads),
  // loaded while the copies travel, once for all the block's chunks: of each step s, bf16 elements
  // 16 s + 2 t (+ 1) and 16 s + 2 t + 8 (+ 1); fp8 16 s + 4 t (+ 1) and 16 s + 4 t + 2 (+ 1), the
  // order in which the keys' fragments come out of their stored bytes (step 1 below).
  // Packed (Q <= 4, AccPacked): column g holds query g % 4's hi or mid term, and its lo or zero.
  constexpr bool kPacked = Q <= 4;
  SplitB<kPacked> qb[kSteps][2];
  {
    const int qi = kPacked ? g % 4 : g, i = qi / G, hg = qi % G;
    const bool real = qi < Q && hg < gcount && r0 + i < a.n_rows;
    const float* qrow = a.q + static_cast<size_t>(r0 + i) * a.ldq + static_cast<size_t>(h0 + hg) * HD;
#pragma unroll
    for (int s = 0; s < kSteps; ++s)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int d = kFp8 ? 16 * s + 4 * t + 2 * h : 16 * s + 2 * t + 8 * h;
        const Split3 terms = split3(real ? qrow[d] : 0.f, real ? qrow[d + 1] : 0.f);
        if constexpr (kPacked) qb[s][h] = pack2(terms, g);
        else qb[s][h] = terms;
      }
  }
  const size_t acc0 = ml_floats(a.n_rows, a.n_heads, p.nsplit);

  for (int k = 0; k < (kMulti ? n : 1); ++k) {
    const int b = kMulti ? k & 1 : 0;
    const unsigned char* ks = keys_of(b);
    const unsigned char* vs = values_of(b);
    const int* jf = s_jf[k];
    const int* jl = s_jl[k];
    const int* cells = s_cell[k];
    tc::cp_async_wait<0>();  // chunk k's copies, the only ones in flight
    // Chunk k's staged rows; chunk k + 1's locations; and every warp past chunk k - 1's values, so
    // that its buffer may be overwritten.
    __syncthreads();
    if (kMulti && k + 1 < n) stage(b ^ 1);
    // The keys of this lane's score columns, queries 2t and 2t + 1 (none past Q).
    int kf[2], kl[2];
#pragma unroll
    for (int e = 0; e < 2; ++e) {
      const int q = 2 * t + e;
      kf[e] = q < Q ? jf[q / G] : C;
      kl[e] = q < Q ? jl[q / G] : -1;
    }

    // 1. Scores, a 16-key tile a warp at a time: sc[q][j] = (q . k_j) * scale, -inf outside q's keys.
    // bf16: an ldmatrix of four 8 x 8 matrices is one step's A operand (lanes 0-15 rows 0-15 at
    // the step's first vector, 16-31 at its second). fp8: the same instruction over the stored
    // bytes gives two steps, each register 4 dimensions of a row (4 t .. 4 t + 3 of its 16), widened
    // to two bf16 pairs: (4 t, 4 t + 1) as the mma's k 2 t, (4 t + 2, 4 t + 3) as its 2 t + 8, the
    // queries' fragments ordered to match.
    for (int kt = warp; kt < C / 16; kt += kWarps) {
      SplitAcc<kPacked> acc;
      const int row = kt * 16 + lane % 16;
      if constexpr (kFp8) {
#pragma unroll
        for (int s2 = 0; s2 < kSteps / 2; ++s2) {
          uint32_t r[4];
          ldmatrix<4, false>(r, ks + staged_offset<kVecs>(row, 2 * s2 + lane / 16));
          const uint32_t a0[4] = {widen_fp8x2(r[0]), widen_fp8x2(r[1]), widen_fp8x2(r[0] >> 16), widen_fp8x2(r[1] >> 16)};
          const uint32_t a1[4] = {widen_fp8x2(r[2]), widen_fp8x2(r[3]), widen_fp8x2(r[2] >> 16), widen_fp8x2(r[3] >> 16)};
          acc.mma(a0, qb[2 * s2][0], qb[2 * s2][1]);
          acc.mma(a1, qb[2 * s2 + 1][0], qb[2 * s2 + 1][1]);
        }
      } else {
#pragma unroll
        for (int s = 0; s < kSteps; ++s) {
          uint32_t ka[4];
          ldmatrix<4, false>(ka, ks + staged_offset<kVecs>(row, 2 * s + lane / 16));
          acc.mma(ka, qb[s][0], qb[s][1]);
        }
      }
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int q = 2 * t + (e & 1), j = kt * 16 + g + (e & 2 ? 8 : 0);
        const float scale = kFp8 ? key_scales_of(b)[j] * a.scale : a.scale;  // fp8: the key's scale too
        const float dot = acc.sum(e);  // in every lane (a packed sum's shuffle)
        if (q < Q) sc[q * SP + j] = j >= kf[e & 1] && j <= kl[e & 1] ? dot * scale : -INFINITY;
      }
    }
    __syncthreads();

    // 2. Each query's softmax statistics over the chunk, a warp a query; scores become exp(s - max).
    // A query without keys here (or a padding head) gets zeros, and no partial result. Chunk
    // k + 2's rows are located meanwhile (chunk k + 1's locations were read before the sync above).
    if (kMulti && k + 2 < n) locate(k + 2);
    for (int q = warp; q < Q; q += kWarps) {
      float* s = sc + q * SP;
      const int row = q / G;
      const bool real = jf[row] <= jl[row] && q % G < gcount;
      float m = -INFINITY;
      for (int j = lane; j < C; j += 32) m = fmaxf(m, s[j]);
      for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
      float sum = 0;
      for (int j = lane; j < C; j += 32) {
        const float e = real ? expf(s[j] - m) : 0.f;
        sum += e;
        // Split once here, not by every warp that multiplies the values (fp8: the probability
        // times the value's scale, as the CUDA-core kernel weighs each value).
        const Bf16x3 terms = split3(kFp8 ? e * value_scales_of(b)[j] : e);
        pb[q * SP + j] = terms.hi;
        pb[(Q + q) * SP + j] = terms.mid;
        pb[(2 * Q + q) * SP + j] = terms.lo;
      }
      for (int o = 16; o > 0; o >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, o);
      if (real && lane == 0) {
        const size_t cell = (static_cast<size_t>(r0 + row) * a.n_heads + h0 + q % G) * p.nsplit + cells[row];
        a.scratch[cell * 2] = m;
        a.scratch[cell * 2 + 1] = sum;
      }
    }
    __syncthreads();

    // 3. Values, a 16-wide slice of the head a warp at a time: O^T[d][q] = sum_j V[j][d] P[q][j].
    // bf16: an ldmatrix.trans of four matrices is 16 keys x 16 dimensions of the A operand. fp8:
    // of two, 16 keys x 16 dimensions as stored bytes, each register 2 keys x 2 neighbouring
    // dimensions; the mma's row g takes dimension 2 g of the slice and row g + 8 dimension 2 g + 1.
    // A warp's slices dt = warp, warp + kWarps, ... share each 16 keys' probabilities (loaded once)
    // and run as independent chains.
    constexpr int kSlices = kSteps / kWarps;
    static_assert(kSteps % kWarps == 0, "every warp takes as many slices");
    SplitAcc<kPacked> acc[kSlices];
    // Column g's query: g, or packed g % 4 (its hi plane in columns 0-3, its mid in 4-7).
    const int pqi = kPacked ? g % 4 : g;
    const __nv_bfloat16* pq = pb + pqi * SP + 2 * t;
    // Lanes of queries past Q give zeros (their planes are never written).
    auto pair = [&](int plane, int j) {
      return pqi < Q ? *reinterpret_cast<const uint32_t*>(pq + plane * Q * SP + j) : 0u;
    };
    auto probabilities = [&](int j) {
      if constexpr (kPacked) return Packed2{pair(g < 4 ? 0 : 1, j), g < 4 ? pair(2, j) : 0u};
      else return Split3{pair(0, j), pair(1, j), pair(2, j)};
    };
    for (int kk = 0; kk < C / 16; ++kk) {
      const int j = kk * 16;
      const SplitB<kPacked> p0 = probabilities(j), p1 = probabilities(j + 8);
#pragma unroll
      for (int i = 0; i < kSlices; ++i) {
        const int dt = warp + i * kWarps;
        uint32_t va[4];
        if constexpr (kFp8) {
          uint32_t r[2];
          ldmatrix<2, true>(r, vs + staged_offset<kVecs>(kk * 16 + lane % 16, dt));
          va[0] = widen_fp8x2(__byte_perm(r[0], 0, 0x0020));
          va[1] = widen_fp8x2(__byte_perm(r[0], 0, 0x0031));
          va[2] = widen_fp8x2(__byte_perm(r[1], 0, 0x0020));
          va[3] = widen_fp8x2(__byte_perm(r[1], 0, 0x0031));
        } else {
          ldmatrix<4, true>(va, vs + staged_offset<kVecs>(kk * 16 + lane / 16 * 8 + lane % 8, 2 * dt + (lane / 8) % 2));
        }
        acc[i].mma(va, p0, p1);
      }
    }
    // This lane's two queries' partial results (none past Q, past the heads or without keys here).
    float* out[2];
#pragma unroll
    for (int e = 0; e < 2; ++e) {
      const int q = 2 * t + e, row = q / G;
      const bool real = q < Q && q % G < gcount && kf[e] <= kl[e];
      out[e] = real ? a.scratch + acc0 + ((static_cast<size_t>(r0 + row) * a.n_heads + h0 + q % G) * p.nsplit + cells[row]) * HD
                    : nullptr;
    }
#pragma unroll
    for (int i = 0; i < kSlices; ++i) {
      const int dt = warp + i * kWarps;
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int d = kFp8 ? dt * 16 + 2 * g + (e >> 1) : dt * 16 + g + (e & 2 ? 8 : 0);
        const float o = acc[i].sum(e);  // in every lane (a packed sum's shuffle)
        if (out[e & 1]) out[e & 1][d] = o;
      }
    }
  }
  arrive_and_combine();
}

template <int HD, typename T, int G, int R, int kChunk>
void launch_chunks(const SplitParams& sp, Stream s) {
  const auto kernel = attention_mma_kernel<HD, T, G, R, kChunk>;
  const size_t bytes = attention_mma_smem_bytes(HD, sp.chunk, kChunk > 0, static_cast<int>(sizeof(T)), G * R);
  check(bytes <= kAttentionMaxSmemBytes, "cuda attention", "chunk too large for shared memory");
  allow_dynamic_smem(reinterpret_cast<const void*>(kernel), kAttentionMaxSmemBytes, "attention_mma shared memory");
  const dim3 grid = chunk_grid(sp);
  launch_kernel("attention_mma", kernel, grid, dim3(kAttentionThreads), bytes, s, sp);
}

template <int HD, typename T, int G, int R>
void launch_shape(const SplitParams& sp, Stream s) {
  check(sp.chunks_per_block >= 1 && sp.chunks_per_block <= kAttentionMaxChunksPerBlock, "cuda attention",
        "chunks per block out of range");
  if (sp.chunks_per_block == 1) return launch_chunks<HD, T, G, R, 0>(sp, s);
  check(attention_multi_chunk_built(sp.chunk) && sp.chunk_shift == chunk_shift_of(sp.chunk), "cuda attention",
        "no build of blocks of several chunks takes chunks of " + std::to_string(sp.chunk) + " keys");
  static_assert(std::size(kAttentionMultiChunks) == 2, "one build for each chunk below");
  if (sp.chunk == kAttentionMultiChunks[0]) launch_chunks<HD, T, G, R, kAttentionMultiChunks[0]>(sp, s);
  else launch_chunks<HD, T, G, R, kAttentionMultiChunks[1]>(sp, s);
}

template <int HD, typename T>
void launch_head_dim(const SplitParams& sp, Stream s) {
  dispatch_block_shape<true>(sp, [&](auto g, auto r) { launch_shape<HD, T, decltype(g)::value, decltype(r)::value>(sp, s); });
}

template <typename T>
void launch_typed(const SplitParams& sp, Stream s) {
  switch (sp.a.kv.head_dim) {
    case 64: launch_head_dim<64, T>(sp, s); break;
    case 128: launch_head_dim<128, T>(sp, s); break;
    default: throw Error("cuda attention (tensor cores): head_dim " + std::to_string(sp.a.kv.head_dim) + " unsupported");
  }
}

}  // namespace

bool attention_mma_head_dim(int head_dim) { return head_dim == 64 || head_dim == 128; }

size_t attention_mma_smem_bytes(int head_dim, int chunk, bool double_buffered, int elem_bytes, int queries) {
  // The scores, the probabilities' three bf16 planes, each staged row's cache offset (fp8: and its
  // scale index), then one or two stage buffers (the kernel's layout). The planes' rows are 16-byte
  // multiples (chunk + 8 bf16 at chunks of multiples of 16), so what follows stays aligned.
  const bool fp8 = elem_bytes == 1;
  return static_cast<size_t>(queries) * score_pitch(chunk) * sizeof(float) +
         3 * static_cast<size_t>(queries) * score_pitch(chunk) * sizeof(__nv_bfloat16) +
         (fp8 ? 2 : 1) * static_cast<size_t>(chunk) * sizeof(size_t) +
         (double_buffered ? 2 : 1) * stage_bytes(head_dim, chunk, elem_bytes);
}

bool attention_mma_elements(int elem_bytes) { return elem_bytes == 2 || elem_bytes == 1; }

void launch_attention_mma(const SplitParams& sp, Stream s) {
  check(sp.aligned && (sp.a.kv.bf16 || sp.a.kv.fp8) && sp.chunk % 16 == 0, "cuda attention",
        "the tensor-core kernel needs an aligned plan on a bf16 or fp8 cache");
  if (sp.a.kv.fp8) launch_typed<__nv_fp8_e4m3>(sp, s);
  else launch_typed<__nv_bfloat16>(sp, s);
}

}  // namespace voxrt::cuda
