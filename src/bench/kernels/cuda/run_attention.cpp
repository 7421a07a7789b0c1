// attention: launch_attention (kernels_attention_mma.cu on the tensor cores, kernels_attention.cu
// on the CUDA cores, then the combine pass where the keys are split: the tensor-core blocks merge
// them themselves), planned as the backend plans
// it (cuda_backend.cpp's attention(): plan_attention for a full window, rows grouped a block where
// they are consecutive positions of one slot).
#include <cmath>

#include "bench/kernels/cuda/attention_cache.h"
#include "bench/kernels/cuda/device_memory.h"
#include "bench/kernels/cuda/kernel_runs.h"
#include "bench/kernels/random_data.h"
#include "bench/kernels/reference_ops.h"

namespace voxrt::bench {
namespace {

// Which keys each row attends, and the cache that holds them. streams: row r is slot r at a
// position past its ring's first turn (its keys wrap around the ring at a different place for
// each row); frames: rows are consecutive positions of slot 0, the ring long enough for all.
struct Rows {
  std::vector<cuda::DevRowRef> refs;
  std::vector<AttendedKeys> keys;
  CacheShape cache;
};
Rows rows_of(const KernelArgs& a) {
  Rows r;
  const bool frames = a.layout == "frames";
  r.cache.slots = frames ? 1 : a.query_rows;
  r.cache.ring = frames ? a.keys + a.query_rows - 1 : a.keys;
  r.cache.kv_heads = a.kv_heads;
  r.cache.head_dim = a.head_dim;
  r.cache.page_len = a.page_len > 0 ? a.page_len : r.cache.ring;
  for (int i = 0; i < a.query_rows; ++i) {
    const long long first = frames ? i : (static_cast<long long>(i) * 7919) % a.keys;
    const int slot = frames ? 0 : i;
    r.refs.push_back({slot, first + a.keys - 1});
    r.keys.push_back({slot, first, a.keys});
  }
  return r;
}

std::string attention_shape(const KernelArgs& a, const cuda::AttentionPlan& plan) {
  return std::to_string(a.query_rows) + " rows (" +
         (a.layout == "frames" ? "consecutive positions of one slot" : "each its own slot") + "), " +
         std::to_string(a.keys) + " keys, " + std::to_string(a.heads) + " heads, " + std::to_string(a.kv_heads) +
         " kv heads, head_dim " + std::to_string(a.head_dim) + ", " + a.cache + " cache, " +
         (a.page_len > 0 ? "pages of " + std::to_string(a.page_len) + " entries" : "one page a slot") +
         "; plan: chunks of " + std::to_string(plan.chunk) + " keys, " + std::to_string(plan.nsplit) + " splits, " +
         std::to_string(plan.rows_per_block) + " rows and " + std::to_string(plan.chunks_per_block) +
         " chunks a block" + (plan.nsplit > 1 ? plan.combine_warp ? ", warp combine" : ", block combine" : "");
}

}  // namespace

KernelRun run_attention(const KernelArgs& a, const Gpu& gpu) {
  const bool tensor_cores = a.kernel == "mma";
  const int kv_bytes = a.cache == "fp8" ? 1 : a.cache == "bf16" ? 2 : 4;
  if (!cuda::attention_head_dim_supported(a.head_dim))
    throw UsageError("--head-dim: " + std::to_string(a.head_dim) + " unsupported (32, 64, 128 or 256)");
  if (tensor_cores && !cuda::attention_aligned(kv_bytes, a.head_dim, true))
    throw UsageError("--head-dim " + std::to_string(a.head_dim) +
                     ": the tensor-core attention (--kernel mma) takes head sizes 64 and 128; --kernel simt takes "
                     "32 to 256 (the backend sends other sizes to it)");
  const Rows rows = rows_of(a);
  RandomData random(a.seed);
  const AttentionCache cache(a, gpu, rows.cache, random);
  const int width = a.heads * a.head_dim;
  const std::vector<float> q = random.uniform(static_cast<size_t>(a.query_rows) * width);
  const AttentionShape shape{a.heads, a.kv_heads, a.head_dim, rows.cache.ring,
                             1.0f / std::sqrt(static_cast<float>(a.head_dim))};
  const std::vector<float> want = reference_attention(q, rows.keys, cache.keys(), cache.values(), shape);

  const int rows_per_block =
      gpu.options.attention_group_rows
          ? cuda::attention_rows_per_block(rows.refs.data(), a.query_rows, a.heads, a.kv_heads,
                                           cuda::attention_aligned(kv_bytes, a.head_dim, tensor_cores))
          : 1;
  const cuda::AttentionPlan plan = cuda::plan_attention(
      a.query_rows, a.heads, a.kv_heads, a.head_dim, kv_bytes, a.keys, a.keys, a.rows_per_position, gpu.sm_count,
      gpu.options.attention_blocks_per_sm, rows_per_block, tensor_cores, gpu.options.attention_chunks_per_block,
      gpu.options.attention_combine_warp, cuda::kAttentionMaxSmemBytes, gpu.options.attention_fused_combine);
  const DeviceBuffer q_device = upload(q, "q");
  const DeviceBuffer refs = upload(rows.refs, "the rows");
  const DeviceBuffer out(static_cast<size_t>(a.query_rows) * width * sizeof(float), "the output");
  const DeviceBuffer scratch(plan.scratch_floats * sizeof(float), "the split keys' partial results");
  const DeviceBuffer arrivals(plan.arrivals * sizeof(unsigned), "the row groups' arrival counters");
  VOXRT_CUDA_CHECK(cudaMemset(arrivals.get(), 0, arrivals.bytes()));  // every launch leaves them zero
  VOXRT_CUDA_CHECK(cudaDeviceSynchronize());  // (the legacy stream's memset, which the run's stream does not wait for)
  cuda::AttentionArgs args;
  args.q = q_device.get<const float>();
  args.ldq = width;
  args.rows = refs.get<const cuda::DevRowRef>();
  args.n_rows = a.query_rows;
  args.n_heads = a.heads;
  args.window = a.keys;
  args.scale = shape.scale;
  args.out = out.get<float>();
  args.ldo = width;
  args.scratch = plan.scratch_floats ? scratch.get<float>() : nullptr;
  args.arrivals = plan.arrivals ? arrivals.get<unsigned>() : nullptr;

  LaunchedKernel k;
  k.launch = [&](int copy) {
    args.kv = cache.layout(copy);
    cuda::launch_attention(args, plan, gpu.stream);
  };
  k.poison_output = [&] { poison(out); };
  k.output = [&] { return download(out.get<const float>(), static_cast<size_t>(a.query_rows) * width); };
  k.copies = cache.copies();
  k.copy_bytes = cache.copy_bytes();
  return check_and_time(a, gpu, attention_shape(a, plan), want, attention_tolerance(cache.values()),
                        attention_cost(a), k);
}

}  // namespace voxrt::bench
