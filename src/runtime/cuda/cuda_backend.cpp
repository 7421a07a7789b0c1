// The CUDA backend: every Backend op on one GPU, all work enqueued on one stream owned by the
// backend. CudaBackend itself only implements the Backend interface (and the benchmarks'
// KernelSwitches), handing each call to the part whose one job it is; the kernels live in
// kernels_*.cu by concern (cuda_kernels.h lists them).
// These files are C++20 host code (backend.h needs <span>), so they are .cpp files compiled by the
// host compiler, not .cu.
//
//  - device_stream.h: the device (made current on every call) and the stream.
//  - device_memory.h: activations from a stream-ordered pool, scratch, the pinned staging of host
//    data (RowRefs, token ids, scale row indices, inv_freq go through one cudaMemcpyAsync into a
//    device argument buffer), memory figures.
//  - device_weights.h: weights on the device (bf16 matrices, fp32 vectors).
//  - product_dispatch.h: linear, linears, gated_linear, conv1d_k3: which kernels compute a product
//    (GEMV, tiled GEMM, cuBLAS), the one place where a weight's format picks them.
//  - attention_dispatch.h: attention, its kernel (tensor cores or CUDA cores) and split plan.
//  - op_table.h: the other ops (norms, RoPE, elementwise, K/V stores, embedding, argmax).
//  - ceilings.h: the copy and matrix-product ceilings `voxrt bench` measures against.
//
// K/V caches (runtime/kv_cache.h) take their memory from this backend's pool, stored bf16 as in
// the reference's bf16 model (K and V are rounded as they are stored; attention computes in fp32):
// half the memory (0.87 GB less at a full decoder window). Not faster: the attention kernels wait on
// round trips, not bytes (bench/README.md). VOXRT_CUDA_KV=fp32 keeps them fp32 (for measurements);
// fp8 (EngineOptions::kv_cache) stores e4m3 with a float scale per entry and head
// (kernels_kv_fp8.cu), half the bytes. runtime/cuda_options.h lists the backend's other switches.
//
// The only device -> host transfers are download() and argmax's results. Not thread-safe: one
// thread drives a backend. Recordings (run_recorded) become CUDA graphs: recorder.h. Ops mix what
// they launch into the recording's signature (Recorder::recorded) and take host data from its arena
// (DeviceMemory::upload_args, upload).
#include <cuda_profiler_api.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "common/error.h"
#include "runtime/backend.h"
#include "runtime/cuda/attention_dispatch.h"
#include "runtime/cuda/ceilings.h"
#include "runtime/cuda/cuda_check.h"
#include "runtime/cuda/device_memory.h"
#include "runtime/cuda/device_stream.h"
#include "runtime/cuda/device_weights.h"
#include "runtime/cuda/op_repeat.h"
#include "runtime/cuda/op_table.h"
#include "runtime/cuda/product_dispatch.h"
#include "runtime/cuda/recorder.h"
#include "runtime/kernel_switches.h"
#include "runtime/kv_cache.h"

namespace voxrt {
namespace {

class CudaBackend final : public Backend, public KernelSwitches {
 public:
  CudaBackend(int device, const CudaOptions& options)
      : device_(device, options.programmatic_launch, options.as_gpu),
        repeat_(cuda::parse_op_repeat(options.repeat.empty() ? nullptr : options.repeat.c_str())),
        recorder_(device_.stream(), options.graphs, [this](float* p) { memory_.release(p); }),
        memory_(device_, recorder_),
        weights_(device_, memory_, recorder_),
        products_(device_, memory_, recorder_, options, repeat_),
        attention_(device_, memory_, recorder_, options, repeat_),
        ops_(device_, memory_, recorder_, repeat_),
        kv_bytes_(options.fp8_kv ? 1 : options.fp32_kv ? sizeof(float) : 2) {}

