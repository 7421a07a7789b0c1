// The CUDA backend: every Backend op on one GPU, all work enqueued on one stream owned by the
// backend. The class holds memory management and dispatch; the kernels live in kernels_*.cu by
// concern (cuda_kernels.h lists them). This file is C++20 host code (backend.h needs <span>), so it
// is a .cpp compiled by the host compiler, not a .cu.
//
// Storage formats:
//  - Activations (Buffer): fp32 device memory from a stream-ordered pool owned by the backend
//    (cudaMallocFromPoolAsync / cudaFreeAsync): plain cudaMalloc/cudaFree would synchronise the
//    device on every free, the pool reuses memory in stream order without synchronising. The pool
//    keeps freed memory cached (its high-water mark).
//  - K/V caches: the same pool, stored bf16 as in the reference's bf16 model (K and V are rounded as
//    they are stored; attention computes in fp32): half the memory (0.87 GB less at a full decoder
//    window). Not faster: the attention kernels wait on round trips, not bytes (bench/README.md).
//    VOXRT_CUDA_KV=fp32 keeps them fp32 (for measurements); fp8 (EngineOptions::kv_cache) stores
//    e4m3 with a float scale per entry and head (kernels_kv_fp8.cu), half the bytes.
//  - Weight matrices (cols > 1): bf16 (round to nearest even on the host, or a BF16 checkpoint's
//    own bits), cudaMalloc'ed once. Vectors (cols == 1: norm weights, biases) stay fp32.
//    Weight::storage points to a host-side DeviceWeight that records the format and frees the
//    device memory with the last reference.
//
// linear: y = x W^T with x rounded to bf16 and fp32 accumulation, by the GEMV kernels (tensor
// cores: kernels_gemv_mma.cu, 32 rows per launch, long rows split across blocks with a fixed-order
// sum; or kernels_gemv.cu) when K % 8 == 0, or from CudaOptions::gemm_min_rows rows on by the tiled
// GEMM (kernels_gemm_launch.cu: wgmma on Hopper, else mma.sync) that computes the same bits (the
// products' order, tensor_core.cuh), which keeps every row's result independent of the batch;
// otherwise x is rounded into a bf16 scratch copy and cublasGemmEx (bf16 A and B, fp32 C,
// CUBLAS_COMPUTE_32F) runs with a small bias kernel.
// CudaOptions::library_products (VOXRT_CUDA_GEMV_MAX_ROWS=0) sends everything to cuBLAS (for
// measurements); runtime/cuda_options.h lists the backend's other switches. linears() runs a
// layer's q, k and v in one GEMV launch and gated_linear() the SwiGLU gate and up products with
// the silu product fused.
//
// Host data an op needs (RowRefs, token ids, scale row indices, inv_freq) goes through a pinned
// staging buffer and one cudaMemcpyAsync into a device argument buffer; the only device -> host
// transfers are download() and argmax's results. Not thread-safe: one thread drives a backend.
//
// Steps (run_step) become CUDA graphs: step_recorder.h. Ops mix what they launch into the step's
// signature (steps_->recorded) and take host data from its arena (upload_args, upload).
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_profiler_api.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <limits>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/bf16.h"
#include "common/error.h"
#include "common/thread_team.h"
#include "runtime/backend.h"
#include "runtime/kv_cache.h"
#include "runtime/cuda/cuda_check.h"
#include "runtime/cuda/cuda_device.h"
#include "runtime/cuda/cuda_kernels.h"
#include "runtime/cuda/op_repeat.h"
#include "runtime/cuda/step_recorder.h"

namespace voxrt {
namespace {

using cuda::DevRowRef;
using cuda::DevVec;

static_assert(sizeof(RowRef) == sizeof(DevRowRef) && offsetof(RowRef, slot) == offsetof(DevRowRef, slot) &&
                  offsetof(RowRef, pos) == offsetof(DevRowRef, pos),
              "RowRef and DevRowRef must have the same layout");

constexpr uint32_t kWeightMagic = 0x56584355;  // "VXCU": marks storage made by this backend

// Makes `device` the calling thread's current one unless it is already; false when CUDA refuses.
// Every backend call goes through it (the threads that call a backend, the scheduler's, sessions'
// and monitoring, may have used another device last), and so does freeing a weight.
bool make_current(int device) {
  int current = -1;
  return (cudaGetDevice(&current) == cudaSuccess && current == device) || cudaSetDevice(device) == cudaSuccess;
}

// What a Weight's storage points to for this backend.
struct DeviceWeight {
  uint32_t magic = kWeightMagic;
  void* data = nullptr;
  bool bf16 = false;
  int device = 0;  // where data lives: freed with that device current (a weight may be dropped on any thread)
  DeviceWeight() = default;
  DeviceWeight(const DeviceWeight&) = delete;
  DeviceWeight& operator=(const DeviceWeight&) = delete;
  ~DeviceWeight() {
    if (!data) return;
    // A destructor cannot throw; an error here would be a sticky earlier one.
    make_current(device);
    cudaFree(data);
  }
};

const DeviceWeight& device_weight(const Weight& w, const char* where) {
  check(!w.empty(), where, "empty weight");
  const auto* d = static_cast<const DeviceWeight*>(w.storage.get());
  check(d->magic == kWeightMagic, where, "weight was not uploaded by the CUDA backend");
  return *d;
}

DevVec vec_of(const Weight& w, const char* where) {
  const DeviceWeight& d = device_weight(w, where);
  return DevVec{d.data, d.bf16};
}

std::string bytes_str(size_t bytes) { return std::to_string(bytes) + " bytes"; }

// A grow-only device buffer from the backend's pool (stream-ordered, so growing while earlier
// kernels still read the old one is safe).
struct Scratch {
  void* ptr = nullptr;
  size_t bytes = 0;
};

class CudaBackend final : public Backend {
 public:
  CudaBackend(int device, const CudaOptions& options) : device_(device), options_(options) {
    try {
      init();
    } catch (...) {
      destroy();
      throw;
    }
  }

  ~CudaBackend() override { destroy(); }

  std::string name() const override { return "cuda"; }

  void synchronize() override {
    check(!steps_->in_step(), "cuda synchronize", "not allowed inside a step");
    sync_stream();
  }

  void run_step(const std::string& key, const std::function<void()>& step) override {
    use_device();
    steps_->run(key, step);
  }

  StepStats step_stats() const override { return steps_->stats(); }

  void profile_window(bool open) override {
    use_device();
    VOXRT_CUDA_CHECK(open ? cudaProfilerStart() : cudaProfilerStop());
  }

