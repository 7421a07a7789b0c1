#include "runtime/kv_pool.h"

#include <algorithm>
#include <functional>
#include <limits>
#include <string>

#include "common/error.h"

namespace voxrt {

KvPool::KvPool(Backend& backend, const KvCacheShape& shape, bool grows) : backend_(backend), grows_(grows) {
  check(shape.slots >= 1, "kv pool", "at least one slot expected");
  cache_ = KvCache(&backend, shape);
  for (int s = shape.slots - 1; s >= 0; --s) free_slots_.push_back(s);
}

int KvPool::pages_for(const KvCacheShape& s, int64_t positions) {
  if (positions <= 0 || positions >= s.ring) return s.pages_per_slot();
  return static_cast<int>((positions + s.page_len() - 1) / s.page_len());
}

bool KvPool::fits(int pages) const {
  if (!cache_.shape().paged()) return !free_slots_.empty();
  return cache_.unreserved_pages() >= pages;
}

void KvPool::grow_slots() {
  // Called with no free slot: the new ones, lowest last.
  const int old = cache_.shape().slots;
  cache_.grow(2 * old, cache_.shape().pages);
  for (int slot = 2 * old - 1; slot >= old; --slot) free_slots_.push_back(slot);
}

int KvPool::least_pages(int pages) const {
  const KvCacheShape& s = cache_.shape();
  if (fits(pages)) return this->pages();
  if (!s.paged()) return 2 * this->pages();
  return s.pages + (pages - std::max(0, cache_.unreserved_pages()));
}

int KvPool::grown_pages(int pages, size_t room) const {
  if (fits(pages)) return this->pages();
  const KvCacheShape& s = cache_.shape();
  if (!grows_ || !s.paged()) return grows_ ? this->pages() : -1;  // unpaged: slots double, pages with them
  const int least = least_pages(pages);
  int more = s.pages;
  while (more < least) more *= 2;
  // The next doubling would copy this storage into one twice its size, holding both, within the
  // room this growth leaves (room + the old storage, given back, - this one): where it could not,
  // this growth is the last, and takes what the room holds now, so that grown caches end near the
  // room rather than at the last doubling that fit (a half to a third of it).
  const size_t held = storage_bytes(s.pages);
  const bool next_fits = room > SIZE_MAX - held || 3 * storage_bytes(more) <= room + held;  // SIZE_MAX: no limit
  if (storage_bytes(more) <= room && next_fits) return more;
  const int most = static_cast<int>(std::min<size_t>(room / page_bytes(), static_cast<size_t>(std::numeric_limits<int>::max())));
  return most >= least ? most : -1;
}

int KvPool::acquire(int pages, size_t room) {
  if (!fits(pages)) {
    const KvCacheShape s = cache_.shape();  // a copy: growing replaces the cache's
    check(grows_, "kv pool",
          s.paged() ? "a session needs " + std::to_string(pages) + " cache pages and " +
                          std::to_string(std::max(0, cache_.unreserved_pages())) + " of " + std::to_string(s.pages) +
                          " are free"
                    : "all " + std::to_string(s.slots) + " slots are in use");
    if (s.paged()) {
      const int more = grown_pages(pages, room);
      check(more > 0, "kv pool",
            "a session needs " + std::to_string(pages) + " cache pages more than the " + std::to_string(s.pages) +
                " there are, and growing by them passes the memory it may take");
      cache_.grow(s.slots, more);
    } else {
      grow_slots();  // unpaged: each slot's pages come with it
    }
  }
  if (free_slots_.empty()) grow_slots();  // paged: page tables are cheap
  const int slot = free_slots_.back();
  check(cache_.reserve(slot, pages), "kv pool", "reservation failed");  // fits() said it would
  free_slots_.pop_back();
  ++in_use_;
  return slot;
}

void KvPool::release(int slot) {
  check(slot >= 0 && slot < cache_.shape().slots &&
            std::find(free_slots_.begin(), free_slots_.end(), slot) == free_slots_.end(),
        "kv pool", "releasing slot " + std::to_string(slot) + " that is not in use");
  cache_.unmap(slot);
  free_slots_.push_back(slot);
  // Lowest last, so that the slots in use stay packed at the front.
  std::sort(free_slots_.begin(), free_slots_.end(), std::greater<int>());
  --in_use_;
}

int KvPool::pages_in_use() const {
  if (!cache_.shape().paged()) return in_use_ * cache_.shape().pages_per_slot();
  return cache_.shape().pages - cache_.free_pages();
}

}  // namespace voxrt
