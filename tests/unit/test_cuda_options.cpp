// The CUDA backend's switches come from one struct (runtime/cuda_options.h); the VOXRT_CUDA_*
// variables are read in one place, cuda_options_from_environment. Needs no GPU: it runs wherever
// the CUDA backend is built.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "runtime/cuda_options.h"

namespace voxrt {
namespace {

#ifdef VOXRT_WITH_CUDA
// Sets variables for one test and restores what was there.
class ScopedEnv {
 public:
  void set(const char* name, const char* value) {
    const char* old = std::getenv(name);
    saved_.push_back({name, old ? std::string(old) : std::string(), old != nullptr});
    setenv(name, value, 1);
  }
  ~ScopedEnv() {
    for (auto it = saved_.rbegin(); it != saved_.rend(); ++it) {
      if (it->had) setenv(it->name.c_str(), it->value.c_str(), 1);
      else unsetenv(it->name.c_str());
    }
  }

 private:
  struct Saved {
    std::string name, value;
    bool had;
  };
  std::vector<Saved> saved_;
};

const char* const kAll[] = {"VOXRT_CUDA_GRAPHS",     "VOXRT_CUDA_PDL",        "VOXRT_CUDA_GEMV",
                            "VOXRT_CUDA_GEMV_MAX_ROWS", "VOXRT_CUDA_GEMV_SPLIT", "VOXRT_CUDA_GEMV_MIN_CHUNKS", "VOXRT_CUDA_GEMM_MIN_ROWS",
                            "VOXRT_CUDA_GEMV_PACKED_SPLIT", "VOXRT_CUDA_GEMV_PACKED_MIN_CHUNKS", "VOXRT_CUDA_GEMV_RING_SMEM", "VOXRT_CUDA_GEMM_PACKED_MIN_ROWS",
                            "VOXRT_CUDA_GEMM_FP8_MIN_ROWS", "VOXRT_CUDA_GEMM_SPLIT_PERCENT",
                            "VOXRT_CUDA_KV",         "VOXRT_CUDA_ATTN_BLOCKS_PER_SM", "VOXRT_CUDA_ATTN_GROUP_ROWS",
                            "VOXRT_CUDA_REPEAT",     "VOXRT_CUDA_GEMM",       "VOXRT_CUDA_ATTN",
                            "VOXRT_CUDA_AS_GPU"};
#endif

TEST(CudaOptions, TheEnvironmentSetsEachSwitchAndNothingElse) {
#ifndef VOXRT_WITH_CUDA
  GTEST_SKIP() << "built without CUDA (cmake --preset cuda builds it)";
#else
  {
    ScopedEnv env;
    for (const char* name : kAll) {
      env.set(name, "");
      unsetenv(name);
    }
    const CudaOptions o = cuda_options_from_environment(), defaults;
    EXPECT_EQ(o.graphs, defaults.graphs);
    EXPECT_EQ(o.programmatic_launch, defaults.programmatic_launch);
    EXPECT_EQ(o.tensor_core_gemv, defaults.tensor_core_gemv);
    EXPECT_EQ(o.library_products, defaults.library_products);
    EXPECT_EQ(o.wgmma_gemm, defaults.wgmma_gemm);
    EXPECT_EQ(o.gemv_split_warps_per_sm, defaults.gemv_split_warps_per_sm);
    EXPECT_EQ(o.gemv_min_piece_chunks, defaults.gemv_min_piece_chunks);
    EXPECT_EQ(o.gemv_packed_split_warps_per_sm, defaults.gemv_packed_split_warps_per_sm);
    EXPECT_EQ(o.gemv_packed_min_piece_chunks, defaults.gemv_packed_min_piece_chunks);
    EXPECT_EQ(o.gemv_ring_smem_percent, defaults.gemv_ring_smem_percent);
    EXPECT_EQ(o.gemm_min_rows, defaults.gemm_min_rows);
    EXPECT_EQ(o.gemm_packed_min_rows, defaults.gemm_packed_min_rows);
    EXPECT_EQ(o.gemm_fp8_min_rows, defaults.gemm_fp8_min_rows);
    EXPECT_EQ(o.gemm_split_percent, defaults.gemm_split_percent);
    EXPECT_EQ(o.fp32_kv, defaults.fp32_kv);
    EXPECT_EQ(o.attention_blocks_per_sm, defaults.attention_blocks_per_sm);
    EXPECT_EQ(o.attention_group_rows, defaults.attention_group_rows);
    EXPECT_EQ(o.tensor_core_attention, defaults.tensor_core_attention);
    EXPECT_EQ(o.repeat, defaults.repeat);
    EXPECT_EQ(o.as_gpu, defaults.as_gpu);
  }
  ScopedEnv env;
  env.set("VOXRT_CUDA_GRAPHS", "0");
  env.set("VOXRT_CUDA_PDL", "0");
  env.set("VOXRT_CUDA_GEMV", "simt");
  env.set("VOXRT_CUDA_GEMV_MAX_ROWS", "0");
  env.set("VOXRT_CUDA_GEMM", "mma");
  env.set("VOXRT_CUDA_GEMV_SPLIT", "3");
  env.set("VOXRT_CUDA_GEMV_MIN_CHUNKS", "1000");  // clamped to 256
  env.set("VOXRT_CUDA_GEMV_PACKED_SPLIT", "5");
  env.set("VOXRT_CUDA_GEMV_PACKED_MIN_CHUNKS", "0");  // clamped to 1
  env.set("VOXRT_CUDA_GEMV_RING_SMEM", "5");  // clamped to 10
  env.set("VOXRT_CUDA_GEMM_MIN_ROWS", "0");  // clamped to 1
  env.set("VOXRT_CUDA_GEMM_PACKED_MIN_ROWS", "33");
  env.set("VOXRT_CUDA_GEMM_FP8_MIN_ROWS", "9999");  // clamped to 4096
  env.set("VOXRT_CUDA_GEMM_SPLIT_PERCENT", "5000");  // clamped to 1000
  env.set("VOXRT_CUDA_KV", "fp32");
  env.set("VOXRT_CUDA_ATTN_BLOCKS_PER_SM", "2.5");
  env.set("VOXRT_CUDA_ATTN_GROUP_ROWS", "0");
  env.set("VOXRT_CUDA_ATTN", "simt");
  env.set("VOXRT_CUDA_REPEAT", "attention,product");
  env.set("VOXRT_CUDA_AS_GPU", "A10G");
  const CudaOptions o = cuda_options_from_environment();
  EXPECT_FALSE(o.graphs);
  EXPECT_FALSE(o.programmatic_launch);
  EXPECT_FALSE(o.tensor_core_gemv);
  EXPECT_TRUE(o.library_products);
  EXPECT_FALSE(o.wgmma_gemm);
  EXPECT_EQ(o.gemv_split_warps_per_sm, 3);
  EXPECT_EQ(o.gemv_min_piece_chunks, 256);
  EXPECT_EQ(o.gemv_packed_split_warps_per_sm, 5);
  EXPECT_EQ(o.gemv_packed_min_piece_chunks, 1);
  EXPECT_EQ(o.gemv_ring_smem_percent, 10);
  EXPECT_EQ(o.gemm_min_rows, 1);
  EXPECT_EQ(o.gemm_packed_min_rows, 33);
  EXPECT_EQ(o.gemm_fp8_min_rows, 4096);
  EXPECT_EQ(o.gemm_split_percent, 1000);
  EXPECT_TRUE(o.fp32_kv);
  EXPECT_DOUBLE_EQ(o.attention_blocks_per_sm, 2.5);
  EXPECT_FALSE(o.attention_group_rows);
  EXPECT_FALSE(o.tensor_core_attention);
  EXPECT_EQ(o.repeat, "attention,product");
  EXPECT_EQ(o.as_gpu, "A10G");
#endif
}

}  // namespace
}  // namespace voxrt
