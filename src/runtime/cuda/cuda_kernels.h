// Launchers for the CUDA backend's kernels (one .cu file per concern). Plain pointers and sizes only,
// so that this header compiles both as C++17 under nvcc and as C++20 in cuda_backend.cpp. Every
// launcher enqueues on the given stream, checks the launch and throws voxrt::Error on failure; none
// of them synchronizes. Row-major matrices are passed as (pointer, rows, cols, ld) with ld in elements.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "runtime/cuda/quant_layout.h"

namespace voxrt::cuda {

// The device copy of a voxrt::RowRef (same layout: int slot at 0, int64 pos at 8, 16 bytes).
struct DevRowRef {
  int slot;
  long long pos;
};

// The device copy of a voxrt::MatEntry (same layout: int row at 0, int col at 4, float value at 8).
struct DevMatEntry {
  int row;
  int col;
  float value;
};

// Where a launcher enqueues, and whether its kernels may be scheduled while the previous kernel on
// the stream finishes (programmatic dependent launch, launch.cuh; off only to measure it).
struct Stream {
  cudaStream_t stream = nullptr;
  bool programmatic = true;
};

// A parameter vector in device memory (norm weight, bias), stored as fp32 or bf16. data == nullptr
// means "none" where a vector is optional (bias).
struct DevVec {
  const void* data = nullptr;
  bool bf16 = false;
};

// ---- kernels_elementwise.cu ----
void launch_fill(float* dst, float value, size_t n, Stream s);
void launch_add(float* y, const float* x, size_t n, Stream s);          // y += x
void launch_gelu(float* x, size_t n, Stream s);                         // exact erf GELU
void launch_silu_mul(float* gate, const float* up, size_t n, Stream s);  // gate = silu(gate) * up
// x[r, :cols] *= scales[scale_row[r], :cols]; scale_row is a device array of rows ints.
void launch_scale_rows(float* x, int rows, int cols, const float* scales, int scales_ld, const int* scale_row,
                       Stream s);
// y[r, c] += bias[c] for a [rows, cols] matrix with leading dimension cols.
void launch_add_bias(float* y, int rows, int cols, DevVec bias, Stream s);
// y (packed [rows, cols] bf16, round to nearest even) = x [rows, cols] with row stride ld floats.
// With ld < cols the rows overlap, which is how conv1d_k3 reads its im2col patches for free.
void launch_f32_to_bf16(const float* x, int rows, int cols, size_t ld, __nv_bfloat16* y, Stream s);

// ---- kernels_norm_rope.cu ----
// y = w * (x * 1/sqrt(mean(x^2) + eps)) per row; x and y [rows, cols] (ld cols), may alias.
void launch_rms_norm(const float* x, int rows, int cols, DevVec w, float eps, float* y, Stream s);
// The same, then y[r] *= scales[scale_row[r]] (scales row stride scales_ld; scale_row on the device).
void launch_rms_norm_scaled(const float* x, int rows, int cols, DevVec w, float eps, float* y, const float* scales,
                            int scales_ld, const int* scale_row, Stream s);
// Rotate-half RoPE in place over n_heads heads of head_dim in each row of x (row stride ld), at
// positions rows[r].pos. inv_freq: head_dim/2 floats.
void launch_rope(float* x, int n_rows, int ld, int n_heads, int head_dim, const DevRowRef* rows,
                 const float* inv_freq, Stream s);

// ---- kernels_attention.cu ----
struct KvLayout {
  void* keys = nullptr;  // the cache's K and V storage (every page, every layer)
  void* values = nullptr;
  bool bf16 = false;                    // elements are bf16 (else fp32, or fp8)
  bool fp8 = false;                     // elements are fp8 e4m3, each entry's heads scaled (below)
  float* key_scales = nullptr;          // fp8: [page][layer][page_len][kv_heads] floats
  float* value_scales = nullptr;
  long long scales_per_page = 0;        // layers * page_len * kv_heads
  const int* page_table = nullptr;      // [slot][pages_per_slot]: the page of each page_len ring entries
  int pages_per_slot = 0, page_len = 0;  // page_len: ring entries a page holds
  long long per_page = 0, per_page_layer = 0;  // elements
  int layer = 0, ring = 0, kv_heads = 0, head_dim = 0;
};
// Writes rows of k and v ([n_rows, kv_heads * head_dim], row strides ldk, ldv) into ring entry
// pos % ring of their slot, for one layer.
void launch_store_kv(const KvLayout& kv, const float* k, int ldk, const float* v, int ldv, const DevRowRef* rows,
                     int n_rows, Stream s);
// launch_rope on q (n_heads heads) and on k (kv.kv_heads heads), then launch_store_kv, in one
// kernel with the same results (kernels_norm_rope.cu).
void launch_rope_store(float* q, int ldq, int n_heads, float* k, int ldk, const float* v, int ldv, const KvLayout& kv,
                       const DevRowRef* rows, int n_rows, const float* inv_freq, Stream s);

// Rotates every key of one page of the cache (all layers, all its entries) by position -shift:
// launch_rope over the page's keys, on the cache's own element type.
void launch_shift_cached_keys(const KvLayout& kv, int layers, int page, long long shift, const float* inv_freq,
                              Stream s);

// ---- kernels_kv_fp8.cu ----
// launch_store_kv for fp8 caches (launch_store_kv hands them over): each head of each row's K and
// V quantised with its own scale, max|x| / 448, stored beside it.
void launch_store_kv_fp8(const KvLayout& kv, const float* k, int ldk, const float* v, int ldv, const DevRowRef* rows,
                         int n_rows, Stream s);
// launch_shift_cached_keys for fp8 caches: page `page`'s keys rotated to position `pos` and
// quantised again, each head with its new scale.
void launch_rotate_keys_fp8(const KvLayout& kv, int layers, int page, long long pos, const float* inv_freq, Stream s);

struct AttentionPlan {
  int chunk = 0;   // keys per block
  int nsplit = 0;  // blocks per (row, head group) along the keys; 1 = no combine pass
  size_t scratch_floats = 0;  // partial results needed when nsplit > 1
  // The tensor-core kernel's fused combine (aligned plans, fused_combine): one arrival counter a row
  // group (rows of a block, kv head, head block), in AttentionArgs::arrivals; 0: the combine is a
  // pass of its own (combine_warp says which).
  size_t arrivals = 0;
  size_t smem_bytes = 0;      // a block's dynamic shared memory (queries, scores, the staged K and V)
  int rows_per_block = 1;     // rows sharing a block's staged keys and values
  bool aligned = false;       // the tensor-core kernel's chunks, at multiples of `chunk` (attention_split.cuh)
  // Consecutive chunks a tensor-core block takes, staging the next while it computes one
  // (CudaOptions::attention_chunks_per_block, by default 8 for launches of many blocks, else 1;
  // 1 where the two stage buffers would not fit or no build takes the chunk
  // (attention_multi_chunk_built), and always on the CUDA-core kernel). The same
  // bits whatever it is, so it may depend on the batch.
  int chunks_per_block = 1;
  // The combine as one warp per (row, head), lane s holding chunk s (nsplit <= 32 and
  // CudaOptions::attention_combine_warp): a constant of the model and the options, never of the
  // batch, so a row's bits do not depend on the rows launched with it.
  bool combine_warp = false;
};
// The most dynamic shared memory a chunk block may take (the H200 allows 227 KiB a block; Ampere's
// 8.6 and Ada 99 KiB, which plan_attention's smem_per_block brings the cap down to).
constexpr size_t kAttentionMaxSmemBytes = 200 * 1024;
// The most chunks a tensor-core block takes (its chunks' row ranges sit in static shared memory).
constexpr int kAttentionMaxChunksPerBlock = 16;
// The chunks a tensor-core block of several chunks is built for: a constant of each build, so that
// its loops over the chunk's keys unroll and its offsets fold (64: the chunk the planner gives every
// live step on GPUs of 80 SMs or more; 128: fewer partial results, where blocks_per_sm asks for
// it). A plan of another chunk takes one chunk a block.
constexpr int kAttentionMultiChunks[] = {64, 128};
constexpr bool attention_multi_chunk_built(int chunk) {
  for (const int c : kAttentionMultiChunks)
    if (c == chunk) return true;
  return false;
}
// Chooses the key split (flash-decoding style) so that a live step (rows_per_position rows over a full
// window) fills the GPU; the chunk size depends on the model, not on the batch (kernels_attention.cu).
// rows_per_block: 1, or what attention_rows_per_block gives for the launch's rows. tensor_cores:
// bf16 caches of the head sizes it takes go to the tensor-core kernel (kernels_attention_mma.cu).
// chunks_per_block and combine_warp: CudaOptions::attention_chunks_per_block (0: chosen by the
// launch's size; else clamped to 1 .. kAttentionMaxChunksPerBlock) and attention_combine_warp.
// smem_per_block: the most shared memory the GPU gives a block (GpuCaps::smem_per_block); a block's
// stages take at most that and kAttentionMaxSmemBytes, so the chunk is the GPU's (and the model's).
// fused_combine: CudaOptions::attention_fused_combine (tensor-core plans only).
AttentionPlan plan_attention(int n_rows, int n_heads, int n_kv_heads, int head_dim, int kv_bytes, int max_keys,
                             int window, int rows_per_position, int sm_count, double blocks_per_sm, int rows_per_block = 1,
                             bool tensor_cores = false, int chunks_per_block = 1, bool combine_warp = true,
                             size_t smem_per_block = kAttentionMaxSmemBytes, bool fused_combine = false);
// How many of a launch's rows a block may take together (their keys and values read once): more
// than 1 when every group of that many consecutive rows holds consecutive positions of one slot
// (an encoder step's frames, an offline pass's chunk) and the group's queries fit a block. Results
// are the same bits either way (kernels_attention.cu). rows: host memory.
// aligned: the launch goes to the tensor-core kernel (attention_aligned), which groups up to 8
// queries, and also half its most where the most does not fit the rows.
int attention_rows_per_block(const DevRowRef* rows, int n_rows, int n_heads, int n_kv_heads, bool aligned);
// Whether a launch on a cache of kv_bytes elements and this head size goes to the tensor-core
// kernel (its aligned chunks), with tensor-core attention enabled or not.
bool attention_aligned(int kv_bytes, int head_dim, bool tensor_cores);
bool attention_head_dim_supported(int head_dim);  // 32, 64, 128, 256

struct AttentionArgs {
  KvLayout kv;
  const float* q = nullptr;
  int ldq = 0;
  const DevRowRef* rows = nullptr;
  int n_rows = 0;
  int n_heads = 0, window = 0;
  float scale = 0;
  float* out = nullptr;
  int ldo = 0;
  float* scratch = nullptr;  // plan.scratch_floats floats
  // plan.arrivals counters, zero before a launch (every launch leaves them zero again).
  unsigned* arrivals = nullptr;
};
void launch_attention(const AttentionArgs& a, const AttentionPlan& plan, Stream s);

// ---- kernels_gemv.cu ----
constexpr int kGemvMaxOutputs = 3;
// How the products are computed on this device (CudaOptions): which GEMV, and how it splits long
// rows. Every launch of a backend gets the same one, so a row's result never depends on its batch.
struct GemvTuning {
  bool tensor_cores = true;     // kernels_gemv_mma.cu; false: kernels_gemv.cu (CUDA cores, and no GEMM)
  int split_warps_per_sm = 8;   // pieces of K: enough for this many GEMV warps per SM ...
  int min_piece_chunks = 8;     // ... each piece at least this many 64-element chunks of K
  int packed_split_warps_per_sm = 12, packed_min_piece_chunks = 2;  // the same for quantized weights
  int sm_count = 1;             // the device's
  int smem_per_sm = 100 << 10;  // the device's shared memory an SM, bytes ...
  int smem_per_block = 48 << 10;  // ... and the most one block may ask for
  int ring_smem_percent = 100;    // the share of smem_per_sm the GEMV's rings of one launch may take
  bool wgmma_gemm = false;      // the tiled GEMM on wgmma (kernels_gemm_wgmma.cu, sm_90a): the same bits
  int gemm_split_percent = 35;   // the GEMM splits K across blocks when its tiles are fewer than this % of the SMs
};
// Rows of x one GEMV launch takes (32 on the tensor cores, 8 on the CUDA cores).
int gemv_max_rows(const GemvTuning& t);
// One product of a GEMV launch: y [M, n] (row stride ldy) = x W^T (+ y if accumulate) (+ bias),
// W [n, K] bf16 (w), or quantized: packed values and scale blocks as quant_layout.h lays them out,
// dequantized by the tensor-core GEMV in its registers on the way to the mma, so that a quantized
// product is, bit for bit, the bf16 product over the weight's dequantized values. Every output of
// one launch has the same format.
struct GemvOut {
  const __nv_bfloat16* w = nullptr;
  int n = 0;
  DevVec bias;
  float* y = nullptr;
  int ldy = 0;
  int accumulate = 0;
  int format = kGemvBf16;
  const uint8_t* packed = nullptr;
  const __nv_bfloat16* scales = nullptr;  // the scale blocks
  int group = 0;
  qlayout::Divider group_div;  // by the group (launch_gemv_mma sets it)
  // fp8 (W8A8; quant_layout.h): w holds the e4m3 codes (the kernels read them as bf16 pairs), K
  // counts them in pairs, and the epilogue scales the sum (finish()): row_scales one a feature,
  // x_scales one a row of the launch's x (launch_quantize_rows_e4m3's).
  const float* row_scales = nullptr;
  const float* x_scales = nullptr;
  // The weight's first bytes: the bf16 (or e4m3) values, or the packed ones.
  VOXRT_HOST_DEVICE const void* data() const { return packed_format(format) ? packed : static_cast<const void*>(w); }
};
// Whether the product kernels take rows of K elements (a multiple of 8).
bool gemv_supports_k(int K);
// Whether fp32 x (row stride ldx floats) can be read directly (16-byte aligned rows).
bool gemv_reads_f32(const float* x, size_t ldx);
// The split-K workspace of the tensor-core GEMV (kernels_gemv_mma.cu): partial sums, and per-tile
// arrival counters that must be zero before a launch (every launch leaves them zero again).
struct GemvWorkspace {
  float* partials = nullptr;
  size_t partial_floats = 0;
  int* counters = nullptr;
  size_t counter_count = 0;
};
struct GemvWorkspaceSize {
  size_t partial_floats = 0, counters = 0;
};
// What launch_gemv needs for these weights (for any M).
GemvWorkspaceSize gemv_workspace_size(int K, const GemvOut* outs, int n_outs, bool gated, const GemvTuning& t);
// x [M, K] (fp32, or packed bf16 when x_bf16; row stride ldx elements), M <= gemv_max_rows(t),
// against up to kGemvMaxOutputs weights with the same K, in one launch. gated: exactly 2 outputs,
// and outs[0].y = silu(x W0^T) * (x W1^T) (no bias, no accumulate; outs[1].y unused). Quantized
// weights (one format for all outs) need t.tensor_cores.
void launch_gemv(const void* x, bool x_bf16, size_t ldx, int M, int K, const GemvOut* outs, int n_outs, bool gated,
                 const GemvWorkspace& ws, const GemvTuning& t, Stream s);
// Pieces of K the tensor-core GEMV cuts a weight of n features and K columns into
// (kernels_gemv_mma.cu); the tiled GEMM cuts it the same way.
int gemv_mma_pieces(int n, int K, const GemvTuning& t, int format = kGemvBf16);

// ---- kernels_gemm_launch.cu ----
// The same products as launch_gemv (same outs, gated, epilogue) for any number of rows of bf16 x
// (row-major, row stride ldx elements, 16-byte aligned rows), tiled: every output bit for bit what
// the tensor-core GEMV computes for it with the same tuning, whatever M (t.tensor_cores must be
// set); on wgmma when t.wgmma_gemm (kernels_gemm_wgmma.cu), else on mma.sync (kernels_gemm_mma.cu).
// Launches with few tiles are split across blocks through a workspace of gemm_workspace_floats().
size_t gemm_workspace_floats(int M, int K, const GemvOut* outs, int n_outs, bool gated, const GemvTuning& t);
// The shared memory a block of that launch takes (its rows a block, its kernel's stages).
size_t gemm_block_smem_bytes(int M, int K, const GemvOut* outs, int n_outs, bool gated, const GemvTuning& t);
void launch_gemm(const __nv_bfloat16* x, size_t ldx, int M, int K, const GemvOut* outs, int n_outs, bool gated,
                 float* workspace, size_t workspace_floats, const GemvTuning& t, Stream s);

// ---- kernels_gemm_wgmma.cu ----
// Whether the wgmma GEMM runs on the current device (an sm_90a build on a Hopper GPU).
bool gemm_wgmma_available();

// ---- kernels_fp8_rows.cu ----
// fp8 products' activations (quant/fp8_e4m3.h: quantize_activation_row_e4m3, bit for bit): row m of
// x [M, K] (fp32, row stride ldx) as K e4m3 codes at q + m K and its scale at scales[m].
void launch_quantize_rows_e4m3(const float* x, int M, int K, size_t ldx, uint8_t* q, float* scales, Stream s);
// Whether the code the driver loaded for the current device has the fp8 products' tensor-core
// instruction (sm_89 and later code: not a compute_80 build the driver compiled for a newer GPU).
bool fp8_products_available();

// ---- kernels_gemv.cu ----
// The same product with fp32 weights and fp32 x (row stride ldx): for weights stored as vectors
// ([N, 1]), which a linear only sees with K == 1. One thread per output; not meant to be fast.
void launch_linear_f32_weight(const float* x, int M, int K, size_t ldx, const float* W, int N, DevVec bias, float* y,
                              int ldy, bool accumulate, Stream s);

// ---- kernels_misc.cu ----
// y[r, :cols] = table[ids[r], :cols] (bf16 or fp32 table), fp32 out with row stride ldy.
void launch_embed(DevVec table, int cols, const int32_t* ids, int n_rows, float* y, int ldy, Stream s);
// The same from a quantized table (GemvOut's quantized fields: format, packed, scales).
void launch_embed_quantized(const GemvOut& table, int cols, const int32_t* ids, int n_rows, float* y, int ldy, Stream s);
// x[e.row * cols + e.col] += e.value for the n entries (Backend::add_at): a decoder pass's context-bias
// boosts on its logits, before the argmax.
void launch_add_at(float* x, int cols, const DevMatEntry* entries, int n, Stream s);
// Per row of x [rows, cols]: index of the maximum (first on ties) and max - runner-up (the runner-up
// is the second largest value counted with multiplicity, so a tie gives 0).
void launch_argmax(const float* x, int rows, int cols, int32_t* ids, float* margins, Stream s);

}  // namespace voxrt::cuda
