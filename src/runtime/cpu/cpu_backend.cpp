// The CPU backend: fp32 arithmetic on host memory. Matrix products go to OpenBLAS, one thread a call,
// the backend's own team (common/thread_team.h) running calls over slices of the weight's rows side
// by side; the rest are simple loops over rows or (row, head) pairs on the same team (`loops` below:
// compiled for several instruction sets, picked at run time). One threading
// runtime for all of it: OpenBLAS's threads and OpenMP's, each spinning while the other ran, made a
// step 15-25x slower on a machine where another process held a core.
// Weights are converted to fp32 once at load, so the products run at the library's full speed.
#include <cblas.h>

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <new>
#include <vector>

#include "common/bf16.h"
#include "common/cpu_dispatch.h"
#include "common/error.h"
#include "common/thread_team.h"
#include "common/usable_cores.h"
#include "quant/fp8_e4m3.h"
#include "runtime/backend.h"
#include "runtime/kv_cache.h"

namespace voxrt {
namespace {

// The backend's own arithmetic, each function one loop over a range of rows or elements that the
// team runs side by side, compiled for several instruction sets and picked at run time
// (common/cpu_dispatch.h). Internal linkage on purpose: GCC exports a clone's resolver from
// libvoxrt.so whatever the symbol's visibility.
namespace loops {

// y[r][c] += bias[c] for the rows r of y (row stride `stride`) and the columns c0..c1.
VOXRT_CPU_DISPATCH void add_bias(float* y, size_t rows, size_t stride, const float* bias, size_t c0, size_t c1) {
  for (size_t r = 0; r < rows; ++r) {
    float* yr = y + r * stride;
    for (size_t c = c0; c < c1; ++c) yr[c] += bias[c];
  }
}

// Rows r0..r1 of y = g * x / sqrt(mean(x^2) + eps), rows of `cols` values.
VOXRT_CPU_DISPATCH void rms_norm(const float* x, const float* g, float eps, int cols, size_t r0, size_t r1, float* y) {
  for (size_t r = r0; r < r1; ++r) {
    const float* xr = x + r * cols;
    float* yr = y + r * cols;
    // Accumulate the mean square in double: the reference sums in fp32 with a tree reduction,
    // a double sum is at least as close to the exact value as that.
    double ss = 0;
    for (int c = 0; c < cols; ++c) ss += static_cast<double>(xr[c]) * xr[c];
    const float inv = 1.0f / std::sqrt(static_cast<float>(ss / cols) + eps);
    for (int c = 0; c < cols; ++c) yr[c] = g[c] * (xr[c] * inv);
  }
}

// x[c] *= s[c] for one row of `cols` values.
VOXRT_CPU_DISPATCH void scale_row(float* x, const float* s, int cols) {
  for (int c = 0; c < cols; ++c) x[c] *= s[c];
}

// The fp8 product's scales (quant/weight_format.h): y[m][j] = (acc[m][j] * s_x[m]) * s_w[j], added to
// y when accumulating, for the rows m of acc (n columns) and of y (row stride `stride`); s_w bf16.
VOXRT_CPU_DISPATCH void scale_fp8_product(const float* acc, size_t rows, int n, const float* s_x, const uint16_t* s_w,
                                          float* y, size_t stride, bool accumulate) {
  for (size_t m = 0; m < rows; ++m) {
    const float* a = acc + m * n;
    float* ym = y + m * stride;
    for (int j = 0; j < n; ++j) {
      const float v = (a[j] * s_x[m]) * bf16_to_float(s_w[j]);
      ym[j] = accumulate ? ym[j] + v : v;
    }
  }
}

// y[i] += x[i], i in [0, n).
VOXRT_CPU_DISPATCH void add(float* y, const float* x, size_t n) {
  for (size_t i = 0; i < n; ++i) y[i] += x[i];
}

// Rotates each of one row's n_heads heads by the angles pos * inv_freq (head_dim / 2 of them);
// cs and sn are scratch of head_dim / 2 floats each.
VOXRT_CPU_DISPATCH void rope_row(float* row, int n_heads, int head_dim, float pos, const float* inv_freq, float* cs,
                                 float* sn) {
  const int half = head_dim / 2;
  // As the reference: angle = float(pos) * inv_freq in fp32, then cos/sin in fp32.
  for (int i = 0; i < half; ++i) {
    const float a = pos * inv_freq[i];
    cs[i] = std::cos(a);
    sn[i] = std::sin(a);
  }
  for (int h = 0; h < n_heads; ++h) {
    float* v = row + static_cast<size_t>(h) * head_dim;
    for (int i = 0; i < half; ++i) {
      const float a = v[i], b = v[i + half];
      v[i] = a * cs[i] - b * sn[i];
      v[i + half] = b * cs[i] + a * sn[i];
    }
  }
}

// One query row's head against the cache: softmax(scale * q . k_j) over the keys of positions
// first..first + n - 1 of kv_head, times their values, into out (head_dim values). scores (n floats)
// and acc (head_dim doubles) are scratch.
VOXRT_CPU_DISPATCH void attend(const KvCache& cache, int layer, int slot, int64_t first, int n, int kv_head,
                               int head_dim, float scale, const float* q, float* scores, double* acc, float* out) {
  const int64_t ring = cache.shape().ring;
  const size_t head_offset = static_cast<size_t>(kv_head) * head_dim;
  const float* keys = cache.keys();
  const float* values = cache.values();
  float mx = -std::numeric_limits<float>::infinity();
  for (int j = 0; j < n; ++j) {
    const float* kv = keys + cache.offset(slot, layer, (first + j) % ring) + head_offset;
    float dot = 0;
    for (int d = 0; d < head_dim; ++d) dot += q[d] * kv[d];
    scores[j] = dot * scale;
    mx = std::max(mx, scores[j]);
  }
  double sum = 0;
  for (int j = 0; j < n; ++j) {
    scores[j] = std::exp(scores[j] - mx);
    sum += scores[j];
  }
  std::fill(acc, acc + head_dim, 0.0);
  for (int j = 0; j < n; ++j) {
    const float* vv = values + cache.offset(slot, layer, (first + j) % ring) + head_offset;
    const double w = scores[j];
    for (int d = 0; d < head_dim; ++d) acc[d] += w * vv[d];
  }
  for (int d = 0; d < head_dim; ++d) out[d] = static_cast<float>(acc[d] / sum);
}

}  // namespace loops

const float* weight_data(const Weight& w) {
  check(!w.format.quantized(), "cpu backend", "a quantized weight where fp32 values were expected");
  return static_cast<const float*>(w.storage.get());
}
const QuantizedMatrix& quantized_of(const Weight& w) { return *static_cast<const QuantizedMatrix*>(w.storage.get()); }

// Rows of a quantized weight are dequantized this many at a time into a thread's scratch and
// multiplied from there: 64 rows of the largest K (9216) are 2.4 MB of floats.
constexpr size_t kDequantizedRows = 64;

// y [M, n] (row stride ldy) = x [M, K] times rows [n, K] transposed, plus beta * y: one OpenBLAS
// call on the calling thread.
void product(const float* x, int M, int K, const float* rows, int n, float beta, float* y, int ldy) {
  if (M == 1) cblas_sgemv(CblasRowMajor, CblasNoTrans, n, K, 1.0f, rows, K, x, 1, beta, y, 1);
  else cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, M, n, K, 1.0f, x, K, rows, K, beta, y, ldy);
}

// Slices of a weight's rows (output features) for the team, each one product and its bias: at
// least 64 features and some 256 K multiply-adds, below which a call costs more than it computes.
size_t product_grain(int M, int K) {
  return std::max<size_t>(64, (size_t{1} << 18) / (static_cast<size_t>(M) * K + 1));
}

class CpuBackend final : public Backend {
 public:
  // threads: the team's size (0: one a usable core, common/usable_cores.h). OpenBLAS runs each
  // call on the calling thread; the team runs the calls side by side.
  explicit CpuBackend(int threads) : team_(threads > 0 ? threads : usable_cores()) { openblas_set_num_threads(1); }

