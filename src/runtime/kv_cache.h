// The key/value caches of many sessions in backend memory: their shape (KvCacheShape), and the
// paged storage with its page tables, free list and per-slot reservations (KvCache). The backend's
// ops read and write them (runtime/backend.h); the engine maps and reserves their pages between
// passes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace voxrt {

class Backend;

// Sliding-window key/value caches for many sessions. Each session (slot) has a ring of `ring`
// entries per layer: a row at absolute position p lives in ring entry p % ring, and a query at p
// attends to positions max(0, p - window + 1) .. p, so ring >= window + (rows written per step) - 1.
//
// The rings are paged (docs/scheduler.md, step 5): a page holds page_len() consecutive ring entries
// of one slot for every layer, [layer][page_len][kv_heads * head_dim], and a slot's page table says
// which page holds each page_len() entries of its ring. Unpaged (pages == 0) every slot owns the
// pages_per_slot() pages after the previous slot's, mapped for good: with page_positions 0 that is
// one page of the whole ring, the layout [slot][layer][ring][kv_heads * head_dim]. Paged, the
// storage holds `pages` pages and a slot's pages are mapped as its positions reach them
// (KvCache::map), so a session's memory follows its length.
struct KvCacheShape {
  int slots = 1, layers = 0, ring = 0, kv_heads = 0, head_dim = 0;
  int page_positions = 0;  // ring entries a page holds (a divisor of ring); 0: the whole ring
  int pages = 0;           // pages of storage shared by the slots; 0: unpaged (pages_per_slot() a slot)
  bool paged() const { return pages > 0; }
  int page_len() const { return page_positions > 0 ? page_positions : ring; }
  int pages_per_slot() const { return page_len() > 0 ? (ring + page_len() - 1) / page_len() : 0; }
  int page_count() const { return paged() ? pages : slots * pages_per_slot(); }
  size_t row_elements() const { return static_cast<size_t>(kv_heads) * head_dim; }
  size_t per_page_layer() const { return static_cast<size_t>(page_len()) * row_elements(); }
  size_t per_page() const { return per_page_layer() * layers; }
  size_t per_slot() const { return per_page() * pages_per_slot(); }  // one slot's whole ring
  size_t elements() const { return per_page() * page_count(); }
};

// A KvCacheShape's K and V in backend memory, stored as the backend chooses
// (Backend::kv_element_bytes: fp32, or bf16 on the GPU, as the reference's bf16 cache stores them),
// and its page tables (host and backend copies). Only the backend's own ops read or write K and V;
// upload_kv/download_kv move the whole storage as floats.
//
// Paged caches hand out pages from a free list. A slot may reserve pages (reserve()): those are
// kept for it, so that mapping them never fails; a slot mapping beyond its reservation takes a page
// only when one is free beyond every slot's outstanding reservation. Mapping and reserving happen
// between passes (the table's backend copy is uploaded as it changes), never inside a recording.
class KvCache {
 public:
  KvCache() = default;
  KvCache(Backend* backend, const KvCacheShape& shape);
  ~KvCache();
  KvCache(KvCache&&) noexcept;
  KvCache& operator=(KvCache&&) noexcept;
  KvCache(const KvCache&) = delete;
  KvCache& operator=(const KvCache&) = delete;
  const KvCacheShape& shape() const { return shape_; }
  size_t element_bytes() const { return element_bytes_; }
  void* key_data() const { return k_; }
  void* value_data() const { return v_; }
  // The fp32 arrays of a cache stored as fp32 (throws otherwise).
  float* keys() const;
  float* values() const;
  // A cache of 1-byte (fp8) elements also holds a float scale per entry and kv head, laid out as
  // the elements ([page][layer][page_len][kv_heads]); null otherwise.
  float* key_scales() const { return k_scales_; }
  float* value_scales() const { return v_scales_; }
  size_t scale_count() const;  // per array

  // The page table: slot s's ring entry e lives in page page_of(s, e) at entry e % page_len() (-1:
  // not mapped). device_page_table() is the same [slots][pages_per_slot] int32 table in backend memory.
  int page_of(int slot, int64_t entry) const {
    return table_[static_cast<size_t>(slot) * shape_.pages_per_slot() + static_cast<size_t>(entry / shape_.page_len())];
  }
  const int32_t* device_page_table() const { return device_table_; }
  // The element offset of slot's ring entry `entry` of `layer` (its page must be mapped).
  size_t offset(int slot, int layer, int64_t entry) const {
    return static_cast<size_t>(page_of(slot, entry)) * shape_.per_page() + static_cast<size_t>(layer) * shape_.per_page_layer() +
           static_cast<size_t>(entry % shape_.page_len()) * shape_.row_elements();
  }
  // The pages a slot holds now (its ring's pages in ring order; unmapped ones left out).
  std::vector<int> pages_of(int slot) const;

  // Paged caches (no-ops, or always true, when unpaged):
  // Maps pages for slot's ring entries of positions [first, first + count): throws voxrt::Error
  // naming the slot when a page is needed and none may be taken.
  void map(int slot, int64_t first, int64_t count);
  // Keeps `pages` pages for slot (more than it holds already), or gives back what it holds beyond
  // them. False, and nothing changed, when the free pages do not cover it.
  bool reserve(int slot, int pages);
  void unmap(int slot);  // its pages back to the free list, its reservation dropped
  int free_pages() const { return static_cast<int>(free_.size()); }
  int unreserved_pages() const;  // free pages no slot has reserved
  int mapped_pages(int slot) const;
  // A cache of more slots and pages holding this one's contents, tables and reservations (the
  // storage is page-major, so the old pages are a prefix of the new).
  void grow(int slots, int pages);

 private:
  void init_tables();
  void upload_table(int first_slot, int slots);
  void release_storage();

  Backend* backend_ = nullptr;
  KvCacheShape shape_;
  size_t element_bytes_ = 4;
  float* k_ = nullptr;  // allocated as floats; holds element_bytes_-sized elements
  float* v_ = nullptr;
  float* k_scales_ = nullptr;  // fp8 only
  float* v_scales_ = nullptr;
  std::vector<int32_t> table_;       // [slots][pages_per_slot], -1 unmapped
  int32_t* device_table_ = nullptr;  // backend memory, allocated as floats (4 bytes each)
  std::vector<int> free_;            // free pages, the lowest last
  std::vector<int> reserved_, mapped_;  // per slot
  int64_t outstanding_ = 0;          // sum over slots of max(0, reserved - mapped)
};

}  // namespace voxrt
