// The operations the kernels compute, in plain C++ on the CPU with double accumulation, over the
// inputs as the kernels see them (bf16-rounded x and W, the cache's stored K and V): the reference
// voxrt_kernel checks each kernel against. Rows are split over threads (a GEMM of 1024 rows is
// seconds of double arithmetic on one core).
#pragma once

#include <vector>

namespace voxrt::bench {

// y [M, N] = x [M, K] W^T, W [N, K]. With `up` (another [N, K] weight): y = silu(x W^T) * (x up^T),
// the SwiGLU the gated kernels fuse.
std::vector<float> reference_product(const std::vector<float>& x, int M, int K, const std::vector<float>& w, int N,
                                     const std::vector<float>* up = nullptr);

// The keys a query row attends: consecutive positions of one slot, first .. first + count - 1,
// entry p % ring of the slot's ring.
struct AttendedKeys {
  int slot = 0;
  long long first = 0;
  int count = 0;
};
struct AttentionShape {
  int heads = 0, kv_heads = 0, head_dim = 0, ring = 0;
  float scale = 0;  // the scores' factor, 1/sqrt(head_dim)
};
// out [rows, heads * head_dim] = softmax(scale q k^T) v per row and query head, head h reading kv
// head h / (heads / kv_heads). q [rows, heads * head_dim]; keys and values [slot][ring][kv_heads *
// head_dim].
std::vector<float> reference_attention(const std::vector<float>& q, const std::vector<AttendedKeys>& rows,
                                       const std::vector<float>& keys, const std::vector<float>& values,
                                       const AttentionShape& s);

}  // namespace voxrt::bench
