#include "runtime/cuda_options.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

namespace voxrt {
namespace {

const char* env(const char* name) { return std::getenv(name); }
bool is(const char* value, const char* what) { return value && std::strcmp(value, what) == 0; }
int clamped_int(const char* value, int lo, int hi) { return std::clamp(std::atoi(value), lo, hi); }

}  // namespace

CudaOptions cuda_options_from_environment() {
  CudaOptions o;
  if (const char* v = env("VOXRT_CUDA_GRAPHS")) o.graphs = !is(v, "0");
  if (const char* v = env("VOXRT_CUDA_PDL")) o.programmatic_launch = !is(v, "0");
  o.tensor_core_gemv = !is(env("VOXRT_CUDA_GEMV"), "simt");
  o.library_products = is(env("VOXRT_CUDA_GEMV_MAX_ROWS"), "0");
  o.wgmma_gemm = !is(env("VOXRT_CUDA_GEMM"), "mma");
  if (const char* v = env("VOXRT_CUDA_GEMV_SPLIT")) o.gemv_split_warps_per_sm = clamped_int(v, 0, 64);
  if (const char* v = env("VOXRT_CUDA_GEMV_MIN_CHUNKS")) o.gemv_min_piece_chunks = clamped_int(v, 1, 256);
  if (const char* v = env("VOXRT_CUDA_GEMV_PACKED_SPLIT")) o.gemv_packed_split_warps_per_sm = clamped_int(v, 0, 64);
  if (const char* v = env("VOXRT_CUDA_GEMV_PACKED_MIN_CHUNKS")) o.gemv_packed_min_piece_chunks = clamped_int(v, 1, 256);
  if (const char* v = env("VOXRT_CUDA_GEMV_RING_SMEM")) o.gemv_ring_smem_percent = clamped_int(v, 10, 100);
  if (const char* v = env("VOXRT_CUDA_GEMM_MIN_ROWS")) o.gemm_min_rows = clamped_int(v, 1, 4096);
  if (const char* v = env("VOXRT_CUDA_GEMM_PACKED_MIN_ROWS")) o.gemm_packed_min_rows = clamped_int(v, 1, 4096);
  if (const char* v = env("VOXRT_CUDA_GEMM_FP8_MIN_ROWS")) o.gemm_fp8_min_rows = clamped_int(v, 1, 4096);
  if (const char* v = env("VOXRT_CUDA_GEMM_SPLIT_PERCENT")) o.gemm_split_percent = clamped_int(v, 0, 1000);
  o.fp32_kv = is(env("VOXRT_CUDA_KV"), "fp32");
  o.fp8_kv = is(env("VOXRT_CUDA_KV"), "fp8");
  if (const char* v = env("VOXRT_CUDA_ATTN_BLOCKS_PER_SM")) o.attention_blocks_per_sm = std::clamp(std::atof(v), 0.0, 64.0);
  if (const char* v = env("VOXRT_CUDA_ATTN_GROUP_ROWS")) o.attention_group_rows = !is(v, "0");
  o.tensor_core_attention = !is(env("VOXRT_CUDA_ATTN"), "simt");
  // 16: kAttentionMaxChunksPerBlock (cuda/cuda_kernels.h), which this file does not include.
  if (const char* v = env("VOXRT_CUDA_ATTN_CHUNKS_PER_BLOCK")) o.attention_chunks_per_block = clamped_int(v, 0, 16);
  o.attention_combine_warp = is(env("VOXRT_CUDA_ATTN_COMBINE"), "warp");
  o.attention_fused_combine = is(env("VOXRT_CUDA_ATTN_COMBINE"), "fused");
  if (const char* v = env("VOXRT_CUDA_REPEAT")) o.repeat = v;
  if (const char* v = env("VOXRT_CUDA_AS_GPU")) o.as_gpu = v;
  return o;
}

}  // namespace voxrt