  // Copy: 2 GiB device to device, counting bytes read and written; matrix product: bf16 8192^3
  // through cuBLAS on non-zero data (zeros run faster than real data). Medians of 10 timed runs
  // after warm-up, with CUDA events.
  Ceilings measure_ceilings() override {
    use_device();
    Ceilings c;
    const size_t copy_bytes = size_t{2} << 30;
    void *a = nullptr, *b = nullptr;
    VOXRT_CUDA_CHECK(cudaMalloc(&a, copy_bytes));
    VOXRT_CUDA_CHECK(cudaMalloc(&b, copy_bytes));
    VOXRT_CUDA_CHECK(cudaMemsetAsync(a, 0x3c, copy_bytes, stream_));
    c.copy_gbps = 2.0 * copy_bytes / median_ms([&] {
      VOXRT_CUDA_CHECK(cudaMemcpyAsync(b, a, copy_bytes, cudaMemcpyDeviceToDevice, stream_));
    }) / 1e6;
    const int n = 8192;
    const size_t elems = static_cast<size_t>(n) * n;
    // a as fp32 random-ish values, converted to bf16 into b (operands) and used again for C.
    std::vector<float> host(static_cast<size_t>(n) * 64);
    for (size_t i = 0; i < host.size(); ++i) host[i] = static_cast<float>((i * 2654435761u) % 2000) / 1000.0f - 1.0f;
    for (int r = 0; r < n; r += 64)
      VOXRT_CUDA_CHECK(cudaMemcpyAsync(static_cast<float*>(a) + static_cast<size_t>(r) * n, host.data(),
                                       host.size() * sizeof(float), cudaMemcpyHostToDevice, stream_));
    auto* ab = static_cast<__nv_bfloat16*>(b);
    cuda::launch_f32_to_bf16(static_cast<const float*>(a), n, n, n, ab, launch_);
    auto* cf = static_cast<float*>(a);  // fp32 C (the first 256 MiB of a)
    const float alpha = 1.0f, beta = 0.0f;
    const double ms = median_ms([&] {
      VOXRT_CUBLAS_CHECK(cublasGemmEx(cublas_, CUBLAS_OP_T, CUBLAS_OP_N, n, n, n, &alpha, ab, CUDA_R_16BF, n,
                                      ab + elems, CUDA_R_16BF, n, &beta, cf, CUDA_R_32F, n, CUBLAS_COMPUTE_32F,
                                      CUBLAS_GEMM_DEFAULT));
    });
    c.matmul_tflops = 2.0 * n * n * static_cast<double>(n) / (ms * 1e-3) / 1e12;
    c.matmul_what = "cublasGemmEx 8192^3 bf16 (fp32 accumulate)";
    sync_stream();
    cudaFree(a);
    cudaFree(b);
    return c;
  }

  size_t weight_element_bytes() const override { return 2; }  // bf16
  size_t kv_element_bytes() const override { return kv_bytes_; }
  // Every product goes through the GEMV kernels (see linear()) unless cuBLAS was asked for or a
  // matrix's K is not a multiple of 8; the other ops treat rows one by one, and attention's chunks
  // depend on the model alone (plan_attention).
  bool batch_invariant() const override { return !library() && !cublas_weights_; }

  bool set_product_kernels(ProductKernels k) override {
    if (k == ProductKernels::Gemm && !tuning_.tensor_cores) return false;
    products_ = k;
    return true;
  }

  bool set_attention_kernels(AttentionKernels k) override {
    if (k == AttentionKernels::TensorCores && kv_element_bytes() == 4) return false;  // bf16 and fp8 caches only
    attention_kernels_ = k;
    return true;
  }

  // cudaMemGetInfo reads the calling thread's current device: a monitoring thread (/metrics) asks
  // every device's backend in turn, so each first makes its own device current.
  size_t memory_in_use() const override {
    size_t free = 0, total = 0;
    if (!device_memory(free, total)) return 0;
    return total - free;
  }

  size_t memory_available() const override {
    size_t free = 0, total = 0;
    if (!device_memory(free, total)) return 0;
    return free;
  }

  // ---- Memory ----

  float* allocate(size_t floats) override {
    if (steps_ && steps_->recording()) throw cuda::StepNeedsEager{};
    use_device();
    const size_t bytes = std::max<size_t>(256, floats * sizeof(float));
    void* p = nullptr;
    const cudaError_t e = cudaMallocFromPoolAsync(&p, bytes, pool_, stream_);
    if (e != cudaSuccess) throw allocation_error(e, floats * sizeof(float), "");
    return static_cast<float*>(p);
  }

  void release(float* p) override {
    if (!p) return;
    if (steps_ && steps_->recording()) {  // freed inside a step: after it
      steps_->defer_release(p);
      return;
    }
    make_current(device_);
    const cudaError_t e = cudaFreeAsync(p, stream_);
    if (e != cudaSuccess) std::fprintf(stderr, "voxrt: cuda: cudaFreeAsync failed: %s\n", cudaGetErrorString(e));
  }

  void upload(float* dst, const float* src, size_t n) override {
    if (n == 0) return;
    use_device();
    const size_t bytes = n * sizeof(float);
    if (steps_->recording()) {  // into the step's argument arena, then a device-side copy
      char* from = steps_->arena_put(src, bytes);
      if (steps_->recorded(3, dst, from, bytes)) return;
      VOXRT_CUDA_CHECK(cudaMemcpyAsync(dst, from, bytes, cudaMemcpyDeviceToDevice, stream_));
      return;
    }
    if (bytes <= kMaxStagedUpload) {
      // Through pinned memory: asynchronous, and the caller may free src as soon as we return.
      void* host = stage(bytes);
      std::memcpy(host, src, bytes);
      VOXRT_CUDA_CHECK(cudaMemcpyAsync(dst, host, bytes, cudaMemcpyHostToDevice, stream_));
    } else {
      VOXRT_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream_));
      sync_stream();  // src is pageable and the caller's: done with it before returning
    }
  }

  void download(float* dst, const float* src, size_t n) override {
    check(!steps_->in_step(), "cuda download", "not allowed inside a step");
    if (n == 0) return;
    use_device();
    VOXRT_CUDA_CHECK(cudaMemcpyAsync(dst, src, n * sizeof(float), cudaMemcpyDeviceToHost, stream_));
    sync_stream();
  }

  void copy(float* dst, const float* src, size_t n) override {
    if (n == 0 || dst == src) return;
    use_device();
    if (steps_->recorded(4, dst, src, n)) return;
    VOXRT_CUDA_CHECK(cudaMemcpyAsync(dst, src, n * sizeof(float), cudaMemcpyDeviceToDevice, stream_));
  }

  void fill(float* dst, float value, size_t n) override {
    use_device();
    if (steps_->recorded(5, dst, value, n)) return;
    cuda::launch_fill(dst, value, n, launch_);
  }

  Weight upload_weight(std::vector<float>&& values, int rows, int cols) override {
    const size_t n = static_cast<size_t>(rows) * cols;
    check(rows >= 0 && cols >= 0 && values.size() == n, "cuda upload_weight",
          "expected " + std::to_string(n) + " values, got " + std::to_string(values.size()));
    Weight w = new_weight(rows, cols, cols > 1);
    auto& d = *static_cast<DeviceWeight*>(w.storage.get());
    if (n > 0 && !d.bf16) {
      VOXRT_CUDA_CHECK(cudaMemcpyAsync(d.data, values.data(), n * sizeof(float), cudaMemcpyHostToDevice, stream_));
      sync_stream();  // values is the caller's pageable memory
    } else if (n > 0) {
      // Rounded to bf16 on the host (all cores) on the way into the pinned chunks.
      upload_bf16_chunks(static_cast<uint16_t*>(d.data), n, [&](uint16_t* host, size_t off, size_t len) {
        float_to_bf16(values.data() + off, host, len);
      });
    }
    std::vector<float>().swap(values);  // the host copy is not needed any more
    return w;
  }

  Weight upload_weight_bf16(std::vector<uint16_t>&& bits, int rows, int cols) override {
    const size_t n = static_cast<size_t>(rows) * cols;
    check(rows >= 0 && cols > 1 && bits.size() == n, "cuda upload_weight_bf16",
          "expected a matrix of " + std::to_string(n) + " values, got " + std::to_string(bits.size()));
    Weight w = new_weight(rows, cols, true);
    upload_bf16_chunks(static_cast<uint16_t*>(static_cast<DeviceWeight*>(w.storage.get())->data), n,
                       [&](uint16_t* host, size_t off, size_t len) {
                         ThreadTeam::shared().parallel_for(len, size_t{1} << 20, [&](size_t i0, size_t i1) {
                           std::memcpy(host + i0, bits.data() + off + i0, (i1 - i0) * 2);
                         });
                       });
    std::vector<uint16_t>().swap(bits);
    return w;
  }

