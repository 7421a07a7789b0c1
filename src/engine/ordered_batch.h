// Runs jobs 0..n-1 on a few worker threads and hands their results to the caller in job order as
// soon as they can be (Engine::transcribe_each): the workers keep at most `window` jobs ahead of the
// next result to hand over, so results waiting for an earlier slow job stay bounded.
#pragma once

#include <cstddef>
#include <functional>

#include "voxrt/voxrt.h"

namespace voxrt {

// work(i) must not throw (it reports failure in its BatchItem). An exception from deliver stops
// the run: no new job starts, the running ones finish, and it is rethrown.
void run_ordered_batch(size_t n, int workers, size_t window, const std::function<BatchItem(size_t)>& work,
                       const std::function<void(BatchItem&)>& deliver);

}  // namespace voxrt
