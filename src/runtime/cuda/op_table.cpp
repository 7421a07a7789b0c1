#include "runtime/cuda/op_table.h"

#include <climits>
#include <cstddef>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "common/bf16.h"
#include "common/error.h"
#include "runtime/cuda/cuda_check.h"
#include "runtime/cuda/cuda_kernels.h"
#include "runtime/cuda/device_weights.h"
#include "runtime/cuda/kv_layout.h"

namespace voxrt::cuda {
namespace {

void check_scale_rows(std::span<const int> scale_row, int n_scales, const char* where) {
  for (const int i : scale_row)
    check_with(i >= 0 && i < n_scales, where, [&] { return "scale row " + std::to_string(i) + " out of range"; });
}

}  // namespace

OpTable::~OpTable() {
  make_current(device_.device());
  memory_.drop(results_);
}

void OpTable::rms_norm(Mat x, const Weight& w, float eps, Mat y) {
  check(static_cast<size_t>(w.rows) * w.cols == static_cast<size_t>(x.cols) && y.rows == x.rows && y.cols == x.cols,
        "cuda rms_norm", "shape mismatch");
  if (x.rows == 0) return;
  device_.use();
  const DevVec wv = vec_of(w, "cuda rms_norm");
  if (recorder_.recorded(10, x.data, x.rows, x.cols, wv.data, eps, y.data, repeat_[OpKind::Norm])) return;
  for (int i = 0; i < repeat_[OpKind::Norm]; ++i)
    launch_rms_norm(x.data, x.rows, x.cols, wv, eps, y.data, device_.launch());
}

void OpTable::rms_norm_scaled(Mat x, const Weight& w, float eps, Mat y, Mat scales, std::span<const int> scale_row) {
  check(static_cast<size_t>(w.rows) * w.cols == static_cast<size_t>(x.cols) && y.rows == x.rows && y.cols == x.cols &&
            scale_row.size() >= static_cast<size_t>(x.rows) && scales.cols >= x.cols,
        "cuda rms_norm_scaled", "shape mismatch");
  if (x.rows == 0) return;
  check_scale_rows(scale_row.first(x.rows), scales.rows, "cuda rms_norm_scaled");
  device_.use();
  const DevVec wv = vec_of(w, "cuda rms_norm_scaled");
  const auto d = memory_.upload_args({{scale_row.data(), x.rows * sizeof(int)}});
  if (recorder_.recorded(19, x.data, x.rows, x.cols, wv.data, eps, y.data, scales.data, scales.cols, d[0],
                      repeat_[OpKind::Norm]))
    return;
  for (int i = 0; i < repeat_[OpKind::Norm]; ++i)
    launch_rms_norm_scaled(x.data, x.rows, x.cols, wv, eps, y.data, scales.data, scales.cols,
                           static_cast<const int*>(d[0]), device_.launch());
}

void OpTable::scale_rows(Mat x, Mat scales, std::span<const int> scale_row) {
  check(scale_row.size() >= static_cast<size_t>(x.rows) && scales.cols >= x.cols, "cuda scale_rows", "shape mismatch");
  if (x.rows == 0) return;
  check_scale_rows(scale_row.first(x.rows), scales.rows, "cuda scale_rows");
  device_.use();
  const auto d = memory_.upload_args({{scale_row.data(), x.rows * sizeof(int)}});
  if (recorder_.recorded(11, x.data, x.rows, x.cols, scales.data, scales.cols, d[0])) return;
  launch_scale_rows(x.data, x.rows, x.cols, scales.data, scales.cols, static_cast<const int*>(d[0]), device_.launch());
}

void OpTable::gelu(Mat x) {
  device_.use();
  if (recorder_.recorded(12, x.data, x.rows, x.cols)) return;
  launch_gelu(x.data, static_cast<size_t>(x.rows) * x.cols, device_.launch());
}

void OpTable::silu_mul(Mat gate, Mat up) {
  check(static_cast<size_t>(gate.rows) * gate.cols == static_cast<size_t>(up.rows) * up.cols, "cuda silu_mul",
        "shape mismatch");
  device_.use();
  if (recorder_.recorded(13, gate.data, up.data, gate.rows, gate.cols)) return;
  launch_silu_mul(gate.data, up.data, static_cast<size_t>(gate.rows) * gate.cols, device_.launch());
}

void OpTable::add(Mat y, Mat x) {
  check(static_cast<size_t>(y.rows) * y.cols == static_cast<size_t>(x.rows) * x.cols, "cuda add", "shape mismatch");
  device_.use();
  if (recorder_.recorded(14, y.data, x.data, y.rows, y.cols)) return;
  launch_add(y.data, x.data, static_cast<size_t>(y.rows) * y.cols, device_.launch());
}

void OpTable::rope(Mat x, int n_heads, int head_dim, std::span<const RowRef> rows, std::span<const float> inv_freq) {
  check(n_heads >= 0 && head_dim >= 0 && static_cast<size_t>(n_heads) * head_dim <= static_cast<size_t>(x.cols) &&
            rows.size() >= static_cast<size_t>(x.rows) && inv_freq.size() >= static_cast<size_t>(head_dim / 2),
        "cuda rope", "shape mismatch");
  if (x.rows == 0 || n_heads == 0 || head_dim < 2) return;
  device_.use();
  const size_t half_bytes = static_cast<size_t>(head_dim / 2) * sizeof(float);
  const auto d = memory_.upload_args({{inv_freq.data(), half_bytes}, {rows.data(), x.rows * sizeof(RowRef)}});
  if (recorder_.recorded(15, x.data, x.rows, x.cols, n_heads, head_dim, d[0], d[1])) return;
  launch_rope(x.data, x.rows, x.cols, n_heads, head_dim, static_cast<const DevRowRef*>(d[1]),
              static_cast<const float*>(d[0]), device_.launch());
}

void OpTable::store_kv(KvCache& cache, int layer, Mat k, Mat v, std::span<const RowRef> rows) {
  const KvCacheShape& s = cache.shape();
  const int width = s.kv_heads * s.head_dim;
  check(k.cols == width && v.cols == width && k.rows == v.rows && rows.size() >= static_cast<size_t>(k.rows),
        "cuda store_kv", "shape mismatch");
  check(layer >= 0 && layer < s.layers, "cuda store_kv", "layer out of range");
  if (k.rows == 0) return;
  check_rows(cache, rows.first(k.rows), "cuda store_kv");
  device_.use();
  const auto d = memory_.upload_args({{rows.data(), k.rows * sizeof(RowRef)}});
  if (recorder_.recorded(16, cache.key_data(), cache.value_data(), cache.device_page_table(), layer, k.data, k.cols,
                      v.data, v.cols, d[0], k.rows))
    return;
  launch_store_kv(kv_layout(cache, layer), k.data, k.cols, v.data, v.cols, static_cast<const DevRowRef*>(d[0]), k.rows,
                  device_.launch());
}

void OpTable::upload_kv(KvCache& cache, const float* keys, const float* values) {
  check(cache.element_bytes() == 2, "cuda upload_kv", "fp8 caches are written by store_kv only");
  check(!recorder_.in_recording(), "cuda upload_kv", "not allowed inside a recording");
  device_.use();
  // Rounded on the way into the weight upload's pinned chunks.
  for (auto [src, dst] : {std::pair{keys, cache.key_data()}, std::pair{values, cache.value_data()}})
    memory_.upload_bf16_chunks(static_cast<uint16_t*>(dst), cache.shape().elements(),
                               [&](uint16_t* host, size_t off, size_t len) { float_to_bf16(src + off, host, len); });
}

void OpTable::download_kv(const KvCache& cache, float* keys, float* values) {
  check(cache.element_bytes() == 2, "cuda download_kv", "fp8 caches are read by attention only");
  check(!recorder_.in_recording(), "cuda download_kv", "not allowed inside a recording");
  device_.use();
  const size_t n = cache.shape().elements();
  std::vector<uint16_t> bits(n);
  for (auto [src, dst] : {std::pair{cache.key_data(), keys}, std::pair{cache.value_data(), values}}) {
    VOXRT_CUDA_CHECK(cudaMemcpyAsync(bits.data(), src, n * 2, cudaMemcpyDeviceToHost, device_.stream()));
    memory_.sync();
    bf16_to_float(bits.data(), dst, n);
  }
}

void OpTable::shift_cached_keys(KvCache& cache, int slot, int64_t shift, std::span<const float> inv_freq) {
  const KvCacheShape& s = cache.shape();
  check(slot >= 0 && slot < s.slots && inv_freq.size() >= static_cast<size_t>(s.head_dim / 2), "cuda shift_cached_keys",
        "slot or inv_freq out of range");
  device_.use();
  const auto d = memory_.upload_args({{inv_freq.data(), static_cast<size_t>(s.head_dim / 2) * sizeof(float)}});
  for (const int page : cache.pages_of(slot)) {
    if (recorder_.recorded(25, cache.key_data(), page, shift, d[0])) continue;
    launch_shift_cached_keys(kv_layout(cache, 0), s.layers, page, shift, static_cast<const float*>(d[0]),
                             device_.launch());
  }
}

void OpTable::rope_store_kv(Mat q, Mat k, Mat v, int n_heads, std::span<const RowRef> rows,
                            std::span<const float> inv_freq, KvCache& cache, int layer) {
  const KvCacheShape& s = cache.shape();
  const int width = s.kv_heads * s.head_dim;
  check(k.cols == width && v.cols == width && k.rows == v.rows && q.rows == k.rows && n_heads >= 0 &&
            static_cast<size_t>(n_heads) * s.head_dim <= static_cast<size_t>(q.cols) &&
            rows.size() >= static_cast<size_t>(k.rows) && inv_freq.size() >= static_cast<size_t>(s.head_dim / 2),
        "cuda rope_store_kv", "shape mismatch");
  check(layer >= 0 && layer < s.layers, "cuda rope_store_kv", "layer out of range");
  if (k.rows == 0) return;
  check_rows(cache, rows.first(k.rows), "cuda rope_store_kv");
  device_.use();
  const size_t half_bytes = static_cast<size_t>(s.head_dim / 2) * sizeof(float);
  const auto d = memory_.upload_args({{inv_freq.data(), half_bytes}, {rows.data(), k.rows * sizeof(RowRef)}});
  if (recorder_.recorded(24, q.data, q.cols, n_heads, k.data, k.cols, v.data, v.cols, cache.key_data(), cache.value_data(),
                      cache.device_page_table(), layer, d[0], d[1], k.rows, repeat_[OpKind::Rope]))
    return;
  for (int i = 0; i < repeat_[OpKind::Rope]; ++i)
    launch_rope_store(q.data, q.cols, n_heads, k.data, k.cols, v.data, v.cols, kv_layout(cache, layer),
                      static_cast<const DevRowRef*>(d[1]), k.rows, static_cast<const float*>(d[0]), device_.launch());
}

void OpTable::embed(const Weight& table, std::span<const int32_t> ids, Mat y) {
  check(y.cols == table.cols && ids.size() >= static_cast<size_t>(y.rows), "cuda embed", "shape mismatch");
  if (y.rows == 0) return;
  for (int r = 0; r < y.rows; ++r)
    check_with(ids[r] >= 0 && ids[r] < table.rows, "embedding",
               [&] { return "token id " + std::to_string(ids[r]) + " out of range"; });
  device_.use();
  const auto d = memory_.upload_args({{ids.data(), y.rows * sizeof(int32_t)}});
  const DeviceWeight& w = device_weight(table, "cuda embed");
  if (w.quantized()) {
    check(packed_format(w.format), "cuda embed", "an fp8 table: fp8 is a format for products (use 8w or 4w)");
    GemvOut q;
    q.format = w.format;
    q.packed = static_cast<const uint8_t*>(w.data);
    q.scales = static_cast<const __nv_bfloat16*>(w.scales);
    q.group = w.group;
    if (recorder_.recorded(27, w.data, table.cols, d[0], y.rows, y.data, y.cols)) return;
    launch_embed_quantized(q, table.cols, static_cast<const int32_t*>(d[0]), y.rows, y.data, y.cols, device_.launch());
    return;
  }
  const DevVec t = vec_of(table, "cuda embed");
  if (recorder_.recorded(18, t.data, table.cols, d[0], y.rows, y.data, y.cols)) return;
  launch_embed(t, table.cols, static_cast<const int32_t*>(d[0]), y.rows, y.data, y.cols, device_.launch());
}

void OpTable::gather_rows(Mat x, std::span<const int32_t> rows, Mat y) {
  Backend::check_gather_rows(x, rows, y, "cuda gather_rows");
  if (y.rows == 0) return;
  device_.use();
  const auto d = memory_.upload_args({{rows.data(), y.rows * sizeof(int32_t)}});
  if (recorder_.recorded(26, x.data, x.cols, d[0], y.rows, y.data)) return;
  // The embedding gather, over an fp32 matrix as its table.
  launch_embed(DevVec{x.data, false}, x.cols, static_cast<const int32_t*>(d[0]), y.rows, y.data, y.cols,
               device_.launch());
}

static_assert(sizeof(MatEntry) == sizeof(DevMatEntry) && offsetof(MatEntry, row) == offsetof(DevMatEntry, row) &&
                  offsetof(MatEntry, col) == offsetof(DevMatEntry, col) &&
                  offsetof(MatEntry, value) == offsetof(DevMatEntry, value),
              "MatEntry and DevMatEntry must have the same layout");

// The entries go to the device as an op's arguments do (upload_args: the staging buffer and the
// argument buffer, both grown to fit, or a recording's arena). The decoder calls it outside its
// recordings, between the pass and the argmax, and only for a pass whose rows have boosts: their
// count changes from pass to pass, which inside a graph would change its launches every time.
void OpTable::add_at(Mat x, std::span<const MatEntry> entries) {
  Backend::check_add_at(x, entries, "cuda add_at");
  if (entries.empty()) return;
  check(entries.size() <= static_cast<size_t>(INT_MAX), "cuda add_at", "too many entries");
  device_.use();
  const auto d = memory_.upload_args({{entries.data(), entries.size() * sizeof(MatEntry)}});
  const int n = static_cast<int>(entries.size());
  if (recorder_.recorded(28, x.data, x.cols, d[0], n)) return;
  launch_add_at(x.data, x.cols, static_cast<const DevMatEntry*>(d[0]), n, device_.launch());
}

void OpTable::argmax(Mat x, std::span<int32_t> ids, std::span<float> margins) {
  check(ids.size() >= static_cast<size_t>(x.rows) && (margins.empty() || margins.size() >= static_cast<size_t>(x.rows)),
        "cuda argmax", "output spans too short");
  check(x.cols > 0, "cuda argmax", "empty rows");
  check(!recorder_.in_recording(), "cuda argmax", "not allowed inside a recording (it waits for the result)");
  if (x.rows == 0) return;
  device_.use();
  const size_t n = static_cast<size_t>(x.rows);
  auto* dev = static_cast<char*>(memory_.grow(results_, n * 8));
  int32_t* d_ids = reinterpret_cast<int32_t*>(dev);
  float* d_margins = margins.empty() ? nullptr : reinterpret_cast<float*>(dev + n * 4);
  launch_argmax(x.data, x.rows, x.cols, d_ids, d_margins, device_.launch());
  char* host = static_cast<char*>(memory_.stage(n * 8));
  VOXRT_CUDA_CHECK(
      cudaMemcpyAsync(host, dev, margins.empty() ? n * 4 : n * 8, cudaMemcpyDeviceToHost, device_.stream()));
  memory_.sync();
  std::memcpy(ids.data(), host, n * 4);
  if (!margins.empty()) std::memcpy(margins.data(), host + n * 4, n * 4);
}

}  // namespace voxrt::cuda