  // ---- Ops ----

  void linear(Mat x, const Weight& w, const Weight* bias, Mat y, bool accumulate) override {
    const int M = x.rows, K = x.cols, N = w.rows;
    check_with(K == w.cols && y.rows == M && y.cols == N, "cuda linear", [&] {
      return "shape mismatch: x [" + std::to_string(M) + ", " + std::to_string(K) + "], W [" + std::to_string(w.rows) +
             ", " + std::to_string(w.cols) + "], y [" + std::to_string(y.rows) + ", " + std::to_string(y.cols) + "]";
    });
    if (M == 0 || N == 0) return;
    use_device();
    linear_impl(x.data, M, K, K, w, bias, y.data, N, accumulate, "cuda linear");
  }

  void linears(Mat x, std::span<const LinearOut> outs) override {
    if (!products_fused(x, outs)) Backend::linears(x, outs);
  }

  void gated_linear(Mat x, const Weight& w_gate, const Weight& w_up, Mat y, Mat up_scratch) override {
    if (!gated_fused(x, w_gate, w_up, y)) Backend::gated_linear(x, w_gate, w_up, y, up_scratch);
  }

  void rms_norm(Mat x, const Weight& w, float eps, Mat y) override {
    check(static_cast<size_t>(w.rows) * w.cols == static_cast<size_t>(x.cols) && y.rows == x.rows &&
              y.cols == x.cols,
          "cuda rms_norm", "shape mismatch");
    if (x.rows == 0) return;
    use_device();
    const DevVec wv = vec_of(w, "cuda rms_norm");
    if (steps_->recorded(10, x.data, x.rows, x.cols, wv.data, eps, y.data, repeat_[cuda::OpKind::Norm])) return;
    for (int i = 0; i < repeat_[cuda::OpKind::Norm]; ++i)
      cuda::launch_rms_norm(x.data, x.rows, x.cols, wv, eps, y.data, launch_);
  }

  void rms_norm_scaled(Mat x, const Weight& w, float eps, Mat y, Mat scales, std::span<const int> scale_row) override {
    check(static_cast<size_t>(w.rows) * w.cols == static_cast<size_t>(x.cols) && y.rows == x.rows &&
              y.cols == x.cols && scale_row.size() >= static_cast<size_t>(x.rows) && scales.cols >= x.cols,
          "cuda rms_norm_scaled", "shape mismatch");
    if (x.rows == 0) return;
    check_scale_rows(scale_row.first(x.rows), scales.rows, "cuda rms_norm_scaled");
    use_device();
    const DevVec wv = vec_of(w, "cuda rms_norm_scaled");
    const auto d = upload_args({{scale_row.data(), x.rows * sizeof(int)}});
    if (steps_->recorded(19, x.data, x.rows, x.cols, wv.data, eps, y.data, scales.data, scales.cols, d[0],
                         repeat_[cuda::OpKind::Norm]))
      return;
    for (int i = 0; i < repeat_[cuda::OpKind::Norm]; ++i)
      cuda::launch_rms_norm_scaled(x.data, x.rows, x.cols, wv, eps, y.data, scales.data, scales.cols,
                                   static_cast<const int*>(d[0]), launch_);
  }

  void scale_rows(Mat x, Mat scales, std::span<const int> scale_row) override {
    check(scale_row.size() >= static_cast<size_t>(x.rows) && scales.cols >= x.cols, "cuda scale_rows",
          "shape mismatch");
    if (x.rows == 0) return;
    check_scale_rows(scale_row.first(x.rows), scales.rows, "cuda scale_rows");
    use_device();
    const auto d = upload_args({{scale_row.data(), x.rows * sizeof(int)}});
    if (steps_->recorded(11, x.data, x.rows, x.cols, scales.data, scales.cols, d[0])) return;
    cuda::launch_scale_rows(x.data, x.rows, x.cols, scales.data, scales.cols, static_cast<const int*>(d[0]), launch_);
  }

  void gelu(Mat x) override {
    use_device();
    if (steps_->recorded(12, x.data, x.rows, x.cols)) return;
    cuda::launch_gelu(x.data, static_cast<size_t>(x.rows) * x.cols, launch_);
  }

  void silu_mul(Mat gate, Mat up) override {
    check(static_cast<size_t>(gate.rows) * gate.cols == static_cast<size_t>(up.rows) * up.cols, "cuda silu_mul",
          "shape mismatch");
    use_device();
    if (steps_->recorded(13, gate.data, up.data, gate.rows, gate.cols)) return;
    cuda::launch_silu_mul(gate.data, up.data, static_cast<size_t>(gate.rows) * gate.cols, launch_);
  }

  void add(Mat y, Mat x) override {
    check(static_cast<size_t>(y.rows) * y.cols == static_cast<size_t>(x.rows) * x.cols, "cuda add", "shape mismatch");
    use_device();
    if (steps_->recorded(14, y.data, x.data, y.rows, y.cols)) return;
    cuda::launch_add(y.data, x.data, static_cast<size_t>(y.rows) * y.cols, launch_);
  }

  void rope(Mat x, int n_heads, int head_dim, std::span<const RowRef> rows, std::span<const float> inv_freq) override {
    check(n_heads >= 0 && head_dim >= 0 && static_cast<size_t>(n_heads) * head_dim <= static_cast<size_t>(x.cols) &&
              rows.size() >= static_cast<size_t>(x.rows) && inv_freq.size() >= static_cast<size_t>(head_dim / 2),
          "cuda rope", "shape mismatch");
    if (x.rows == 0 || n_heads == 0 || head_dim < 2) return;
    use_device();
    const size_t half_bytes = static_cast<size_t>(head_dim / 2) * sizeof(float);
    const auto d = upload_args({{inv_freq.data(), half_bytes}, {rows.data(), x.rows * sizeof(RowRef)}});
    if (steps_->recorded(15, x.data, x.rows, x.cols, n_heads, head_dim, d[0], d[1])) return;
    cuda::launch_rope(x.data, x.rows, x.cols, n_heads, head_dim, static_cast<const DevRowRef*>(d[1]),
                      static_cast<const float*>(d[0]), launch_);
  }

  void store_kv(KvCache& cache, int layer, Mat k, Mat v, std::span<const RowRef> rows) override {
    const KvCacheShape& s = cache.shape();
    const int width = s.kv_heads * s.head_dim;
    check(k.cols == width && v.cols == width && k.rows == v.rows && rows.size() >= static_cast<size_t>(k.rows),
          "cuda store_kv", "shape mismatch");
    check(layer >= 0 && layer < s.layers, "cuda store_kv", "layer out of range");
    if (k.rows == 0) return;
    check_rows(cache, rows.first(k.rows), "cuda store_kv");
    use_device();
    const auto d = upload_args({{rows.data(), k.rows * sizeof(RowRef)}});
    if (steps_->recorded(16, cache.key_data(), cache.value_data(), cache.device_page_table(), layer, k.data, k.cols, v.data, v.cols, d[0], k.rows)) return;
    cuda::launch_store_kv(layout(cache, layer), k.data, k.cols, v.data, v.cols, static_cast<const DevRowRef*>(d[0]),
                          k.rows, launch_);
  }

  void upload_kv(KvCache& cache, const float* keys, const float* values) override {
    if (cache.element_bytes() == sizeof(float)) return Backend::upload_kv(cache, keys, values);
    check(cache.element_bytes() == 2, "cuda upload_kv", "fp8 caches are written by store_kv only");
    check(!steps_->in_step(), "cuda upload_kv", "not allowed inside a step");
    use_device();
    // Rounded on the way into the weight upload's pinned chunks.
    for (auto [src, dst] : {std::pair{keys, cache.key_data()}, std::pair{values, cache.value_data()}})
      upload_bf16_chunks(static_cast<uint16_t*>(dst), cache.shape().elements(),
                         [&](uint16_t* host, size_t off, size_t len) { float_to_bf16(src + off, host, len); });
  }

