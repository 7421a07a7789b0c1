// The key/value ring caches: storing rows, and sliding-window attention over them.
//
// Attention is split flash-decoding style. A block owns one (row, kv head, key chunk): it copies
// the chunk's keys and values to shared memory, puts there the query heads that share the kv head
// (GQA: up to 8 per block), scores the keys (one thread per key), takes the chunk's softmax max and
// sum, and accumulates the probability-weighted values. With one chunk per row (short windows,
// many rows) it normalises and writes the output directly; otherwise each block writes (max, sum,
// unnormalised accumulator) and a combine kernel rescales and merges the chunks. The chunk size is
// chosen so that even a single decode row over 8192 keys launches several blocks per SM. K and V
// are stored fp32 or bf16 (kv_elem.cuh); arithmetic is fp32 (expf, not __expf), so results match
// the CPU's double-accumulated reference on the same K and V to ~1e-6 of max|V|.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "runtime/cuda/cuda_check.h"
#include "runtime/cuda/cuda_kernels.h"
#include "runtime/cuda/kv_elem.cuh"
#include "runtime/cuda/launch.cuh"

namespace voxrt::cuda {
namespace {

constexpr int kThreads = 128;      // per attention block
constexpr int kHeadsPerBlock = 8;  // query heads of one kv head handled together
constexpr int kMaxChunk = 1024;
constexpr int kMinChunk = 64;
constexpr int kCombineThreads = 256;
constexpr int kMaxHeadDim = 256;

__host__ __device__ constexpr int cdiv(long long a, long long b) { return static_cast<int>((a + b - 1) / b); }

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

struct SplitParams {
  AttentionArgs a;
  int chunk, nsplit;
  int group;        // query heads per kv head
  int head_blocks;  // blocks per kv head along the group (group > kHeadsPerBlock)
};

// The partial results: (max, sum) per (row, head, chunk), then the accumulators, 16-byte aligned.
__host__ __device__ inline size_t ml_floats(int n_rows, int n_heads, int nsplit) {
  return (static_cast<size_t>(n_rows) * n_heads * nsplit * 2 + 3) / 4 * 4;
}

// The keys row r attends to: positions first .. pos, n of them.
__device__ __forceinline__ void key_range(const SplitParams& p, int r, long long& first, int& n) {
  const long long pos = p.a.rows[r].pos;
  first = pos - p.a.window + 1;
  if (first < 0) first = 0;
  n = static_cast<int>(pos - first + 1);
}

// The ring entry of key j of a chunk starting at entry e0 < ring: no more than a ring's worth of
// keys is attended (the backend checks), so e0 + j < 2 * ring and one conditional subtraction
// (a select) replaces the modulo.
__device__ __forceinline__ int ring_entry(int e0, int j, int ring) {
  const int e = e0 + j;
  return e >= ring ? e - ring : e;
}

// Asynchronous 16-byte copies from global to shared memory (cp.async, L2 only): they take no
// registers, so every copy of a chunk is in flight at once, where register loads were issued a
// few at a time (the compiler spaces them out to bound register use).
__device__ __forceinline__ void cp_async16(void* dst, const void* src) {
  const unsigned d = static_cast<unsigned>(__cvta_generic_to_shared(dst));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(d), "l"(src) : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
template <int kPending>
__device__ __forceinline__ void cp_async_wait() { asm volatile("cp.async.wait_group %0;" ::"n"(kPending) : "memory"); }

// The shared memory of a chunk block: the queries [G][HD] floats; the scores/probabilities
// [G][chunk] or the value phase's slice reduction [slices - 1][G][HD], whichever is larger; then
// the chunk's keys and values as stored, each row padded by 16 bytes so that threads reading
// different rows at the same offset fall in different banks. The plan caps the chunk so that this
// fits kAttentionMaxSmemBytes. (Staging the values in the keys' space after the score phase halves
// this, but measured slower: decoder step 2.72 -> 3.58 ms, encoder step 1.77 -> 1.83 ms, H200.)
__host__ __device__ constexpr int value_slices(int head_dim, int elem_bytes) { return kThreads / (head_dim * elem_bytes / 16); }
__host__ __device__ constexpr int padded_row_bytes(int head_dim, int elem_bytes) { return head_dim * elem_bytes + 16; }
__host__ __device__ constexpr size_t chunk_work_floats(int head_dim, int elem_bytes, int g, int chunk) {
  const size_t scores = static_cast<size_t>(g) * chunk;
  const size_t red = static_cast<size_t>(value_slices(head_dim, elem_bytes) - 1) * g * head_dim;
  return scores > red ? scores : red;
}
__host__ __device__ constexpr size_t chunk_smem_bytes(int head_dim, int elem_bytes, int g, int chunk) {
  return (static_cast<size_t>(g) * head_dim + chunk_work_floats(head_dim, elem_bytes, g, chunk)) * sizeof(float) +
         2 * static_cast<size_t>(chunk) * padded_row_bytes(head_dim, elem_bytes);
}

// Query heads per block for a group: min(group, kHeadsPerBlock) rounded up to a power of two.
int heads_per_block(int group) {
  int g = 1;
  while (g < std::min(group, kHeadsPerBlock)) g *= 2;
  return g;
}

// One (row, kv head, head block, key chunk): see the file comment. HD is the head dimension, T the
// cache's element type, G the query heads per block (the group, rounded up to a power of two, at
// most kHeadsPerBlock; padding heads get a zero query and are never written). G is a template
// argument so that no instruction is spent on heads a block does not have: with a runtime head
// count the loops ran predicated over 8 heads, and a decoder block (4 heads) or an encoder block
// (1 head) issued 2x or 8x the instructions it needed. A block is latency-bound (few blocks hold
// keys in a short window), so its time is its round trips and the instructions of a thread: the
// chunk's keys and values are copied to shared memory in one round trip (cp.async), the scores
// are one thread per key, the values one 16-byte piece of a row per thread.
template <int HD, typename T, int G>
__global__ void __launch_bounds__(kThreads) attention_chunk_kernel(SplitParams p) {
  using E = KvElem<T>;
  pdl_trigger();
  pdl_wait();
  constexpr int NW = kThreads / 32;
  constexpr int kEl = static_cast<int>(sizeof(T));
  constexpr int kVec = E::kPer16, TPK = HD / kVec, KS = value_slices(HD, kEl);
  constexpr int kRowBytes = padded_row_bytes(HD, kEl);
  constexpr int kPieces = HD / kVec;  // 16-byte pieces of a key row
  static_assert(kPieces * kVec == HD && KS >= 1 && kThreads % TPK == 0, "unsupported head_dim");

  extern __shared__ float4 smem4[];
  float* qs = reinterpret_cast<float*>(smem4);
  float* smem = qs + G * HD;
  char* kst = reinterpret_cast<char*>(smem + chunk_work_floats(HD, kEl, G, p.chunk));
  char* vst = kst + static_cast<size_t>(p.chunk) * kRowBytes;
  __shared__ float s_m[G], s_l[G];

  const AttentionArgs& a = p.a;
  const int r = blockIdx.x / p.nsplit, split = blockIdx.x % p.nsplit;
  const int kvh = blockIdx.y / p.head_blocks, hb = blockIdx.y % p.head_blocks;
  const int h0 = kvh * p.group + hb * G;
  const int gcount = min(G, p.group - hb * G);
  long long first;
  int n;
  key_range(p, r, first, n);
  const int j0 = split * p.chunk;
  if (j0 >= n) return;  // this row has fewer chunks than the longest row
  const int cnt = min(p.chunk, n - j0);
  const int ring = a.kv.ring;
  const int e0 = static_cast<int>((first + j0) % ring);
  const int width = a.kv.kv_heads * HD;
  const size_t base = static_cast<size_t>(a.rows[r].slot) * a.kv.per_slot +
                      static_cast<size_t>(a.kv.layer) * a.kv.per_layer + static_cast<size_t>(kvh) * HD;
  const T* kbase = static_cast<const T*>(a.kv.keys) + base;
  const T* vbase = static_cast<const T*>(a.kv.values) + base;
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;

  // The chunk's rows of K or V on their way to shared memory, consecutive threads copying
  // consecutive pieces of a row.
  auto stage = [&](char* dst, const T* src) {
    for (int i = tid; i < cnt * kPieces; i += kThreads) {
      const int j = i / kPieces, piece = i % kPieces;
      cp_async16(dst + j * kRowBytes + piece * 16, src + static_cast<size_t>(ring_entry(e0, j, ring)) * width + piece * kVec);
    }
    cp_async_commit();
  };

  // 0. The keys (one commit group) and the values (a second), then the queries (scalar loads: q
  // rows need not be aligned) while they travel.
  stage(kst, kbase);
  stage(vst, vbase);
  const float* qrow = a.q + static_cast<size_t>(r) * a.ldq + static_cast<size_t>(h0) * HD;
#pragma unroll
  for (int i = tid; i < G * HD; i += kThreads) qs[i] = i / HD < gcount ? qrow[i] : 0.0f;
  cp_async_wait<1>();  // this thread's keys have landed
  __syncthreads();     // everyone's keys, and the queries

  // 1. Scores: s[g][j] = (q_g . k_j) * scale, thread tid taking keys tid, tid + kThreads, ...
  // Two accumulators per head, alternating by piece, give each chain half the length.
  const float4* q4 = reinterpret_cast<const float4*>(qs);
  for (int j = tid; j < cnt; j += kThreads) {
    const uint4* krow = reinterpret_cast<const uint4*>(kst + j * kRowBytes);
    float d[G][2];
#pragma unroll
    for (int g = 0; g < G; ++g) d[g][0] = d[g][1] = 0.0f;
#pragma unroll
    for (int i = 0; i < kPieces; ++i) {
      float x[kVec];
      E::widen16(krow[i], x);
#pragma unroll
      for (int g = 0; g < G; ++g) {
        float& acc = d[g][i & 1];
#pragma unroll
        for (int t = 0; t < kVec; t += 4) {
          const float4 qv = q4[(g * HD + i * kVec + t) / 4];
          acc = fmaf(qv.x, x[t], acc);
          acc = fmaf(qv.y, x[t + 1], acc);
          acc = fmaf(qv.z, x[t + 2], acc);
          acc = fmaf(qv.w, x[t + 3], acc);
        }
      }
    }
#pragma unroll
    for (int g = 0; g < G; ++g) smem[g * p.chunk + j] = (d[g][0] + d[g][1]) * a.scale;
  }
  __syncthreads();

  // 2. Softmax statistics of the chunk, one warp per head; scores become exp(s - max).
  for (int g = warp; g < G; g += NW) {
    float* s = smem + g * p.chunk;
    float m = -INFINITY;
    for (int j = lane; j < cnt; j += 32) m = fmaxf(m, s[j]);
    for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
    float l = 0;
    for (int j = lane; j < cnt; j += 32) {
      const float e = expf(s[j] - m);
      s[j] = e;
      l += e;
    }
    for (int o = 16; o > 0; o >>= 1) l += __shfl_xor_sync(0xffffffffu, l, o);
    if (lane == 0) {
      s_m[g] = m;
      s_l[g] = l;
    }
  }
  cp_async_wait<0>();  // this thread's values have landed
  __syncthreads();     // everyone's values, and the probabilities

  // 3. Weighted values: slice ks of the block takes keys ks, ks + KS, ...; thread dd owns the kVec
  // dims of one 16-byte piece of the row.
  const int ks = tid / TPK, dd = tid % TPK;
  float acc[G][kVec];
#pragma unroll
  for (int g = 0; g < G; ++g)
#pragma unroll
    for (int t = 0; t < kVec; ++t) acc[g][t] = 0.0f;
#pragma unroll 4
  for (int j = ks; j < cnt; j += KS) {
    float x[kVec];
    E::widen16(reinterpret_cast<const uint4*>(vst + j * kRowBytes)[dd], x);
#pragma unroll
    for (int g = 0; g < G; ++g) {
      const float w = smem[g * p.chunk + j];
#pragma unroll
      for (int t = 0; t < kVec; ++t) acc[g][t] = fmaf(w, x[t], acc[g][t]);
    }
  }
  if constexpr (KS > 1) {
    __syncthreads();  // the probabilities are no longer needed: reuse the space
    float4* red = reinterpret_cast<float4*>(smem);  // [KS - 1][G][HD / 4]
    constexpr int kQuads = kVec / 4;
    if (ks > 0) {
#pragma unroll
      for (int g = 0; g < G; ++g)
#pragma unroll
        for (int t = 0; t < kQuads; ++t)
          red[((ks - 1) * G + g) * (HD / 4) + dd * kQuads + t] =
              float4{acc[g][4 * t], acc[g][4 * t + 1], acc[g][4 * t + 2], acc[g][4 * t + 3]};
    }
    __syncthreads();
    if (ks == 0) {
      for (int k = 1; k < KS; ++k) {
#pragma unroll
        for (int g = 0; g < G; ++g) {
#pragma unroll
          for (int t = 0; t < kQuads; ++t) {
            const float4 o = red[((k - 1) * G + g) * (HD / 4) + dd * kQuads + t];
            acc[g][4 * t] += o.x;
            acc[g][4 * t + 1] += o.y;
            acc[g][4 * t + 2] += o.z;
            acc[g][4 * t + 3] += o.w;
          }
        }
      }
    }
  }
  if (ks != 0) return;

#pragma unroll
  for (int g = 0; g < G; ++g) {
    if (g >= gcount) continue;
    const int h = h0 + g;
    if (p.nsplit == 1) {
      const float inv = s_l[g];
      float* o = a.out + static_cast<size_t>(r) * a.ldo + static_cast<size_t>(h) * HD + dd * kVec;
#pragma unroll
      for (int t = 0; t < kVec; ++t) o[t] = acc[g][t] / inv;
    } else {
      const size_t cell = (static_cast<size_t>(r) * a.n_heads + h) * p.nsplit + split;
      float* part_ml = a.scratch;
      float4* part_acc = reinterpret_cast<float4*>(a.scratch + ml_floats(a.n_rows, a.n_heads, p.nsplit) + cell * HD) +
                         dd * (kVec / 4);
#pragma unroll
      for (int t = 0; t < kVec / 4; ++t)
        part_acc[t] = float4{acc[g][4 * t], acc[g][4 * t + 1], acc[g][4 * t + 2], acc[g][4 * t + 3]};
      if (dd == 0) {
        part_ml[cell * 2] = s_m[g];
        part_ml[cell * 2 + 1] = s_l[g];
      }
    }
  }
}

// Merges a (row, head)'s chunks: out = sum_s acc_s e^(m_s - M) / sum_s l_s e^(m_s - M). The
// chunks' maxima and sums are reduced across the block (a row over a full decoder window has 64
// chunks: a serial pass over them was most of this kernel's time).
__global__ void attention_combine_kernel(SplitParams p, int head_dim) {
  pdl_trigger();
  pdl_wait();
  extern __shared__ float weight[];  // e^(m_s - M) per chunk
  __shared__ float red[32];
  const AttentionArgs& a = p.a;
  const int r = blockIdx.x, h = blockIdx.y;
  long long first;
  int n;
  key_range(p, r, first, n);
  const int ns = cdiv(n, p.chunk);
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

template <int HD, typename T, int G>
void launch_chunks_grouped(const SplitParams& sp, int n_kv_heads, cudaStream_t s) {
  const size_t bytes = chunk_smem_bytes(HD, static_cast<int>(sizeof(T)), G, sp.chunk);
  check(bytes <= kAttentionMaxSmemBytes, "cuda attention", "chunk too large for shared memory");
  allow_dynamic_smem(reinterpret_cast<const void*>(attention_chunk_kernel<HD, T, G>), kAttentionMaxSmemBytes,
                     "attention_chunk shared memory");
  const dim3 grid(static_cast<unsigned>(static_cast<size_t>(sp.a.n_rows) * sp.nsplit),
                  static_cast<unsigned>(n_kv_heads * sp.head_blocks));
  launch_kernel("attention_chunk", attention_chunk_kernel<HD, T, G>, grid, dim3(kThreads), bytes, s, sp);
}

template <int HD, typename T>
void launch_chunks_typed(const SplitParams& sp, int n_kv_heads, cudaStream_t s) {
  switch (heads_per_block(sp.group)) {
    case 1: launch_chunks_grouped<HD, T, 1>(sp, n_kv_heads, s); break;
    case 2: launch_chunks_grouped<HD, T, 2>(sp, n_kv_heads, s); break;
    case 4: launch_chunks_grouped<HD, T, 4>(sp, n_kv_heads, s); break;
    default: launch_chunks_grouped<HD, T, kHeadsPerBlock>(sp, n_kv_heads, s); break;
  }
}

template <int HD>
void launch_chunks(const SplitParams& sp, int n_kv_heads, cudaStream_t s) {
  if (sp.a.kv.bf16) launch_chunks_typed<HD, __nv_bfloat16>(sp, n_kv_heads, s);
  else launch_chunks_typed<HD, float>(sp, n_kv_heads, s);
}

}  // namespace

void launch_store_kv(const KvLayout& kv, const float* k, int ldk, const float* v, int ldv, const DevRowRef* rows,
                     int n_rows, cudaStream_t s) {
  const int width = kv.kv_heads * kv.head_dim;
  if (n_rows <= 0 || width <= 0) return;
  const dim3 grid(n_rows), block(std::min(1024, (width + 31) / 32 * 32));
  if (kv.bf16) launch_kernel("store_kv", store_kv_kernel<__nv_bfloat16>, grid, block, 0, s, kv, k, ldk, v, ldv, rows);
  else launch_kernel("store_kv", store_kv_kernel<float>, grid, block, 0, s, kv, k, ldk, v, ldv, rows);
}

bool attention_head_dim_supported(int head_dim) {
  return head_dim == 32 || head_dim == 64 || head_dim == 128 || head_dim == 256;
}

AttentionPlan plan_attention(int n_rows, int n_heads, int n_kv_heads, int head_dim, int kv_bytes, int max_keys,
                             int window, int step_rows, int sm_count) {
  AttentionPlan plan;
  const int group = n_heads / n_kv_heads;
  // The chunk size depends on the model alone (one row over a full window), never on the batch:
  // a row's result then does not depend on which other rows share the launch, so a live session
  // (a few rows per step) computes exactly what an offline pass (many rows) computes.
  // It is the largest chunk that still gives a live step (step_rows rows over a full window) at
  // least VOXRT_CUDA_ATTN_BLOCKS_PER_SM (default 8) blocks per SM, and no smaller than kMinChunk
  // keys (below that the partial results outweigh the keys themselves). Measured on the H200 with
  // the K/V-staging chunk kernel: both live steps run best at the smallest chunk, 64 keys, which
  // the default gives them (encoder 1.70 -> 1.63 ms, decoder 2.42 -> 2.38 ms against the previous
  // default of 2 blocks per SM: 256-key encoder and 128-key decoder chunks; bench/README.md).
  const long long blocks_per_split =
      static_cast<long long>(std::max(1, step_rows)) * n_kv_heads * cdiv(group, kHeadsPerBlock);
  const int basis = std::max(1, window);
  static const double per_sm = [] {
    const char* e = std::getenv("VOXRT_CUDA_ATTN_BLOCKS_PER_SM");
    return e ? std::clamp(std::atof(e), 0.0, 64.0) : 8.0;
  }();
  int chunk = kMaxChunk;
  while (chunk > kMinChunk && blocks_per_split * cdiv(basis, chunk) < per_sm * sm_count) chunk /= 2;
  // A block stages its chunk's keys and values in shared memory.
  const int g = heads_per_block(group);
  while (chunk > kMinChunk && chunk_smem_bytes(head_dim, kv_bytes, g, chunk) > kAttentionMaxSmemBytes) chunk /= 2;
  plan.chunk = chunk;
  plan.smem_bytes = chunk_smem_bytes(head_dim, kv_bytes, g, chunk);
  plan.nsplit = std::max(1, cdiv(max_keys, chunk));
  if (plan.nsplit > 1)
    plan.scratch_floats = ml_floats(n_rows, n_heads, plan.nsplit) +
                          static_cast<size_t>(n_rows) * n_heads * plan.nsplit * head_dim;
  return plan;
}

void launch_attention(const AttentionArgs& a, const AttentionPlan& plan, cudaStream_t s) {
  if (a.n_rows <= 0 || a.n_heads <= 0) return;
  const int group = a.n_heads / a.kv.kv_heads, g = heads_per_block(group);
  const SplitParams sp{a, plan.chunk, plan.nsplit, group, cdiv(group, g)};
  check(plan.smem_bytes == chunk_smem_bytes(a.kv.head_dim, a.kv.bf16 ? 2 : 4, g, plan.chunk),
        "cuda attention", "the plan was made for another head shape or cache element size");
  switch (a.kv.head_dim) {
    case 32: launch_chunks<32>(sp, a.kv.kv_heads, s); break;
    case 64: launch_chunks<64>(sp, a.kv.kv_heads, s); break;
    case 128: launch_chunks<128>(sp, a.kv.kv_heads, s); break;
    case 256: launch_chunks<256>(sp, a.kv.kv_heads, s); break;
    default: throw Error("cuda attention: head_dim " + std::to_string(a.kv.head_dim) + " unsupported");
  }
  if (plan.nsplit > 1) {
    const dim3 grid(static_cast<unsigned>(a.n_rows), static_cast<unsigned>(a.n_heads));
    const int threads = kCombineThreads;
    launch_kernel("attention_combine", attention_combine_kernel, grid, dim3(threads), plan.nsplit * sizeof(float), s, sp,
                  a.kv.head_dim);
  }
}

}  // namespace voxrt::cuda