  std::string name() const override { return "cpu"; }

  Ceilings measure_ceilings() override {
    Ceilings c;
    // Copy: 256 MiB, far beyond the caches, filled with non-zero data; best of 5.
    const size_t n = size_t{64} << 20;
    std::vector<float> a(n), b(n);
    for (size_t i = 0; i < n; ++i) a[i] = static_cast<float>(i % 1021) * 0.25f + 1.0f;
    double best = 1e30;
    for (int rep = 0; rep < 5; ++rep) {
      const auto t0 = std::chrono::steady_clock::now();
      team_.parallel_for(n, size_t{1} << 20, [&](size_t i0, size_t i1) {
        std::memcpy(b.data() + i0, a.data() + i0, (i1 - i0) * sizeof(float));
      });
      best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    c.copy_gbps = 2.0 * n * sizeof(float) / best / 1e9;
    // Matrix product: fp32 sgemm, 2048^3, random-ish data; best of 3 after one warm-up.
    const int m = 2048;
    std::vector<float> x(static_cast<size_t>(m) * m), w(x.size()), y(x.size());
    for (size_t i = 0; i < x.size(); ++i) {
      x[i] = static_cast<float>((i * 2654435761u) % 1000) / 1000.0f - 0.5f;
      w[i] = static_cast<float>((i * 40503u) % 997) / 997.0f - 0.5f;
    }
    best = 1e30;
    for (int rep = 0; rep < 4; ++rep) {
      const auto t0 = std::chrono::steady_clock::now();
      linear(Mat{x.data(), m, m}, Weight{std::shared_ptr<void>(w.data(), [](void*) {}), m, m}, nullptr,
             Mat{y.data(), m, m}, false);
      if (rep > 0) best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    c.matmul_tflops = 2.0 * m * m * m / best / 1e12;
    c.matmul_what = "OpenBLAS sgemm 2048^3 fp32, the team's slices";
    return c;
  }

  size_t weight_element_bytes() const override { return sizeof(float); }

  size_t memory_in_use() const override {
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    return static_cast<size_t>(u.ru_maxrss) * 1024;  // peak resident set, kB on Linux
  }

  // MemAvailable (free pages and the page cache the kernel would give back: the checkpoint just
  // read sits there), where /proc/meminfo says; else the free pages.
  size_t memory_available() const override {
    if (std::FILE* f = std::fopen("/proc/meminfo", "r")) {
      char line[128];
      unsigned long long kb = 0;
      bool found = false;
      while (!found && std::fgets(line, sizeof line, f)) found = std::sscanf(line, "MemAvailable: %llu kB", &kb) == 1;
      std::fclose(f);
      if (found) return static_cast<size_t>(kb) * 1024;
    }
    const long pages = sysconf(_SC_AVPHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    return pages > 0 && page > 0 ? static_cast<size_t>(pages) * static_cast<size_t>(page) : 0;
  }

  // The CPU's passes allocate what one pass of the widest batch needs (tens of MB for the full
  // model); 1 GiB leaves room for the rest of the process too.
  size_t working_memory() const override { return size_t{1} << 30; }

  float* allocate(size_t floats) override {
    void* p = std::aligned_alloc(64, std::max<size_t>(64, (floats * sizeof(float) + 63) / 64 * 64));
    if (!p) throw Error("cpu backend: out of memory allocating " + std::to_string(floats * 4) + " bytes");
    return static_cast<float*>(p);
  }
  void release(float* p) override { std::free(p); }
  void upload(float* dst, const float* src, size_t n) override { std::memcpy(dst, src, n * sizeof(float)); }
  void download(float* dst, const float* src, size_t n) override { std::memcpy(dst, src, n * sizeof(float)); }
  void copy(float* dst, const float* src, size_t n) override { std::memcpy(dst, src, n * sizeof(float)); }
  void fill(float* dst, float value, size_t n) override { std::fill(dst, dst + n, value); }

  Weight upload_weight(std::vector<float>&& values, int rows, int cols) override {
    auto* owned = new std::vector<float>(std::move(values));
    Weight w;
    w.storage = std::shared_ptr<void>(owned->data(), [owned](void*) { delete owned; });
    w.rows = rows;
    w.cols = cols;
    return w;
  }

  // A quantized matrix stays quantized (a quarter or half of bf16's memory, an eighth or a quarter
  // of the fp32 the CPU keeps other weights in); its products dequantize it a slice at a time.
  Weight upload_quantized(QuantizedMatrix&& m) override {
    m.check_consistent("cpu upload_quantized");
    auto owned = std::make_shared<QuantizedMatrix>(std::move(m));
    Weight w;
    w.rows = owned->rows;
    w.cols = owned->cols;
    w.format = owned->format;
    w.storage = std::shared_ptr<void>(owned, owned.get());
    return w;
  }

  void linear(Mat x, const Weight& w, const Weight* bias, Mat y, bool accumulate) override {
    const int M = x.rows, K = x.cols, N = w.rows;
    check(K == w.cols && y.rows == M && y.cols == N, "cpu linear", "shape mismatch");
    if (M == 0) return;
    const float* b = bias ? weight_data(*bias) : nullptr;
    if (w.format.kind == QuantKind::Fp8) return fp8_linear(x, quantized_of(w), b, y, accumulate);
    const float beta = accumulate ? 1.0f : 0.0f;
    const bool quantized = w.format.quantized();
    // One loop of the team a product, over slices of the weight's rows.
    team_.parallel_for(N, product_grain(M, K), [&](size_t n0, size_t n1) {
      if (!quantized) {
        product(x.data, M, K, weight_data(w) + n0 * K, static_cast<int>(n1 - n0), beta, y.data + n0, N);
      } else {
        const QuantizedMatrix& q = quantized_of(w);
        thread_local std::vector<float> rows;
        rows.resize(kDequantizedRows * K);
        for (size_t r0 = n0; r0 < n1; r0 += kDequantizedRows) {
          const size_t r1 = std::min(n1, r0 + kDequantizedRows);
          for (size_t r = r0; r < r1; ++r) dequantize_row(q, static_cast<int>(r), rows.data() + (r - r0) * K);
          product(x.data, M, K, rows.data(), static_cast<int>(r1 - r0), beta, y.data + r0, N);
        }
      }
      if (b) loops::add_bias(y.data, M, N, b, n0, n1);
    });
  }

  void rms_norm(Mat x, const Weight& w, float eps, Mat y) override {
    team_.parallel_for(x.rows, 4, [&](size_t r0, size_t r1) {
      loops::rms_norm(x.data, weight_data(w), eps, x.cols, r0, r1, y.data);
    });
  }

  void scale_rows(Mat x, Mat scales, std::span<const int> scale_row) override {
    team_.parallel_for(x.rows, 4, [&](size_t r0, size_t r1) {
      for (size_t r = r0; r < r1; ++r)
        loops::scale_row(x.data + r * x.cols, scales.data + static_cast<size_t>(scale_row[r]) * scales.cols, x.cols);
    });
  }

  void gelu(Mat x) override {
    const size_t n = static_cast<size_t>(x.rows) * x.cols;
    float* d = x.data;
    team_.parallel_for(n, kElementGrain, [&](size_t i0, size_t i1) {
      for (size_t i = i0; i < i1; ++i) d[i] = 0.5f * d[i] * (1.0f + std::erf(d[i] * static_cast<float>(M_SQRT1_2)));
    });
  }

  void silu_mul(Mat gate, Mat up) override {
    const size_t n = static_cast<size_t>(gate.rows) * gate.cols;
    float* g = gate.data;
    const float* u = up.data;
    team_.parallel_for(n, kElementGrain, [&](size_t i0, size_t i1) {
      for (size_t i = i0; i < i1; ++i) g[i] = g[i] / (1.0f + std::exp(-g[i])) * u[i];
    });
  }

  void add(Mat y, Mat x) override {
    const size_t n = static_cast<size_t>(y.rows) * y.cols;
    team_.parallel_for(n, kElementGrain,
                       [&](size_t i0, size_t i1) { loops::add(y.data + i0, x.data + i0, i1 - i0); });
  }

  void rope(Mat x, int n_heads, int head_dim, std::span<const RowRef> rows,
            std::span<const float> inv_freq) override {
    team_.parallel_for(x.rows, 4, [&](size_t r0, size_t r1) {
      std::vector<float> cs(head_dim / 2), sn(head_dim / 2);
      for (size_t r = r0; r < r1; ++r)
        loops::rope_row(x.data + r * x.cols, n_heads, head_dim, static_cast<float>(rows[r].pos), inv_freq.data(),
                            cs.data(), sn.data());
    });
  }

  void store_kv(KvCache& cache, int layer, Mat k, Mat v, std::span<const RowRef> rows) override {
    const KvCacheShape& s = cache.shape();
    const size_t width = static_cast<size_t>(s.kv_heads) * s.head_dim;
    float* keys = cache.keys();
    float* values = cache.values();
    for (int r = 0; r < k.rows; ++r) {
      check_with(rows[r].slot >= 0 && rows[r].slot < s.slots && rows[r].pos >= 0 &&
                     cache.page_of(rows[r].slot, rows[r].pos % s.ring) >= 0,
                 "cpu store_kv", [&] {
                   return "row " + std::to_string(r) + ": slot " + std::to_string(rows[r].slot) + " position " +
                          std::to_string(rows[r].pos) + " out of range or its cache page not mapped";
                 });
      const size_t off = cache.offset(rows[r].slot, layer, rows[r].pos % s.ring);
      std::memcpy(keys + off, k.data + r * width, width * sizeof(float));
      std::memcpy(values + off, v.data + r * width, width * sizeof(float));
    }
  }

  void attention(const KvCache& cache, int layer, Mat q, std::span<const RowRef> rows,
                 const AttentionParams& p, Mat out) override {
    const int group = p.n_heads / p.n_kv_heads;
    const int hd = p.head_dim;
    const int n_tasks = q.rows * p.n_heads;
    team_.parallel_for(n_tasks, 1, [&](size_t t0, size_t t1) {
      std::vector<float> scores;
      std::vector<double> acc(hd);
      for (size_t task = t0; task < t1; ++task) {
        const int r = static_cast<int>(task) / p.n_heads, h = static_cast<int>(task) % p.n_heads;
        const int64_t pos = rows[r].pos;
        const int64_t first = std::max<int64_t>(0, pos - p.window + 1);
        const int n = static_cast<int>(pos - first + 1);
        scores.resize(n);
        loops::attend(cache, layer, rows[r].slot, first, n, h / group, hd, p.scale,
                          q.data + static_cast<size_t>(r) * q.cols + static_cast<size_t>(h) * hd, scores.data(),
                          acc.data(), out.data + static_cast<size_t>(r) * out.cols + static_cast<size_t>(h) * hd);
      }
    });
  }

  void embed(const Weight& table, std::span<const int32_t> ids, Mat y) override {
    for (int r = 0; r < y.rows; ++r) {
      check_with(ids[r] >= 0 && ids[r] < table.rows, "embedding",
                 [&] { return "token id " + std::to_string(ids[r]) + " out of range"; });
      float* out = y.data + static_cast<size_t>(r) * y.cols;
      if (table.format.quantized())
        dequantize_row(quantized_of(table), ids[r], out);
      else
        std::memcpy(out, weight_data(table) + static_cast<size_t>(ids[r]) * table.cols, table.cols * sizeof(float));
    }
  }

  void gather_rows(Mat x, std::span<const int32_t> rows, Mat y) override {
    check_gather_rows(x, rows, y, "cpu gather_rows");
    for (int r = 0; r < y.rows; ++r)
      std::memcpy(y.data + static_cast<size_t>(r) * y.cols, x.data + static_cast<size_t>(rows[r]) * x.cols,
                  x.cols * sizeof(float));
  }

  void conv1d_k3(Mat x, const Weight& w, const Weight& bias, int stride, Mat y) override {
    // im2col: row t of the patch matrix is x[s*t], x[s*t+1], x[s*t+2] side by side, so the
    // convolution becomes one matrix product with w [out, 3*in].
    const int cin = x.cols, t_out = y.rows;
    check(t_out == (x.rows - 3) / stride + 1 && w.cols == 3 * cin, "cpu conv1d", "shape mismatch");
    std::vector<float> patches(static_cast<size_t>(t_out) * 3 * cin);
    team_.parallel_for(t_out, 16, [&](size_t t0, size_t t1) {
      for (size_t t = t0; t < t1; ++t)
        std::memcpy(patches.data() + t * 3 * cin, x.data + static_cast<size_t>(stride) * t * cin, 3 * cin * sizeof(float));
    });
    linear(Mat{patches.data(), t_out, 3 * cin}, w, &bias, y, false);
  }

  void add_at(Mat x, std::span<const MatEntry> entries) override {
    check_add_at(x, entries, "cpu add_at");
    for (const MatEntry& e : entries) x.data[static_cast<size_t>(e.row) * x.cols + e.col] += e.value;
  }

  void argmax(Mat x, std::span<int32_t> ids, std::span<float> margins) override {
    for (int r = 0; r < x.rows; ++r) {
      const float* v = x.data + static_cast<size_t>(r) * x.cols;
      int best = 0;
      float b1 = v[0], b2 = -std::numeric_limits<float>::infinity();
      for (int c = 1; c < x.cols; ++c) {
        if (v[c] > b1) {
          b2 = b1;
          b1 = v[c];
          best = c;
        } else if (v[c] > b2) {
          b2 = v[c];
        }
      }
      ids[r] = best;
      if (!margins.empty()) margins[r] = b1 - b2;
    }
  }

 private:
  // fp8 weights (W8A8, quant/weight_format.h): x's rows quantized to e4m3 once a call, then for
  // slices of the weight's rows the codes' exact values (without their scales) multiplied in fp32
  // by OpenBLAS into a scratch, and the scales applied to that product alone before it lands in y
  // (added to y when accumulating): y = (acc * s_x) * s_w (+ y) (+ bias).
  void fp8_linear(Mat x, const QuantizedMatrix& q, const float* bias, Mat y, bool accumulate) {
    const int M = x.rows, K = x.cols, N = q.rows;
    // The calling thread's scratch (calls from several threads each have their own). The team's
    // threads reach it through these pointers: a thread_local named inside their loop would be
    // each worker's own variable.
    thread_local std::vector<float> x_values, x_scales;
    x_values.resize(static_cast<size_t>(M) * K);
    x_scales.resize(M);
    float* const xq = x_values.data();
    float* const sx = x_scales.data();
    team_.parallel_for(M, 1, [&](size_t m0, size_t m1) {
      for (size_t m = m0; m < m1; ++m) sx[m] = quantize_activation_row_e4m3(x.data + m * K, K, xq + m * K);
    });
    team_.parallel_for(N, product_grain(M, K), [&](size_t n0, size_t n1) {
      thread_local std::vector<float> rows, acc;
      rows.resize(kDequantizedRows * K);
      acc.resize(kDequantizedRows * M);
      for (size_t r0 = n0; r0 < n1; r0 += kDequantizedRows) {
        const int n = static_cast<int>(std::min(n1, r0 + kDequantizedRows) - r0);
        for (int r = 0; r < n; ++r)
          e4m3_to_floats(q.packed.data() + (r0 + r) * K, K, rows.data() + static_cast<size_t>(r) * K);
        product(xq, M, K, rows.data(), n, 0.0f, acc.data(), n);
        loops::scale_fp8_product(acc.data(), M, n, sx, q.scales.data() + r0, y.data + r0, N, accumulate);
      }
      if (bias) loops::add_bias(y.data, M, N, bias, n0, n1);
    });
  }

  // Elementwise loops: pieces of at least 64 K values (a piece less is not worth a thread's wake).
  static constexpr size_t kElementGrain = size_t{1} << 16;
  ThreadTeam team_;
};

}  // namespace

std::unique_ptr<Backend> make_cpu_backend(int threads) { return std::make_unique<CpuBackend>(threads); }

}  // namespace voxrt
