// Runs jobs 0..n-1 on a few worker threads and hands their results to the caller in job order as
// soon as they can be (Engine::transcribe_each): the workers keep at most `window` jobs ahead of the
// next result to hand over, so results waiting for an earlier slow job stay bounded.
#pragma once

#include <cstddef>
#include <filesystem>
#include <functional>
#include <span>

#include "voxrt/voxrt.h"

namespace voxrt {

// work(i) must not throw (it reports failure in its BatchItem). An exception from deliver stops
// the run: no new job starts, the running ones finish, and it is rethrown.
void run_ordered_batch(size_t n, int workers, size_t window, const std::function<BatchItem(size_t)>& work,
                       const std::function<void(BatchItem&)>& deliver);

// Engine::transcribe_each's body: each file through transcribe_one (an exception from it becomes
// that file's error), `workers` at a time, results handed over in input order.
void transcribe_files_in_order(std::span<const std::filesystem::path> files, int workers,
                               const std::function<Transcript(const std::filesystem::path&)>& transcribe_one,
                               const std::function<void(BatchItem&)>& on_result);

}  // namespace voxrt