  void download_kv(const KvCache& cache, float* keys, float* values) override {
    if (cache.element_bytes() == sizeof(float)) return Backend::download_kv(cache, keys, values);
    check(cache.element_bytes() == 2, "cuda download_kv", "fp8 caches are read by attention only");
    check(!steps_->in_step(), "cuda download_kv", "not allowed inside a step");
    use_device();
    const size_t n = cache.shape().elements();
    std::vector<uint16_t> bits(n);
    for (auto [src, dst] : {std::pair{cache.key_data(), keys}, std::pair{cache.value_data(), values}}) {
      VOXRT_CUDA_CHECK(cudaMemcpyAsync(bits.data(), src, n * 2, cudaMemcpyDeviceToHost, stream_));
      sync_stream();
      bf16_to_float(bits.data(), dst, n);
    }
  }

  void shift_cached_keys(KvCache& cache, int slot, int64_t shift, std::span<const float> inv_freq) override {
    const KvCacheShape& s = cache.shape();
    check(slot >= 0 && slot < s.slots && inv_freq.size() >= static_cast<size_t>(s.head_dim / 2), "cuda shift_cached_keys",
          "slot or inv_freq out of range");
    use_device();
    const auto d = upload_args({{inv_freq.data(), static_cast<size_t>(s.head_dim / 2) * sizeof(float)}});
    for (const int page : cache.pages_of(slot)) {
      if (steps_->recorded(25, cache.key_data(), page, shift, d[0])) continue;
      cuda::launch_shift_cached_keys(layout(cache, 0), s.layers, page, shift, static_cast<const float*>(d[0]), launch_);
    }
  }

  void rope_store_kv(Mat q, Mat k, Mat v, int n_heads, std::span<const RowRef> rows, std::span<const float> inv_freq,
                     KvCache& cache, int layer) override {
    const KvCacheShape& s = cache.shape();
    const int width = s.kv_heads * s.head_dim;
    check(k.cols == width && v.cols == width && k.rows == v.rows && q.rows == k.rows && n_heads >= 0 &&
              static_cast<size_t>(n_heads) * s.head_dim <= static_cast<size_t>(q.cols) &&
              rows.size() >= static_cast<size_t>(k.rows) && inv_freq.size() >= static_cast<size_t>(s.head_dim / 2),
          "cuda rope_store_kv", "shape mismatch");
    check(layer >= 0 && layer < s.layers, "cuda rope_store_kv", "layer out of range");
    if (k.rows == 0) return;
    check_rows(cache, rows.first(k.rows), "cuda rope_store_kv");
    use_device();
    const size_t half_bytes = static_cast<size_t>(s.head_dim / 2) * sizeof(float);
    const auto d = upload_args({{inv_freq.data(), half_bytes}, {rows.data(), k.rows * sizeof(RowRef)}});
    if (steps_->recorded(24, q.data, q.cols, n_heads, k.data, k.cols, v.data, v.cols, cache.key_data(), cache.value_data(), cache.device_page_table(), layer, d[0],
                 d[1], k.rows, repeat_[cuda::OpKind::Rope]))
      return;
    for (int i = 0; i < repeat_[cuda::OpKind::Rope]; ++i)
      cuda::launch_rope_store(q.data, q.cols, n_heads, k.data, k.cols, v.data, v.cols, layout(cache, layer),
                              static_cast<const DevRowRef*>(d[1]), k.rows, static_cast<const float*>(d[0]), launch_);
  }

  void attention(const KvCache& cache, int layer, Mat q, std::span<const RowRef> rows, const AttentionParams& p,
                 Mat out) override {
    const KvCacheShape& s = cache.shape();
    check(p.n_kv_heads == s.kv_heads && p.head_dim == s.head_dim && p.n_kv_heads > 0 &&
              p.n_heads % p.n_kv_heads == 0,
          "cuda attention", "heads do not match the cache");
    check_with(cuda::attention_head_dim_supported(p.head_dim), "cuda attention",
               [&] { return "head_dim " + std::to_string(p.head_dim) + " unsupported (32, 64, 128 or 256)"; });
    const size_t qw = static_cast<size_t>(p.n_heads) * p.head_dim;
    check(q.cols >= static_cast<int>(qw) && out.cols >= static_cast<int>(qw) && out.rows == q.rows &&
              rows.size() >= static_cast<size_t>(q.rows) && p.window > 0,
          "cuda attention", "shape mismatch");
    check(layer >= 0 && layer < s.layers, "cuda attention", "layer out of range");
    if (q.rows == 0) return;
    check_rows(cache, rows.first(q.rows), "cuda attention", p.window);
    check((reinterpret_cast<uintptr_t>(cache.key_data()) & 15) == 0 && (reinterpret_cast<uintptr_t>(cache.value_data()) & 15) == 0,
          "cuda attention", "cache not 16-byte aligned");
    use_device();
    // Planned for a full window whatever the positions (blocks past a row's keys return at once):
    // the launch then depends on shapes only, so a recorded step replays at any position.
    const bool tensor_cores = attention_kernels_ == AttentionKernels::Automatic
                                  ? options_.tensor_core_attention
                                  : attention_kernels_ == AttentionKernels::TensorCores;
    const int kv_bytes = static_cast<int>(cache.element_bytes());
    const int rows_per_block =
        options_.attention_group_rows
            ? cuda::attention_rows_per_block(reinterpret_cast<const DevRowRef*>(rows.data()), q.rows, p.n_heads,
                                             p.n_kv_heads, cuda::attention_aligned(kv_bytes, p.head_dim, tensor_cores))
            : 1;
    const cuda::AttentionPlan plan =
        cuda::plan_attention(q.rows, p.n_heads, p.n_kv_heads, p.head_dim, kv_bytes, p.window, p.window, p.step_rows,
                             sm_count_, options_.attention_blocks_per_sm, rows_per_block, tensor_cores,
                             options_.attention_chunks_per_block, options_.attention_combine_warp);
    const auto d = upload_args({{rows.data(), q.rows * sizeof(RowRef)}});
    cuda::AttentionArgs a;
    a.kv = layout(cache, layer);
    a.q = q.data;
    a.ldq = q.cols;
    a.rows = static_cast<const DevRowRef*>(d[0]);
    a.n_rows = q.rows;
    a.n_heads = p.n_heads;
    a.window = p.window;
    a.scale = p.scale;
    a.out = out.data;
    a.ldo = out.cols;
    if (plan.scratch_floats > 0) a.scratch = static_cast<float*>(grow(attn_, plan.scratch_floats * sizeof(float)));
    if (steps_->recorded(17, cache.key_data(), cache.value_data(), cache.device_page_table(), layer, q.data, q.rows, q.cols, d[0], p.n_heads, p.window, p.scale,
                 out.data, out.cols, a.scratch, plan.chunk, plan.nsplit, plan.rows_per_block,
                 repeat_[cuda::OpKind::Attention]))
      return;
    for (int i = 0; i < repeat_[cuda::OpKind::Attention]; ++i) cuda::launch_attention(a, plan, launch_);
  }

