// The CUDA backend's attention plan: host code, so these tests need no GPU (they run with the CUDA
// build's tests on the GPU machine; CI compiles them).
// The plan's key chunk must depend on the model alone, never on the rows of a launch or the keys
// they hold: a row's result then does not depend on the batch it is in, and a live session's step
// computes exactly what an offline pass computes. And a chunk block's shared memory (its queries,
// scores and staged keys and values) must fit the kernel's limit for every supported shape.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <tuple>
#include <vector>

#include "runtime/gpu_caps.h"
#ifdef VOXRT_WITH_CUDA
#include "runtime/cuda/cuda_kernels.h"
#endif

namespace voxrt {
namespace {

#ifdef VOXRT_WITH_CUDA
struct HeadShape {
  int heads, kv_heads, head_dim, window, rows_per_position;
};
constexpr int kH200Sms = 132;
constexpr double kBlocksPerSm = 8.0;  // CudaOptions::attention_blocks_per_sm, the default

std::string describe(const HeadShape& s, int kv_bytes) {
  return "heads=" + std::to_string(s.heads) + " kv_heads=" + std::to_string(s.kv_heads) +
         " head_dim=" + std::to_string(s.head_dim) + " window=" + std::to_string(s.window) +
         " rows_per_position=" + std::to_string(s.rows_per_position) + " kv_bytes=" + std::to_string(kv_bytes);
}
// Shapes of the tensor-core kernel (bf16 caches, 64- or 128-wide heads): Voxtral's encoder and
// decoder, and a short window.
const std::vector<HeadShape> kTensorCoreShapes = {{32, 32, 64, 750, 4}, {32, 8, 128, 8192, 1}, {8, 8, 64, 100, 1}};
// The most rows a tensor-core block of these shapes groups: 8 queries a block, 8 rows of one head
// or 2 rows of the decoder's 4 heads.
int most_rows(const HeadShape& s) { return s.heads == s.kv_heads ? 8 : 2; }
#endif

TEST(CudaAttentionPlan, ChunkDependsOnTheModelNotTheLaunch) {
#ifndef VOXRT_WITH_CUDA
  GTEST_SKIP() << "built without CUDA (cmake --preset cuda builds it)";
#else
  // Voxtral's encoder (4 frames a step) and decoder (one token a step), and two other shapes.
  const std::vector<HeadShape> shapes = {
      {32, 32, 64, 750, 4}, {32, 8, 128, 8192, 1}, {16, 1, 32, 300, 1}, {4, 2, 256, 64, 1}};
  for (const HeadShape& s : shapes) {
    for (const int kv_bytes : {2, 4}) {
      SCOPED_TRACE(describe(s, kv_bytes));
      const cuda::AttentionPlan live =
          cuda::plan_attention(1, s.heads, s.kv_heads, s.head_dim, kv_bytes, s.window, s.window, s.rows_per_position, kH200Sms, kBlocksPerSm);
      for (const int rows : {1, 4, 37, 1500}) {
        for (const int max_keys : {1, 250, s.window}) {
          const cuda::AttentionPlan p = cuda::plan_attention(rows, s.heads, s.kv_heads, s.head_dim, kv_bytes, max_keys,
                                                             s.window, s.rows_per_position, kH200Sms, kBlocksPerSm);
          EXPECT_EQ(p.chunk, live.chunk) << rows << " rows, " << max_keys << " keys";
          EXPECT_EQ(p.smem_bytes, live.smem_bytes);
          EXPECT_EQ(p.nsplit, (max_keys + p.chunk - 1) / p.chunk);
          // The partials: (max, sum) and a head_dim accumulator per (row, head, chunk).
          if (p.nsplit > 1)
            EXPECT_GE(p.scratch_floats, static_cast<size_t>(rows) * s.heads * p.nsplit * (s.head_dim + 2));
          else
            EXPECT_EQ(p.scratch_floats, 0u);
        }
      }
    }
  }
  // The chunks measured best on the H200 (bench/README.md): 64 keys, the smallest, for both the
  // encoder's step of 4 rows and the decoder's single row.
  EXPECT_EQ(cuda::plan_attention(4, 32, 32, 64, 2, 750, 750, 4, kH200Sms, kBlocksPerSm).chunk, 64);
  EXPECT_EQ(cuda::plan_attention(1, 32, 8, 128, 2, 8192, 8192, 1, kH200Sms, kBlocksPerSm).chunk, 64);
#endif
}

TEST(CudaAttentionPlan, RowsShareABlockOnlyAsConsecutivePositionsOfOneSlot) {
#ifndef VOXRT_WITH_CUDA
  GTEST_SKIP() << "built without CUDA (cmake --preset cuda builds it)";
#else
  auto rows_per_block = [](std::vector<cuda::DevRowRef> rows, int heads, int kv_heads, bool aligned = false) {
    return cuda::attention_rows_per_block(rows.data(), static_cast<int>(rows.size()), heads, kv_heads, aligned);
  };
  const std::vector<cuda::DevRowRef> step = {{0, 100}, {0, 101}, {0, 102}, {0, 103}};
  EXPECT_EQ(rows_per_block(step, 32, 32), 4);  // an encoder step: MHA, 4 queries a block
  EXPECT_EQ(rows_per_block(step, 32, 16), 2);  // 2 heads a block
  EXPECT_EQ(rows_per_block(step, 32, 8), 1);   // the decoder's 4 heads fill a block
  EXPECT_EQ(rows_per_block({{0, 100}}, 32, 32), 1);
  // Groups are 4 consecutive rows of the launch; a short last group is fine, a break is not.
  EXPECT_EQ(rows_per_block({{0, 7}, {0, 8}, {0, 9}, {0, 10}, {0, 11}, {0, 12}}, 32, 32), 4);
  EXPECT_EQ(rows_per_block({{0, 7}, {0, 8}, {0, 9}, {0, 10}, {1, 50}, {1, 51}}, 32, 32), 4);
  EXPECT_EQ(rows_per_block({{0, 7}, {0, 8}, {1, 9}, {1, 10}}, 32, 32), 1);
  EXPECT_EQ(rows_per_block({{0, 7}, {0, 9}, {0, 10}, {0, 11}}, 32, 32), 1);
  EXPECT_EQ(rows_per_block({{0, 7}, {0, 8}, {0, 9}, {0, 10}, {0, 12}, {0, 13}}, 32, 32), 4);
  EXPECT_EQ(rows_per_block({{0, 7}, {0, 8}, {0, 9}, {0, 10}, {0, 12}, {0, 14}}, 32, 32), 1);
  // The tensor-core kernel groups 8 queries: 8 rows of one head, 4 of 2 heads, 2 of the decoder's
  // 4; where 8 rows do not fit the launch's rows, 4 (the live encoder's 4 frames a stream).
  EXPECT_EQ(rows_per_block(step, 32, 32, true), 8);
  EXPECT_EQ(rows_per_block(step, 32, 16, true), 4);
  EXPECT_EQ(rows_per_block(step, 32, 8, true), 2);
  EXPECT_EQ(rows_per_block({{0, 100}}, 32, 32, true), 1);
  std::vector<cuda::DevRowRef> pass, streams;
  for (int i = 0; i < 12; ++i) pass.push_back({3, 40 + i});
  for (int i = 0; i < 12; ++i) streams.push_back({i / 4, 40 + i % 4});
  EXPECT_EQ(rows_per_block(pass, 32, 32, true), 8);     // an offline pass: 8 and a short group of 4
  EXPECT_EQ(rows_per_block(streams, 32, 32, true), 4);  // three streams of 4 frames
  EXPECT_EQ(rows_per_block(streams, 32, 8, true), 2);
  EXPECT_EQ(rows_per_block({{0, 7}, {0, 8}, {1, 9}, {1, 10}}, 32, 32, true), 1);
  EXPECT_EQ(rows_per_block({{0, 7}, {0, 8}, {0, 9}, {1, 10}}, 32, 8, true), 1);
  // The chunk does not depend on the grouping (only the block's shared memory does).
  const cuda::AttentionPlan one = cuda::plan_attention(4, 32, 32, 64, 2, 750, 750, 4, kH200Sms, kBlocksPerSm, 1);
  const cuda::AttentionPlan four = cuda::plan_attention(4, 32, 32, 64, 2, 750, 750, 4, kH200Sms, kBlocksPerSm, 4);
  EXPECT_EQ(one.chunk, four.chunk);
  EXPECT_EQ(four.rows_per_block, 4);
  EXPECT_LE(four.smem_bytes, cuda::kAttentionMaxSmemBytes);
#endif
}

TEST(CudaAttentionPlan, TensorCoreChunksAreAlignedAndIndependentOfTheLaunch) {
#ifndef VOXRT_WITH_CUDA
  GTEST_SKIP() << "built without CUDA (cmake --preset cuda builds it)";
#else
  // bf16 caches with 64- or 128-wide heads go to the tensor-core kernel; its chunks sit at
  // multiples of the chunk size, so a block of rows can touch one chunk more than its keys fill.
  for (const HeadShape& s : kTensorCoreShapes) {
    SCOPED_TRACE(describe(s, 2));
    const cuda::AttentionPlan live = cuda::plan_attention(1, s.heads, s.kv_heads, s.head_dim, 2, s.window, s.window,
                                                          s.rows_per_position, kH200Sms, kBlocksPerSm, 1, true);
    EXPECT_TRUE(live.aligned);
    for (const int rows : {1, 4, 37, 1500}) {
      for (const int max_keys : {1, 64, 65, 250, s.window}) {
        const cuda::AttentionPlan p = cuda::plan_attention(rows, s.heads, s.kv_heads, s.head_dim, 2, max_keys, s.window,
                                                           s.rows_per_position, kH200Sms, kBlocksPerSm, 1, true);
        EXPECT_EQ(p.chunk, live.chunk);
        EXPECT_EQ(p.smem_bytes, live.smem_bytes);
        // Keys first .. first + max_keys + most_rows - 2 cover at most this many aligned chunks.
        EXPECT_EQ(p.nsplit, (max_keys + most_rows(s) - 2) / p.chunk + 2) << rows << " rows, " << max_keys << " keys";
        EXPECT_GE(p.scratch_floats, static_cast<size_t>(rows) * s.heads * p.nsplit * (s.head_dim + 2));
      }
    }
  }
  // The same chunk as the CUDA-core kernel for Voxtral's two shapes: 64 keys.
  EXPECT_EQ(cuda::plan_attention(4, 32, 32, 64, 2, 750, 750, 4, kH200Sms, kBlocksPerSm, 4, true).chunk, 64);
  EXPECT_EQ(cuda::plan_attention(1, 32, 8, 128, 2, 8192, 8192, 1, kH200Sms, kBlocksPerSm, 1, true).chunk, 64);
  // fp8 caches too, with the same chunk; fp32 caches and other head sizes stay on the CUDA-core kernel.
  const cuda::AttentionPlan fp8 = cuda::plan_attention(1, 32, 8, 128, 1, 8192, 8192, 1, kH200Sms, kBlocksPerSm, 1, true);
  EXPECT_TRUE(fp8.aligned);
  EXPECT_EQ(fp8.chunk, 64);
  EXPECT_LE(fp8.smem_bytes, cuda::kAttentionMaxSmemBytes);
  EXPECT_FALSE(cuda::plan_attention(1, 32, 8, 128, 4, 8192, 8192, 1, kH200Sms, kBlocksPerSm, 1, true).aligned);
  EXPECT_FALSE(cuda::plan_attention(1, 16, 1, 32, 2, 300, 300, 1, kH200Sms, kBlocksPerSm, 1, true).aligned);
  EXPECT_FALSE(cuda::plan_attention(1, 32, 8, 128, 2, 8192, 8192, 1, kH200Sms, kBlocksPerSm, 1, false).aligned);
#endif
}

TEST(CudaAttentionPlan, StagedChunkFitsSharedMemoryForEverySupportedShape) {
#ifndef VOXRT_WITH_CUDA
  GTEST_SKIP() << "built without CUDA (cmake --preset cuda builds it)";
#else
  for (const int head_dim : {32, 64, 128, 256}) {
    for (const int kv_bytes : {2, 4}) {
      for (const int group : {1, 2, 3, 4, 8, 16}) {
        for (const int kv_heads : {1, 8, 32}) {
          for (const int window : {1, 64, 750, 3000, 8192}) {
            for (const int rows_per_position : {1, 4}) {
              for (const int sms : {1, kH200Sms}) {
                for (const bool tensor_cores : {false, true}) {
                  const HeadShape s{group * kv_heads, kv_heads, head_dim, window, rows_per_position};
                  SCOPED_TRACE(describe(s, kv_bytes) + " sms=" + std::to_string(sms) +
                               (tensor_cores ? " tensor cores" : ""));
                  const cuda::AttentionPlan p = cuda::plan_attention(1, s.heads, kv_heads, head_dim, kv_bytes, window, window,
                                                                     rows_per_position, sms, kBlocksPerSm, 1, tensor_cores);
                  EXPECT_TRUE(p.chunk >= 64 && p.chunk <= 1024 && (p.chunk & (p.chunk - 1)) == 0) << p.chunk;
                  EXPECT_GT(p.smem_bytes, 2u * p.chunk * head_dim * kv_bytes);  // at least the staged K and V
                  EXPECT_LE(p.smem_bytes, cuda::kAttentionMaxSmemBytes);
                }
              }
            }
          }
        }
      }
    }
  }
#endif
}

TEST(CudaAttentionPlan, SeveralChunksPerBlockKeepTheChunkAndFitSharedMemory) {
#ifndef VOXRT_WITH_CUDA
  GTEST_SKIP() << "built without CUDA (cmake --preset cuda builds it)";
#else
  // CudaOptions::attention_chunks_per_block: a tensor-core block takes that many chunks with two
  // stage buffers. The chunk (which 16 keys share an instruction) and the splits must be those of
  // one chunk a block, or the bits would change; where two buffers do not fit, one chunk a block.
  for (const HeadShape& s : kTensorCoreShapes) {
    const int rows = most_rows(s);
    for (const double blocks_per_sm : {kBlocksPerSm, 0.0, 2.0}) {
      const cuda::AttentionPlan one = cuda::plan_attention(rows, s.heads, s.kv_heads, s.head_dim, 2, s.window, s.window,
                                                           s.rows_per_position, kH200Sms, blocks_per_sm, rows, true, 1);
      EXPECT_EQ(one.chunks_per_block, 1);
      for (const int cpb : {2, 3, 5, 16, 40}) {
        SCOPED_TRACE(describe(s, 2) + " blocks_per_sm=" + std::to_string(blocks_per_sm) + " cpb=" + std::to_string(cpb));
        const cuda::AttentionPlan p = cuda::plan_attention(rows, s.heads, s.kv_heads, s.head_dim, 2, s.window, s.window,
                                                           s.rows_per_position, kH200Sms, blocks_per_sm, rows, true, cpb);
        EXPECT_EQ(p.chunk, one.chunk);
        EXPECT_EQ(p.nsplit, one.nsplit);
        EXPECT_EQ(p.scratch_floats, one.scratch_floats);
        EXPECT_LE(p.smem_bytes, cuda::kAttentionMaxSmemBytes);
        if (!cuda::attention_multi_chunk_built(p.chunk)) EXPECT_EQ(p.chunks_per_block, 1);  // no build for the chunk
        if (p.chunks_per_block > 1) {
          EXPECT_EQ(p.chunks_per_block, std::min(cpb, cuda::kAttentionMaxChunksPerBlock));
          EXPECT_EQ(p.smem_bytes, one.smem_bytes + 2u * p.chunk * s.head_dim * 2);  // the second K and V
        } else {
          EXPECT_EQ(p.smem_bytes, one.smem_bytes);
        }
      }
    }
  }
  // Voxtral's shapes at the default 64-key chunks: both take the second buffer (36160 and 68928
  // bytes, scores and probabilities for their four queries: three of the decoder's blocks fit an
  // SM's 228 KiB).
  const cuda::AttentionPlan enc = cuda::plan_attention(4, 32, 32, 64, 2, 750, 750, 4, kH200Sms, kBlocksPerSm, 4, true, 4);
  const cuda::AttentionPlan dec = cuda::plan_attention(1, 32, 8, 128, 2, 8192, 8192, 1, kH200Sms, kBlocksPerSm, 1, true, 4);
  EXPECT_EQ(enc.chunks_per_block, 4);
  EXPECT_EQ(enc.smem_bytes, 36160u);
  EXPECT_EQ(dec.chunks_per_block, 4);
  EXPECT_EQ(dec.smem_bytes, 68928u);
  // The CUDA-core kernel takes one chunk a block whatever the option.
  EXPECT_EQ(cuda::plan_attention(1, 32, 8, 128, 4, 8192, 8192, 1, kH200Sms, kBlocksPerSm, 1, true, 4).chunks_per_block, 1);
  EXPECT_EQ(cuda::plan_attention(1, 32, 8, 128, 2, 8192, 8192, 1, kH200Sms, kBlocksPerSm, 1, false, 4).chunks_per_block, 1);
#endif
}

TEST(CudaAttentionPlan, SeveralChunksPerBlockByDefaultOnlyForLaunchesOfManyBlocks) {
#ifndef VOXRT_WITH_CUDA
  GTEST_SKIP() << "built without CUDA (cmake --preset cuda builds it)";
#else
  // chunks_per_block 0 (CudaOptions' default): one stream's step (a few blocks an SM) takes one
  // chunk a block, 64 or 256 streams' steps eight. The chunk and splits stay the same.
  for (const int streams : {1, 64, 256}) {
    SCOPED_TRACE("streams=" + std::to_string(streams));
    const int expected = streams == 1 ? 1 : 8;
    const cuda::AttentionPlan enc =
        cuda::plan_attention(4 * streams, 32, 32, 64, 2, 750, 750, 4, kH200Sms, kBlocksPerSm, 4, true, 0);
    const cuda::AttentionPlan dec =
        cuda::plan_attention(streams, 32, 8, 128, 2, 8192, 8192, 1, kH200Sms, kBlocksPerSm, 1, true, 0);
    EXPECT_EQ(enc.chunks_per_block, expected);
    EXPECT_EQ(dec.chunks_per_block, expected);
    EXPECT_EQ(enc.nsplit, 13);
    EXPECT_EQ(enc.chunk, 64);
    EXPECT_EQ(dec.chunk, 64);
  }
#endif
}

TEST(CudaAttentionPlan, OneWarpCombineForAtMost32ChunksWhenAsked) {
#ifndef VOXRT_WITH_CUDA
  GTEST_SKIP() << "built without CUDA (cmake --preset cuda builds it)";
#else
  // The encoder's rows have 13 chunks: the one-warp combine when asked (the plan's default
  // argument; CudaOptions' default is the block combine); the decoder's 129: the block combine. The choice is the plan's, for the model's full window, not the launch's keys.
  const cuda::AttentionPlan enc = cuda::plan_attention(4, 32, 32, 64, 2, 750, 750, 4, kH200Sms, kBlocksPerSm, 4, true);
  EXPECT_EQ(enc.nsplit, 13);
  EXPECT_TRUE(enc.combine_warp);
  EXPECT_FALSE(cuda::plan_attention(4, 32, 32, 64, 2, 750, 750, 4, kH200Sms, kBlocksPerSm, 4, true, 1, false).combine_warp);
  EXPECT_FALSE(cuda::plan_attention(1, 32, 8, 128, 2, 8192, 8192, 1, kH200Sms, kBlocksPerSm, 1, true).combine_warp);
  // 32 chunks exactly (window 1950 on 64-key aligned chunks, 4 rows a block), and 33.
  const cuda::AttentionPlan at32 = cuda::plan_attention(1, 4, 4, 64, 2, 1950, 1950, 1, kH200Sms, kBlocksPerSm, 1, true);
  EXPECT_EQ(at32.nsplit, 32);
  EXPECT_TRUE(at32.combine_warp);
  const cuda::AttentionPlan at33 = cuda::plan_attention(1, 4, 4, 64, 2, 2100, 2100, 1, kH200Sms, kBlocksPerSm, 1, true);
  EXPECT_GT(at33.nsplit, 32);
  EXPECT_FALSE(at33.combine_warp);
  // One chunk a row: no combine at all.
  EXPECT_FALSE(cuda::plan_attention(1, 32, 32, 64, 2, 50, 50, 1, kH200Sms, kBlocksPerSm, 1, false).combine_warp);
#endif
}

// Every GPU since Ampere: a block's shared memory stays within what the GPU gives a block (99 KiB
// on an A10G or L4, 163 KiB on an A100), for every shape, K/V element size, launch and chunk count,
// and the tiled GEMM's blocks too (the mma.sync kernel's 128-row blocks take 128 KiB). On the H200
// such a plan would still launch, so only the plans show it.
TEST(CudaAttentionPlan, EveryBlockFitsTheSharedMemoryOfTheGpuItIsFor) {
#ifndef VOXRT_WITH_CUDA
  GTEST_SKIP() << "built without CUDA (cmake --preset cuda builds it)";
#else
  for (const char* name : {"A10G", "L4", "A100", "H200"}) {
    const GpuCaps& gpu = *known_gpu(name);
    const auto limit = static_cast<size_t>(gpu.smem_per_block);
    for (const HeadShape& s : kTensorCoreShapes) {
      for (const int kv_bytes : {1, 2, 4}) {
        for (const bool tensor_cores : {false, true}) {
          for (const int chunks : {0, 1, 8, 16}) {
            for (const int rows : {1, 4, 64, 1500}) {
              SCOPED_TRACE(std::string(name) + " " + describe(s, kv_bytes) + " rows=" + std::to_string(rows));
              const bool aligned = cuda::attention_aligned(kv_bytes, s.head_dim, tensor_cores);
              const int group = aligned ? (s.heads == s.kv_heads ? 8 : 2) : 1;
              const cuda::AttentionPlan p =
                  cuda::plan_attention(rows, s.heads, s.kv_heads, s.head_dim, kv_bytes, s.window, s.window,
                                       s.rows_per_position, gpu.sms, kBlocksPerSm, rows % group == 0 ? group : 1,
                                       tensor_cores, chunks, false, limit);
              EXPECT_LE(p.smem_bytes, limit);
            }
          }
        }
      }
    }
    cuda::GemvTuning t;
    t.sm_count = gpu.sms;
    t.smem_per_sm = gpu.smem_per_sm;
    t.smem_per_block = gpu.smem_per_block;
    t.wgmma_gemm = has_wgmma(gpu);
    // Voxtral's products: the encoder's and decoder's widths, a gated pair, from 2 rows to an offline pass's.
    for (const auto& [K, n, gated] : {std::tuple{1280, 1280, false}, {1280, 5120, true}, {3072, 9216, true},
                                      {3072, 3072, false}, {9216, 3072, false}}) {
      cuda::GemvOut outs[2];  // a gated product: the gate's and the up projection's
      outs[0].n = outs[1].n = n;
      for (const int M : {2, 33, 65, 128, 129, 1024, 6000})
        EXPECT_LE(cuda::gemm_block_smem_bytes(M, K, outs, gated ? 2 : 1, gated, t), limit)
            << name << " K=" << K << " n=" << n << " M=" << M;
    }
  }
#endif
}

}  // namespace
}  // namespace voxrt
