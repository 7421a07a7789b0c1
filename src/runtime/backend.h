// The backend interface: the operations the Voxtral model is made of. The model (src/models/voxtral/) is
// written once against this interface; the CPU backend runs each op on host memory with OpenBLAS and
// OpenMP, the CUDA backend on device memory. Activations are fp32 matrices [rows, cols], row-major.
//
// The unit of work is a batch of rows that may come from several sessions: ops that touch a
// session's state (the key/value caches) take one RowRef per row saying which cache slot and which
// absolute position that row belongs to. Everything else treats rows independently.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "quant/weight_format.h"
#include "runtime/cuda_options.h"

namespace voxrt {

class Backend;
class KvCache;         // runtime/kv_cache.h
class KernelSwitches;  // runtime/kernel_switches.h

// An fp32 activation matrix owned by a backend (host or device memory).
class Buffer {
 public:
  Buffer() = default;
  Buffer(Backend* backend, int rows, int cols);
  ~Buffer();
  Buffer(Buffer&& other) noexcept;
  Buffer& operator=(Buffer&& other) noexcept;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  float* data() const { return data_; }
  int rows() const { return rows_; }
  int cols() const { return cols_; }
  size_t size() const { return static_cast<size_t>(rows_) * cols_; }
  float* row(int r) const { return data_ + static_cast<size_t>(r) * cols_; }
  // A view of rows [first, first + count) (no ownership).
  struct View { float* data; int rows; int cols; };
  View view(int first, int count) const { return {row(first), count, cols_}; }
  View all() const { return {data_, rows_, cols_}; }

 private:
  Backend* backend_ = nullptr;
  float* data_ = nullptr;
  int rows_ = 0, cols_ = 0;
};

using Mat = Buffer::View;

// A weight matrix [out_features, in_features] (or a vector when in_features == 1), uploaded once in
// the backend's preferred storage format. Opaque to the model, but for its format: bf16 values
// (None), or a quantized matrix (upload_quantized) whose products and lookups the backend computes
// over the values quant/weight_format.h defines.
struct Weight {
  std::shared_ptr<void> storage;
  int rows = 0, cols = 0;
  WeightFormat format{};
  bool empty() const { return storage == nullptr; }
};

// Which session cache slot and absolute position a row belongs to.
struct RowRef {
  int slot = 0;
  int64_t pos = 0;
};

// One product of Backend::linears: y = x W^T (+ bias) (+ y if accumulate).
struct LinearOut {
  const Weight* w = nullptr;
  const Weight* bias = nullptr;  // may be null
  Mat y{};
  bool accumulate = false;
};

// One element of Backend::add_at: x[row][col] += value.
struct MatEntry {
  int32_t row = 0, col = 0;
  float value = 0;
};

// How a backend ran its recordings (run_recorded): captured as a graph, replayed, or run op by op.
struct RecordingStats {
  uint64_t captured = 0, replayed = 0, eager = 0;
};

struct AttentionParams {
  int n_heads = 0, n_kv_heads = 0, head_dim = 0;
  int window = 0;   // keys at positions p - window + 1 .. p
  float scale = 0;  // 1 / sqrt(head_dim)
  // Rows a live step of this stack attends with for one session (the encoder's 4 frames, the
  // decoder's 1 token): a constant of the model that a backend may size its work by. It must not
  // vary between calls of one stack, so that a row's result never depends on its batch.
  int rows_per_position = 1;
};

// The machine's ceilings, measured by the backend itself (voxrt bench reports every time against the
// floor they give).
struct Ceilings {
  double copy_gbps = 0;      // a large copy within the backend's memory, bytes read + written per s
  double matmul_tflops = 0;  // a large matrix product in the backend's weight format
  std::string matmul_what;   // e.g. "sgemm 2048^3 fp32" or "cublasGemmEx 8192^3 bf16"
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;

  // Waits for all queued work (timing needs it; results never do: download() waits already).
  virtual void synchronize() {}
  // Gives memory the backend keeps cached for reuse, and that nothing holds now, back to the
  // device, after the work queued so far (a grown cache's old storage: without this the CUDA
  // backend's pool would keep it, and the device's free memory, which caches grow within, would
  // not see it again).
  virtual void release_unused_memory() {}

