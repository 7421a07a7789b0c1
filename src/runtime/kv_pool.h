// The sessions' caches of one kind (encoder or decoder) in one paged KvCache (docs/scheduler.md,
// step 5): a session takes a slot (its page table) and reserves the pages of the longest it may
// run, so that admission is arithmetic over free pages and no session ever waits for a page, or
// fails for want of one, while it stays within what it reserved. Its pages are mapped as its
// positions reach them (KvCache::map, from StreamState), so its memory follows its length.
//
// A pool that grows doubles its pages (a new storage, the old copied into it, between passes under
// the lock that serialises them) when a reservation does not fit, within the memory its caller says
// may be taken (less than doubling near that ceiling, and never past it: the device's memory, less
// what the passes need, is what a grown cache may hold); one that does not grow refuses.
// Slots (page tables, a few bytes each) always grow. Whoever holds a reference to cache() keeps a
// valid one. A released page is not cleared: a query never reads a ring entry its own session has
// not written (positions start at 0 and a window never reaches before them).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "runtime/backend.h"
#include "runtime/kv_cache.h"

namespace voxrt {

class KvPool {
 public:
  // shape: the slots and pages to start with (shape.pages >= 1: paged; 0: unpaged, a whole ring a
  // slot, and shape.slots is then also the most sessions a pool that does not grow holds).
  KvPool(Backend& backend, const KvCacheShape& shape, bool grows);

  // The pages a session of `positions` positions (at most; 0: no limit) needs: its ring's pages up
  // to those positions, the whole ring when they pass it.
  static int pages_for(const KvCacheShape& s, int64_t positions);
  int pages_for(int64_t positions) const { return pages_for(cache_.shape(), positions); }
  // Whether a session reserving `pages` would be taken now (without growing).
  bool fits(int pages) const;
  bool grows() const { return grows_; }
  // The fewest pages the pool must have for a session reserving `pages` to fit: pages() when it
  // fits now (paged pools; an unpaged one doubles its slots).
  int least_pages(int pages) const;
  // The page count this pool would grow to so that a session reserving `pages` fits, taking at
  // most `room` bytes of new storage (the old is copied into it, so both are held at once):
  // doubling, or, where doubling would pass `room` or the next doubling could not be copied, all
  // that `room` holds. pages() when they fit now; -1 when even the least growth that takes them
  // passes `room` (or the pool does not grow).
  int grown_pages(int pages, size_t room) const;
  // The new storage the least growth that takes a session reserving `pages` allocates (0: it fits now).
  size_t least_growth_bytes(int pages) const { return fits(pages) ? 0 : storage_bytes(least_pages(pages)); }
  // The bytes a storage of `pages` pages takes.
  size_t storage_bytes(int pages) const { return static_cast<size_t>(pages) * page_bytes(); }
  // A slot with `pages` reserved: grows when they do not fit (within `room` bytes of new storage),
  // or throws voxrt::Error if it may not.
  int acquire(int pages, size_t room = SIZE_MAX);
  void release(int slot);  // its pages back to the pool

  KvCache& cache() { return cache_; }
  const KvCache& cache() const { return cache_; }
  int in_use() const { return in_use_; }
  int slots() const { return cache_.shape().slots; }
  int pages() const { return cache_.shape().page_count(); }
  int pages_in_use() const;
  // The bytes of one page: K and V, and an fp8 cache's scales (a float per entry and kv head).
  static size_t page_bytes(const KvCacheShape& s, size_t element_bytes) {
    const size_t scales = element_bytes == 1 ? static_cast<size_t>(s.layers) * s.page_len() * s.kv_heads * sizeof(float) : 0;
    return 2 * (s.per_page() * element_bytes + scales);
  }
  size_t page_bytes() const { return page_bytes(cache_.shape(), cache_.element_bytes()); }

 private:
  void grow_slots();  // doubles the slots (and, unpaged, their pages)

  Backend& backend_;
  KvCache cache_;
  std::vector<int> free_slots_;  // the lowest last
  int in_use_ = 0;
  bool grows_;
};

}  // namespace voxrt