  // The parts free what they made, in the reverse order of their making, once the stream's work is done.
  ~CudaBackend() override {
    cuda::make_current(device_.device());
    cudaStreamSynchronize(device_.stream());
  }

  std::string name() const override { return "cuda"; }

  void synchronize() override {
    check(!recorder_.in_recording(), "cuda synchronize", "not allowed inside a recording");
    memory_.sync();
  }

  void run_recorded(const std::string& key, const std::function<void()>& ops) override {
    device_.use();
    recorder_.run(key, ops);
  }

  RecordingStats recording_stats() const override { return recorder_.stats(); }

  // Measured once, the first time asked: a device's ceilings do not change while the process runs,
  // and measuring them takes 4 GB of free memory, which caches reserved since (bench
  // --find-capacity's trials, one engine growing its pools) may hold.
  Ceilings measure_ceilings() override {
    if (!ceilings_) ceilings_ = cuda::measure_ceilings(device_, memory_, products_.cublas());
    return *ceilings_;
  }

  size_t weight_element_bytes() const override { return 2; }  // bf16
  size_t kv_element_bytes() const override { return kv_bytes_; }
  // Every product goes through the GEMV kernels (product_dispatch.h) unless cuBLAS was asked for or
  // a matrix's K is not a multiple of 8; the other ops treat rows one by one, and attention's chunks
  // depend on the model alone (plan_attention).
  bool batch_invariant() const override { return products_.batch_invariant(); }

  KernelSwitches* kernel_switches() override { return this; }
  bool set_product_kernels(ProductKernels k) override { return products_.set_kernels(k); }
  bool set_attention_kernels(AttentionKernels k) override { return attention_.set_kernels(k, kv_element_bytes()); }
  void profile_window(bool open) override {
    device_.use();
    VOXRT_CUDA_CHECK(open ? cudaProfilerStart() : cudaProfilerStop());
  }

  size_t memory_in_use() const override { return memory_.in_use(); }
  void release_unused_memory() override { memory_.release_unused(); }
  size_t memory_available() const override { return memory_.available(); }
  size_t working_memory() const override { return size_t{2} << 30; }  // 2 GiB: the 1.9 GB measured, and a margin

  // ---- Memory ----

  float* allocate(size_t floats) override { return memory_.allocate(floats); }
  void release(float* p) override { memory_.release(p); }
  void upload(float* dst, const float* src, size_t n) override { memory_.upload(dst, src, n); }
  void download(float* dst, const float* src, size_t n) override { memory_.download(dst, src, n); }
  void copy(float* dst, const float* src, size_t n) override { memory_.copy(dst, src, n); }
  void fill(float* dst, float value, size_t n) override { memory_.fill(dst, value, n); }

  Weight upload_weight(std::vector<float>&& values, int rows, int cols) override {
    Weight w = weights_.upload(std::move(values), rows, cols);
    products_.admit(w);
    return w;
  }

  Weight upload_quantized(QuantizedMatrix&& m) override {
    Weight w = weights_.upload_quantized(std::move(m));
    products_.admit(w);
    return w;
  }
  Weight upload_weight_bf16(std::vector<uint16_t>&& bits, int rows, int cols) override {
    Weight w = weights_.upload_bf16(std::move(bits), rows, cols);
    products_.admit(w);
    return w;
  }

  // ---- Ops ----

  void linear(Mat x, const Weight& w, const Weight* bias, Mat y, bool accumulate) override {
    products_.linear(x, w, bias, y, accumulate);
  }

  void linears(Mat x, std::span<const LinearOut> outs) override {
    if (!products_.linears(x, outs)) Backend::linears(x, outs);
  }

  void gated_linear(Mat x, const Weight& w_gate, const Weight& w_up, Mat y, Mat up_scratch) override {
    if (!products_.gated_linear(x, w_gate, w_up, y)) Backend::gated_linear(x, w_gate, w_up, y, up_scratch);
  }

