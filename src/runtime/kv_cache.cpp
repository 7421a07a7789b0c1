// KvCache (runtime/kv_cache.h): paged key/value storage, its page tables (host and backend copies),
// the free list, and each slot's reservation (docs/scheduler.md, step 5).
#include "runtime/kv_cache.h"

#include <algorithm>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "common/error.h"
#include "runtime/backend.h"

namespace voxrt {

KvCache::KvCache(Backend* backend, const KvCacheShape& shape)
    : backend_(backend), shape_(shape), element_bytes_(backend->kv_element_bytes()) {
  check(shape.slots >= 1 && shape.layers >= 1 && shape.ring >= 1 && shape.kv_heads >= 1 && shape.head_dim >= 1 &&
            shape.page_positions >= 0 && shape.pages >= 0,
        "kv cache", "slots, layers, ring, heads and head_dim must be positive");
  check(shape.ring % shape.page_len() == 0, "kv cache",
        "page of " + std::to_string(shape.page_len()) + " positions does not divide the ring of " + std::to_string(shape.ring));
  // Zero bits are 0.0 in either storage.
  const size_t floats = (shape.elements() * element_bytes_ + sizeof(float) - 1) / sizeof(float);
  k_ = backend_->allocate(floats);
  v_ = backend_->allocate(floats);
  backend_->fill(k_, 0.0f, floats);
  backend_->fill(v_, 0.0f, floats);
  if (element_bytes_ == 1) {
    k_scales_ = backend_->allocate(scale_count());
    v_scales_ = backend_->allocate(scale_count());
    backend_->fill(k_scales_, 0.0f, scale_count());
    backend_->fill(v_scales_, 0.0f, scale_count());
  }
  init_tables();
}

size_t KvCache::scale_count() const {
  return element_bytes_ == 1 ? static_cast<size_t>(shape_.page_count()) * shape_.layers * shape_.page_len() * shape_.kv_heads
                             : 0;
}

void KvCache::init_tables() {
  const int pps = shape_.pages_per_slot();
  table_.assign(static_cast<size_t>(shape_.slots) * pps, -1);
  reserved_.assign(shape_.slots, 0);
  mapped_.assign(shape_.slots, 0);
  free_.clear();
  outstanding_ = 0;
  if (shape_.paged()) {
    for (int p = shape_.pages - 1; p >= 0; --p) free_.push_back(p);
  } else {
    for (size_t i = 0; i < table_.size(); ++i) table_[i] = static_cast<int32_t>(i);
    std::fill(mapped_.begin(), mapped_.end(), pps);
  }
  static_assert(sizeof(int32_t) == sizeof(float), "the table travels as floats");
  device_table_ = reinterpret_cast<int32_t*>(backend_->allocate(table_.size()));
  upload_table(0, shape_.slots);
}

void KvCache::upload_table(int first_slot, int slots) {
  // int32 bits moved as floats: upload() copies bytes and never does arithmetic on them.
  const size_t pps = static_cast<size_t>(shape_.pages_per_slot());
  backend_->upload(reinterpret_cast<float*>(device_table_ + first_slot * pps),
                   reinterpret_cast<const float*>(table_.data() + first_slot * pps), slots * pps);
}

std::vector<int> KvCache::pages_of(int slot) const {
  check(slot >= 0 && slot < shape_.slots, "kv cache", "slot " + std::to_string(slot) + " out of range");
  std::vector<int> out;
  const int pps = shape_.pages_per_slot();
  for (int i = 0; i < pps; ++i)
    if (const int p = table_[static_cast<size_t>(slot) * pps + i]; p >= 0) out.push_back(p);
  return out;
}

int KvCache::mapped_pages(int slot) const {
  check(slot >= 0 && slot < shape_.slots, "kv cache", "slot " + std::to_string(slot) + " out of range");
  return mapped_[slot];
}

int KvCache::unreserved_pages() const { return static_cast<int>(static_cast<int64_t>(free_.size()) - outstanding_); }

void KvCache::map(int slot, int64_t first, int64_t count) {
  if (!shape_.paged() || count <= 0) return;
  check(slot >= 0 && slot < shape_.slots && first >= 0, "kv cache", "map: slot or position out of range");
  const int64_t ring = shape_.ring, len = shape_.page_len();
  const int64_t n = std::min(count, ring);
  bool changed = false;
  for (int64_t i = 0; i < n;) {
    const int64_t entry = (first + i) % ring;
    int32_t& page = table_[static_cast<size_t>(slot) * shape_.pages_per_slot() + static_cast<size_t>(entry / len)];
    if (page < 0) {
      const bool kept = mapped_[slot] < reserved_[slot];  // one of the pages kept for this slot
      if (!kept && static_cast<int64_t>(free_.size()) <= outstanding_) {
        if (changed) upload_table(slot, 1);
        throw Error("kv cache: the session in slot " + std::to_string(slot) + " needs a page for position " +
                    std::to_string(first + i) + ", beyond the " + std::to_string(reserved_[slot]) +
                    " pages it reserved for its length (SessionOptions::max_seconds), and none is spare (" +
                    std::to_string(free_.size()) + " free, all kept for other sessions)");
      }
      if (kept) --outstanding_;
      page = free_.back();
      free_.pop_back();
      ++mapped_[slot];
      changed = true;
    }
    i += len - entry % len;  // the next page's first entry
  }
  if (changed) upload_table(slot, 1);
}

bool KvCache::reserve(int slot, int pages) {
  if (!shape_.paged()) return true;
  check(slot >= 0 && slot < shape_.slots && pages >= 0, "kv cache", "reserve: slot or page count out of range");
  const int64_t before = std::max(0, reserved_[slot] - mapped_[slot]);
  const int64_t after = std::max(0, pages - mapped_[slot]);
  if (after - before > unreserved_pages()) return false;
  reserved_[slot] = pages;
  outstanding_ += after - before;
  return true;
}

void KvCache::unmap(int slot) {
  if (!shape_.paged()) return;
  check(slot >= 0 && slot < shape_.slots, "kv cache", "unmap: slot out of range");
  outstanding_ -= std::max(0, reserved_[slot] - mapped_[slot]);
  const int pps = shape_.pages_per_slot();
  for (int i = 0; i < pps; ++i) {
    int32_t& page = table_[static_cast<size_t>(slot) * pps + i];
    if (page >= 0) free_.push_back(page);
    page = -1;
  }
  // Lowest last, so that pages in use stay packed at the front of the storage.
  std::sort(free_.begin(), free_.end(), std::greater<int>());
  reserved_[slot] = mapped_[slot] = 0;
  upload_table(slot, 1);
}

void KvCache::grow(int slots, int pages) {
  check(slots >= shape_.slots && (!shape_.paged() || pages >= shape_.pages), "kv cache", "grow: a cache only grows");
  if (shape_.paged() && pages == shape_.pages) {  // more page tables only: the storage stays
    shape_.slots = slots;
    table_.resize(static_cast<size_t>(slots) * shape_.pages_per_slot(), -1);
    reserved_.resize(slots, 0);
    mapped_.resize(slots, 0);
    backend_->release(reinterpret_cast<float*>(device_table_));  // stream-ordered after its readers
    device_table_ = reinterpret_cast<int32_t*>(backend_->allocate(table_.size()));
    upload_table(0, slots);
    return;
  }
  KvCacheShape s = shape_;
  s.slots = slots;
  if (s.paged()) s.pages = pages;
  KvCache bigger(backend_, s);
  const size_t floats = (shape_.elements() * element_bytes_ + sizeof(float) - 1) / sizeof(float);
  backend_->copy(bigger.k_, k_, floats);
  backend_->copy(bigger.v_, v_, floats);
  if (k_scales_) {  // page-major too
    backend_->copy(bigger.k_scales_, k_scales_, scale_count());
    backend_->copy(bigger.v_scales_, v_scales_, scale_count());
  }
  if (s.paged()) {
    std::copy(table_.begin(), table_.end(), bigger.table_.begin());
    std::copy(reserved_.begin(), reserved_.end(), bigger.reserved_.begin());
    std::copy(mapped_.begin(), mapped_.end(), bigger.mapped_.begin());
    bigger.outstanding_ = outstanding_;
    bigger.free_ = free_;
    for (int p = shape_.pages; p < s.pages; ++p) bigger.free_.push_back(p);
    std::sort(bigger.free_.begin(), bigger.free_.end(), std::greater<int>());
    bigger.upload_table(0, shape_.slots);
  }
  *this = std::move(bigger);
  backend_->release_unused_memory();  // the old storage back to the device, where the next growth may take it
}

float* KvCache::keys() const {
  check(element_bytes_ == sizeof(float), "kv cache", "not stored as fp32");
  return k_;
}

float* KvCache::values() const {
  check(element_bytes_ == sizeof(float), "kv cache", "not stored as fp32");
  return v_;
}

void KvCache::release_storage() {
  if (backend_) {
    backend_->release(k_);
    backend_->release(v_);
    backend_->release(k_scales_);
    backend_->release(v_scales_);
    backend_->release(reinterpret_cast<float*>(device_table_));
  }
}

KvCache::~KvCache() { release_storage(); }

KvCache::KvCache(KvCache&& o) noexcept
    : backend_(std::exchange(o.backend_, nullptr)),
      shape_(o.shape_),
      element_bytes_(o.element_bytes_),
      k_(std::exchange(o.k_, nullptr)),
      v_(std::exchange(o.v_, nullptr)),
      k_scales_(std::exchange(o.k_scales_, nullptr)),
      v_scales_(std::exchange(o.v_scales_, nullptr)),
      table_(std::move(o.table_)),
      device_table_(std::exchange(o.device_table_, nullptr)),
      free_(std::move(o.free_)),
      reserved_(std::move(o.reserved_)),
      mapped_(std::move(o.mapped_)),
      outstanding_(o.outstanding_) {}

KvCache& KvCache::operator=(KvCache&& o) noexcept {
  if (this != &o) {
    this->~KvCache();
    new (this) KvCache(std::move(o));
  }
  return *this;
}

}  // namespace voxrt
