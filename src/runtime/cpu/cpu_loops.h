#pragma once

// The CPU backend's own arithmetic (its matrix products are OpenBLAS's): each function is one loop
// over a range of rows or elements, which the backend's thread team runs side by side, and each is
// compiled for several instruction sets and picked at run time (common/cpu_dispatch.h), so that a
// baseline build runs them with AVX2 or AVX-512 where the CPU has them.
#include <cstddef>
#include <cstdint>

#include "runtime/backend.h"
#include "runtime/kv_cache.h"

namespace voxrt::cpu_loops {

// y[r][c] += bias[c] for the rows r of y (row stride `stride`) and the columns c0..c1.
void add_bias(float* y, size_t rows, size_t stride, const float* bias, size_t c0, size_t c1);

// Rows r0..r1 of y = g * x / sqrt(mean(x^2) + eps), rows of `cols` values.
void rms_norm(const float* x, const float* g, float eps, int cols, size_t r0, size_t r1, float* y);

// x[c] *= s[c] for one row of `cols` values.
void scale_row(float* x, const float* s, int cols);

// y[i] += x[i], i in [0, n).
void add(float* y, const float* x, size_t n);

// Rotates each of one row's n_heads heads by the angles pos * inv_freq (head_dim / 2 of them);
// cs and sn are scratch of head_dim / 2 floats each.
void rope_row(float* row, int n_heads, int head_dim, float pos, const float* inv_freq, float* cs, float* sn);

// One query row's head against the cache: softmax(scale * q . k_j) over the keys of positions
// first..first + n - 1 of kv_head, times their values, into out (head_dim values). scores (n floats)
// and acc (head_dim doubles) are scratch.
void attend(const KvCache& cache, int layer, int slot, int64_t first, int n, int kv_head, int head_dim, float scale,
            const float* q, float* scores, double* acc, float* out);

}  // namespace voxrt::cpu_loops
