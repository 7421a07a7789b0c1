#include "runtime/kv_slot_pool.h"

#include <algorithm>

#include "common/error.h"

namespace voxrt {
namespace {

// The floats a cache's K (or V) array occupies (its elements may be narrower than a float).
size_t array_floats(const KvCache& c) {
  return (c.shape().elements() * c.element_bytes() + sizeof(float) - 1) / sizeof(float);
}

}  // namespace

KvSlotPool::KvSlotPool(Backend& backend, const KvCacheShape& shape, bool grows) : backend_(backend), grows_(grows) {
  check(shape.slots >= 1, "kv slot pool", "at least one slot expected");
  cache_ = KvCache(&backend, shape);
  for (int s = shape.slots - 1; s >= 0; --s) free_.push_back(s);
}

int KvSlotPool::acquire() {
  if (free_.empty()) {
    check(grows_, "kv slot pool", "all " + std::to_string(slots()) + " slots are in use");
    grow();
  }
  const int slot = free_.back();
  free_.pop_back();
  ++in_use_;
  return slot;
}

void KvSlotPool::release(int slot) {
  check(slot >= 0 && slot < slots() && std::find(free_.begin(), free_.end(), slot) == free_.end(), "kv slot pool",
        "releasing slot " + std::to_string(slot) + " that is not in use");
  free_.push_back(slot);
  // Lowest last, so that the slots in use stay packed at the front.
  std::sort(free_.begin(), free_.end(), std::greater<int>());
  --in_use_;
}

void KvSlotPool::grow() {
  KvCacheShape shape = cache_.shape();
  const int old_slots = shape.slots;
  shape.slots = old_slots * 2;
  KvCache bigger(&backend_, shape);
  const size_t floats = array_floats(cache_);
  backend_.copy(static_cast<float*>(bigger.key_data()), static_cast<const float*>(cache_.key_data()), floats);
  backend_.copy(static_cast<float*>(bigger.value_data()), static_cast<const float*>(cache_.value_data()), floats);
  cache_ = std::move(bigger);
  for (int s = shape.slots - 1; s >= old_slots; --s) free_.push_back(s);
  std::sort(free_.begin(), free_.end(), std::greater<int>());
}

}  // namespace voxrt
