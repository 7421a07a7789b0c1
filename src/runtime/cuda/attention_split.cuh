// What the two attention chunk kernels share: how a launch is split into (rows, kv head, key chunk)
// blocks, where each block leaves its partial result for the combine pass, and which keys a row
// attends. kernels_attention.cu holds the CUDA-core chunk kernel (every cache type), the combine
// kernel, the plan and the launcher; kernels_attention_mma.cu the tensor-core chunk kernel (bf16
// caches).
//
// Two ways of cutting a row's keys into chunks:
//  - from the row's first key (the CUDA-core kernel): chunk s holds keys first + s * chunk ...;
//  - at multiples of the chunk in absolute positions ("aligned", the tensor-core kernel): chunk c
//    holds positions c * chunk ... c * chunk + chunk - 1, the row's first and last chunks cut to
//    its keys. Rows of one block (consecutive positions of a slot) then share every chunk exactly,
//    and each key sits at the same place of its chunk whichever rows a block holds: the tensor
//    cores round by which 16 keys share an instruction, and that stays the same alone or grouped.
#pragma once

#include <cstddef>
#include <string>
#include <type_traits>

#include "runtime/cuda/cuda_check.h"
#include "runtime/cuda/cuda_kernels.h"

namespace voxrt::cuda {

constexpr int kAttentionThreads = 128;  // per chunk block, both kernels

struct SplitParams {
  AttentionArgs a;
  int chunk, nsplit;
  int group;            // query heads per kv head
  int head_blocks;      // blocks per kv head along the group (group > heads_per_block)
  int heads_per_block;  // the kernel's G: min(group, 8) rounded up to a power of two
  int rows_per_block;   // the kernel's R: 1, or rows grouped by attention_rows_per_block
  bool aligned;         // chunks at multiples of `chunk` in absolute positions (top comment)
  int chunk_shift;      // log2(chunk): chunks are powers of two
  int chunks_per_block;  // consecutive splits a block takes (the tensor-core kernel; 1 elsewhere)
};

__host__ __device__ constexpr int attention_cdiv(long long a, long long b) { return static_cast<int>((a + b - 1) / b); }
// SplitParams::chunk_shift of a chunk (a power of two).
__host__ __device__ constexpr int chunk_shift_of(int chunk) {
  int s = 0;
  while ((1 << s) < chunk) ++s;
  return s;
}

// The partial results: (max, sum) per (row, head, chunk), then the accumulators, 128-byte aligned
// (whole L2 lines: the fused combine drops a (row, head)'s accumulators from L2 once merged).
__host__ __device__ inline size_t ml_floats(int n_rows, int n_heads, int nsplit) {
  return (static_cast<size_t>(n_rows) * n_heads * nsplit * 2 + 31) / 32 * 32;
}

// The keys row r attends to: positions first .. pos, n of them.
__device__ __forceinline__ void key_range(const SplitParams& p, int r, long long& first, int& n) {
  const long long pos = p.a.rows[r].pos;
  first = pos - p.a.window + 1;
  if (first < 0) first = 0;
  n = static_cast<int>(pos - first + 1);
}

// How many chunks row r's keys fill (its partial results are cells 0 .. that - 1).
__device__ __forceinline__ int row_chunks(const SplitParams& p, int r) {
  long long first;
  int n;
  key_range(p, r, first, n);
  if (!p.aligned) return attention_cdiv(n, p.chunk);
  return static_cast<int>(((first + n - 1) >> p.chunk_shift) - (first >> p.chunk_shift) + 1);
}

// The ring entry of the key j places after ring entry e0 < ring: no more than a ring's worth of
// keys is attended (the backend checks), so e0 + j < 2 * ring and one conditional subtraction
// (a select) replaces the modulo.
__device__ __forceinline__ int ring_entry(int e0, int j, int ring) {
  const int e = e0 + j;
  return e >= ring ? e - ring : e;
}

// A chunk block's rows (the first, r0), key chunks (splits split .. split + chunks_per_block - 1,
// a split group: one split, except in the tensor-core kernel) and heads (kv head kvh, head block
// hb). Blocks are numbered heads first, then split groups, then rows: the blocks resident at once
// then read every kv head of the same cache entries (an entry's heads lie side by side), not one
// head's slice of entries far apart, which DRAM serves at a fraction of its rate.
struct ChunkBlock {
  int r0, split, kvh, hb;
  int group;  // its row group (rows r0.., kv head, head block): the fused combine's arrival counter
};
// Row groups of a launch: blocks of rows_per_block rows, times kv heads, times head blocks (each
// the split groups' blocks of chunk_grid, and one arrival counter of the fused combine).
__host__ __device__ inline size_t attention_row_groups(int n_rows, int rows_per_block, int kv_heads, int head_blocks) {
  return static_cast<size_t>(attention_cdiv(n_rows, rows_per_block)) * kv_heads * head_blocks;
}
// (32-bit, and no division at all for one chunk a block: it runs at the start of every block.)
__host__ __device__ inline int split_groups(const SplitParams& p) {
  return p.chunks_per_block == 1 ? p.nsplit : (p.nsplit + p.chunks_per_block - 1) / p.chunks_per_block;
}
template <int R>
__device__ __forceinline__ ChunkBlock chunk_block(const SplitParams& p) {
  const int heads = p.a.kv.kv_heads * p.head_blocks, groups = split_groups(p);
  const int h = static_cast<int>(blockIdx.x % heads);
  const unsigned rest = blockIdx.x / heads;
  return {static_cast<int>(rest / groups) * R, static_cast<int>(rest % groups) * p.chunks_per_block, h / p.head_blocks,
          h % p.head_blocks, static_cast<int>(rest / groups) * heads + h};
}
// The grid of chunk blocks for rows_per_block rows a block (a one-dimensional grid: the product
// exceeds the 65535 of a second dimension with long rows).
dim3 chunk_grid(const SplitParams& sp);

// The (heads per block G, rows per block R) pairs the chunk kernels are built for: calls f(G, R),
// each a std::integral_constant, for the plan's pair. The CUDA-core kernel groups rows only where
// R * G <= 4; the tensor-core kernel (kEight) where R * G is 8, or 4 (attention_rows_per_block).
template <bool kEight = false, typename F>
void dispatch_block_shape(const SplitParams& sp, F&& f) {
  using std::integral_constant;
  const int g = sp.heads_per_block, r = sp.rows_per_block;
  if (g == 1 && r == 4) f(integral_constant<int, 1>{}, integral_constant<int, 4>{});
  else if (g == 2 && r == 2) f(integral_constant<int, 2>{}, integral_constant<int, 2>{});
  else if (kEight && g == 1 && r == 8) f(integral_constant<int, 1>{}, integral_constant<int, 8>{});
  else if (kEight && g == 2 && r == 4) f(integral_constant<int, 2>{}, integral_constant<int, 4>{});
  else if (kEight && g == 4 && r == 2) f(integral_constant<int, 4>{}, integral_constant<int, 2>{});
  else if (r != 1) throw Error("cuda attention: " + std::to_string(r) + " rows per block unsupported for " +
                               std::to_string(g) + " heads per block");
  else if (g == 1) f(integral_constant<int, 1>{}, integral_constant<int, 1>{});
  else if (g == 2) f(integral_constant<int, 2>{}, integral_constant<int, 1>{});
  else if (g == 4) f(integral_constant<int, 4>{}, integral_constant<int, 1>{});
  else f(integral_constant<int, 8>{}, integral_constant<int, 1>{});
}

// ---- kernels_attention_mma.cu ----
// Whether the tensor-core kernel takes this head size, and its shared memory for a chunk: one
// stage buffer, or two (double_buffered) for blocks of several chunks, staging the next while
// they compute one; for blocks of `queries` queries (rows x heads a block).
bool attention_mma_head_dim(int head_dim);
size_t attention_mma_smem_bytes(int head_dim, int chunk, bool double_buffered, int elem_bytes, int queries);
// Whether it takes a cache of this element size (bf16: 2, fp8: 1).
bool attention_mma_elements(int elem_bytes);
// The chunk blocks of an aligned plan on a bf16 or fp8 cache, and the combine: the last block of
// each row group merges its rows' chunks (attention_combine.cuh), so no combine pass follows.
void launch_attention_mma(const SplitParams& sp, Stream s);

}  // namespace voxrt::cuda