  void embed(const Weight& table, std::span<const int32_t> ids, Mat y) override {
    check(y.cols == table.cols && ids.size() >= static_cast<size_t>(y.rows), "cuda embed", "shape mismatch");
    const DevVec t = vec_of(table, "cuda embed");
    if (y.rows == 0) return;
    for (int r = 0; r < y.rows; ++r)
      check_with(ids[r] >= 0 && ids[r] < table.rows, "embedding",
                 [&] { return "token id " + std::to_string(ids[r]) + " out of range"; });
    use_device();
    const auto d = upload_args({{ids.data(), y.rows * sizeof(int32_t)}});
    if (steps_->recorded(18, t.data, table.cols, d[0], y.rows, y.data, y.cols)) return;
    cuda::launch_embed(t, table.cols, static_cast<const int32_t*>(d[0]), y.rows, y.data, y.cols, launch_);
  }

  void gather_rows(Mat x, std::span<const int32_t> rows, Mat y) override {
    check_gather_rows(x, rows, y, "cuda gather_rows");
    if (y.rows == 0) return;
    use_device();
    const auto d = upload_args({{rows.data(), y.rows * sizeof(int32_t)}});
    if (steps_->recorded(26, x.data, x.cols, d[0], y.rows, y.data)) return;
    // The embedding gather, over an fp32 matrix as its table.
    cuda::launch_embed(cuda::DevVec{x.data, false}, x.cols, static_cast<const int32_t*>(d[0]), y.rows, y.data, y.cols,
                       launch_);
  }

  void conv1d_k3(Mat x, const Weight& w, const Weight& bias, int stride, Mat y) override {
    const int cin = x.cols, t_out = y.rows;
    check(stride >= 1 && x.rows >= 3 && t_out == (x.rows - 3) / stride + 1 && w.cols == 3 * cin && y.cols == w.rows,
          "cuda conv1d", "shape mismatch");
    use_device();
    // Patch row t is x rows s*t .. s*t+2, contiguous: a matrix [t_out, 3 cin] with row stride s * cin.
    linear_impl(x.data, t_out, 3 * cin, static_cast<size_t>(stride) * cin, w, &bias, y.data, y.cols, false,
                "cuda conv1d");
  }

  void argmax(Mat x, std::span<int32_t> ids, std::span<float> margins) override {
    check(ids.size() >= static_cast<size_t>(x.rows) && (margins.empty() || margins.size() >= static_cast<size_t>(x.rows)),
          "cuda argmax", "output spans too short");
    check(x.cols > 0, "cuda argmax", "empty rows");
    check(!steps_->in_step(), "cuda argmax", "not allowed inside a step (it waits for the result)");
    if (x.rows == 0) return;
    use_device();
    const size_t n = static_cast<size_t>(x.rows);
    auto* dev = static_cast<char*>(grow(results_, n * 8));
    int32_t* d_ids = reinterpret_cast<int32_t*>(dev);
    float* d_margins = margins.empty() ? nullptr : reinterpret_cast<float*>(dev + n * 4);
    cuda::launch_argmax(x.data, x.rows, x.cols, d_ids, d_margins, launch_);
    char* host = static_cast<char*>(stage(n * 8));
    VOXRT_CUDA_CHECK(cudaMemcpyAsync(host, dev, margins.empty() ? n * 4 : n * 8, cudaMemcpyDeviceToHost, stream_));
    sync_stream();
    std::memcpy(ids.data(), host, n * 4);
    if (!margins.empty()) std::memcpy(margins.data(), host + n * 4, n * 4);
  }

 private:
  static constexpr size_t kCublasWorkspace = size_t{32} << 20;
  static constexpr size_t kMaxStagedUpload = size_t{4} << 20;

