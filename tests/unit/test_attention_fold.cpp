// The attention chunks' tree fold (runtime/cuda/attention_fold.h), the rule a kernel that folds a
// block's chunks in registers must keep for a row's bits to stay the same whichever blocks take
// which chunks (docs/scheduler.md, issue 38). Proven here on the host, where the CPU build
// compiles the same header: the sequential fold of any aligned block of 2^k chunks is the tree's
// node, bit for bit, and so is any split into blocks merged upward; chunks without a row's keys
// change nothing; the root is the softmax-weighted sum to fp32's precision.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "runtime/cuda/attention_fold.h"

namespace voxrt::cuda {
namespace {

constexpr int kDims = 8;
constexpr int kChunk = 16;  // keys a chunk (the kernels' 64; fewer keep the test quick)

struct Node {
  fold::Stats s = fold::empty_stats();
  std::array<float, kDims> acc{};
};

Node merge(const Node& x, const Node& y) {
  const fold::Weights w = fold::merge_weights(x.s, y.s);
  Node out;
  out.s = fold::merge_stats(x.s, y.s, w);
  for (int d = 0; d < kDims; ++d) out.acc[d] = fold::merge_value(x.acc[d], y.acc[d], w);
  return out;
}

bool same_bits(const Node& a, const Node& b) {
  if (std::memcmp(&a.s.m, &b.s.m, sizeof(float)) != 0 || std::memcmp(&a.s.l, &b.s.l, sizeof(float)) != 0) return false;
  return std::memcmp(a.acc.data(), b.acc.data(), sizeof(a.acc)) == 0;
}

// One query's keys: a score and a value vector each, keys [lo, hi) of the row's.
struct Keys {
  std::vector<float> score;
  std::vector<std::array<float, kDims>> value;
  int lo = 0, hi = 0;
};

Keys random_keys(int chunks, int lo, int hi, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> n(0.f, 1.f);
  Keys k;
  k.lo = lo, k.hi = hi;
  for (int j = 0; j < chunks * kChunk; ++j) {
    // Scores over a wide range, so that the maxima differ and the weights are far from 1.
    k.score.push_back(4.f * n(rng) + (j % 37 == 0 ? 12.f : 0.f));
    std::array<float, kDims> v;
    for (float& x : v) x = n(rng);
    k.value.push_back(v);
  }
  return k;
}

// Chunk c's leaf: its keys' max, sum of e^(s - m) and accumulator (empty where it holds none).
Node leaf(const Keys& k, int c) {
  Node out;
  const int from = std::max(k.lo, c * kChunk), to = std::min(k.hi, (c + 1) * kChunk);
  if (from >= to) return out;
  for (int j = from; j < to; ++j) out.s.m = std::fmax(out.s.m, k.score[j]);
  for (int j = from; j < to; ++j) {
    const float e = std::exp(k.score[j] - out.s.m);
    out.s.l += e;
    for (int d = 0; d < kDims; ++d) out.acc[d] += e * k.value[j][d];
  }
  return out;
}

// Node (level, a) by the tree's definition.
Node tree(const Keys& k, int level, int a) {
  if (level == 0) return leaf(k, a);
  return merge(tree(k, level - 1, 2 * a), tree(k, level - 1, 2 * a + 1));
}

// A block's fold of chunks [a 2^level, (a + 1) 2^level) one after another, as a kernel would.
Node sequential(const Keys& k, int level, int a) {
  std::vector<Node> stack;
  for (int i = 0; i < (1 << level); ++i) {
    stack.push_back(leaf(k, (a << level) + i));
    for (int m = fold::merges_after(i); m > 0; --m) {
      const Node y = stack.back();
      stack.pop_back();
      stack.back() = merge(stack.back(), y);
    }
  }
  EXPECT_EQ(stack.size(), 1u);
  return stack.back();
}

TEST(AttentionFold, MergesAfterCountsTheTrailingOnes) {
  EXPECT_EQ(fold::merges_after(0), 0);
  EXPECT_EQ(fold::merges_after(1), 1);
  EXPECT_EQ(fold::merges_after(2), 0);
  EXPECT_EQ(fold::merges_after(3), 2);
  EXPECT_EQ(fold::merges_after(7), 3);
  EXPECT_EQ(fold::merges_after(11), 2);
}

TEST(AttentionFold, AnyBlocksOfAlignedChunksGiveTheTreesBits) {
  constexpr int kLevels = 5, kChunks = 1 << kLevels;
  // Rows whose keys start and end inside chunks, span a few chunks or all of them.
  for (const auto& [lo, hi] : {std::pair{0, kChunks * kChunk}, std::pair{5, 9}, std::pair{37, 300}, std::pair{100, 511}}) {
    const Keys k = random_keys(kChunks, lo, hi, 17u + lo);
    const Node root = tree(k, kLevels, 0);
    for (int level = 0; level <= kLevels; ++level) {
      // Blocks of 2^level chunks folded one chunk after another, then merged pairwise upward (the
      // combine), as an array, not by the recursion above.
      std::vector<Node> nodes;
      for (int a = 0; a < (kChunks >> level); ++a) {
        nodes.push_back(sequential(k, level, a));
        EXPECT_TRUE(same_bits(nodes.back(), tree(k, level, a))) << "block " << a << " of level " << level;
      }
      while (nodes.size() > 1) {
        std::vector<Node> up;
        for (size_t i = 0; i < nodes.size(); i += 2) up.push_back(merge(nodes[i], nodes[i + 1]));
        nodes = up;
      }
      EXPECT_TRUE(same_bits(nodes[0], root)) << "blocks of " << (1 << level) << " chunks, keys " << lo << ".." << hi;
    }
  }
}

TEST(AttentionFold, ChunksWithoutTheRowsKeysChangeNothing) {
  // A row's keys in chunks 2..5 of 16: its node at level 3 over chunks 0..7 equals the merge of
  // its two children at level 4 with the empty half beside it, and the tree of 32 chunks (the row
  // unchanged) gives the same root as that of 16.
  const Keys k = random_keys(32, 2 * kChunk + 3, 6 * kChunk - 1, 5u);
  const Node low = tree(k, 3, 0), high = tree(k, 3, 1);
  EXPECT_EQ(high.s.m, -INFINITY);
  EXPECT_TRUE(same_bits(merge(low, high), low));
  EXPECT_TRUE(same_bits(tree(k, 5, 0), tree(k, 4, 0)));
  // Two empty nodes merge to an empty one (no NaN from e^(-inf + inf)).
  const Node none = merge(Node{}, Node{});
  EXPECT_EQ(none.s.m, -INFINITY);
  EXPECT_EQ(none.s.l, 0.f);
  for (float x : none.acc) EXPECT_EQ(x, 0.f);
}

TEST(AttentionFold, TheRootIsTheSoftmaxWeightedSum) {
  const Keys k = random_keys(16, 7, 16 * kChunk - 3, 9u);
  const Node root = tree(k, 4, 0);
  double m = -INFINITY;
  for (int j = k.lo; j < k.hi; ++j) m = std::max(m, static_cast<double>(k.score[j]));
  double l = 0, out[kDims] = {};
  for (int j = k.lo; j < k.hi; ++j) {
    const double e = std::exp(k.score[j] - m);
    l += e;
    for (int d = 0; d < kDims; ++d) out[d] += e * k.value[j][d];
  }
  for (int d = 0; d < kDims; ++d) EXPECT_NEAR(root.acc[d] / root.s.l, out[d] / l, 1e-5 * (1 + std::fabs(out[d] / l)));
}

}  // namespace
}  // namespace voxrt::cuda
