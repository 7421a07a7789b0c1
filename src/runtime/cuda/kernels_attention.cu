// The key/value ring caches: storing rows, and sliding-window attention over them.
//
// Attention is split flash-decoding style. A block owns one (row, kv head, key chunk), or up to 4
// queries' worth of consecutive rows of one slot (attention_rows_per_block: an encoder step's
// frames, an offline chunk), which then share what it stages: it copies the chunk's keys and values
// to shared memory, puts there the query heads that share the kv head (GQA: up to 8 per block),
// scores the keys (one thread per key), takes the chunk's softmax max and sum, and accumulates the
// probability-weighted values. With one chunk per row (short windows, many rows) it normalises and
// writes the output directly; otherwise each block writes (max, sum, unnormalised accumulator) and
// a combine kernel rescales and merges the chunks. The chunk size is chosen so that even a single
// decode row over 8192 keys launches several blocks per SM. K and V are stored fp32 or bf16
// (kv_elem.cuh), or fp8 with a scale per entry and head (each score and each value weight
// multiplied by its key's and value's scale); arithmetic is fp32 (expf, not __expf), so results
// match the CPU's double-accumulated reference on the same K and V to ~1e-6 of max|V|.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "runtime/cuda/attention_combine.cuh"
#include "runtime/cuda/attention_split.cuh"
#include "runtime/cuda/cuda_check.h"
#include "runtime/cuda/cuda_kernels.h"
#include "runtime/cuda/kv_elem.cuh"
#include "runtime/cuda/launch.cuh"

