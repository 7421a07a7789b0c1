#include "runtime/cuda/kv_layout.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>

#include "common/error.h"

namespace voxrt::cuda {

static_assert(sizeof(RowRef) == sizeof(DevRowRef) && offsetof(RowRef, slot) == offsetof(DevRowRef, slot) &&
                  offsetof(RowRef, pos) == offsetof(DevRowRef, pos),
              "RowRef and DevRowRef must have the same layout");

void check_rows(const KvCache& cache, std::span<const RowRef> rows, const char* where, int window) {
  const KvCacheShape& s = cache.shape();
  for (const RowRef& r : rows) {
    check_with(r.slot >= 0 && r.slot < s.slots, where,
               [&] { return "cache slot " + std::to_string(r.slot) + " out of range"; });
    check_with(r.pos >= 0, where, [&] { return "negative position " + std::to_string(r.pos); });
    check_with(cache.page_of(r.slot, r.pos % s.ring) >= 0, where, [&] {
      return "slot " + std::to_string(r.slot) + " has no cache page for position " + std::to_string(r.pos);
    });
    const int64_t keys = std::min<int64_t>(r.pos + 1, window);
    check_with(keys <= s.ring, where, [&] {
      return "row at position " + std::to_string(r.pos) + " attends " + std::to_string(keys) +
             " keys, more than the ring's " + std::to_string(s.ring);
    });
  }
}

KvLayout kv_layout(const KvCache& cache, int layer) {
  const KvCacheShape& s = cache.shape();
  KvLayout l;
  l.keys = cache.key_data();
  l.values = cache.value_data();
  l.bf16 = cache.element_bytes() == 2;
  l.fp8 = cache.element_bytes() == 1;
  l.key_scales = cache.key_scales();
  l.value_scales = cache.value_scales();
  l.scales_per_page = static_cast<long long>(s.layers) * s.page_len() * s.kv_heads;
  l.page_table = cache.device_page_table();
  l.pages_per_slot = s.pages_per_slot();
  l.page_len = s.page_len();
  l.per_page = static_cast<long long>(s.per_page());
  l.per_page_layer = static_cast<long long>(s.per_page_layer());
  l.layer = layer;
  l.ring = s.ring;
  l.kv_heads = s.kv_heads;
  l.head_dim = s.head_dim;
  return l;
}

}  // namespace voxrt::cuda
