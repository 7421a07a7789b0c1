#include "bench/kernels/cuda/attention_cache.h"

#include <cstring>

namespace voxrt::bench {

size_t AttentionCache::storage_entry(int slot, int e) const {
  const int page = page_table_[static_cast<size_t>(slot) * shape_.pages_per_slot() + e / shape_.page_len];
  return (static_cast<size_t>(page) * shape_.page_len + e % shape_.page_len) * shape_.entry_width();
}

// entries [slot][ring][width] of T into storage at byte `at`, each entry where the paging puts it
// (width: elements an entry; kv_heads for the fp8 scales).
template <typename T>
void AttentionCache::place(std::vector<uint8_t>& storage, size_t at, const std::vector<T>& entries, size_t width) const {
  const size_t per_element = shape_.entry_width() / width;  // storage_entry counts elements of K
  for (int s = 0; s < shape_.slots; ++s)
    for (int e = 0; e < shape_.ring; ++e) {
      const T* src = entries.data() + (static_cast<size_t>(s) * shape_.ring + e) * width;
      std::memcpy(storage.data() + at + storage_entry(s, e) / per_element * sizeof(T), src, width * sizeof(T));
    }
}

AttentionCache::AttentionCache(const KernelArgs& a, const Gpu& gpu, const CacheShape& shape, RandomData& random)
    : shape_(shape), elem_bytes_(a.cache == "fp8" ? 1 : a.cache == "bf16" ? 2 : 4) {
  const int pages_per_slot = shape_.pages_per_slot(), pages = shape_.slots * pages_per_slot;
  page_table_.resize(static_cast<size_t>(pages));
  for (int s = 0; s < shape_.slots; ++s)
    for (int p = 0; p < pages_per_slot; ++p) page_table_[static_cast<size_t>(s) * pages_per_slot + p] = p * shape_.slots + s;
  elements_ = static_cast<size_t>(pages) * shape_.page_len * shape_.entry_width();
  scales_ = elem_bytes_ == 1 ? static_cast<size_t>(pages) * shape_.page_len * shape_.kv_heads : 0;
  // One copy: K's elements, V's, then (fp8) K's scales and V's, each part 256-byte aligned.
  const size_t part = copy_stride(elements_ * elem_bytes_), scale_part = copy_stride(scales_ * sizeof(float));
  copy_bytes_ = 2 * part + 2 * scale_part;
  std::vector<uint8_t> storage(copy_bytes_);
  const size_t n = shape_.entries() * shape_.entry_width();
  size_t at = 0;
  for (std::vector<float>* held : {&keys_, &values_}) {
    if (elem_bytes_ == 1) {
      const Fp8Heads q = quantize_fp8_heads(random.uniform(n), shape_.head_dim);
      *held = q.values;
      place(storage, at, q.codes, shape_.entry_width());
      place(storage, 2 * part + (held == &keys_ ? 0 : scale_part), q.scales, shape_.kv_heads);
    } else if (elem_bytes_ == 2) {
      *held = random.uniform_bf16(n);
      place(storage, at, to_bf16_bits(*held), shape_.entry_width());
    } else {
      *held = random.uniform(n);
      place(storage, at, *held, shape_.entry_width());
    }
    at += part;
  }
  copies_ = data_copies(a, gpu, copy_bytes_);
  storage_ = upload_copies(storage, copies_, copy_bytes_, "the K/V cache");
  page_table_device_ = upload(page_table_, "the page table");
}

cuda::KvLayout AttentionCache::layout(int copy) const {
  const size_t base = static_cast<size_t>(copy) * copy_bytes_;
  const size_t part = copy_stride(elements_ * elem_bytes_), scale_part = copy_stride(scales_ * sizeof(float));
  cuda::KvLayout l;
  l.keys = storage_.get(base);
  l.values = storage_.get(base + part);
  l.bf16 = elem_bytes_ == 2;
  l.fp8 = elem_bytes_ == 1;
  if (l.fp8) {
    l.key_scales = storage_.get<float>(base + 2 * part);
    l.value_scales = storage_.get<float>(base + 2 * part + scale_part);
  }
  l.scales_per_page = static_cast<long long>(shape_.page_len) * shape_.kv_heads;  // one layer
  l.page_table = page_table_device_.get<const int>();
  l.pages_per_slot = shape_.pages_per_slot();
  l.page_len = shape_.page_len;
  l.per_page = static_cast<long long>(shape_.page_len) * shape_.entry_width();
  l.per_page_layer = l.per_page;
  l.layer = 0;
  l.ring = shape_.ring;
  l.kv_heads = shape_.kv_heads;
  l.head_dim = shape_.head_dim;
  return l;
}

}  // namespace voxrt::bench
