#include "runtime/cuda/device_weights.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <string>

#include "common/bf16.h"
#include "common/error.h"
#include "common/thread_team.h"
#include "runtime/cuda/cuda_check.h"

namespace voxrt::cuda {

DeviceWeight::~DeviceWeight() {
  if (!data) return;
  // A destructor cannot throw; an error here would be a sticky earlier one.
  make_current(device);
  cudaFree(data);
  if (scales) cudaFree(scales);
}

const DeviceWeight& device_weight(const Weight& w, const char* where) {
  check(!w.empty(), where, "empty weight");
  const auto* d = static_cast<const DeviceWeight*>(w.storage.get());
  check(d->magic == kWeightMagic, where, "weight was not uploaded by the CUDA backend");
  return *d;
}

DevVec vec_of(const Weight& w, const char* where) {
  const DeviceWeight& d = device_weight(w, where);
  check(!d.quantized(), where, "a quantized weight where bf16 or fp32 values were expected");
  return DevVec{d.data, d.bf16};
}

Weight WeightStore::upload(std::vector<float>&& values, int rows, int cols) {
  const size_t n = static_cast<size_t>(rows) * cols;
  check(rows >= 0 && cols >= 0 && values.size() == n, "cuda upload_weight",
        "expected " + std::to_string(n) + " values, got " + std::to_string(values.size()));
  Weight w = new_weight(rows, cols, cols > 1);
  auto& d = *static_cast<DeviceWeight*>(w.storage.get());
  if (n > 0 && !d.bf16) {
    VOXRT_CUDA_CHECK(
        cudaMemcpyAsync(d.data, values.data(), n * sizeof(float), cudaMemcpyHostToDevice, device_.stream()));
    memory_.sync();  // values is the caller's pageable memory
  } else if (n > 0) {
    // Rounded to bf16 on the host (all cores) on the way into the pinned chunks.
    memory_.upload_bf16_chunks(static_cast<uint16_t*>(d.data), n, [&](uint16_t* host, size_t off, size_t len) {
      float_to_bf16(values.data() + off, host, len);
    });
  }
  std::vector<float>().swap(values);  // the host copy is not needed any more
  return w;
}

Weight WeightStore::upload_bf16(std::vector<uint16_t>&& bits, int rows, int cols) {
  const size_t n = static_cast<size_t>(rows) * cols;
  check(cols > 1, "cuda upload_weight_bf16",
        "[" + std::to_string(rows) + ", " + std::to_string(cols) +
            "] is a vector: vectors (norm weights, biases) are stored fp32, through upload_weight");
  check(rows >= 0 && bits.size() == n, "cuda upload_weight_bf16",
        "expected a matrix of " + std::to_string(n) + " values, got " + std::to_string(bits.size()));
  Weight w = new_weight(rows, cols, true);
  memory_.upload_bf16_chunks(static_cast<uint16_t*>(static_cast<DeviceWeight*>(w.storage.get())->data), n,
                             [&](uint16_t* host, size_t off, size_t len) {
                               ThreadTeam::shared().parallel_for(len, size_t{1} << 20, [&](size_t i0, size_t i1) {
                                 std::memcpy(host + i0, bits.data() + off + i0, (i1 - i0) * 2);
                               });
                             });
  std::vector<uint16_t>().swap(bits);
  return w;
}

Weight WeightStore::upload_quantized(QuantizedMatrix&& m) {
  m.check_consistent("cuda upload_quantized");
  const std::string what = " for a " + format_name(m.format) + " weight [" + std::to_string(m.rows) + ", " +
                           std::to_string(m.cols) + "]";
  if (m.format.kind == QuantKind::Fp8) {
    // fp8 weights' products quantize their activations too (W8A8, quant/weight_format.h) and run on
    // the e4m3 tensor cores: refused, before anything is allocated, where the GPU or this build's
    // code for it has none, and for rows the kernels cannot read as bf16 rows of K / 2.
    check_fp8_weights_supported(device_.caps());
    check(fp8_products_available(), "fp8 weights",
          "this build's code for the GPU has no fp8 tensor-core instructions (a compute_80 build the driver "
          "compiled): build for the GPU's own architecture (cuda-release preset), or use 8w");
    check(m.cols % 16 == 0, "fp8 weights", "the CUDA products need K a multiple of 16" + what);
  }
  check(!recorder_.in_recording(), "cuda upload_weight", "not allowed inside a recording");
  device_.use();
  auto d = std::make_shared<DeviceWeight>();
  d->device = device_.device();
  d->format = m.format.kind == QuantKind::Int4 ? kGemvInt4 : m.format.kind == QuantKind::Int8 ? kGemvInt8 : kGemvFp8;
  d->group = m.format.group_size;
  // One allocation each, copied from the host as they are (the caller's pageable memory: synced).
  auto put = [&](void** dst, const void* src, size_t bytes) {
    if (bytes == 0) return;
    const cudaError_t e = cudaMalloc(dst, bytes);
    if (e != cudaSuccess) {
      *dst = nullptr;
      throw memory_.allocation_error(e, bytes, what);
    }
    VOXRT_CUDA_CHECK(cudaMemcpyAsync(*dst, src, bytes, cudaMemcpyHostToDevice, device_.stream()));
  };
  // The Weight, once the copies from the caller's memory are done.
  auto uploaded = [&] {
    memory_.sync();
    Weight w;
    w.storage = std::shared_ptr<void>(d, d.get());
    w.rows = m.rows;
    w.cols = m.cols;
    w.format = m.format;
    return w;
  };
  if (d->format == kGemvFp8) {
    // The codes as they are (row-major, the kernels read them as bf16 rows), and the scales as fp32
    // (bf16 values: exact), one a feature, as the epilogue multiplies by them.
    std::vector<float> scales(m.scales.size());
    for (size_t i = 0; i < scales.size(); ++i) scales[i] = bf16_to_float(m.scales[i]);
    put(&d->data, m.packed.data(), m.packed.size());
    put(&d->scales, scales.data(), scales.size() * sizeof(float));
    return uploaded();
  }
  // Repacked in the kernels' layout (quant_layout.h), a tile of 16 features at a time (tiles write
  // disjoint bytes; a byte of 4w holds two features' nibbles).
  const int fmt = d->format, K = m.cols, groups = qlayout::groups_of(K, m.format.group_size);
  std::vector<uint8_t> values(qlayout::values_bytes(fmt, m.rows, K), 0);
  std::vector<uint16_t> blocks(qlayout::scale_block_bytes(m.rows, K, m.format.group_size) / 2, 0);
  ThreadTeam::shared().parallel_for(static_cast<size_t>(qlayout::tiles_of(m.rows)), 1, [&](size_t t0, size_t t1) {
    for (int f = static_cast<int>(t0) * qlayout::kTileRows;
         f < std::min<int>(m.rows, static_cast<int>(t1) * qlayout::kTileRows); ++f) {
      for (int k = 0; k < K; ++k) {
        const qlayout::Place at = qlayout::value_place(fmt, f, k, K);
        if (fmt == kGemvInt4) {
          const uint8_t q = (m.packed[static_cast<size_t>(f) * (K / 2) + k / 2] >> (4 * (k % 2))) & 0xf;
          values[at.byte] |= static_cast<uint8_t>(q << at.shift);
        } else {
          values[at.byte] = m.packed[static_cast<size_t>(f) * K + k];
        }
      }
      for (int gi = 0; gi < groups; ++gi) {
        const size_t from = static_cast<size_t>(f) * groups + gi, to = qlayout::scale_index(f, gi, groups);
        blocks[to] = m.scales[from];
        blocks[to + 1] = m.biases.empty() ? 0 : m.biases[from];
      }
    }
  });
  put(&d->data, values.data(), values.size());
  put(&d->scales, blocks.data(), blocks.size() * 2);
  return uploaded();
}

Weight WeightStore::new_weight(int rows, int cols, bool bf16) {
  check(!recorder_.in_recording(), "cuda upload_weight", "not allowed inside a recording");
  device_.use();
  const size_t n = static_cast<size_t>(rows) * cols;
  auto d = std::make_shared<DeviceWeight>();
  d->bf16 = bf16;
  d->device = device_.device();
  const size_t bytes = std::max<size_t>(256, n * (bf16 ? 2 : 4));
  const cudaError_t e = cudaMalloc(&d->data, bytes);
  if (e != cudaSuccess) {
    d->data = nullptr;
    throw memory_.allocation_error(e, bytes,
                                   " for a weight [" + std::to_string(rows) + ", " + std::to_string(cols) + "]");
  }
  Weight w;
  w.storage = std::shared_ptr<void>(d, d.get());
  w.rows = rows;
  w.cols = cols;
  return w;
}

}  // namespace voxrt::cuda
