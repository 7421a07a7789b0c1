// One job: the CUDA backend's ops that have no choice of kernels to make (norms, RoPE, the
// elementwise ops, K/V stores and key shifts, embedding and row gathers, add_at, argmax). Each checks its
// shapes, sends the host data it takes (RowRefs, token ids, scale row indices, inv_freq) through
// one upload_args transfer (or the recording's arena), mixes its launch into the recording's
// signature and launches its one kernel. The ops with a choice live apart: the products in
// product_dispatch.h, attention in attention_dispatch.h.
#pragma once

#include <cstdint>
#include <span>

#include "runtime/backend.h"
#include "runtime/cuda/device_memory.h"
#include "runtime/cuda/device_stream.h"
#include "runtime/cuda/op_repeat.h"
#include "runtime/cuda/recorder.h"
#include "runtime/kv_cache.h"

namespace voxrt::cuda {

class OpTable {
 public:
  OpTable(const DeviceStream& device, DeviceMemory& memory, Recorder& recorder, const OpRepeat& repeat)
      : device_(device), memory_(memory), recorder_(recorder), repeat_(repeat) {}
  ~OpTable();
  OpTable(const OpTable&) = delete;
  OpTable& operator=(const OpTable&) = delete;

  // The Backend ops of the same names.
  void rms_norm(Mat x, const Weight& w, float eps, Mat y);
  void rms_norm_scaled(Mat x, const Weight& w, float eps, Mat y, Mat scales, std::span<const int> scale_row);
  void scale_rows(Mat x, Mat scales, std::span<const int> scale_row);
  void gelu(Mat x);
  void silu_mul(Mat gate, Mat up);
  void add(Mat y, Mat x);
  void rope(Mat x, int n_heads, int head_dim, std::span<const RowRef> rows, std::span<const float> inv_freq);
  void store_kv(KvCache& cache, int layer, Mat k, Mat v, std::span<const RowRef> rows);
  // upload_kv and download_kv of bf16 and fp8 caches (the backend's default takes fp32 ones).
  void upload_kv(KvCache& cache, const float* keys, const float* values);
  void download_kv(const KvCache& cache, float* keys, float* values);
  void shift_cached_keys(KvCache& cache, int slot, int64_t shift, std::span<const float> inv_freq);
  void rope_store_kv(Mat q, Mat k, Mat v, int n_heads, std::span<const RowRef> rows, std::span<const float> inv_freq,
                     KvCache& cache, int layer);
  void embed(const Weight& table, std::span<const int32_t> ids, Mat y);
  void gather_rows(Mat x, std::span<const int32_t> rows, Mat y);
  void add_at(Mat x, std::span<const MatEntry> entries);
  void argmax(Mat x, std::span<int32_t> ids, std::span<float> margins);

 private:
  const DeviceStream& device_;
  DeviceMemory& memory_;
  Recorder& recorder_;
  OpRepeat repeat_;  // VOXRT_CUDA_REPEAT (op_repeat.h): launches per operation kind, for measurements
  Scratch results_;  // argmax's ids and margins on the device
};

}  // namespace voxrt::cuda
