// The CUDA backend's switches, given to it at construction (make_cuda_backend). The defaults are
// what the engine runs; every other value exists to measure one part against another
// (bench/README.md). cuda_options_from_environment() is the one place that reads the VOXRT_CUDA_*
// variables setting them for a run (docs/cuda.md lists them).
#pragma once

#include <string>

namespace voxrt {

struct CudaOptions {
  bool graphs = true;                // recordings as CUDA graphs (VOXRT_CUDA_GRAPHS=0: launched eagerly)
  bool programmatic_launch = true;   // programmatic dependent launch (VOXRT_CUDA_PDL=0: plain launches)
  bool tensor_core_gemv = true;      // VOXRT_CUDA_GEMV=simt: the CUDA-core GEMV, 8 rows a launch, no GEMM
  bool library_products = false;     // VOXRT_CUDA_GEMV_MAX_ROWS=0: every product through cuBLAS
  bool wgmma_gemm = true;            // VOXRT_CUDA_GEMM=mma: the tiled GEMM on mma.sync, not wgmma (same bits, slower)
  int gemv_split_warps_per_sm = 8;   // VOXRT_CUDA_GEMV_SPLIT: GEMV warps per SM the pieces of K aim for
  int gemv_min_piece_chunks = 8;     // VOXRT_CUDA_GEMV_MIN_CHUNKS: fewest 64-element chunks a piece of K
  // The same for quantized weights (VOXRT_CUDA_GEMV_PACKED_SPLIT, _PACKED_MIN_CHUNKS): their chunks
  // are a quarter or half of bf16's bytes, so more, shorter pieces keep the memory system busy
  // (H100, 4w: 12 warps an SM beat 16, 24 and 32: bench/results/2026-12-06-issue36-lean-chunk-loop.txt).
  int gemv_packed_split_warps_per_sm = 12;
  int gemv_packed_min_piece_chunks = 2;
  int gemv_ring_smem_percent = 100;  // VOXRT_CUDA_GEMV_RING_SMEM: % of an SM's shared memory the GEMV's weight rings may fill (the rest is left to the next kernel, which starts under programmatic launch)
  int gemm_min_rows = 2;             // VOXRT_CUDA_GEMM_MIN_ROWS (1..4096): products of this many rows or more take the tiled GEMM (same bits)
  // The same for 4w and 8w weights (VOXRT_CUDA_GEMM_PACKED_MIN_ROWS): their GEMV reads a quarter or
  // half of bf16's bytes, so it stays ahead of the GEMM over more rows; from 9 rows (where the GEMV
  // takes two tiles of 8 rows) the GEMM is the faster over a decoder layer's products (H100:
  // bench/results/2026-12-06-issue36-fp8-products.txt).
  int gemm_packed_min_rows = 9;
  // The same for fp8 weights off Hopper (VOXRT_CUDA_GEMM_FP8_MIN_ROWS; Hopper takes every fp8
  // product to its wgmma GEMM): there the tiled GEMM is mma.sync's, slower than the GEMV below 17
  // rows on an H100's decoder products but w2 (same file, measured with mma.sync's GEMM).
  int gemm_fp8_min_rows = 17;
  int gemm_split_percent = 35;       // VOXRT_CUDA_GEMM_SPLIT_PERCENT (0..1000): the GEMM splits K across blocks when its tiles are fewer than this % of the SMs (same bits)
  bool fp32_kv = false;              // VOXRT_CUDA_KV=fp32: K/V caches in fp32 instead of bf16
  bool fp8_kv = false;               // VOXRT_CUDA_KV=fp8 (EngineOptions::kv_cache): fp8 e4m3, a scale per head
  double attention_blocks_per_sm = 8;  // VOXRT_CUDA_ATTN_BLOCKS_PER_SM: sets the attention key chunk
  bool attention_group_rows = true;  // VOXRT_CUDA_ATTN_GROUP_ROWS=0: one row per attention block
  bool tensor_core_attention = true;  // VOXRT_CUDA_ATTN=simt: bf16 and fp8 caches' attention on the CUDA cores
  int attention_chunks_per_block = 0;  // VOXRT_CUDA_ATTN_CHUNKS_PER_BLOCK (1..16; 0 automatic): key chunks a tensor-core block takes, double-buffered (same bits)
  bool attention_combine_warp = false;  // VOXRT_CUDA_ATTN_COMBINE=warp: one warp a (row, head) combines plans of <= 32 chunks
  // VOXRT_CUDA_ATTN_COMBINE=fused: the tensor-core blocks merge their chunks themselves, the last
  // block of a row group from L2 (attention_combine.cuh). Not the default: H100, encoder 3 % faster,
  // decoder up to 16 % slower (bench/results/2026-12-08-issue38-first-gpu-runs-h100.txt).
  bool attention_fused_combine = false;
  std::string repeat;                // VOXRT_CUDA_REPEAT: operations launched twice (op_repeat.h)
  // VOXRT_CUDA_AS_GPU=A10G (a name of known_gpu, runtime/gpu_caps.h): the backend decides as on that
  // GPU (its capability, SMs and shared memory pick the kernels, tiles and splits; one older than
  // voxrt needs is refused), on the GPU it has. For tests of other GPUs' choices on one machine.
  std::string as_gpu;
};

// The defaults, changed by whichever VOXRT_CUDA_* variables are set (values clamped to their ranges).
CudaOptions cuda_options_from_environment();

}  // namespace voxrt
