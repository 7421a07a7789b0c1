// How attention chunks' partial results merge by a binary tree fixed by the chunks' absolute
// indices (docs/scheduler.md, issue 38: "a fold fixed by the chunks' positions"), host and device.
//
// A chunk (64 keys at a multiple of 64 positions, attention_split.cuh's aligned plans) leaves, for
// each query, its scores' largest value m, the sum l of e^(s - m) over its keys, and the
// accumulator sum e^(s - m) v (a float a dimension, kept by the caller). Node (k, a) of the tree
// covers chunks [a 2^k, (a + 1) 2^k); its value is the merge of nodes (k - 1, 2a) and
// (k - 1, 2a + 1). Whoever computes a node (a warp over its chunks, a block's warps through shared
// memory, the combine over the blocks' nodes), it is the same arithmetic on the same children, so
// a row's bits do not depend on which blocks take which of its chunks, while a block of 2^k
// aligned chunks leaves one partial result, not 2^k. A chunk that holds none of a row's keys is an
// empty leaf (m = -inf, l = 0, accumulator 0): merged with x it gives x's value (up to a zero's
// sign), so rows of one block, whose key ranges differ at their ends, share the tree.
//
// The CPU build compiles this too (tests/unit/test_attention_fold.cpp proves the sequential fold's
// order is the tree's).
#pragma once

#include <cmath>

#ifndef VOXRT_HOST_DEVICE
#ifdef __CUDACC__
#define VOXRT_HOST_DEVICE __host__ __device__
#else
#define VOXRT_HOST_DEVICE
#endif
#endif

namespace voxrt::cuda::fold {

// A node's statistics for one query (its accumulator is the caller's).
struct Stats {
  float m, l;
};
VOXRT_HOST_DEVICE constexpr Stats empty_stats() { return {-INFINITY, 0.f}; }

// The weights of a merge of x (the lower chunks) and y: e^(m - M) each, M the larger max; two
// empty nodes stay empty (weights 0, not e^(-inf + inf)).
struct Weights {
  float x, y;
};
VOXRT_HOST_DEVICE inline Weights merge_weights(Stats x, Stats y) {
  const float m = fmaxf(x.m, y.m);
  if (m == -INFINITY) return {0.f, 0.f};
  return {expf(x.m - m), expf(y.m - m)};
}
// Every merged quantity (l, and each dimension of the accumulator) by this one expression, an
// explicit fma so that no kernel's compiler contracts it another way: the same bits wherever a
// node is computed.
VOXRT_HOST_DEVICE inline float merge_value(float x, float y, Weights w) { return fmaf(x, w.x, y * w.y); }
VOXRT_HOST_DEVICE inline Stats merge_stats(Stats x, Stats y, Weights w) {
  return {fmaxf(x.m, y.m), merge_value(x.l, y.l, w)};
}

// A sequential fold in the tree's order (a block's 2^k chunks from chunk a 2^k taken one after
// another, a stack of nodes): after pushing the leaf of its i-th chunk (from 0), the two nodes on
// top are siblings and merge, as many times as i has trailing one bits (i = 3: leaves 2 and 3,
// then nodes [0, 2) and [2, 4)). After the 2^k chunks the one node left is node (k, a).
VOXRT_HOST_DEVICE inline int merges_after(int i) {
  int n = 0;
  for (; i & 1; i >>= 1) ++n;
  return n;
}

}  // namespace voxrt::cuda::fold
