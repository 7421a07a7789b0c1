// Cache slots handed out to sessions from one KvCache, so that one pass can take rows of every
// session (RowRef::slot). When every slot is taken the cache grows: a cache of twice the slots is
// allocated and the old one copied into it (the layout is slot-major, so the old cache is a prefix
// of the new). Growing reallocates, so it happens between passes, under the lock that serialises
// them; whoever holds a reference to cache() keeps a valid one. A released slot is not cleared: a
// query never reads a ring entry its own session has not written (positions start at 0 and a
// window never reaches before them).
// Paged pools (docs/scheduler.md, step 5) replace it: then a session's memory follows its length.
#pragma once

#include <vector>

#include "runtime/backend.h"

namespace voxrt {

class KvSlotPool {
 public:
  // shape.slots is the initial slot count (at least 1). A pool that does not grow holds exactly
  // those slots: its memory is known up front and never grows.
  KvSlotPool(Backend& backend, const KvCacheShape& shape, bool grows = true);

  // A free slot, growing the cache when there is none (a pool that does not grow throws voxrt::Error).
  int acquire();
  void release(int slot);
  bool full() const { return free_.empty() && !grows_; }

  KvCache& cache() { return cache_; }
  const KvCache& cache() const { return cache_; }
  int in_use() const { return in_use_; }
  int slots() const { return cache_.shape().slots; }

 private:
  void grow();

  Backend& backend_;
  KvCache cache_;
  std::vector<int> free_;  // free slots, the lowest last
  int in_use_ = 0;
  bool grows_;
};

}  // namespace voxrt
