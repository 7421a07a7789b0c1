// One job: a K/V cache and the rows that read or write it, as the kernels see them. Shared by the
// ops that store into a cache (op_table.h) and attention (attention_dispatch.h), which both hand
// the kernels the cache's layout and host RowRefs that the kernels read as DevRowRefs unchecked:
// the checks that make that safe are made here, once for both.
#pragma once

#include <span>

#include "runtime/backend.h"
#include "runtime/cuda/cuda_kernels.h"
#include "runtime/kv_cache.h"

namespace voxrt::cuda {

// Rows' slots and positions, and that each row's own ring entry has a page (the kernels index
// the page table without checking); with a window, also that no row attends more keys
// (min(pos + 1, window)) than the ring holds: more would read overwritten entries, and the
// attention kernel's ring index assumes at most one wrap per chunk.
void check_rows(const KvCache& cache, std::span<const RowRef> rows, const char* where, int window = 0);

// The cache's storage for one layer, as the kernels take it.
KvLayout kv_layout(const KvCache& cache, int layer);

}  // namespace voxrt::cuda
