// The K/V cache an attention run reads: random entries for every ring entry of every slot, laid
// out as the backend's KvCache lays out one layer (pages of page_len entries, a slot's pages
// interleaved with the other slots' so that none is contiguous), in the run's element type, and
// data_copies() copies of it on the device.
#pragma once

#include <cstdint>
#include <vector>

#include "bench/kernels/cuda/device_memory.h"
#include "bench/kernels/cuda/kernel_runs.h"
#include "bench/kernels/kernel_args.h"
#include "bench/kernels/random_data.h"

namespace voxrt::bench {

struct CacheShape {
  int slots = 0, ring = 0, kv_heads = 0, head_dim = 0, page_len = 0;
  int pages_per_slot() const { return (ring + page_len - 1) / page_len; }
  size_t entry_width() const { return static_cast<size_t>(kv_heads) * head_dim; }
  size_t entries() const { return static_cast<size_t>(slots) * ring; }
};

class AttentionCache {
 public:
  // Random K and V for every entry (values as the cache holds them: bf16-rounded, fp8 with their
  // scales, or fp32), uploaded in copies.
  AttentionCache(const KernelArgs& a, const Gpu& gpu, const CacheShape& shape, RandomData& random);
  // What the cache holds, as floats, [slot][ring][kv_heads * head_dim]: the reference's K and V.
  const std::vector<float>& keys() const { return keys_; }
  const std::vector<float>& values() const { return values_; }
  // The launch's layout of copy `copy`.
  cuda::KvLayout layout(int copy) const;
  int copies() const { return copies_; }
  size_t copy_bytes() const { return copy_bytes_; }

 private:
  // Where entry e of slot s lies in the paged storage, in elements.
  size_t storage_entry(int slot, int e) const;
  template <typename T>
  void place(std::vector<uint8_t>& storage, size_t at, const std::vector<T>& entries, size_t width) const;

  CacheShape shape_;
  int elem_bytes_ = 2;
  std::vector<float> keys_, values_;
  std::vector<int> page_table_;
  size_t elements_ = 0, scales_ = 0;  // one copy's elements of K (and of V), and fp8 scales of K (and of V)
  size_t copy_bytes_ = 0;
  int copies_ = 1;
  DeviceBuffer storage_, page_table_device_;
};

}  // namespace voxrt::bench
