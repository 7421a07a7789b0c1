// Paged key/value caches (KvCache with pages, KvPool; docs/scheduler.md step 5), on every backend:
// a ring scattered over pages in any order gives, bit for bit, what the contiguous layout gives
// (store, attention, the fused RoPE-and-store, the re-base's key rotation); a ring that outgrows its
// first pages and wraps keeps working; and admission is arithmetic at the page boundary (a
// reservation that does not fit is refused and changes nothing, a slot past its reservation takes
// only spare pages, growing keeps every page's contents). GPU cases skip themselves elsewhere.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "common/error.h"
#include "gpu_here.h"
#include "parity/backend_by_name.h"
#include "runtime/backend.h"
#include "runtime/kv_cache.h"
#include "runtime/kv_pool.h"

namespace voxrt {
namespace {

using test::backend_named;
using test::host;

constexpr int kLayers = 2, kKvHeads = 2, kHeadDim = 32, kHeads = 4, kRing = 48, kPage = 8, kWindow = 40;

KvCacheShape shape(int slots, int pages) {
  KvCacheShape s;
  s.slots = slots;
  s.layers = kLayers;
  s.ring = kRing;
  s.kv_heads = kKvHeads;
  s.head_dim = kHeadDim;
  if (pages > 0) {
    s.page_positions = kPage;
    s.pages = pages;
  }
  return s;
}

Buffer random_matrix(Backend& be, int rows, int cols, std::mt19937& rng) {
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::vector<float> v(static_cast<size_t>(rows) * cols);
  for (float& x : v) x = d(rng);
  Buffer b(&be, rows, cols);
  be.upload(b.data(), v.data(), v.size());
  return b;
}

// Writes positions [0, n) of three slots into `cache` in rounds (slot 0 four positions a round,
// slot 1 three, slot 2 two: their pages interleave when the cache is paged), each round's rows
// through rope_store_kv, then attends every written position of every slot in each layer. Returns
// the attention outputs (and the q rotated by rope_store_kv) of every round, in order.
std::vector<float> run(Backend& be, KvCache& cache, int64_t n, bool map_pages) {
  std::mt19937 rng(7);
  const std::vector<float> inv_freq = [] {
    std::vector<float> f(kHeadDim / 2);
    for (int i = 0; i < kHeadDim / 2; ++i) f[i] = 1.0f / std::pow(10000.0f, 2.0f * i / kHeadDim);
    return f;
  }();
  const int per_round[3] = {4, 3, 2};
  int64_t next[3] = {0, 0, 0};
  std::vector<float> out;
  AttentionParams p{kHeads, kKvHeads, kHeadDim, kWindow, 1.0f / std::sqrt(static_cast<float>(kHeadDim)), 4};
  while (next[0] < n || next[1] < n || next[2] < n) {
    std::vector<RowRef> rows;
    for (int s = 0; s < 3; ++s)
      for (int i = 0; i < per_round[s] && next[s] < n; ++i) rows.push_back({s, next[s]++});
    if (map_pages)
      for (const RowRef& r : rows) cache.map(r.slot, r.pos, 1);
    const int m = static_cast<int>(rows.size());
    for (int layer = 0; layer < kLayers; ++layer) {
      Buffer q = random_matrix(be, m, kHeads * kHeadDim, rng);
      Buffer k = random_matrix(be, m, kKvHeads * kHeadDim, rng);
      Buffer v = random_matrix(be, m, kKvHeads * kHeadDim, rng);
      be.rope_store_kv(q.all(), k.all(), v.all(), kHeads, rows, inv_freq, cache, layer);
      Buffer o(&be, m, kHeads * kHeadDim);
      be.attention(cache, layer, q.all(), rows, p, o.all());
      for (const Buffer* b : {&q, &o}) {
        const std::vector<float> h = host(be, b->all());
        out.insert(out.end(), h.begin(), h.end());
      }
    }
  }
  // The re-base's rotation of every cached key of slot 1, then one more attention over it.
  be.shift_cached_keys(cache, 1, kRing, inv_freq);
  const std::vector<RowRef> last{{1, n - 1 - kRing}};
  Buffer q = random_matrix(be, 1, kHeads * kHeadDim, rng);
  Buffer o(&be, 1, kHeads * kHeadDim);
  be.attention(cache, 0, q.all(), last, p, o.all());
  const std::vector<float> h = host(be, o.all());
  out.insert(out.end(), h.begin(), h.end());
  return out;
}

class PagedCache : public ::testing::TestWithParam<std::string> {};

TEST_P(PagedCache, ScatteredPagesGiveTheContiguousLayoutsBits) {
  if (GetParam() != "cpu") REQUIRE_GPU();
  auto be = backend_named(GetParam());
  // 100 positions: every ring wraps twice, so a slot reuses its own pages.
  constexpr int64_t kPositions = 100;
  KvCache contiguous(be.get(), shape(3, 0));
  const std::vector<float> want = run(*be, contiguous, kPositions, false);

  // 20 pages for 3 rings of 6: slot 2's pages come from all over the storage; slot 0 and 1 too.
  KvCache paged(be.get(), shape(3, 20));
  ASSERT_TRUE(paged.reserve(0, 6) && paged.reserve(1, 6) && paged.reserve(2, 6));
  const std::vector<float> got = run(*be, paged, kPositions, true);
  ASSERT_EQ(got.size(), want.size());
  size_t differ = 0;
  for (size_t i = 0; i < got.size(); ++i) differ += got[i] != want[i];
  EXPECT_EQ(differ, 0u) << "of " << got.size() << " outputs";
  // The pages really are scattered: no slot's ring is one run of consecutive pages.
  for (int slot = 0; slot < 3; ++slot) {
    const std::vector<int> pages = paged.pages_of(slot);
    ASSERT_EQ(pages.size(), 6u);
    int runs = 1;
    for (size_t i = 1; i < pages.size(); ++i) runs += pages[i] != pages[i - 1] + 1;
    EXPECT_GT(runs, 1) << "slot " << slot;
  }
}

TEST_P(PagedCache, ReservationsAreArithmeticAtThePageBoundary) {
  if (GetParam() != "cpu") REQUIRE_GPU();
  auto be = backend_named(GetParam());
  KvCache c(be.get(), shape(4, 10));
  EXPECT_EQ(c.unreserved_pages(), 10);
  EXPECT_TRUE(c.reserve(0, 6));
  EXPECT_FALSE(c.reserve(1, 5)) << "4 pages are left";
  EXPECT_EQ(c.unreserved_pages(), 4) << "a refused reservation changes nothing";
  EXPECT_TRUE(c.reserve(1, 4));
  EXPECT_EQ(c.unreserved_pages(), 0);
  // Slot 0 maps its six within the reservation; slot 2 reserved nothing and nothing is spare.
  c.map(0, 0, 6 * kPage);
  EXPECT_EQ(c.mapped_pages(0), 6);
  EXPECT_EQ(c.free_pages(), 4);
  EXPECT_THROW(c.map(2, 0, 1), Error);
  // Past its reservation slot 0 wraps onto its own pages (no new page), so 100 positions are fine.
  c.map(0, 6 * kPage, 100);
  EXPECT_EQ(c.mapped_pages(0), 6);
  // Slot 1 gives back what it kept: then there are spare pages for slot 2.
  c.unmap(1);
  EXPECT_EQ(c.unreserved_pages(), 4);
  c.map(2, 0, 2 * kPage);
  EXPECT_EQ(c.mapped_pages(2), 2);
  EXPECT_EQ(c.unreserved_pages(), 2);
  c.unmap(0);
  EXPECT_EQ(c.free_pages(), 8);
  EXPECT_EQ(c.unreserved_pages(), 8);
}

TEST_P(PagedCache, PoolsRefuseOrGrowAndKeepWhatThePagesHold) {
  if (GetParam() != "cpu") REQUIRE_GPU();
  auto be = backend_named(GetParam());
  KvPool fixed(*be, shape(1, 12), /*grows=*/false);
  EXPECT_EQ(fixed.pages_for(0), kRing / kPage) << "no limit: the whole ring";
  EXPECT_EQ(fixed.pages_for(9), 2);
  EXPECT_EQ(fixed.pages_for(1000), kRing / kPage);
  const int a = fixed.acquire(6), b = fixed.acquire(6);
  EXPECT_NE(a, b) << "slots are page tables and grow freely";
  EXPECT_FALSE(fixed.fits(1));
  EXPECT_THROW(fixed.acquire(1), Error);
  fixed.release(a);
  EXPECT_TRUE(fixed.fits(6));

  // An unpaged pool that grows doubles its slots, each with its whole ring, once per doubling.
  KvPool slots(*be, shape(1, 0), /*grows=*/true);
  const int first = slots.acquire(slots.pages_for(0)), second = slots.acquire(slots.pages_for(0));
  EXPECT_NE(first, second);
  EXPECT_EQ(slots.slots(), 2);
  EXPECT_EQ(slots.cache().shape().page_count(), 2) << "one page of the whole ring a slot";

  if (be->kv_element_bytes() == 1) return;  // fp8 caches cannot be read back whole (the growth is the same code)
  // A pool that grows doubles its storage and keeps the pages' contents and tables.
  KvPool growing(*be, shape(1, 2), /*grows=*/true);
  const int s0 = growing.acquire(2);
  KvCache& cache = growing.cache();
  cache.map(s0, 0, 2 * kPage);
  std::mt19937 rng(3);
  Buffer k = random_matrix(*be, 2 * kPage, kKvHeads * kHeadDim, rng);
  std::vector<RowRef> rows;
  for (int i = 0; i < 2 * kPage; ++i) rows.push_back({s0, i});
  be->store_kv(cache, 1, k.all(), k.all(), rows);
  std::vector<float> before(cache.shape().elements()), values(cache.shape().elements());
  be->download_kv(cache, before.data(), values.data());
  const int s1 = growing.acquire(5);
  EXPECT_GE(growing.pages(), 7);
  EXPECT_NE(s0, s1);
  std::vector<float> after(cache.shape().elements()), after_v(cache.shape().elements());
  be->download_kv(cache, after.data(), after_v.data());
  EXPECT_TRUE(std::equal(before.begin(), before.end(), after.begin())) << "the old pages are a prefix of the new";
  EXPECT_EQ(cache.pages_of(s0).size(), 2u);
}

// fp8 attention against bf16 on the same rows: close (e4m3 keeps 3 mantissa bits; a scale per
// head keeps every head in range), and the relative error is printed for the record.
TEST(PagedCacheFp8, AttentionOverFp8KvIsCloseToBf16) {
  REQUIRE_GPU();
  auto b16 = backend_named("cuda"), b8 = backend_named("cuda_fp8");
  ASSERT_EQ(b8->kv_element_bytes(), 1u);
  KvCache c16(b16.get(), shape(3, 0)), c8(b8.get(), shape(3, 0));
  const std::vector<float> want = run(*b16, c16, 100, false), got = run(*b8, c8, 100, false);
  ASSERT_EQ(got.size(), want.size());
  double num = 0, den = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    num += (static_cast<double>(got[i]) - want[i]) * (static_cast<double>(got[i]) - want[i]);
    den += static_cast<double>(want[i]) * want[i];
  }
  const double rel = std::sqrt(num / den);
  std::printf("[fp8 kv] attention and rotated-q outputs against bf16 K/V: relative error %.3g\n", rel);
  EXPECT_LT(rel, 0.05);
  EXPECT_GT(rel, 0.0) << "fp8 is meant to differ from bf16";
}

// What a page costs, as admission counts it: K and V, and for fp8 a float scale per entry and head.
TEST(PagedCacheBytes, APageCountsItsScalesWhenFp8) {
  const KvCacheShape s = shape(1, 4);
  const size_t elements = static_cast<size_t>(kLayers) * kPage * kKvHeads * kHeadDim;
  EXPECT_EQ(KvPool::page_bytes(s, 2), 2 * elements * 2);
  EXPECT_EQ(KvPool::page_bytes(s, 1), 2 * (elements + static_cast<size_t>(kLayers) * kPage * kKvHeads * sizeof(float)));
}

INSTANTIATE_TEST_SUITE_P(Backends, PagedCache, ::testing::Values("cpu", "cuda", "cuda_fp8"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace voxrt
