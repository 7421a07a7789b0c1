// Buffer and KvCache: RAII owners of backend memory.
#include "runtime/backend.h"

#include <cstdint>
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

KvCache::KvCache(Backend* backend, const KvCacheShape& shape)
    : backend_(backend), shape_(shape), element_bytes_(backend->kv_element_bytes()) {
  // Zero bits are 0.0 in either storage.
  const size_t floats = (shape.elements() * element_bytes_ + sizeof(float) - 1) / sizeof(float);
  k_ = backend_->allocate(floats);
  v_ = backend_->allocate(floats);
  backend_->fill(k_, 0.0f, floats);
  backend_->fill(v_, 0.0f, floats);
}

float* KvCache::keys() const {
  check(element_bytes_ == sizeof(float), "kv cache", "not stored as fp32");
  return k_;
}

float* KvCache::values() const {
  check(element_bytes_ == sizeof(float), "kv cache", "not stored as fp32");
  return v_;
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
  // Rotating a key by -shift turns rot(p) into rot(p - shift): one RoPE pass over the slot's keys.
  const int rows = s.layers * s.ring;
  const std::vector<RowRef> refs(rows, RowRef{slot, -shift});
  const Mat keys{cache.keys() + static_cast<size_t>(slot) * s.per_slot(), rows, s.kv_heads * s.head_dim};
  rope(keys, s.kv_heads, s.head_dim, refs, inv_freq);
}

KvCache::~KvCache() {
  if (backend_) {
    backend_->release(k_);
    backend_->release(v_);
  }
}

KvCache::KvCache(KvCache&& o) noexcept
    : backend_(std::exchange(o.backend_, nullptr)),
      shape_(o.shape_),
      element_bytes_(o.element_bytes_),
      k_(std::exchange(o.k_, nullptr)),
      v_(std::exchange(o.v_, nullptr)) {}

KvCache& KvCache::operator=(KvCache&& o) noexcept {
  if (this != &o) {
    this->~KvCache();
    new (this) KvCache(std::move(o));
  }
  return *this;
}

}  // namespace voxrt
