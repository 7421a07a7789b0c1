// One job: weights on the CUDA device, in the format the backend stores them. Matrices (cols > 1)
// are bf16 (rounded to nearest even on the host, or a BF16 checkpoint's own bits), cudaMalloc'ed
// once; vectors (cols == 1: norm weights, biases) stay fp32. Weight::storage points to a host-side
// DeviceWeight that records the format and frees the device memory with the last reference. How a
// weight is stored is decided here; which kernels then compute its products is decided from that
// format in one place, ProductDispatch::route (product_dispatch.h), where a new format (int4, int8,
// fp8 weights) adds its kernels.
#pragma once

#include <cstdint>
#include <vector>

#include "runtime/backend.h"
#include "runtime/cuda/cuda_kernels.h"
#include "runtime/cuda/device_memory.h"
#include "runtime/cuda/device_stream.h"
#include "runtime/cuda/recorder.h"

namespace voxrt::cuda {

constexpr uint32_t kWeightMagic = 0x56584355;  // "VXCU": marks storage made by this backend

// What a Weight's storage points to for this backend.
struct DeviceWeight {
  uint32_t magic = kWeightMagic;
  void* data = nullptr;  // the values: bf16 or fp32, or a quantized matrix's packed values
  bool bf16 = false;  // the storage format: bf16 (a matrix) or fp32 (a vector); false when quantized
  // A quantized matrix (quant/weight_format.h): its format (GemvWeightFormat), the packed values in
  // data and the scales and biases in scales, both as quant_layout.h lays them out.
  int format = kGemvBf16;
  int group = 0;
  void* scales = nullptr;
  bool quantized() const { return format != kGemvBf16; }
  int device = 0;     // where data lives: freed with that device current (a weight may be dropped on any thread)
  DeviceWeight() = default;
  DeviceWeight(const DeviceWeight&) = delete;
  DeviceWeight& operator=(const DeviceWeight&) = delete;
  ~DeviceWeight();
};

// w's device storage; throws when w is empty or was not uploaded by the CUDA backend.
const DeviceWeight& device_weight(const Weight& w, const char* where);
// A vector weight (norm weight, bias, embedding table) as the kernels take it.
DevVec vec_of(const Weight& w, const char* where);

class WeightStore {
 public:
  WeightStore(const DeviceStream& device, DeviceMemory& memory, const Recorder& recorder)
      : device_(device), memory_(memory), recorder_(recorder) {}

  // Backend::upload_weight and upload_weight_bf16: the host values are released once on the device.
  Weight upload(std::vector<float>&& values, int rows, int cols);
  Weight upload_bf16(std::vector<uint16_t>&& bits, int rows, int cols);
  // Backend::upload_quantized: repacked in the kernels' layout (quant_layout.h).
  Weight upload_quantized(QuantizedMatrix&& m);

 private:
  // Device memory for a weight [rows, cols], bf16 or fp32, owned by the returned Weight.
  Weight new_weight(int rows, int cols, bool bf16);

  const DeviceStream& device_;
  DeviceMemory& memory_;
  const Recorder& recorder_;
};

}  // namespace voxrt::cuda
