#include "runtime/cuda/attention_dispatch.h"

#include <cstdint>
#include <string>

#include "common/error.h"
#include "runtime/cuda/cuda_check.h"
#include "runtime/cuda/cuda_kernels.h"
#include "runtime/cuda/kv_layout.h"

namespace voxrt::cuda {

AttentionDispatch::~AttentionDispatch() {
  make_current(device_.device());
  memory_.drop(attn_);
  memory_.drop(arrivals_);
}

bool AttentionDispatch::set_kernels(KernelSwitches::AttentionKernels k, size_t kv_bytes) {
  if (k == KernelSwitches::AttentionKernels::TensorCores && kv_bytes == 4) return false;  // bf16 and fp8 caches only
  attention_kernels_ = k;
  return true;
}

void AttentionDispatch::attention(const KvCache& cache, int layer, Mat q, std::span<const RowRef> rows,
                                  const AttentionParams& p, Mat out) {
  const KvCacheShape& s = cache.shape();
  check(p.n_kv_heads == s.kv_heads && p.head_dim == s.head_dim && p.n_kv_heads > 0 && p.n_heads % p.n_kv_heads == 0,
        "cuda attention", "heads do not match the cache");
  check_with(attention_head_dim_supported(p.head_dim), "cuda attention",
             [&] { return "head_dim " + std::to_string(p.head_dim) + " unsupported (32, 64, 128 or 256)"; });
  const size_t qw = static_cast<size_t>(p.n_heads) * p.head_dim;
  check(q.cols >= static_cast<int>(qw) && out.cols >= static_cast<int>(qw) && out.rows == q.rows &&
            rows.size() >= static_cast<size_t>(q.rows) && p.window > 0,
        "cuda attention", "shape mismatch");
  check(layer >= 0 && layer < s.layers, "cuda attention", "layer out of range");
  if (q.rows == 0) return;
  check_rows(cache, rows.first(q.rows), "cuda attention", p.window);
  check((reinterpret_cast<uintptr_t>(cache.key_data()) & 15) == 0 &&
            (reinterpret_cast<uintptr_t>(cache.value_data()) & 15) == 0,
        "cuda attention", "cache not 16-byte aligned");
  device_.use();
  // Planned for a full window whatever the positions (blocks past a row's keys return at once):
  // the launch then depends on shapes only, so a recording replays at any position.
  const bool tensor_cores = attention_kernels_ == KernelSwitches::AttentionKernels::Automatic
                                ? options_.tensor_core_attention
                                : attention_kernels_ == KernelSwitches::AttentionKernels::TensorCores;
  const int kv_bytes = static_cast<int>(cache.element_bytes());
  const int rows_per_block =
      options_.attention_group_rows
          ? attention_rows_per_block(reinterpret_cast<const DevRowRef*>(rows.data()), q.rows, p.n_heads, p.n_kv_heads,
                                     attention_aligned(kv_bytes, p.head_dim, tensor_cores))
          : 1;
  const AttentionPlan plan =
      plan_attention(q.rows, p.n_heads, p.n_kv_heads, p.head_dim, kv_bytes, p.window, p.window, p.rows_per_position,
                     device_.sm_count(), options_.attention_blocks_per_sm, rows_per_block, tensor_cores,
                     options_.attention_chunks_per_block, options_.attention_combine_warp,
                     static_cast<size_t>(device_.caps().smem_per_block), options_.attention_fused_combine);
  const auto d = memory_.upload_args({{rows.data(), q.rows * sizeof(RowRef)}});
  AttentionArgs a;
  a.kv = kv_layout(cache, layer);
  a.q = q.data;
  a.ldq = q.cols;
  a.rows = static_cast<const DevRowRef*>(d[0]);
  a.n_rows = q.rows;
  a.n_heads = p.n_heads;
  a.window = p.window;
  a.scale = p.scale;
  a.out = out.data;
  a.ldo = out.cols;
  if (plan.scratch_floats > 0)
    a.scratch = static_cast<float*>(memory_.grow(attn_, plan.scratch_floats * sizeof(float)));
  if (plan.arrivals > 0) {
    // Zeroed when made (grow runs eagerly when it makes them); each launch leaves them zero.
    const bool fresh = arrivals_.bytes < plan.arrivals * sizeof(unsigned);
    a.arrivals = static_cast<unsigned*>(memory_.grow(arrivals_, plan.arrivals * sizeof(unsigned)));
    if (fresh) VOXRT_CUDA_CHECK(cudaMemsetAsync(a.arrivals, 0, arrivals_.bytes, device_.stream()));
  }
  if (recorder_.recorded(17, cache.key_data(), cache.value_data(), cache.device_page_table(), layer, q.data, q.rows,
                      q.cols, d[0], p.n_heads, p.window, p.scale, out.data, out.cols, a.scratch, a.arrivals, plan.chunk,
                      plan.nsplit, plan.rows_per_block, repeat_[OpKind::Attention]))
    return;
  for (int i = 0; i < repeat_[OpKind::Attention]; ++i) launch_attention(a, plan, device_.launch());
}

}  // namespace voxrt::cuda