  // Runs `ops` as a recording: a sequence of ops that recurs with the same shapes, buffers and
  // parameters (a decoder pass, an encoder pass), so that the backend may record it once and replay
  // it: the CUDA backend captures a CUDA graph the second time a key is seen and replays it while
  // the ops' launches stay the same, recapturing when they change. Only the data the ops take from
  // the host (uploads, positions, token ids) may differ between runs. Inside a recording nothing may
  // be downloaded and no memory allocated or freed (where an op allocates, the backend runs the
  // recording op by op instead).
  // Backends without such a mechanism just call ops().
  virtual void run_recorded(const std::string& key, const std::function<void()>& ops) {
    (void)key;
    ops();
  }
  virtual RecordingStats recording_stats() const { return {}; }
  // The ceilings the benchmarks measure against; a backend may measure them once and keep them
  // (a GPU's need free memory that caches may hold later).
  virtual Ceilings measure_ceilings() = 0;
  virtual size_t weight_element_bytes() const = 0;  // how a weight element is stored (4: fp32, 2: bf16)
  virtual size_t memory_in_use() const = 0;         // device memory in use, or the process's peak RSS
  virtual size_t memory_available() const = 0;      // device memory free now, or the host's available memory
  // What the passes need beside the weights and the caches (activations, workspaces, recorded
  // graphs): the memory a cache budget leaves free, and that caches grown as sessions open never
  // take. A planning figure, measured: 1.9 GB on the GPU with 100 and with 200 live streams
  // (bench/results/2026-12-05T164543Z-cuda-streams100-issue34-close-main.json, memory.filled_bytes
  // less memory.before_bytes; 2026-12-05T110730Z-cuda-streams200-issue34-main.json).
  virtual size_t working_memory() const = 0;
  // What caches may take of the device now: its free memory less the passes' working memory.
  size_t memory_for_caches() const {
    const size_t free = memory_available(), working = working_memory();
    return free > working ? free - working : 0;
  }
  virtual size_t kv_element_bytes() const { return 4; }  // how a KvCache stores an element (4: fp32, 2: bf16, 1: fp8)
  // Whether every op's result for a row is bit for bit the same whatever other rows share its batch,
  // so that positions decoded together equal positions decoded one by one (draft verification,
  // stream_decoder.h). The CPU's products (sgemv for one row, sgemm for more) are not.
  virtual bool batch_invariant() const { return false; }
  // The benchmarks' switches (forcing one kernel path, the profiler's window), or null when this
  // backend has one way to run each op (the CPU).
  virtual KernelSwitches* kernel_switches() { return nullptr; }

  // Memory.
  virtual float* allocate(size_t floats) = 0;
  virtual void release(float* p) = 0;
  virtual void upload(float* dst, const float* src, size_t floats) = 0;
  virtual void download(float* dst, const float* src, size_t floats) = 0;
  virtual void copy(float* dst, const float* src, size_t floats) = 0;  // within the backend
  virtual void fill(float* dst, float value, size_t floats) = 0;
  virtual Weight upload_weight(std::vector<float>&& values, int rows, int cols) = 0;
  // A weight given as bf16 bits (a BF16 checkpoint's own values): a backend storing bf16 takes
  // them as they are; the default widens them to fp32 (exact) for upload_weight.
  virtual Weight upload_weight_bf16(std::vector<uint16_t>&& bits, int rows, int cols);
  // A quantized matrix (quant/weight_format.h), kept quantized: linear, linears, gated_linear and
  // embed take it like any weight. A backend without kernels for the format throws an Error naming
  // it; none of them is used for the convolutions.
  virtual Weight upload_quantized(QuantizedMatrix&& m);