namespace voxrt::cuda {
namespace {

constexpr int kThreads = kAttentionThreads;
constexpr int kHeadsPerBlock = 8;  // query heads of one kv head handled together
constexpr int kMaxChunk = 1024;
constexpr int kMinChunk = 64;
constexpr int kCombineThreads = 256;
// One-chunk blocks per SM from which a tensor-core launch takes several chunks a block, and how
// many (plan_attention).
constexpr int kAttentionManyBlocksPerSm = 32;
constexpr int kAttentionManyBlocksChunks = 8;
constexpr int kMaxHeadDim = 256;

constexpr auto cdiv = attention_cdiv;

// Rows of k and v into the ring: one block per row, contiguous copies (rounded to the cache's type).
template <typename T>
__global__ void store_kv_kernel(KvLayout kv, const float* __restrict__ k, int ldk, const float* __restrict__ v,
                                int ldv, const DevRowRef* __restrict__ rows) {
  pdl_trigger();
  pdl_wait();
  const int r = blockIdx.x;
  const int width = kv.kv_heads * kv.head_dim;
  const size_t off = kv_row_offset(kv, rows[r]);
  const float* kr = k + static_cast<size_t>(r) * ldk;
  const float* vr = v + static_cast<size_t>(r) * ldv;
  T* keys = static_cast<T*>(kv.keys) + off;
  T* values = static_cast<T*>(kv.values) + off;
  for (int c = threadIdx.x; c < width; c += blockDim.x) {
    KvElem<T>::store(keys + c, kr[c]);
    KvElem<T>::store(values + c, vr[c]);
  }
}

// Asynchronous 16-byte copies from global to shared memory (cp.async, L2 only): they take no
// registers, so every copy of a chunk is in flight at once, where register loads are issued a few
// at a time (the compiler spaces them out to bound register use).
__device__ __forceinline__ void cp_async16(void* dst, const void* src) {
  const unsigned d = static_cast<unsigned>(__cvta_generic_to_shared(dst));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(d), "l"(src) : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
template <int kPending>
__device__ __forceinline__ void cp_async_wait() { asm volatile("cp.async.wait_group %0;" ::"n"(kPending) : "memory"); }

// The shared memory of a chunk block of R rows and G heads (Q = R * G queries): the queries [Q][HD]
// floats; the scores/probabilities [Q][chunk] or the value phase's slices [slices][Q][HD], whichever
// is larger; then the keys and values of the rows' chunks as stored (chunk + R - 1 rows: the rows'
// chunks start one key apart), each row padded by 16 bytes so that threads reading different rows
// at the same offset fall in different banks. The plan caps the chunk so that this fits
// kAttentionMaxSmemBytes. (Staging the values in the keys' space after the score phase would halve
// this, but their copies could then start only after the scores, not in flight with the keys'
// copies: slower, bench/README.md.)
__host__ __device__ constexpr int value_slices(int head_dim, int elem_bytes) { return kThreads / (head_dim * elem_bytes / 16); }
__host__ __device__ constexpr int padded_row_bytes(int head_dim, int elem_bytes) { return head_dim * elem_bytes + 16; }
__host__ __device__ constexpr size_t chunk_work_floats(int head_dim, int elem_bytes, int queries, int chunk) {
  const size_t scores = static_cast<size_t>(queries) * chunk;
  const size_t red = static_cast<size_t>(value_slices(head_dim, elem_bytes)) * queries * head_dim;
  return scores > red ? scores : red;
}
// fp8 caches (1-byte elements) also stage each staged row's K and V scale, each array rounded up to
// 16 bytes so that the staged rows after them stay aligned for cp.async.
__host__ __device__ constexpr int scale_floats(int elem_bytes, int rows, int chunk) {
  return elem_bytes == 1 ? (chunk + rows - 1 + 3) / 4 * 4 : 0;
}
__host__ __device__ constexpr size_t chunk_smem_bytes(int head_dim, int elem_bytes, int g, int rows, int chunk) {
  return (static_cast<size_t>(g) * rows * head_dim + chunk_work_floats(head_dim, elem_bytes, g * rows, chunk) +
          2 * static_cast<size_t>(scale_floats(elem_bytes, rows, chunk))) *
             sizeof(float) +
         2 * static_cast<size_t>(chunk + rows - 1) * padded_row_bytes(head_dim, elem_bytes);
}

// Query heads per block for a group: min(group, kHeadsPerBlock) rounded up to a power of two.
int heads_per_block(int group) {
  int g = 1;
  while (g < std::min(group, kHeadsPerBlock)) g *= 2;
  return g;
}

// Queries (rows x heads) a block may take when it groups rows: on the CUDA cores 4 (more would
// not fit its accumulators in registers), on the tensor cores 8 (the mma's N: a block of 8 rows
// stages each key once for all of them, where offline passes of many rows a stream re-staged it
// for every 4).
constexpr int kMaxGroupedQueries = 4;
constexpr int kMaxGroupedQueriesTensorCores = 8;
int max_rows_per_block(int group, bool aligned) {
  return std::max(1, (aligned ? kMaxGroupedQueriesTensorCores : kMaxGroupedQueries) / heads_per_block(group));
}

// One (R rows, kv head, head block, key chunk): see the file comment. HD is the head dimension, T
// the cache's element type, G the query heads per block (the group, rounded up to a power of two,
// at most kHeadsPerBlock; padding heads get a zero query and are never written), R the rows per
// block. G and R are template arguments so that no instruction is spent on heads or rows a block
// does not have. A block is latency-bound (few blocks hold keys in a short window), so its time is
// its round trips and the instructions of a thread: the chunk's keys and values are copied to
// shared memory in one round trip (cp.async), the scores are one thread per key, the values one
// 16-byte piece of a row per thread.
//
// Rows of a block (R > 1: the host groups only consecutive positions of one slot, an encoder
// step's frames) share the keys and values they read: row i's chunk starts off_i keys into the
// staged span. Each row's arithmetic is exactly the single-row block's (the same dot products,
// the same softmax, each value slice summed over the same keys in the same order, the slices added
// in the same order), so grouping never changes a result: a row computes the same bits alone, in a
// group, live or offline.
template <int HD, typename T, int G, int R>
__global__ void __launch_bounds__(kThreads) attention_chunk_kernel(SplitParams p) {
  using E = KvElem<T>;
  pdl_trigger();
  pdl_wait();
  constexpr int NW = kThreads / 32;
  constexpr int Q = R * G;  // queries: row i, head g is query i * G + g
  constexpr int kEl = static_cast<int>(sizeof(T));
  constexpr int kVec = E::kPer16, TPK = HD / kVec, KS = value_slices(HD, kEl);
  constexpr int kRowBytes = padded_row_bytes(HD, kEl);
  constexpr int kPieces = HD / kVec;  // 16-byte pieces of a key row
  static_assert(kPieces * kVec == HD && KS >= 1 && kThreads % TPK == 0, "unsupported head_dim");

  constexpr bool kScaled = kEl == 1;  // fp8: each staged row's K and V scale
  extern __shared__ float4 smem4[];
  float* qs = reinterpret_cast<float*>(smem4);
  float* smem = qs + Q * HD;
  float* kscale = smem + chunk_work_floats(HD, kEl, Q, p.chunk);  // fp8 only: [chunk + R - 1] each
  float* vscale = kscale + scale_floats(kEl, R, p.chunk);
  char* kst = reinterpret_cast<char*>(vscale + scale_floats(kEl, R, p.chunk));
  char* vst = kst + static_cast<size_t>(p.chunk + R - 1) * kRowBytes;
  __shared__ float s_m[Q], s_l[Q];

  const AttentionArgs& a = p.a;
  const ChunkBlock block = chunk_block<R>(p);
  const int r0 = block.r0, split = block.split, kvh = block.kvh, hb = block.hb;
  const int h0 = kvh * p.group + hb * G;
  const int gcount = min(G, p.group - hb * G);
  const int j0 = split * p.chunk;
  // Row i's keys in this chunk: cnt[i] of them from absolute position start[i] (none: cnt 0).
  int cnt[R];
  long long start[R], lo = 0, hi = 0;
  bool any = false;
#pragma unroll
  for (int i = 0; i < R; ++i) {
    cnt[i] = 0;
    start[i] = 0;
    if (r0 + i >= a.n_rows) continue;
    long long first;
    int n;
    key_range(p, r0 + i, first, n);
    if (j0 >= n) continue;  // this row has fewer chunks than the longest row
    cnt[i] = min(p.chunk, n - j0);
    start[i] = first + j0;
    lo = any ? min(lo, start[i]) : start[i];
    hi = any ? max(hi, start[i] + cnt[i]) : start[i] + cnt[i];
    any = true;
  }
  if (!any) return;
  const int span = static_cast<int>(hi - lo);  // at most chunk + R - 1 (the host's grouping)
  int off[R];
#pragma unroll
  for (int i = 0; i < R; ++i) off[i] = static_cast<int>(start[i] - lo);
  // The same per row in shared memory, for loops whose row is not a compile-time index (a register
  // array indexed at run time would go to local memory).
  __shared__ int s_cnt[R], s_off[R];
  if (threadIdx.x < R) {
#pragma unroll
    for (int i = 0; i < R; ++i)
      if (i == static_cast<int>(threadIdx.x)) {
        s_cnt[i] = cnt[i];
        s_off[i] = off[i];
      }
  }
  const int ring = a.kv.ring;
  const int e0 = static_cast<int>(lo % ring);
  // The rows' slot's pages: entry e of its ring is in page slot_pages[e / page_len] (the chunk may
  // cross pages: each staged row finds its own).
  const int* slot_pages = kv_slot_pages(a.kv, a.rows[r0].slot);
  const T* kbase = static_cast<const T*>(a.kv.keys) + static_cast<size_t>(kvh) * HD;
  const T* vbase = static_cast<const T*>(a.kv.values) + static_cast<size_t>(kvh) * HD;
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;

  // The span's rows of K or V on their way to shared memory, consecutive threads copying
  // consecutive pieces of a row.
  auto stage = [&](char* dst, const T* src) {
    for (int i = tid; i < span * kPieces; i += kThreads) {
      const int t = i / kPieces, piece = i % kPieces;
      cp_async16(dst + t * kRowBytes + piece * 16,
                 src + kv_entry_offset(a.kv, slot_pages, ring_entry(e0, t, ring)) + piece * kVec);
    }
    cp_async_commit();
  };

  // 0. The keys (one commit group) and the values (a second), then the queries (scalar loads: q
  // rows need not be aligned) while they travel.
  stage(kst, kbase);
  stage(vst, vbase);
  if constexpr (kScaled) {
    for (int t = tid; t < span; t += kThreads) {
      const size_t at = kv_scale_offset(a.kv, slot_pages, ring_entry(e0, t, ring)) + kvh;
      kscale[t] = a.kv.key_scales[at];
      vscale[t] = a.kv.value_scales[at];
    }
  }
  __syncthreads();  // s_cnt, s_off
#pragma unroll
  for (int i = tid; i < Q * HD; i += kThreads) {
    const int q = i / HD, row = q / G, g = q % G;
    const int row_cnt = R == 1 ? cnt[0] : s_cnt[row];
    qs[i] = (row_cnt > 0 && g < gcount)
                ? a.q[static_cast<size_t>(r0 + row) * a.ldq + static_cast<size_t>(h0 + g) * HD + i % HD]
                : 0.0f;
  }
  cp_async_wait<1>();  // this thread's keys have landed
  __syncthreads();     // everyone's keys, and the queries

  // 1. Scores: s[q][j] = (q . k_j) * scale for key j of query q's row, thread tid taking staged keys
  // tid, tid + kThreads, ... Two accumulators per query, alternating by piece, give each chain half
  // the length.
  const float4* q4 = reinterpret_cast<const float4*>(qs);
  for (int t = tid; t < span; t += kThreads) {
    const uint4* krow = reinterpret_cast<const uint4*>(kst + t * kRowBytes);
    float d[Q][2];
#pragma unroll
    for (int q = 0; q < Q; ++q) d[q][0] = d[q][1] = 0.0f;
#pragma unroll
    for (int i = 0; i < kPieces; ++i) {
      float x[kVec];
      E::widen16(krow[i], x);
#pragma unroll
      for (int q = 0; q < Q; ++q) {
        float& acc = d[q][i & 1];
#pragma unroll
        for (int u = 0; u < kVec; u += 4) {
          const float4 qv = q4[(q * HD + i * kVec + u) / 4];
          acc = fmaf(qv.x, x[u], acc);
          acc = fmaf(qv.y, x[u + 1], acc);
          acc = fmaf(qv.z, x[u + 2], acc);
          acc = fmaf(qv.w, x[u + 3], acc);
        }
      }
    }
    const float key_scale = kScaled ? kscale[t] * a.scale : a.scale;
#pragma unroll
    for (int q = 0; q < Q; ++q) {
      const int row = q / G, j = t - off[row];
      if (R == 1 || (j >= 0 && j < cnt[row])) smem[q * p.chunk + j] = (d[q][0] + d[q][1]) * key_scale;
    }
  }
  __syncthreads();

  // 2. Softmax statistics of each query's chunk, one warp per query; scores become exp(s - max).
  for (int q = warp; q < Q; q += NW) {
    const int c = R == 1 ? cnt[0] : s_cnt[q / G];
    float* s = smem + q * p.chunk;
    float m = -INFINITY;
    for (int j = lane; j < c; j += 32) m = fmaxf(m, s[j]);
    for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
    float l = 0;
    for (int j = lane; j < c; j += 32) {
      const float e = expf(s[j] - m);
      s[j] = e;
      l += e;
    }
    for (int o = 16; o > 0; o >>= 1) l += __shfl_xor_sync(0xffffffffu, l, o);
    if (lane == 0) {
      s_m[q] = m;
      s_l[q] = l;
    }
  }
  cp_async_wait<0>();  // this thread's values have landed
  __syncthreads();     // everyone's values, and the probabilities

  // 3. Weighted values: thread (ks, dd) takes staged keys ks, ks + KS, ... and owns the kVec dims of
  // one 16-byte piece of the row. For row i that is its keys j = t - off[i] in slice
  // (ks - off[i]) mod KS, in ascending order, as a single-row block's slice sums them; a key outside
  // the row's chunk adds w = 0, which leaves the sum's bits as they are.
  const int ks = tid / TPK, dd = tid % TPK;
  float acc[Q][kVec];
#pragma unroll
  for (int q = 0; q < Q; ++q)
#pragma unroll
    for (int u = 0; u < kVec; ++u) acc[q][u] = 0.0f;
#pragma unroll 4
  for (int t = ks; t < span; t += KS) {
    float x[kVec];
    E::widen16(reinterpret_cast<const uint4*>(vst + t * kRowBytes)[dd], x);
    const float value_scale = kScaled ? vscale[t] : 1.0f;
#pragma unroll
    for (int q = 0; q < Q; ++q) {
      const int row = q / G, j = t - off[row];
      float w = (R == 1 || (j >= 0 && j < cnt[row])) ? smem[q * p.chunk + j] : 0.0f;
      if constexpr (kScaled) w *= value_scale;
#pragma unroll
      for (int u = 0; u < kVec; ++u) acc[q][u] = fmaf(w, x[u], acc[q][u]);
    }
  }
  // The slices to shared memory (the probabilities are no longer needed), then each row's slices
  // added in slice order: slice s of row i is thread slice (s + off[i]) mod KS.
  constexpr int kQuads = kVec / 4;
  float4* red = reinterpret_cast<float4*>(smem);  // [KS][Q][HD / 4]
  __syncthreads();
#pragma unroll
  for (int q = 0; q < Q; ++q)
#pragma unroll
    for (int u = 0; u < kQuads; ++u)
      red[(ks * Q + q) * (HD / 4) + dd * kQuads + u] =
          float4{acc[q][4 * u], acc[q][4 * u + 1], acc[q][4 * u + 2], acc[q][4 * u + 3]};
  __syncthreads();
  for (int e = tid; e < Q * (HD / 4); e += kThreads) {
    const int q = e / (HD / 4), d4 = e % (HD / 4), row = q / G, g = q % G;
    const int row_cnt = R == 1 ? cnt[0] : s_cnt[row], row_off = R == 1 ? 0 : s_off[row];
    if (row_cnt == 0 || g >= gcount) continue;
    float4 o = red[((row_off % KS) * Q + q) * (HD / 4) + d4];
    for (int s2 = 1; s2 < KS; ++s2) {
      const float4 v = red[(((s2 + row_off) % KS) * Q + q) * (HD / 4) + d4];
      o.x += v.x;
      o.y += v.y;
      o.z += v.z;
      o.w += v.w;
    }
    const int r = r0 + row, h = h0 + g;
    if (p.nsplit == 1) {
      const float l = s_l[q];
      float* out = a.out + static_cast<size_t>(r) * a.ldo + static_cast<size_t>(h) * HD + 4 * d4;
      out[0] = o.x / l;
      out[1] = o.y / l;
      out[2] = o.z / l;
      out[3] = o.w / l;
    } else {
      const size_t cell = (static_cast<size_t>(r) * a.n_heads + h) * p.nsplit + split;
      reinterpret_cast<float4*>(a.scratch + ml_floats(a.n_rows, a.n_heads, p.nsplit) + cell * HD)[d4] = o;
      if (d4 == 0) {
        a.scratch[cell * 2] = s_m[q];
        a.scratch[cell * 2 + 1] = s_l[q];
      }
    }
  }
}

// Merges a (row, head)'s chunks: out = sum_s acc_s e^(m_s - M) / sum_s l_s e^(m_s - M). The
// chunks' maxima and sums are reduced across the block (a row over a full decoder window has 64
// chunks: a serial pass over them would be most of this kernel's time).
__global__ void attention_combine_kernel(SplitParams p, int head_dim) {
  pdl_trigger();
  pdl_wait();
  extern __shared__ float weight[];  // e^(m_s - M) per chunk
  __shared__ float red[32];
  const AttentionArgs& a = p.a;
  const int r = blockIdx.x, h = blockIdx.y;
  const int ns = row_chunks(p, r);
  const size_t cell0 = (static_cast<size_t>(r) * a.n_heads + h) * p.nsplit;
  const float* ml = a.scratch + cell0 * 2;
  const float* acc = a.scratch + ml_floats(a.n_rows, a.n_heads, p.nsplit) + cell0 * head_dim;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, nw = blockDim.x / 32;

  float m = -INFINITY;
  for (int s = threadIdx.x; s < ns; s += blockDim.x) m = fmaxf(m, ml[2 * s]);
  for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
  if (lane == 0) red[warp] = m;
  __syncthreads();
  m = red[0];
  for (int w = 1; w < nw; ++w) m = fmaxf(m, red[w]);
  __syncthreads();  // red is reused below

  float l = 0;
  for (int s = threadIdx.x; s < ns; s += blockDim.x) {
    const float w = expf(ml[2 * s] - m);
    weight[s] = w;
    l += ml[2 * s + 1] * w;
  }
  for (int o = 16; o > 0; o >>= 1) l += __shfl_xor_sync(0xffffffffu, l, o);
  if (lane == 0) red[warp] = l;
  __syncthreads();
  l = 0;
  for (int w = 0; w < nw; ++w) l += red[w];

  // Warp w sums chunks w, w + nw, ... for every dimension (lane d owns d, d + 32, ...), then the
  // warps' sums are added in warp order: every warp's loads are in flight together.
  __shared__ float wsum[kCombineThreads / 32][kMaxHeadDim];
  float o[kMaxHeadDim / 32];
  const int per_lane = head_dim / 32;
#pragma unroll
  for (int i = 0; i < kMaxHeadDim / 32; ++i) o[i] = 0;
#pragma unroll 4
  for (int s = warp; s < ns; s += nw) {
    const float ws = weight[s];
    const float* as = acc + static_cast<size_t>(s) * head_dim;
#pragma unroll
    for (int i = 0; i < kMaxHeadDim / 32; ++i)
      if (i < per_lane) o[i] = fmaf(as[lane + 32 * i], ws, o[i]);
  }
#pragma unroll
  for (int i = 0; i < kMaxHeadDim / 32; ++i)
    if (i < per_lane) wsum[warp][lane + 32 * i] = o[i];
  __syncthreads();
  for (int d = threadIdx.x; d < head_dim; d += blockDim.x) {
    float t = wsum[0][d];
    for (int w = 1; w < nw; ++w) t += wsum[w][d];
    a.out[static_cast<size_t>(r) * a.ldo + static_cast<size_t>(h) * head_dim + d] = t / l;
  }
}

// The combine for plans of at most 32 chunks a row (the encoder's window): one warp per (row,
// head), as the tensor-core blocks' fused combine merges theirs (attention_combine.cuh). The block
// kernel above, for longer rows, spends most of its instructions on block-wide reductions and idle
// threads when a row has a dozen chunks. Which of the two runs is the plan's
// (AttentionPlan::combine_warp: its chunk count, a constant of the model, and the options), so a
// row's bits never depend on its batch.
constexpr int kCombineWarpChunks = 32;
constexpr int kCombineWarpsPerBlock = 4;
__global__ void attention_combine_warp_kernel(SplitParams p, int head_dim) {
  pdl_trigger();
  pdl_wait();
  const AttentionArgs& a = p.a;
  const long long pair = static_cast<long long>(blockIdx.x) * kCombineWarpsPerBlock + threadIdx.x / 32;
  if (pair >= static_cast<long long>(a.n_rows) * a.n_heads) return;
  const int r = static_cast<int>(pair / a.n_heads), h = static_cast<int>(pair % a.n_heads);
  const size_t cell0 = (static_cast<size_t>(r) * a.n_heads + h) * p.nsplit;
  combine_partials<kMaxHeadDim / 32>(a.scratch + cell0 * 2, a.scratch + ml_floats(a.n_rows, a.n_heads, p.nsplit) + cell0 * head_dim,
                                     row_chunks(p, r), head_dim / 32,
                                     a.out + static_cast<size_t>(r) * a.ldo + static_cast<size_t>(h) * head_dim, false);
}

template <int HD, typename T, int G, int R>
void launch_chunks_grouped(const SplitParams& sp, Stream s) {
  const size_t bytes = chunk_smem_bytes(HD, static_cast<int>(sizeof(T)), G, R, sp.chunk);
  check(bytes <= kAttentionMaxSmemBytes, "cuda attention", "chunk too large for shared memory");
  allow_dynamic_smem(reinterpret_cast<const void*>(attention_chunk_kernel<HD, T, G, R>), kAttentionMaxSmemBytes,
                     "attention_chunk shared memory");
  const dim3 grid = chunk_grid(sp);
  launch_kernel("attention_chunk", attention_chunk_kernel<HD, T, G, R>, grid, dim3(kThreads), bytes, s, sp);
}

template <int HD, typename T>
void launch_chunks_typed(const SplitParams& sp, Stream s) {
  dispatch_block_shape(sp, [&](auto g, auto r) { launch_chunks_grouped<HD, T, decltype(g)::value, decltype(r)::value>(sp, s); });
}

template <int HD>
void launch_chunks(const SplitParams& sp, Stream s) {
  if (sp.a.kv.fp8) launch_chunks_typed<HD, __nv_fp8_e4m3>(sp, s);
  else if (sp.a.kv.bf16) launch_chunks_typed<HD, __nv_bfloat16>(sp, s);
  else launch_chunks_typed<HD, float>(sp, s);
}

}  // namespace

dim3 chunk_grid(const SplitParams& sp) {
  const size_t blocks =
      attention_row_groups(sp.a.n_rows, sp.rows_per_block, sp.a.kv.kv_heads, sp.head_blocks) * split_groups(sp);
  check(blocks <= 0x7fffffffu, "cuda attention", "too many rows for one launch");
  return dim3(static_cast<unsigned>(blocks));
}

namespace {

void launch_chunk_kernel(const SplitParams& sp, Stream s) {
  switch (sp.a.kv.head_dim) {
    case 32: launch_chunks<32>(sp, s); break;
    case 64: launch_chunks<64>(sp, s); break;
    case 128: launch_chunks<128>(sp, s); break;
    case 256: launch_chunks<256>(sp, s); break;
    default: throw Error("cuda attention: head_dim " + std::to_string(sp.a.kv.head_dim) + " unsupported");
  }
}

}  // namespace

void launch_store_kv(const KvLayout& kv, const float* k, int ldk, const float* v, int ldv, const DevRowRef* rows,
                     int n_rows, Stream s) {
  const int width = kv.kv_heads * kv.head_dim;
  if (n_rows <= 0 || width <= 0) return;
  if (kv.fp8) return launch_store_kv_fp8(kv, k, ldk, v, ldv, rows, n_rows, s);
  const dim3 grid(n_rows), block(std::min(1024, (width + 31) / 32 * 32));
  if (kv.bf16) launch_kernel("store_kv", store_kv_kernel<__nv_bfloat16>, grid, block, 0, s, kv, k, ldk, v, ldv, rows);
  else launch_kernel("store_kv", store_kv_kernel<float>, grid, block, 0, s, kv, k, ldk, v, ldv, rows);
}

bool attention_head_dim_supported(int head_dim) {
  return head_dim == 32 || head_dim == 64 || head_dim == 128 || head_dim == 256;
}

bool attention_aligned(int kv_bytes, int head_dim, bool tensor_cores) {
  // bf16 and fp8 caches go to the tensor-core kernel where it takes the head size
  // (kernels_attention_mma.cu); fp32 caches, which it does not take, to the CUDA-core kernel.
  return tensor_cores && attention_mma_elements(kv_bytes) && attention_mma_head_dim(head_dim);
}

int attention_rows_per_block(const DevRowRef* rows, int n_rows, int n_heads, int n_kv_heads, bool aligned) {
  const int group = n_heads / std::max(1, n_kv_heads), most = max_rows_per_block(group, aligned);
  if (most == 1 || n_rows < 2) return 1;
  // Every group of r consecutive rows of the launch holds consecutive positions of one slot.
  auto fits = [&](int r) {
    for (int i = 1; i < n_rows; ++i)
      if (i % r != 0 && (rows[i].slot != rows[i - 1].slot || rows[i].pos != rows[i - 1].pos + 1)) return false;
    return true;
  };
  if (fits(most)) return most;
  // The tensor-core kernel also takes half as many (live encoder passes: 4 frames a stream).
  if (aligned && most / 2 > 1 && fits(most / 2)) return most / 2;
  return 1;
}

AttentionPlan plan_attention(int n_rows, int n_heads, int n_kv_heads, int head_dim, int kv_bytes, int max_keys,
                             int window, int rows_per_position, int sm_count, double blocks_per_sm, int rows_per_block,
                             bool tensor_cores, int chunks_per_block, bool combine_warp, size_t smem_per_block,
                             bool fused_combine) {
  AttentionPlan plan;
  const size_t max_smem = std::min(kAttentionMaxSmemBytes, smem_per_block);
  const int group = n_heads / n_kv_heads;
  plan.aligned = attention_aligned(kv_bytes, head_dim, tensor_cores);
  auto smem_bytes = [&](int rows, int c) {
    return plan.aligned ? attention_mma_smem_bytes(head_dim, c, plan.chunks_per_block > 1, kv_bytes, rows * heads_per_block(group))
                        : chunk_smem_bytes(head_dim, kv_bytes, heads_per_block(group), rows, c);
  };
  // The chunk size depends on the model alone (one row over a full window), never on the batch:
  // a row's result then does not depend on which other rows share the launch, so a live session
  // (a few rows per step) computes exactly what an offline pass (many rows) computes.
  // It is the largest chunk that still gives a live step (rows_per_position rows over a full window) at
  // least blocks_per_sm (CudaOptions, default 8) blocks per SM, and no smaller than kMinChunk
  // keys (below that the partial results outweigh the keys themselves). With K and V staged by
  // cp.async a block's work is one round trip, so more, smaller blocks win: the default gives both
  // live steps the smallest chunk, 64 keys (bench/README.md).
  const long long blocks_per_split =
      static_cast<long long>(std::max(1, rows_per_position)) * n_kv_heads * cdiv(group, kHeadsPerBlock);
  const int basis = std::max(1, window);
  const double per_sm = std::clamp(blocks_per_sm, 0.0, 64.0);
  int chunk = kMaxChunk;
  while (chunk > kMinChunk && blocks_per_split * cdiv(basis, chunk) < per_sm * sm_count) chunk /= 2;
  // A block stages its chunk's keys and values in shared memory; the cap assumes the most rows a
  // block may group, so that the chunk does not depend on how a launch's rows are grouped.
  const int most_rows = max_rows_per_block(group, plan.aligned);
  while (chunk > kMinChunk && smem_bytes(most_rows, chunk) > max_smem) chunk /= 2;
  check(rows_per_block == 1 || rows_per_block == most_rows || (plan.aligned && 2 * rows_per_block == most_rows),
        "cuda attention", "unsupported rows per block");
  plan.chunk = chunk;
  plan.rows_per_block = rows_per_block;
  // Aligned chunks: a block's rows (up to most_rows consecutive positions) reach from the first
  // row's first key to the last row's last, max_keys + most_rows - 1 keys, which may touch one
  // more chunk than they fill.
  plan.nsplit = plan.aligned ? std::max(1, max_keys + most_rows - 2) / chunk + 2 : std::max(1, cdiv(max_keys, chunk));
  if (plan.aligned) {
    // Several chunks a tensor-core block, two stage buffers. The chunk above was chosen for one
    // buffer, whatever chunks_per_block is: a chunk's size sets which 16 keys share an
    // instruction, so it must not change with the chunk count, which keeps the bits. Where the
    // second buffer does not fit, the block takes one chunk instead.
    // Automatic (0): several chunks a block only where one chunk a block would launch many waves
    // of blocks. Since the bits are the same, this may depend on the batch. Measured on the H200
    // (bench/results/2026-12-03-attention-chunks-per-block.txt): 4 chunks a block cut a layer's
    // attention at 64-256 streams by 10-17 %, and slow a single stream's (a few blocks per SM) by
    // half again; 8 cut a further 5-12 % at 256 streams once a chunk took fewer instructions
    // (bench/results/2026-12-04-attention-registers.txt), where 3 or 4 stage buffers, fewer blocks
    // an SM, were slower.
    const long long one_chunk_blocks = static_cast<long long>(cdiv(n_rows, rows_per_block)) * plan.nsplit * n_kv_heads *
                                       cdiv(group, heads_per_block(group));
    const int automatic = one_chunk_blocks >= kAttentionManyBlocksPerSm * static_cast<long long>(sm_count) ? kAttentionManyBlocksChunks : 1;
    plan.chunks_per_block = std::clamp(chunks_per_block > 0 ? chunks_per_block : automatic, 1, kAttentionMaxChunksPerBlock);
    // Blocks of several chunks are built for a few chunk sizes (attention_multi_chunk_built).
    if (smem_bytes(rows_per_block, chunk) > max_smem || !attention_multi_chunk_built(chunk)) plan.chunks_per_block = 1;
  }
  plan.smem_bytes = smem_bytes(rows_per_block, chunk);
  if (plan.nsplit > 1)
    plan.scratch_floats = ml_floats(n_rows, n_heads, plan.nsplit) +
                          static_cast<size_t>(n_rows) * n_heads * plan.nsplit * head_dim;
  plan.combine_warp = combine_warp && plan.nsplit > 1 && plan.nsplit <= kCombineWarpChunks;
  if (plan.aligned && fused_combine)  // a counter a row group (attention_split.cuh's chunk_block)
    plan.arrivals = attention_row_groups(n_rows, rows_per_block, n_kv_heads, cdiv(group, heads_per_block(group)));
  return plan;
}

void launch_attention(const AttentionArgs& a, const AttentionPlan& plan, Stream s) {
  if (a.n_rows <= 0 || a.n_heads <= 0) return;
  check(plan.chunk > 0 && (plan.chunk & (plan.chunk - 1)) == 0, "cuda attention", "the key chunk must be a power of two");
  SplitParams sp{a, plan.chunk, plan.nsplit, a.n_heads / a.kv.kv_heads, 0, 0, plan.rows_per_block, plan.aligned,
                 chunk_shift_of(plan.chunk), plan.chunks_per_block};
  sp.heads_per_block = heads_per_block(sp.group);
  sp.head_blocks = cdiv(sp.group, sp.heads_per_block);
  const int elem_bytes = a.kv.fp8 ? 1 : a.kv.bf16 ? 2 : 4;
  if (plan.aligned) {
    check(attention_mma_elements(elem_bytes) &&
              plan.smem_bytes ==
                  attention_mma_smem_bytes(a.kv.head_dim, plan.chunk, plan.chunks_per_block > 1, elem_bytes,
                                           plan.rows_per_block * sp.heads_per_block) &&
              plan.nsplit > 1,
          "cuda attention", "the plan was made for another head shape or cache element size");
    check(plan.arrivals == 0 ||
              (a.arrivals != nullptr &&
               plan.arrivals == attention_row_groups(a.n_rows, plan.rows_per_block, a.kv.kv_heads, sp.head_blocks)),
          "cuda attention", "the tensor-core kernel's fused combine needs the plan's arrival counters");
    if (plan.arrivals == 0) sp.a.arrivals = nullptr;  // the combine pass below merges the chunks
    launch_attention_mma(sp, s);
    if (plan.arrivals > 0) return;  // its blocks merged the chunks themselves (attention_combine.cuh)
  } else {
    check(plan.chunks_per_block == 1 &&
              plan.smem_bytes ==
                  chunk_smem_bytes(a.kv.head_dim, elem_bytes, sp.heads_per_block, plan.rows_per_block, plan.chunk),
          "cuda attention", "the plan was made for another head shape or cache element size");
    launch_chunk_kernel(sp, s);
  }
  if (plan.nsplit > 1 && plan.combine_warp) {
    check(plan.nsplit <= kCombineWarpChunks, "cuda attention", "too many chunks for the one-warp combine");
    const long long pairs = static_cast<long long>(a.n_rows) * a.n_heads;
    const dim3 grid(static_cast<unsigned>(cdiv(pairs, kCombineWarpsPerBlock)));
    launch_kernel("attention_combine_warp", attention_combine_warp_kernel, grid, dim3(32 * kCombineWarpsPerBlock), 0, s,
                  sp, a.kv.head_dim);
  } else if (plan.nsplit > 1) {
    const dim3 grid(static_cast<unsigned>(a.n_rows), static_cast<unsigned>(a.n_heads));
    const int threads = kCombineThreads;
    launch_kernel("attention_combine", attention_combine_kernel, grid, dim3(threads), plan.nsplit * sizeof(float), s, sp,
                  a.kv.head_dim);
  }
}

}  // namespace voxrt::cuda