  void init() {
    const int n = cuda::device_count();
    check(n > 0, "cuda backend", "no CUDA device available");
    check(device_ >= 0 && device_ < n, "cuda backend",
          "device " + std::to_string(device_) + " out of range (" + std::to_string(n) + " devices)");
    VOXRT_CUDA_CHECK(cudaSetDevice(device_));
    VOXRT_CUDA_CHECK(cudaDeviceGetAttribute(&sm_count_, cudaDevAttrMultiProcessorCount, device_));
    description_ = cuda::device_description(device_);
    VOXRT_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));

    cudaMemPoolProps props{};
    props.allocType = cudaMemAllocationTypePinned;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = device_;
    VOXRT_CUDA_CHECK(cudaMemPoolCreate(&pool_, &props));
    uint64_t keep = std::numeric_limits<uint64_t>::max();  // never trim freed memory at syncs
    VOXRT_CUDA_CHECK(cudaMemPoolSetAttribute(pool_, cudaMemPoolAttrReleaseThreshold, &keep));

    VOXRT_CUBLAS_CHECK(cublasCreate(&cublas_));
    VOXRT_CUBLAS_CHECK(cublasSetStream(cublas_, stream_));
    VOXRT_CUDA_CHECK(cudaMalloc(&cublas_workspace_, kCublasWorkspace));
    VOXRT_CUBLAS_CHECK(cublasSetWorkspace(cublas_, cublas_workspace_, kCublasWorkspace));

    staging_cap_ = 1 << 20;
    VOXRT_CUDA_CHECK(cudaMallocHost(&staging_, staging_cap_));
    steps_ = std::make_unique<cuda::StepRecorder>(stream_, options_.graphs, [this](float* p) { release(p); });

    launch_ = cuda::Stream{stream_, options_.programmatic_launch};
    tuning_.tensor_cores = options_.tensor_core_gemv;
    tuning_.split_warps_per_sm = options_.gemv_split_warps_per_sm;
    tuning_.min_piece_chunks = options_.gemv_min_piece_chunks;
    tuning_.sm_count = sm_count_;
    VOXRT_CUDA_CHECK(cudaDeviceGetAttribute(&tuning_.smem_per_sm, cudaDevAttrMaxSharedMemoryPerMultiprocessor, device_));
    VOXRT_CUDA_CHECK(cudaDeviceGetAttribute(&tuning_.smem_per_block, cudaDevAttrMaxSharedMemoryPerBlockOptin, device_));
    tuning_.wgmma_gemm = options_.wgmma_gemm && cuda::gemm_wgmma_available();
    tuning_.gemm_split_percent = options_.gemm_split_percent;
    kv_bytes_ = options_.fp8_kv ? 1 : options_.fp32_kv ? sizeof(float) : 2;
    repeat_ = cuda::parse_op_repeat(options_.repeat.empty() ? nullptr : options_.repeat.c_str());
  }

  static constexpr size_t kWeightChunk = size_t{1} << 24;  // elements per pinned weight chunk

  // Device memory for a weight [rows, cols], bf16 or fp32, owned by the returned Weight.
  Weight new_weight(int rows, int cols, bool bf16) {
    check(!steps_->in_step(), "cuda upload_weight", "not allowed inside a step");
    use_device();
    const size_t n = static_cast<size_t>(rows) * cols;
    auto d = std::make_shared<DeviceWeight>();
    d->bf16 = bf16;
    d->device = device_;
    if (bf16 && !cuda::gemv_supports_k(cols)) cublas_weights_ = true;  // linear() sends it to cuBLAS
    const size_t bytes = std::max<size_t>(256, n * (bf16 ? 2 : 4));
    const cudaError_t e = cudaMalloc(&d->data, bytes);
    if (e != cudaSuccess) {
      d->data = nullptr;
      throw allocation_error(e, bytes, " for a weight [" + std::to_string(rows) + ", " + std::to_string(cols) + "]");
    }
    Weight w;
    w.storage = std::shared_ptr<void>(d, d.get());
    w.rows = rows;
    w.cols = cols;
    return w;
  }

  // n bf16 values to dst through the two pinned chunks, which take turns: fill(host, offset, len)
  // writes one chunk while the other's copy is in flight. Returns with the last copy queued.
  template <typename Fill>
  void upload_bf16_chunks(uint16_t* dst, size_t n, Fill fill) {
    for (size_t off = 0, turn = 0; off < n; off += kWeightChunk, turn ^= 1) {
      const size_t len = std::min(kWeightChunk, n - off);
      uint16_t* host = weight_chunk(turn);
      fill(host, off, len);
      VOXRT_CUDA_CHECK(cudaMemcpyAsync(dst + off, host, len * 2, cudaMemcpyHostToDevice, stream_));
      VOXRT_CUDA_CHECK(cudaEventRecord(weight_chunk_copied_[turn], stream_));
    }
  }

  // Pinned chunk `turn` (0 or 1) of the weight upload, once the copy last made from it is done.
  uint16_t* weight_chunk(size_t turn) {
    if (!weight_chunk_[turn]) {
      VOXRT_CUDA_CHECK(cudaMallocHost(reinterpret_cast<void**>(&weight_chunk_[turn]), kWeightChunk * 2));
      VOXRT_CUDA_CHECK(cudaEventCreateWithFlags(&weight_chunk_copied_[turn], cudaEventDisableTiming));
    } else {
      VOXRT_CUDA_CHECK(cudaEventSynchronize(weight_chunk_copied_[turn]));
    }
    return weight_chunk_[turn];
  }

  // Frees everything init() made (also after a partial init); never throws.
  void destroy() noexcept {
    if (!stream_) return;  // nothing on the device was made
    make_current(device_);
    cudaStreamSynchronize(stream_);
    for (Scratch* s : {&xbf_, &args_, &attn_, &results_, &gemv_partials_, &gemv_counters_, &gemm_workspace_})
      if (s->ptr) cudaFreeAsync(s->ptr, stream_);
    cudaStreamSynchronize(stream_);
    if (cublas_) cublasDestroy(cublas_);
    steps_.reset();  // its graphs and arena
    if (cublas_workspace_) cudaFree(cublas_workspace_);
    if (staging_) cudaFreeHost(staging_);
    for (int i = 0; i < 2; ++i) {
      if (weight_chunk_[i]) cudaFreeHost(weight_chunk_[i]);
      if (weight_chunk_copied_[i]) cudaEventDestroy(weight_chunk_copied_[i]);
    }
    if (pool_) cudaMemPoolDestroy(pool_);  // outstanding allocations keep it alive until freed
    if (stream_) cudaStreamDestroy(stream_);
  }

  // "cuda: out of memory allocating N bytes on <device>" (clears the error: allocation failures
  // are not sticky, the backend stays usable).
  Error allocation_error(cudaError_t e, size_t bytes, const std::string& what) {
    cudaGetLastError();
    std::string msg = "cuda: out of memory allocating " + bytes_str(bytes) + what + " on " + description_;
    if (e != cudaErrorMemoryAllocation) msg += " (" + std::string(cudaGetErrorString(e)) + ")";
    return Error(msg);
  }

  // This backend's device current before every call that allocates, copies, launches or asks it
  // (make_current); throws when CUDA refuses.
  void use_device() const {
    if (!make_current(device_)) VOXRT_CUDA_CHECK(cudaSetDevice(device_));
  }

  // The device's free and total bytes; false (without throwing: monitoring asks) when it cannot tell.
  bool device_memory(size_t& free, size_t& total) const {
    return make_current(device_) && cudaMemGetInfo(&free, &total) == cudaSuccess;
  }

  void sync_stream() {
    VOXRT_CUDA_CHECK(cudaStreamSynchronize(stream_));
    staging_used_ = 0;  // every copy out of the staging buffer has completed
  }

  // Median time in ms of 10 runs of f on the stream (after 3 warm-up runs), timed with events.
  template <typename F>
  double median_ms(F f) {
    for (int i = 0; i < 3; ++i) f();
    cudaEvent_t e0, e1;
    VOXRT_CUDA_CHECK(cudaEventCreate(&e0));
    VOXRT_CUDA_CHECK(cudaEventCreate(&e1));
    std::vector<float> times;
    for (int i = 0; i < 10; ++i) {
      VOXRT_CUDA_CHECK(cudaEventRecord(e0, stream_));
      f();
      VOXRT_CUDA_CHECK(cudaEventRecord(e1, stream_));
      VOXRT_CUDA_CHECK(cudaEventSynchronize(e1));
      float ms = 0;
      VOXRT_CUDA_CHECK(cudaEventElapsedTime(&ms, e0, e1));
      times.push_back(ms);
    }
    cudaEventDestroy(e0);
    cudaEventDestroy(e1);
    std::sort(times.begin(), times.end());
    return times[times.size() / 2];
  }

  // Host staging space for an asynchronous host -> device copy. Regions are handed out in order and
  // only reused after a stream synchronisation, when every copy out of them has completed.
  void* stage(size_t bytes) {
    bytes = (bytes + 255) / 256 * 256;
    if (staging_used_ + bytes > staging_cap_) {
      sync_stream();
      if (bytes > staging_cap_) {
        VOXRT_CUDA_CHECK(cudaFreeHost(staging_));
        staging_ = nullptr;
        staging_cap_ = std::max(bytes, 2 * staging_cap_);
        VOXRT_CUDA_CHECK(cudaMallocHost(&staging_, staging_cap_));
      }
    }
    void* p = static_cast<char*>(staging_) + staging_used_;
    staging_used_ += bytes;
    return p;
  }

  // At least `bytes` of device scratch in s (its contents are not kept when it grows).
  void* grow(Scratch& s, size_t bytes) {
    if (s.bytes >= bytes) return s.ptr;
    if (steps_->recording()) throw cuda::StepNeedsEager{};
    if (s.ptr) VOXRT_CUDA_CHECK(cudaFreeAsync(s.ptr, stream_));
    s.ptr = nullptr;
    s.bytes = 0;
    const size_t want = std::max<size_t>(bytes + bytes / 2, 4096);
    const cudaError_t e = cudaMallocFromPoolAsync(&s.ptr, want, pool_, stream_);
    if (e != cudaSuccess) {
      s.ptr = nullptr;
      throw allocation_error(e, want, " of scratch");
    }
    s.bytes = want;
    return s.ptr;
  }

  struct HostArg {
    const void* data;
    size_t bytes;
  };
  // Copies small host arrays to the device in one transfer; returns their device addresses, valid
  // for kernels enqueued before the next upload_args (the argument buffer is reused in stream order).
  std::vector<void*> upload_args(std::initializer_list<HostArg> args) {
    if (steps_->recording()) {  // a step: the arena, copied to the device before the step runs
      std::vector<void*> out;
      for (const HostArg& a : args) out.push_back(steps_->arena_put(a.data, a.bytes));
      return out;
    }
    size_t total = 0;
    for (const HostArg& a : args) total += (a.bytes + 15) / 16 * 16;
    char* host = static_cast<char*>(stage(total));
    char* dev = static_cast<char*>(grow(args_, total));
    std::vector<void*> out;
    size_t off = 0;
    for (const HostArg& a : args) {
      std::memcpy(host + off, a.data, a.bytes);
      out.push_back(dev + off);
      off += (a.bytes + 15) / 16 * 16;
    }
    VOXRT_CUDA_CHECK(cudaMemcpyAsync(dev, host, total, cudaMemcpyHostToDevice, stream_));
    return out;
  }

  static void check_scale_rows(std::span<const int> scale_row, int n_scales, const char* where) {
    for (const int i : scale_row)
      check_with(i >= 0 && i < n_scales, where, [&] { return "scale row " + std::to_string(i) + " out of range"; });
  }

  // Rows' slots and positions, and that each row's own ring entry has a page (the kernels index
  // the page table without checking); with a window, also that no row attends more keys
  // (min(pos + 1, window)) than the ring holds: more would read overwritten entries, and the
  // attention kernel's ring index assumes at most one wrap per chunk.
  static void check_rows(const KvCache& cache, std::span<const RowRef> rows, const char* where, int window = 0) {
    const KvCacheShape& s = cache.shape();
    for (const RowRef& r : rows) {
      check_with(r.slot >= 0 && r.slot < s.slots, where,
                 [&] { return "cache slot " + std::to_string(r.slot) + " out of range"; });
      check_with(r.pos >= 0, where, [&] { return "negative position " + std::to_string(r.pos); });
      check_with(cache.page_of(r.slot, r.pos % s.ring) >= 0, where, [&] {
        return "slot " + std::to_string(r.slot) + " has no cache page for position " + std::to_string(r.pos);
      });
      const int64_t keys = std::min<int64_t>(r.pos + 1, window);
      check_with(keys <= s.ring, where, [&] {
        return "row at position " + std::to_string(r.pos) + " attends " + std::to_string(keys) +
               " keys, more than the ring's " + std::to_string(s.ring);
      });
    }
  }

  static cuda::KvLayout layout(const KvCache& cache, int layer) {
    const KvCacheShape& s = cache.shape();
    cuda::KvLayout l;
    l.keys = cache.key_data();
    l.values = cache.value_data();
    l.bf16 = cache.element_bytes() == 2;
    l.fp8 = cache.element_bytes() == 1;
    l.key_scales = cache.key_scales();
    l.value_scales = cache.value_scales();
    l.scales_per_page = static_cast<long long>(s.layers) * s.page_len() * s.kv_heads;
    l.page_table = cache.device_page_table();
    l.pages_per_slot = s.pages_per_slot();
    l.page_len = s.page_len();
    l.per_page = static_cast<long long>(s.per_page());
    l.per_page_layer = static_cast<long long>(s.per_page_layer());
    l.layer = layer;
    l.ring = s.ring;
    l.kv_heads = s.kv_heads;
    l.head_dim = s.head_dim;
    return l;
  }

  // Whether one GEMV launch can take x [M, K] (fp32, aligned rows) against these weights.
  bool gemv_takes(Mat x, std::initializer_list<const Weight*> weights, const char* where) {
    bool ok = x.rows > 0 && !library() && cuda::gemv_supports_k(x.cols) && cuda::gemv_reads_f32(x.data, x.cols);
    for (const Weight* w : weights) ok = ok && device_weight(*w, where).bf16;
    return ok;
  }

  // linears (two or three products over x) as one GEMV launch per group of rows; false when it cannot be.
  bool products_fused(Mat x, std::span<const LinearOut> outs) {
    const char* where = "cuda linears";
    const int M = x.rows, K = x.cols;
    for (const LinearOut& o : outs)
      check(o.w && K == o.w->cols && o.y.rows == M && o.y.cols == o.w->rows, where, "shape mismatch");
    bool ok = outs.size() >= 2 && outs.size() <= static_cast<size_t>(cuda::kGemvMaxOutputs) && gemv_takes(x, {}, where);
    for (const LinearOut& o : outs) ok = ok && device_weight(*o.w, where).bf16;
    if (!ok) return false;
    use_device();
    cuda::GemvOut g[cuda::kGemvMaxOutputs];
    const int n = static_cast<int>(outs.size());
    for (int i = 0; i < n; ++i)
      g[i] = gemv_out(*outs[i].w, outs[i].bias, outs[i].y.data, outs[i].y.cols, outs[i].accumulate, where);
    run_products(x.data, M, K, K, g, n, false);
    return true;
  }

  // gated_linear as one GEMV launch per group of rows; false when it cannot be.
  bool gated_fused(Mat x, const Weight& w_gate, const Weight& w_up, Mat y) {
    const char* where = "cuda gated_linear";
    const int M = x.rows, K = x.cols;
    check(w_gate.cols == K && w_up.cols == K && w_gate.rows == w_up.rows && y.rows == M && y.cols == w_gate.rows,
          where, "shape mismatch");
    if (M == 0) return true;
    if (!gemv_takes(x, {&w_gate, &w_up}, where)) return false;
    use_device();
    cuda::GemvOut g[2] = {gemv_out(w_gate, nullptr, y.data, y.cols, false, where),
                          gemv_out(w_up, nullptr, nullptr, 0, false, where)};
    run_products(x.data, M, K, K, g, 2, true);
    return true;
  }

  // y [M, N] (row stride ldy) = x [M, K] (row stride ldx) W^T (+ y) (+ bias).
  void linear_impl(const float* x, int M, int K, size_t ldx, const Weight& w, const Weight* bias, float* y, int ldy,
                   bool accumulate, const char* where) {
    const DeviceWeight& W = device_weight(w, where);
    const int N = w.rows;
    DevVec b;
    if (bias) {
      check(static_cast<size_t>(bias->rows) * bias->cols == static_cast<size_t>(N), where, "bias size mismatch");
      b = vec_of(*bias, where);
    }
    if (M == 0 || N == 0) return;
    if (!W.bf16) {  // a weight stored as a vector: [N, 1], so K == 1
      if (steps_->recorded(20, x, M, K, ldx, W.data, N, b.data, y, ldy, accumulate)) return;
      cuda::launch_linear_f32_weight(x, M, K, ldx, static_cast<const float*>(W.data), N, b, y, ldy, accumulate,
                                     launch_);
      return;
    }
    // Every batch goes through the GEMV kernel in groups of gemv_max_rows() rows, or through the
    // tiled GEMM that computes the same bits (run_products): each row's reduction order is then the
    // same whatever the batch, so a live session (8 mel rows, 4 encoder rows, 1 decoder row per
    // step) computes exactly what an offline pass or a batch of sessions does. cuBLAS, whose tiling
    // depends on M, is used only for K not a multiple of 8 and when asked for (Library, or
    // VOXRT_CUDA_GEMV_MAX_ROWS=0).
    if (!library() && cuda::gemv_supports_k(K)) {
      cuda::GemvOut g = gemv_out(w, bias, y, ldy, accumulate, where);
      run_products(x, M, K, ldx, &g, 1, false);
      return;
    }
    auto* xb = static_cast<__nv_bfloat16*>(grow(xbf_, static_cast<size_t>(M) * K * sizeof(__nv_bfloat16)));
    const auto* wb = static_cast<const __nv_bfloat16*>(W.data);
    if (steps_->recorded(21, x, M, K, ldx, xb, wb, N, b.data, y, ldy, accumulate)) return;
    cuda::launch_f32_to_bf16(x, M, K, ldx, xb, launch_);
    // Column-major view: y^T [N, M] (ld ldy) = W^T^T ... i.e. C = op(A) B with A = W stored column-major
    // as [K, N] (ld K) and op(A) = A^T = W [N, K]; B = x^T stored column-major as [K, M] (ld K).
    const float alpha = 1.0f, beta = accumulate ? 1.0f : 0.0f;
    VOXRT_CUBLAS_CHECK(cublasGemmEx(cublas_, CUBLAS_OP_T, CUBLAS_OP_N, N, M, K, &alpha, wb, CUDA_R_16BF, K, xb,
                                    CUDA_R_16BF, K, &beta, y, CUDA_R_32F, ldy, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    if (b.data) cuda::launch_add_bias(y, M, N, b, launch_);
  }

  cuda::GemvOut gemv_out(const Weight& w, const Weight* bias, float* y, int ldy, bool accumulate, const char* where) {
    cuda::GemvOut g;
    g.w = static_cast<const __nv_bfloat16*>(device_weight(w, where).data);
    g.n = w.rows;
    if (bias) {
      check(static_cast<size_t>(bias->rows) * bias->cols == static_cast<size_t>(w.rows), where, "bias size mismatch");
      g.bias = vec_of(*bias, where);
    }
    g.y = y;
    g.ldy = ldy;
    g.accumulate = accumulate ? 1 : 0;
    return g;
  }

  // Whether every product goes through cuBLAS: asked for, or the options' default for Automatic.
  bool library() const {
    return products_ == ProductKernels::Library || (products_ == ProductKernels::Automatic && options_.library_products);
  }

  // Whether M rows go through the tiled GEMM rather than the GEMV in groups of 32. Both compute the
  // same bits for every row (the products' order, tensor_core.cuh), so the choice is one of speed
  // alone. Measured (bench/results/2026-12-03-products-one-chain.txt): the GEMM's time is flat from
  // 1 to 64 rows; at one row the two are level over a decoder step's products, at 8 the GEMM is
  // faster on every product, so it takes 2 rows and more (CudaOptions::gemm_min_rows).
  bool tiled(int M) const {
    if (!tuning_.tensor_cores || products_ == ProductKernels::Gemv) return false;
    return products_ == ProductKernels::Gemm || M >= options_.gemm_min_rows;
  }

  // x [M, K] (row stride ldx) rounded into the packed bf16 scratch copy the product kernels read.
  const __nv_bfloat16* bf16_copy(const float* x, int M, int K, size_t ldx) {
    auto* xb = static_cast<__nv_bfloat16*>(grow(xbf_, static_cast<size_t>(M) * K * sizeof(__nv_bfloat16)));
    if (!steps_->recorded(22, x, M, K, ldx, xb)) cuda::launch_f32_to_bf16(x, M, K, ldx, xb, launch_);
    return xb;
  }

  // The products of M rows: the tiled GEMM or the GEMV in groups (tiled()).
  void run_products(const float* x, int M, int K, size_t ldx, cuda::GemvOut* outs, int n_outs, bool gated) {
    if (tiled(M)) {
      const __nv_bfloat16* xb = bf16_copy(x, M, K, ldx);
      const size_t ws_floats = cuda::gemm_workspace_floats(M, K, outs, n_outs, gated, tuning_);
      float* ws = ws_floats ? static_cast<float*>(grow(gemm_workspace_, ws_floats * sizeof(float))) : nullptr;
      uint64_t h = cuda::StepRecorder::words(24, xb, M, K, n_outs, gated, sm_count_, ws);
      for (int i = 0; i < n_outs; ++i)
        h ^= cuda::StepRecorder::words(outs[i].w, outs[i].n, outs[i].bias.data, outs[i].y, outs[i].ldy, outs[i].accumulate) + i;
      if (steps_->recorded(h, repeat_[cuda::OpKind::Product])) return;
      for (int i = 0; i < repeat_[cuda::OpKind::Product]; ++i)
        cuda::launch_gemm(xb, K, M, K, outs, n_outs, gated, ws, ws_floats, tuning_, launch_);
      return;
    }
    gemv_in_groups(x, M, K, ldx, outs, n_outs, gated);
  }

  // The GEMV over M rows in groups of gemv_max_rows(). x is read as fp32 where its rows are 16-byte
  // aligned, else through a bf16 copy (same rounding, same result).
  void gemv_in_groups(const float* x, int M, int K, size_t ldx, cuda::GemvOut* outs, int n_outs, bool gated) {
    const void* xin = x;
    size_t ld = ldx;
    const bool direct = cuda::gemv_reads_f32(x, ldx);
    if (!direct) {
      xin = bf16_copy(x, M, K, ldx);
      ld = K;
    }
    const size_t elem = direct ? sizeof(float) : sizeof(__nv_bfloat16);
    const cuda::GemvWorkspace ws = gemv_workspace(K, outs, n_outs, gated);
    cuda::GemvOut group[cuda::kGemvMaxOutputs];
    const int group_rows = cuda::gemv_max_rows(tuning_);
    for (int m0 = 0; m0 < M; m0 += group_rows) {
      const int rows = std::min(group_rows, M - m0);
      uint64_t h = cuda::StepRecorder::words(23, xin, ld, rows, K, n_outs, gated, direct, ws.partials, ws.counters);
      for (int i = 0; i < n_outs; ++i) {
        group[i] = outs[i];
        if (group[i].y) group[i].y += static_cast<size_t>(m0) * group[i].ldy;
        h ^= cuda::StepRecorder::words(group[i].w, group[i].n, group[i].bias.data, group[i].y, group[i].ldy, group[i].accumulate) + i;
      }
      const void* xg = static_cast<const char*>(xin) + static_cast<size_t>(m0) * ld * elem;
      if (steps_->recorded(h, xg, repeat_[cuda::OpKind::Product])) continue;
      for (int i = 0; i < repeat_[cuda::OpKind::Product]; ++i)
        cuda::launch_gemv(xg, !direct, ld, rows, K, group, n_outs, gated, ws, tuning_, launch_);
    }
  }

  // The split-K workspace for these weights (kernels_gemv_mma.cu); counters are zeroed when made,
  // and every launch leaves them zero.
  cuda::GemvWorkspace gemv_workspace(int K, const cuda::GemvOut* outs, int n_outs, bool gated) {
    const cuda::GemvWorkspaceSize need = cuda::gemv_workspace_size(K, outs, n_outs, gated, tuning_);
    cuda::GemvWorkspace ws;
    if (need.partial_floats > 0) {
      ws.partials = static_cast<float*>(grow(gemv_partials_, need.partial_floats * sizeof(float)));
      ws.partial_floats = gemv_partials_.bytes / sizeof(float);
    }
    if (need.counters > 0) {
      const bool fresh = gemv_counters_.bytes < need.counters * sizeof(int);
      ws.counters = static_cast<int*>(grow(gemv_counters_, need.counters * sizeof(int)));
      if (fresh) VOXRT_CUDA_CHECK(cudaMemsetAsync(ws.counters, 0, gemv_counters_.bytes, stream_));
      ws.counter_count = gemv_counters_.bytes / sizeof(int);
    }
    return ws;
  }

  int device_;
  int sm_count_ = 0;
  CudaOptions options_;
  cuda::Stream launch_;       // stream_, with the launches' programmatic flag
  cuda::GemvTuning tuning_;   // the products' kernels (from options_ and the device)
  std::string description_;
  cudaStream_t stream_ = nullptr;
  cudaMemPool_t pool_ = nullptr;
  cublasHandle_t cublas_ = nullptr;
  void* cublas_workspace_ = nullptr;
  void* staging_ = nullptr;  // pinned host memory
  size_t staging_cap_ = 0, staging_used_ = 0;
  Scratch xbf_, args_, attn_, results_, gemv_partials_, gemv_counters_, gemm_workspace_;
  cuda::OpRepeat repeat_;  // VOXRT_CUDA_REPEAT (op_repeat.h): launches per operation kind, for measurements
  size_t kv_bytes_ = 2;  // K/V caches in bf16; VOXRT_CUDA_KV=fp32 keeps them fp32 (for measurements), fp8 halves them
  bool cublas_weights_ = false;  // a matrix whose products cuBLAS computes (batch_invariant)
  ProductKernels products_ = ProductKernels::Automatic;  // set_product_kernels
  AttentionKernels attention_kernels_ = AttentionKernels::Automatic;  // set_attention_kernels

  std::unique_ptr<cuda::StepRecorder> steps_;  // steps as CUDA graphs (step_recorder.h)
  uint16_t* weight_chunk_[2] = {nullptr, nullptr};  // pinned, for upload_weight
  cudaEvent_t weight_chunk_copied_[2] = {nullptr, nullptr};
};

}  // namespace

std::unique_ptr<Backend> make_cuda_backend(int device, const CudaOptions& options) {
  return std::make_unique<CudaBackend>(device, options);
}

}  // namespace voxrt