  // y = x W^T (+ bias) (+ y if accumulate). x [M, K], W [N, K], y [M, N].
  virtual void linear(Mat x, const Weight& w, const Weight* bias, Mat y, bool accumulate = false) = 0;
  // Several products over the same x (a layer's q, k and v): one pass over x where the backend can.
  virtual void linears(Mat x, std::span<const LinearOut> outs) {
    for (const LinearOut& o : outs) linear(x, *o.w, o.bias, o.y, o.accumulate);
  }
  // y = silu(x W_gate^T) * (x W_up^T), the first half of a SwiGLU feed-forward. up_scratch has y's
  // shape; a backend that fuses the two products need not touch it.
  virtual void gated_linear(Mat x, const Weight& w_gate, const Weight& w_up, Mat y, Mat up_scratch) {
    linear(x, w_gate, nullptr, y);
    linear(x, w_up, nullptr, up_scratch);
    silu_mul(y, up_scratch);
  }
  // y = x / rms(x) * w, per row.
  virtual void rms_norm(Mat x, const Weight& w, float eps, Mat y) = 0;
  // rms_norm, then scale_rows(y, scales, scale_row): the decoder's delay-conditioned norm, in one
  // pass where the backend can.
  virtual void rms_norm_scaled(Mat x, const Weight& w, float eps, Mat y, Mat scales, std::span<const int> scale_row) {
    rms_norm(x, w, eps, y);
    scale_rows(y, scales, scale_row);
  }
  // x *= scale (a [cols] vector per row, given by scales[row_scale_index[r]] rows of a [*, cols]).
  virtual void scale_rows(Mat x, Mat scales, std::span<const int> scale_row) = 0;
  virtual void gelu(Mat x) = 0;                 // exact (erf) GELU in place
  virtual void silu_mul(Mat gate, Mat up) = 0;  // gate = silu(gate) * up
  virtual void add(Mat y, Mat x) = 0;           // y += x
  // Rotary embedding in the "rotate half" layout for n_heads heads of head_dim per row, at the
  // rows' positions; inv_freq has head_dim/2 entries (fp32, as the reference computes them).
  virtual void rope(Mat x, int n_heads, int head_dim, std::span<const RowRef> rows,
                    std::span<const float> inv_freq) = 0;
  // Writes rows' K and V into the cache at their positions, for one layer.
  virtual void store_kv(KvCache& cache, int layer, Mat k, Mat v, std::span<const RowRef> rows) = 0;
  // A whole cache's K and V from or to host floats (shape().elements() each; rounded to the
  // cache's storage when it is narrower).
  virtual void upload_kv(KvCache& cache, const float* keys, const float* values);
  virtual void download_kv(const KvCache& cache, float* keys, float* values);
  // Rotates every cached key of a slot (all layers, all its mapped ring entries) by -shift positions, so that
  // keys stored at position p read as if stored at p - shift (a long session's re-base).
  virtual void shift_cached_keys(KvCache& cache, int slot, int64_t shift, std::span<const float> inv_freq);
  // RoPE on q (n_heads heads) and k (the cache's kv heads), then store_kv(k, v): a layer's
  // attention inputs in one pass where the backend can.
  virtual void rope_store_kv(Mat q, Mat k, Mat v, int n_heads, std::span<const RowRef> rows,
                             std::span<const float> inv_freq, KvCache& cache, int layer);
  // out = softmax(q K^T * scale) V over each row's window in the cache (GQA: query head h reads kv
  // head h / (n_heads / n_kv_heads)). The rows' own K/V must have been stored first.
  virtual void attention(const KvCache& cache, int layer, Mat q, std::span<const RowRef> rows,
                         const AttentionParams& p, Mat out) = 0;
  // Gathers embedding rows: y[r] = table[ids[r]].
  virtual void embed(const Weight& table, std::span<const int32_t> ids, Mat y) = 0;
  // Gathers rows of a matrix: y[r] = x[rows[r]] (y.cols == x.cols; rows may repeat).
  virtual void gather_rows(Mat x, std::span<const int32_t> rows, Mat y) = 0;
  // The shape and bounds checks of gather_rows, for its implementations.
  static void check_gather_rows(Mat x, std::span<const int32_t> rows, Mat y, const char* op);
  // 1-D convolution over time with kernel 3, no padding inside the op: y[t] = b + sum_k W_k x[s*t + k]
  // for t in [0, (x.rows - 3) / s + 1). Rows are time steps. The caller prepends the causal left
  // context (zeros at the start of a stream, the previous chunk's last rows when streaming).
  // w is [out, 3 * in] with k-major columns (see voxtral/weights.cpp).
  virtual void conv1d_k3(Mat x, const Weight& w, const Weight& bias, int stride, Mat y) = 0;
  // x[e.row][e.col] += e.value for each entry, in place: sparse additions to a few elements of a
  // few rows (a decoder pass's context-bias boosts on its logits, before the argmax; its entries
  // are distinct). Entries naming one element twice both add, in an unspecified order. An entry
  // out of x's shape throws (check_add_at).
  virtual void add_at(Mat x, std::span<const MatEntry> entries) = 0;
  static void check_add_at(Mat x, std::span<const MatEntry> entries, const char* op);
  // Index of the maximum of each row (first on ties), and the gap to the runner-up.
  virtual void argmax(Mat x, std::span<int32_t> ids, std::span<float> margins) = 0;
};

std::unique_ptr<Backend> make_cpu_backend(int threads = 0);
#ifdef VOXRT_WITH_CUDA
// options: the backend's switches (runtime/cuda_options.h); by default those of the environment.
std::unique_ptr<Backend> make_cuda_backend(int device, const CudaOptions& options = cuda_options_from_environment());
#endif

}  // namespace voxrt