  void conv1d_k3(Mat x, const Weight& w, const Weight& bias, int stride, Mat y) override {
    products_.conv1d_k3(x, w, bias, stride, y);
  }

  void attention(const KvCache& cache, int layer, Mat q, std::span<const RowRef> rows, const AttentionParams& p,
                 Mat out) override {
    attention_.attention(cache, layer, q, rows, p, out);
  }

  void rms_norm(Mat x, const Weight& w, float eps, Mat y) override { ops_.rms_norm(x, w, eps, y); }
  void rms_norm_scaled(Mat x, const Weight& w, float eps, Mat y, Mat scales, std::span<const int> scale_row) override {
    ops_.rms_norm_scaled(x, w, eps, y, scales, scale_row);
  }
  void scale_rows(Mat x, Mat scales, std::span<const int> scale_row) override { ops_.scale_rows(x, scales, scale_row); }
  void gelu(Mat x) override { ops_.gelu(x); }
  void silu_mul(Mat gate, Mat up) override { ops_.silu_mul(gate, up); }
  void add(Mat y, Mat x) override { ops_.add(y, x); }
  void rope(Mat x, int n_heads, int head_dim, std::span<const RowRef> rows, std::span<const float> inv_freq) override {
    ops_.rope(x, n_heads, head_dim, rows, inv_freq);
  }
  void store_kv(KvCache& cache, int layer, Mat k, Mat v, std::span<const RowRef> rows) override {
    ops_.store_kv(cache, layer, k, v, rows);
  }
  void upload_kv(KvCache& cache, const float* keys, const float* values) override {
    if (cache.element_bytes() == sizeof(float)) return Backend::upload_kv(cache, keys, values);
    ops_.upload_kv(cache, keys, values);
  }
  void download_kv(const KvCache& cache, float* keys, float* values) override {
    if (cache.element_bytes() == sizeof(float)) return Backend::download_kv(cache, keys, values);
    ops_.download_kv(cache, keys, values);
  }
  void shift_cached_keys(KvCache& cache, int slot, int64_t shift, std::span<const float> inv_freq) override {
    ops_.shift_cached_keys(cache, slot, shift, inv_freq);
  }
  void rope_store_kv(Mat q, Mat k, Mat v, int n_heads, std::span<const RowRef> rows, std::span<const float> inv_freq,
                     KvCache& cache, int layer) override {
    ops_.rope_store_kv(q, k, v, n_heads, rows, inv_freq, cache, layer);
  }
  void embed(const Weight& table, std::span<const int32_t> ids, Mat y) override { ops_.embed(table, ids, y); }
  void gather_rows(Mat x, std::span<const int32_t> rows, Mat y) override { ops_.gather_rows(x, rows, y); }
  void add_at(Mat x, std::span<const MatEntry> entries) override { ops_.add_at(x, entries); }
  void argmax(Mat x, std::span<int32_t> ids, std::span<float> margins) override { ops_.argmax(x, ids, margins); }

 private:
  // Made in this order and freed in the reverse: each part gets only the parts it uses.
  cuda::DeviceStream device_;
  cuda::OpRepeat repeat_;     // VOXRT_CUDA_REPEAT (op_repeat.h): launches per operation kind, for measurements
  cuda::Recorder recorder_;   // recordings as CUDA graphs (recorder.h)
  cuda::DeviceMemory memory_;
  cuda::WeightStore weights_;
  cuda::ProductDispatch products_;
  cuda::AttentionDispatch attention_;
  cuda::OpTable ops_;
  size_t kv_bytes_;  // K/V caches in bf16; VOXRT_CUDA_KV=fp32 keeps them fp32 (for measurements), fp8 halves them
  std::optional<Ceilings> ceilings_;  // measure_ceilings, once
};

}  // namespace

std::unique_ptr<Backend> make_cuda_backend(int device, const CudaOptions& options) {
  return std::make_unique<CudaBackend>(device, options);
}

}  // namespace voxrt
