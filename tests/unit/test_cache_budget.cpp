// Memory-aware cache defaults (issue 35, point 3), on the figures of the GPUs people run this model
// on: with neither max_memory nor max_sessions the caches grow within what the weights and the
// passes' working memory leave; a GPU with less memory holds fewer sessions; when not even one
// session fits, the load fails naming both sizes. Plain arithmetic (scheduler/cache_budget.h) and a
// real pool's growth (runtime/kv_pool.h) on the CPU backend: runs on any machine.
#include <gtest/gtest.h>

#include <string>

#include "common/error.h"
#include "runtime/backend.h"
#include "runtime/gpu_caps.h"
#include "runtime/kv_pool.h"
#include "scheduler/cache_budget.h"

namespace voxrt {
namespace {

constexpr double kGB = 1e9;
// The full-size model in bf16: 8.87 GB of weights, and a CUDA context's half gigabyte besides.
constexpr double kWeightsAndContext = 9.4 * kGB;
constexpr double kWorking = 2.0 * (1 << 30);  // the CUDA backend's working_memory()

// One whole-window session of the full-size model with bf16 caches: about 1.1 GB (encoder pages
// and decoder pages of the real model's shapes, rounded).
CacheFigures full_size_session_on(double gpu_memory_bytes, double kv_scale = 1.0) {
  CacheFigures f;
  f.encoder_pages = 12;
  f.encoder_page_bytes = 20e6 * kv_scale;
  f.decoder_pages = 32;
  f.decoder_page_bytes = 27.3e6 * kv_scale;
  f.free_bytes = gpu_memory_bytes - kWeightsAndContext;
  f.working_bytes = kWorking;
  f.seconds = "a whole window";
  return f;
}

double memory_of(const char* gpu) { return static_cast<double>(known_gpu(gpu)->memory_bytes); }

std::string refusal(const CacheFigures& f, size_t max_cache_bytes, int max_streams) {
  try {
    plan_cache_budget(f, max_cache_bytes, max_streams);
  } catch (const Error& e) {
    return e.what();
  }
  return {};
}

TEST(CacheBudget, OnA24GbGpuTheCachesGrowWithinWhatTheWeightsLeave) {
  for (const char* gpu : {"A10G", "L4", "RTX4090"}) {
    const CacheFigures f = full_size_session_on(memory_of(gpu));
    const CacheBudget b = plan_cache_budget(f, 0, 0);
    EXPECT_TRUE(b.grows) << gpu;
    EXPECT_EQ(b.encoder_pages, f.encoder_pages) << gpu << ": one session's pages to start with";
    EXPECT_EQ(b.decoder_pages, f.decoder_pages) << gpu;
    // What a budget given at load holds there: about ten whole windows.
    const int sessions = static_cast<int>(f.room_bytes() / f.session_bytes());
    EXPECT_GE(sessions, 9) << gpu;
    EXPECT_LE(sessions, 12) << gpu;
    EXPECT_EQ(refusal(f, 0, sessions), "") << gpu;
    EXPECT_NE(refusal(f, 0, sessions + 1), "") << gpu;
  }
}

TEST(CacheBudget, AGpuWithLessMemoryHoldsFewerSessions) {
  const CacheFigures big = full_size_session_on(memory_of("A10G"));
  const CacheFigures small = full_size_session_on(16e9);  // a 16 GB card (RTX 4080, A4000)
  const int on_big = static_cast<int>(big.room_bytes() / big.session_bytes());
  const int on_small = static_cast<int>(small.room_bytes() / small.session_bytes());
  EXPECT_GE(on_small, 1);
  EXPECT_LT(on_small, on_big);
  EXPECT_TRUE(plan_cache_budget(small, 0, 0).grows);
  const std::string why = refusal(small, 0, on_big);
  EXPECT_NE(why.find(std::to_string(on_big) + " sessions (max_sessions)"), std::string::npos) << why;
  EXPECT_NE(why.find(format_gb(small.room_bytes())), std::string::npos) << why;
  EXPECT_EQ(refusal(small, 0, on_small), "");
}

TEST(CacheBudget, WhenNotEvenOneSessionFitsTheLoadFailsNamingBothSizes) {
  const CacheFigures f = full_size_session_on(12e9);  // a 12 GB card (RTX 3060): 0.6 GB left for caches
  const std::string why = refusal(f, 0, 0);
  ASSERT_NE(why, "") << "a session that cannot fit loaded";
  EXPECT_NE(why.find("one session of a whole window needs " + format_gb(f.session_bytes())), std::string::npos) << why;
  EXPECT_NE(why.find(format_gb(f.room_bytes()) + " the device has free"), std::string::npos) << why;
  EXPECT_NE(why.find("--kv fp8"), std::string::npos) << why;
  // Shorter sessions in fp8 caches do fit there.
  CacheFigures shorter = full_size_session_on(12e9, 0.5);
  shorter.decoder_pages = 10;
  shorter.seconds = "300 s";
  EXPECT_EQ(refusal(shorter, 0, 0), "");
}

TEST(CacheBudget, ABudgetGivenMustLeaveTheWorkingMemory) {
  const CacheFigures f = full_size_session_on(memory_of("A10G"));
  const std::string why = refusal(f, static_cast<size_t>(f.free_bytes), 0);  // all that is free: none left to work in
  EXPECT_NE(why.find("max_memory"), std::string::npos) << why;
  EXPECT_NE(why.find("working memory"), std::string::npos) << why;
  const CacheBudget b = plan_cache_budget(f, static_cast<size_t>(f.room_bytes()), 0);
  EXPECT_FALSE(b.grows);
  EXPECT_LE(b.encoder_pages * f.encoder_page_bytes + b.decoder_pages * f.decoder_page_bytes, f.room_bytes());
  EXPECT_GE(b.encoder_pages, 9 * f.encoder_pages);
}

TEST(CacheBudget, FreeMemoryTheBackendCannotTellIsNotChecked) {
  CacheFigures f = full_size_session_on(12e9);
  f.free_bytes = 0;
  EXPECT_EQ(refusal(f, 0, 0), "");
  EXPECT_EQ(refusal(f, 0, 500), "");
}

// A pool that grows doubles while doubling fits the room it is given, then takes what the room
// holds, and refuses (rather than asking the allocator for more) a session the room cannot take.
TEST(CacheBudget, AGrowingPoolStaysWithinItsRoom) {
  auto backend = make_cpu_backend(1);
  KvCacheShape shape;
  shape.layers = 2;
  shape.ring = 64;
  shape.kv_heads = 2;
  shape.head_dim = 8;
  shape.page_positions = 16;  // 4 pages a whole ring
  shape.pages = 4;
  KvPool pool(*backend, shape, /*grows=*/true);
  const size_t page = pool.page_bytes();
  pool.acquire(2, 100 * page);  // 2 of its 4 pages reserved: a session of 4 needs 6
  EXPECT_EQ(pool.least_pages(4), 6);
  EXPECT_EQ(pool.grown_pages(4, 100 * page), 8) << "doubling where it fits";
  EXPECT_EQ(pool.grown_pages(4, 7 * page), 7) << "near the room: what it holds";
  EXPECT_EQ(pool.grown_pages(4, 6 * page), 6);
  EXPECT_EQ(pool.grown_pages(4, 5 * page), -1) << "the least growth passes the room";
  // The next doubling (16 pages, holding these 8) would need 24 pages of room after this growth
  // gives the old 4 back: with 20 of room it fits, with 19 it does not, and this growth takes all 19.
  EXPECT_EQ(pool.grown_pages(4, 20 * page), 8);
  EXPECT_EQ(pool.grown_pages(4, 19 * page), 19) << "the last growth takes what the room holds";
  EXPECT_THROW(pool.acquire(4, 5 * page), Error);
  EXPECT_EQ(pool.pages(), 4) << "a refused growth changes nothing";
  EXPECT_EQ(pool.in_use(), 1);
  pool.acquire(4, 6 * page);
  EXPECT_EQ(pool.pages(), 6) << "the least growth, where the room holds no more";
  EXPECT_EQ(pool.in_use(), 2);
  const KvPool fixed(*backend, shape, /*grows=*/false);
  EXPECT_EQ(fixed.grown_pages(8, 100 * page), -1);
}

}  // namespace
}  // namespace voxrt
