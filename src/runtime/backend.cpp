// Buffer and KvCache: RAII owners of backend memory.
#include "runtime/backend.h"

#include <bit>
#include <cstdint>
#include <utility>

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
#pragma omp parallel for schedule(static) if (bits.size() > (size_t{1} << 20))
  for (size_t i = 0; i < bits.size(); ++i) values[i] = std::bit_cast<float>(static_cast<uint32_t>(bits[i]) << 16);
  std::vector<uint16_t>().swap(bits);
  return upload_weight(std::move(values), rows, cols);
}

KvCache::KvCache(Backend* backend, const KvCacheShape& shape) : backend_(backend), shape_(shape) {
  const size_t n = shape.per_slot() * shape.slots;
  k_ = backend_->allocate(n);
  v_ = backend_->allocate(n);
  backend_->fill(k_, 0.0f, n);
  backend_->fill(v_, 0.0f, n);
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
