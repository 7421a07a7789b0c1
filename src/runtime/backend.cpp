// Buffer: the RAII owner of backend memory; the Backend defaults written once for every backend.
// KvCache (paged key/value storage) is in kv_cache.cpp.
#include "runtime/backend.h"
#include "runtime/kv_cache.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "common/bf16.h"
#include "common/error.h"

namespace voxrt {

Buffer::Buffer(Backend* backend, int rows, int cols) : backend_(backend), rows_(rows), cols_(cols) {
  data_ = backend_->allocate(size());
}

Buffer::~Buffer() {
  if (backend_ && data_) backend_->release(data_);
}

Buffer::Buffer(Buffer&& o) noexcept
    : backend_(std::exchange(o.backend_, nullptr)),
      data_(std::exchange(o.data_, nullptr)),
      rows_(std::exchange(o.rows_, 0)),
      cols_(std::exchange(o.cols_, 0)) {}

Buffer& Buffer::operator=(Buffer&& o) noexcept {
  if (this != &o) {
    this->~Buffer();
    new (this) Buffer(std::move(o));
  }
  return *this;
}

Weight Backend::upload_weight_bf16(std::vector<uint16_t>&& bits, int rows, int cols) {
  std::vector<float> values(bits.size());
  bf16_to_float(bits.data(), values.data(), bits.size());
  std::vector<uint16_t>().swap(bits);
  return upload_weight(std::move(values), rows, cols);
}

Weight Backend::upload_quantized(QuantizedMatrix&& m) {
  throw Error(name() + ": no kernels for " + format_name(m.format) + " weights [" + std::to_string(m.rows) + ", " +
              std::to_string(m.cols) + "] on this backend");
}

void Backend::check_gather_rows(Mat x, std::span<const int32_t> rows, Mat y, const char* op) {
  check(y.cols == x.cols && rows.size() >= static_cast<size_t>(y.rows), op, "shape mismatch");
  for (int r = 0; r < y.rows; ++r)
    check_with(rows[r] >= 0 && rows[r] < x.rows, op,
               [&] { return "row " + std::to_string(rows[r]) + " outside the " + std::to_string(x.rows) + " rows"; });
}

void Backend::check_add_at(Mat x, std::span<const MatEntry> entries, const char* op) {
  for (const MatEntry& e : entries)
    check_with(e.row >= 0 && e.row < x.rows && e.col >= 0 && e.col < x.cols, op, [&] {
      return "entry (" + std::to_string(e.row) + ", " + std::to_string(e.col) + ") outside the " +
             std::to_string(x.rows) + " x " + std::to_string(x.cols) + " matrix";
    });
}

void Backend::rope_store_kv(Mat q, Mat k, Mat v, int n_heads, std::span<const RowRef> rows,
                            std::span<const float> inv_freq, KvCache& cache, int layer) {
  const int head_dim = cache.shape().head_dim;
  rope(q, n_heads, head_dim, rows, inv_freq);
  rope(k, cache.shape().kv_heads, head_dim, rows, inv_freq);
  store_kv(cache, layer, k, v, rows);
}

void Backend::upload_kv(KvCache& cache, const float* keys, const float* values) {
  upload(cache.keys(), keys, cache.shape().elements());
  upload(cache.values(), values, cache.shape().elements());
}

void Backend::download_kv(const KvCache& cache, float* keys, float* values) {
  download(keys, cache.keys(), cache.shape().elements());
  download(values, cache.values(), cache.shape().elements());
}

void Backend::shift_cached_keys(KvCache& cache, int slot, int64_t shift, std::span<const float> inv_freq) {
  const KvCacheShape& s = cache.shape();
  // Rotating a key by -shift turns rot(p) into rot(p - shift): one RoPE pass over each of the
  // slot's pages (every layer's entries of a page are contiguous).
  const int rows = s.layers * s.page_len();
  const std::vector<RowRef> refs(rows, RowRef{slot, -shift});
  for (const int page : cache.pages_of(slot)) {
    const Mat keys{cache.keys() + static_cast<size_t>(page) * s.per_page(), rows, static_cast<int>(s.row_elements())};
    rope(keys, s.kv_heads, s.head_dim, refs, inv_freq);
  }
}

}  // namespace voxrt
