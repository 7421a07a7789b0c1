// The key/value ring caches: storing rows, and sliding-window attention over them.
//
// Attention is split flash-decoding style. A block owns one (row, kv head, key chunk): it loads the
// query heads that share the kv head (GQA: up to 8 per block), scores the chunk's keys into shared
// memory, takes the chunk's softmax max and sum, and accumulates the probability-weighted values.
// With one chunk per row (short windows, many rows) it normalises and writes the output directly;
// otherwise each block writes (max, sum, unnormalised accumulator) and a combine kernel rescales
// and merges the chunks. The chunk size is chosen so that even a single decode row over 8192 keys
// launches several blocks per SM. K and V are stored fp32 or bf16 (kv_elem.cuh) and read 4
// elements per load; arithmetic is fp32 (expf, not __expf), so results match the CPU's
// double-accumulated reference on the same K and V to ~1e-6 of max|V|.
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
  int gstride;      // min(group, kHeadsPerBlock): heads per block as laid out in shared memory
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

__device__ __forceinline__ float dot4(float4 a, float4 b) { return a.x * b.x + a.y * b.y + a.z * b.z + a.w * b.w; }

// One (row, kv head, head block, key chunk): see the file comment. HD is the head dimension, T the
// cache's element type.
template <int HD, typename T>
__global__ void __launch_bounds__(kThreads) attention_chunk_kernel(SplitParams p) {
  using E = KvElem<T>;
  pdl_trigger();
  pdl_wait();
  constexpr int GB = kHeadsPerBlock;
  constexpr int NW = kThreads / 32;
  // Score phase: LPK lanes per key, each holding VPL float4s of it; KPW keys per warp step.
  constexpr int LPK = HD / 4 < 32 ? HD / 4 : 32;
  constexpr int VPL = HD / 4 / LPK;
  constexpr int KPW = 32 / LPK;
  // Value phase: TPK threads per key row (one float4 each), KS key slices across the block.
  constexpr int TPK = HD / 4;
  constexpr int KS = kThreads / TPK;
  static_assert(KS >= 1 && kThreads % TPK == 0 && VPL * LPK * 4 == HD, "unsupported head_dim");

  extern __shared__ float smem[];  // scores/probabilities [gstride][chunk], reused for the slice reduction
  __shared__ float s_m[GB], s_l[GB];

  const AttentionArgs& a = p.a;
  const int r = blockIdx.x / p.nsplit, split = blockIdx.x % p.nsplit;
  const int kvh = blockIdx.y / p.head_blocks, hb = blockIdx.y % p.head_blocks;
  const int h0 = kvh * p.group + hb * GB;
  const int gcount = min(GB, p.group - hb * GB);
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

  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int sub = lane / LPK, part = lane % LPK;

  // The query heads' slices this lane multiplies with (scalar loads: q rows need not be aligned).
  float4 qv[GB][VPL];
#pragma unroll
  for (int g = 0; g < GB; ++g) {
#pragma unroll
    for (int i = 0; i < VPL; ++i) {
      qv[g][i] = float4{0, 0, 0, 0};
      if (g < gcount) {
        const float* qp = a.q + static_cast<size_t>(r) * a.ldq + static_cast<size_t>(h0 + g) * HD + 4 * (part + i * LPK);
        qv[g][i] = float4{qp[0], qp[1], qp[2], qp[3]};
      }
    }
  }

  // 1. Scores: s[g][j] = (q_g . k_j) * scale. The loop bound is warp-uniform (shuffles below).
  // Each warp loads SU keys' slices before using any, so SU loads are in flight at once (the loads
  // are what this phase waits for); twice as many keys for bf16, whose loads are half the size.
  constexpr int SU = (VPL >= 4 ? 1 : 8 / VPL) * (4 / static_cast<int>(sizeof(T)));
  for (int jb = warp * KPW; jb < cnt; jb += NW * KPW * SU) {
    typename E::Raw kv[SU][VPL];
#pragma unroll
    for (int u = 0; u < SU; ++u) {
      const int j = jb + u * NW * KPW + sub;
      if (j < cnt) {
        int e = e0 + j;
        if (e >= ring) e %= ring;
        const T* kp = kbase + static_cast<size_t>(e) * width;
#pragma unroll
        for (int i = 0; i < VPL; ++i) kv[u][i] = E::load4(kp + 4 * (part + i * LPK));
      } else {
#pragma unroll
        for (int i = 0; i < VPL; ++i) kv[u][i] = E::zero();
      }
    }
#pragma unroll
    for (int u = 0; u < SU; ++u) {
      const int j = jb + u * NW * KPW + sub;
      float4 kf[VPL];
#pragma unroll
      for (int i = 0; i < VPL; ++i) kf[i] = E::widen(kv[u][i]);
#pragma unroll
      for (int g = 0; g < GB; ++g) {
        if (g < gcount) {
          float d = 0;
#pragma unroll
          for (int i = 0; i < VPL; ++i) d += dot4(qv[g][i], kf[i]);
#pragma unroll
          for (int o = LPK / 2; o > 0; o >>= 1) d += __shfl_xor_sync(0xffffffffu, d, o);
          if (j < cnt && part == 0) smem[g * p.chunk + j] = d * a.scale;
        }
      }
    }
  }
  __syncthreads();

  // 2. Softmax statistics of the chunk, one warp per head; scores become exp(s - max).
  for (int g = warp; g < gcount; g += NW) {
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
  __syncthreads();

  // 3. Weighted values: slice ks of the block takes keys ks, ks + KS, ...; thread dd owns dims 4dd..4dd+3.
  const int ks = threadIdx.x / TPK, dd = threadIdx.x % TPK;
  float4 acc[GB];
#pragma unroll
  for (int g = 0; g < GB; ++g) acc[g] = float4{0, 0, 0, 0};
#pragma unroll 8
  for (int j = ks; j < cnt; j += KS) {
    int e = e0 + j;
    if (e >= ring) e %= ring;
    const float4 v = E::widen(E::load4(vbase + static_cast<size_t>(e) * width + 4 * dd));
#pragma unroll
    for (int g = 0; g < GB; ++g) {
      if (g < gcount) {
        const float w = smem[g * p.chunk + j];
        acc[g].x = fmaf(w, v.x, acc[g].x);
        acc[g].y = fmaf(w, v.y, acc[g].y);
        acc[g].z = fmaf(w, v.z, acc[g].z);
        acc[g].w = fmaf(w, v.w, acc[g].w);
      }
    }
  }
  if constexpr (KS > 1) {
    __syncthreads();  // the probabilities are no longer needed: reuse the space
    float4* red = reinterpret_cast<float4*>(smem);  // [KS - 1][gstride][TPK]
    if (ks > 0) {
#pragma unroll
      for (int g = 0; g < GB; ++g)
        if (g < gcount) red[((ks - 1) * p.gstride + g) * TPK + dd] = acc[g];
    }
    __syncthreads();
    if (ks == 0) {
      for (int k = 1; k < KS; ++k) {
#pragma unroll
        for (int g = 0; g < GB; ++g) {
          if (g < gcount) {
            const float4 o = red[((k - 1) * p.gstride + g) * TPK + dd];
            acc[g].x += o.x;
            acc[g].y += o.y;
            acc[g].z += o.z;
            acc[g].w += o.w;
          }
        }
      }
    }
  }
  if (ks != 0) return;

#pragma unroll
  for (int g = 0; g < GB; ++g) {
    if (g >= gcount) continue;
    const int h = h0 + g;
    if (p.nsplit == 1) {
      const float inv = s_l[g];
      float* o = a.out + static_cast<size_t>(r) * a.ldo + static_cast<size_t>(h) * HD + 4 * dd;
      o[0] = acc[g].x / inv;
      o[1] = acc[g].y / inv;
      o[2] = acc[g].z / inv;
      o[3] = acc[g].w / inv;
    } else {
      const size_t cell = (static_cast<size_t>(r) * a.n_heads + h) * p.nsplit + split;
      float* part_ml = a.scratch;
      float4* part_acc = reinterpret_cast<float4*>(a.scratch + ml_floats(a.n_rows, a.n_heads, p.nsplit));
      part_acc[cell * TPK + dd] = acc[g];
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

template <int HD, typename T>
void launch_chunks_typed(const SplitParams& sp, int n_kv_heads, cudaStream_t s) {
  constexpr int TPK = HD / 4, KS = kThreads / TPK;
  // Scores [gstride][chunk], or the slice reduction [KS - 1][gstride][HD], whichever is larger
  // (at most 8 * 1024 floats = 32 KiB, within the default 48 KiB).
  const size_t floats = std::max(static_cast<size_t>(sp.gstride) * sp.chunk, static_cast<size_t>(KS - 1) * sp.gstride * HD);
  const dim3 grid(static_cast<unsigned>(static_cast<size_t>(sp.a.n_rows) * sp.nsplit),
                  static_cast<unsigned>(n_kv_heads * sp.head_blocks));
  launch_kernel("attention_chunk", attention_chunk_kernel<HD, T>, grid, dim3(kThreads), floats * sizeof(float), s, sp);
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

AttentionPlan plan_attention(int n_rows, int n_heads, int n_kv_heads, int head_dim, int max_keys, int window,
                             int step_rows, int sm_count) {
  AttentionPlan plan;
  const int group = n_heads / n_kv_heads;
  // The chunk size depends on the model alone (one row over a full window), never on the batch:
  // a row's result then does not depend on which other rows share the launch, so a live session
  // (a few rows per step) computes exactly what an offline pass (many rows) computes.
  // It is the largest chunk that still gives a live step (step_rows rows over a full window) at
  // least VOXRT_CUDA_ATTN_BLOCKS_PER_SM (default 2) blocks per SM, and no smaller than kMinChunk
  // keys (below that the partial results outweigh the keys themselves). Measured on the H200: a
  // decoder step (1 row, 8 kv heads) runs best at 128-key chunks; the encoder's (4 rows, 32 kv
  // heads) at 256, where a rule for one row would give 64 (2.87 -> 2.57 ms per encoder step).
  const long long blocks_per_split =
      static_cast<long long>(std::max(1, step_rows)) * n_kv_heads * cdiv(group, kHeadsPerBlock);
  const int basis = std::max(1, window);
  static const double per_sm = [] {
    const char* e = std::getenv("VOXRT_CUDA_ATTN_BLOCKS_PER_SM");
    return e ? std::clamp(std::atof(e), 0.0, 64.0) : 2.0;
  }();
  int chunk = kMaxChunk;
  while (chunk > kMinChunk && blocks_per_split * cdiv(basis, chunk) < per_sm * sm_count) chunk /= 2;
  plan.chunk = chunk;
  plan.nsplit = std::max(1, cdiv(max_keys, chunk));
  if (plan.nsplit > 1)
    plan.scratch_floats = ml_floats(n_rows, n_heads, plan.nsplit) +
                          static_cast<size_t>(n_rows) * n_heads * plan.nsplit * head_dim;
  return plan;
}

void launch_attention(const AttentionArgs& a, const AttentionPlan& plan, cudaStream_t s) {
  if (a.n_rows <= 0 || a.n_heads <= 0) return;
  SplitParams sp{a, plan.chunk, plan.nsplit, a.n_heads / a.kv.kv_heads, 0, 0};
  sp.head_blocks = cdiv(sp.group, kHeadsPerBlock);
  sp.gstride = std::min(sp.group, kHeadsPerBlock);
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
