// The CUDA backend against the CPU backend, op by op, on fresh random inputs each run (the seed is
// printed and named in every failure). Outputs are poisoned with NaN before each run so that an
// element a kernel forgets to write fails the comparison. Tolerances:
//  - copies, fills, stores, gathers, single fp32 adds/multiplies, argmax: bit-exact;
//  - other fp32 ops (rms_norm, gelu, silu_mul, rope): |gpu - cpu| <= 1e-5 |cpu| + a small floor
//    for values near zero (the floor is stated per test, relative to the output's scale);
//  - bf16 products (linear, conv1d_k3): normwise, max |gpu - ref| <= rtol * max |ref|, with
//    rtol 1e-5 against the CPU on bf16-rounded inputs and weights (the same products, only the
//    fp32 summation order differs) and 1e-2 against the CPU on the original fp32 values;
//  - attention: |gpu - cpu| <= 1e-5 |cpu| + 2e-6 max|V| (the output is a convex combination of V).
// Each test skips itself, saying why, without a CUDA build or a CUDA device.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "common/error.h"
#include "runtime/backend.h"
#include "runtime/kernel_switches.h"
#include "runtime/kv_cache.h"
#include "models/voxtral/model.h"
#ifdef VOXRT_WITH_CUDA
#include "runtime/cuda/cuda_device.h"
#include "runtime/cuda/cuda_kernels.h"
#endif

namespace voxrt {
namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

// Host round-to-nearest-even to bf16, the storage the CUDA backend uses for weight matrices.
float bf16_round(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return f;  // NaN
  u += 0x7fffu + ((u >> 16) & 1u);
  u &= 0xffff0000u;
  std::memcpy(&f, &u, 4);
  return f;
}

std::vector<float> bf16_round(std::vector<float> v) {
  for (float& x : v) x = bf16_round(x);
  return v;
}

double max_abs(const std::vector<float>& v) {
  double m = 0;
  for (float x : v) m = std::max(m, static_cast<double>(std::fabs(x)));
  return m;
}

class CudaBackendTest : public ::testing::Test {
 protected:
  void SetUp() override {
#ifndef VOXRT_WITH_CUDA
    GTEST_SKIP() << "built without CUDA (cmake --preset cuda builds it)";
#else
    if (cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device on this machine: GPU test skipped";
    cpu_ = make_cpu_backend(1);
    gpu_ = make_cuda_backend(0);
    seed_ = std::random_device{}();
    rng_.seed(seed_);
    std::printf("seed %u\n", seed_);
#endif
  }

  Backend& cpu() { return *cpu_; }
  Backend& gpu() { return *gpu_; }

  // Uniform in [lo, hi), never exactly zero.
  std::vector<float> random(size_t n, float lo = -1.0f, float hi = 1.0f) {
    std::uniform_real_distribution<float> d(lo, hi);
    std::vector<float> v(n);
    for (float& x : v) {
      do x = d(rng_);
      while (x == 0.0f);
    }
    return v;
  }
  int random_int(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }

  static Buffer put(Backend& b, const std::vector<float>& v, int rows, int cols) {
    EXPECT_EQ(v.size(), static_cast<size_t>(rows) * cols);
    Buffer buf(&b, rows, cols);
    b.upload(buf.data(), v.data(), v.size());
    return buf;
  }
  static std::vector<float> get(Backend& b, const float* p, size_t n) {
    std::vector<float> v(n);
    b.download(v.data(), p, n);
    return v;
  }
  static std::vector<float> get(Backend& b, Mat m) { return get(b, m.data, static_cast<size_t>(m.rows) * m.cols); }
  static void poison(Backend& b, Mat m) { b.fill(m.data, kNaN, static_cast<size_t>(m.rows) * m.cols); }

  // The argmax of g on the GPU and of c (the same values) on the CPU: the same ids and margins, bit
  // for bit. Returns the GPU's.
  struct Argmax {
    std::vector<int32_t> ids;
    std::vector<float> margins;
  };
  Argmax expect_same_argmax(Mat g, Mat c) {
    Argmax gpu_result{std::vector<int32_t>(g.rows, -7), std::vector<float>(g.rows, kNaN)};
    Argmax cpu_result = gpu_result;
    gpu().argmax(g, gpu_result.ids, gpu_result.margins);
    cpu().argmax(c, cpu_result.ids, cpu_result.margins);
    EXPECT_EQ(gpu_result.ids, cpu_result.ids);
    EXPECT_TRUE(exact(gpu_result.margins, cpu_result.margins)) << "margins";
    return gpu_result;
  }

  // Every element within atol + rtol |want| (NaN never is); reports the worst and the first few misses.
  ::testing::AssertionResult close(const std::vector<float>& got, const std::vector<float>& want, double rtol,
                                   double atol) const {
    if (got.size() != want.size())
      return ::testing::AssertionFailure() << "size " << got.size() << " vs " << want.size();
    size_t bad = 0, worst_i = 0;
    double worst = 0;
    std::ostringstream first;
    for (size_t i = 0; i < got.size(); ++i) {
      const double d = std::fabs(static_cast<double>(got[i]) - want[i]);
      const double tol = atol + rtol * std::fabs(want[i]);
      if (!(d <= tol)) {
        if (bad < 5) first << "  [" << i << "] got " << got[i] << " want " << want[i] << "\n";
        ++bad;
      }
      if (!(d <= worst)) {
        worst = std::isnan(d) ? std::numeric_limits<double>::infinity() : d;
        worst_i = i;
      }
    }
    if (bad == 0) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << bad << " of " << got.size() << " elements off (rtol " << rtol << ", atol "
                                         << atol << "), worst |diff| " << worst << " at " << worst_i << ", seed "
                                         << seed_ << "\n"
                                         << first.str();
  }
  ::testing::AssertionResult exact(const std::vector<float>& got, const std::vector<float>& want) const {
    if (got.size() != want.size())
      return ::testing::AssertionFailure() << "size " << got.size() << " vs " << want.size();
    for (size_t i = 0; i < got.size(); ++i)
      if (std::memcmp(&got[i], &want[i], 4) != 0 && !(std::isnan(got[i]) && std::isnan(want[i])))
        return ::testing::AssertionFailure() << "[" << i << "] got " << got[i] << " want " << want[i] << ", seed "
                                             << seed_;
    return ::testing::AssertionSuccess();
  }
  // Normwise: max |got - want| <= rtol * max |want|.
  ::testing::AssertionResult normwise(const std::vector<float>& got, const std::vector<float>& want, double rtol) const {
    return close(got, want, 0.0, rtol * max_abs(want));
  }

  // What the GPU's K/V cache holds for these values: bf16-rounded when it stores bf16 (the CPU
  // reference then gets the same rounded K/V, so attention tolerances stay those of fp32 sums).
  std::vector<float> as_stored_kv(std::vector<float> v) { return as_stored_kv(std::move(v), gpu()); }
  static std::vector<float> as_stored_kv(std::vector<float> v, const Backend& b) {
    return b.kv_element_bytes() == 2 ? bf16_round(std::move(v)) : v;
  }
  struct KvContents {
    std::vector<float> keys, values;
  };
  static KvContents contents(Backend& b, const KvCache& c) {
    KvContents out{std::vector<float>(c.shape().elements()), std::vector<float>(c.shape().elements())};
    b.download_kv(c, out.keys.data(), out.values.data());
    return out;
  }

  struct LinearCase {
    int M, N, K;
    bool bias, accumulate;
  };
  void check_linear(const LinearCase& c);
  // The tiled GEMM of b (whichever kernel its options choose) against its GEMV, bit for bit.
  // On a backend of its own whose tiled GEMM is the wgmma one or the mma.sync one.
  void check_gemm_against_gemv(bool wgmma);
  void check_gemm_against_gemv(Backend& b);

  struct AttentionCase {
    KvCacheShape shape;
    int layer, n_heads, window;
    float q_scale;  // larger -> peakier softmax
    std::vector<RowRef> rows;
    int rows_per_position = 1;  // AttentionParams::rows_per_position (the GPU's key split)
  };
  void check_attention(const AttentionCase& c) { check_attention(c, gpu()); }
  void check_attention(const AttentionCase& c, Backend& g);
  // Attention on backend b over a cache of shape s holding keys k and values v (a paged shape's
  // pages mapped the same way on every backend, the slots' pages interleaved), as floats.
  static std::vector<float> attention_on(Backend& b, const KvCacheShape& s, const std::vector<float>& k,
                                         const std::vector<float>& v, int layer, const std::vector<float>& q,
                                         const std::vector<RowRef>& rows, const AttentionParams& p);
  // Each of rows, launched alone on b, computes the bits it computes launched with the others.
  void check_rows_alone_as_together(Backend& b, const KvCacheShape& s, const std::vector<RowRef>& rows,
                                    const AttentionParams& p);

  std::unique_ptr<Backend> cpu_, gpu_;
  unsigned seed_ = 0;
  std::mt19937 rng_;
};

// ---- Memory ----

TEST_F(CudaBackendTest, UploadDownloadCopyFillRoundTrip) {
  const size_t n = 1000003;
  const auto host = random(n);
  float* a = gpu().allocate(n);
  float* b = gpu().allocate(n);
  gpu().upload(a, host.data(), n);
  EXPECT_TRUE(exact(get(gpu(), a, n), host));
  // Unaligned offsets on both sides.
  gpu().fill(b, -2.5f, n);
  gpu().copy(b + 5, a + 3, 777);
  gpu().fill(b + 1000, 3.25f, 4099);
  std::vector<float> want(n, -2.5f);
  std::copy(host.begin() + 3, host.begin() + 3 + 777, want.begin() + 5);
  std::fill(want.begin() + 1000, want.begin() + 1000 + 4099, 3.25f);
  EXPECT_TRUE(exact(get(gpu(), b, n), want));
  gpu().release(a);
  gpu().release(b);
}

TEST_F(CudaBackendTest, ManySmallUploadsWithoutSynchronisationAllLand) {
  // 400 uploads of 16 KiB overrun the pinned staging buffer several times before the first download.
  const int chunks = 400, len = 4096;
  const auto host = random(static_cast<size_t>(chunks) * len);
  Buffer buf(&gpu(), chunks, len);
  for (int i = 0; i < chunks; ++i) gpu().upload(buf.row(i), host.data() + static_cast<size_t>(i) * len, len);
  EXPECT_TRUE(exact(get(gpu(), buf.all()), host));
  // And one upload larger than the staging path takes (6 MB, synchronous).
  const auto big = random(1500000);
  Buffer b2 = put(gpu(), big, 1, static_cast<int>(big.size()));
  EXPECT_TRUE(exact(get(gpu(), b2.all()), big));
}

TEST_F(CudaBackendTest, AllocationFailureThrowsAndTheBackendStillWorks) {
  try {
    gpu().allocate(size_t{1} << 50);  // 4 PiB
    ADD_FAILURE() << "allocating 4 PiB did not throw";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("out of memory"), std::string::npos) << e.what();
  }
  const auto host = random(1000);
  Buffer b = put(gpu(), host, 10, 100);
  EXPECT_TRUE(exact(get(gpu(), b.all()), host));
}

// bench --find-capacity runs its trials on one engine, whose caches reserve most of the device after
// the first: the ceilings each trial reports must not need the memory again (they did: every trial
// after the first failed with "out of memory" in the ceilings' copy buffers, not for its streams).
TEST_F(CudaBackendTest, CeilingsStillAnswerOnceTheMemoryIsTaken) {
  const Ceilings first = gpu().measure_ceilings();
  EXPECT_GT(first.copy_gbps, 0);
  EXPECT_GT(first.matmul_tflops, 0);
  std::vector<float*> taken;
  const size_t chunk = size_t{256} << 20;  // floats: 1 GiB
  while (gpu().memory_available() > 2 * chunk * sizeof(float)) taken.push_back(gpu().allocate(chunk));
  ASSERT_LT(gpu().memory_available(), size_t{4} << 30) << "could not take the device's memory";
  try {
    const Ceilings again = gpu().measure_ceilings();
    EXPECT_EQ(again.copy_gbps, first.copy_gbps);
    EXPECT_EQ(again.matmul_tflops, first.matmul_tflops);
    EXPECT_EQ(again.matmul_what, first.matmul_what);
  } catch (const Error& e) {
    ADD_FAILURE() << e.what();
  }
  for (float* p : taken) gpu().release(p);
}

TEST_F(CudaBackendTest, WeightsAreStoredAsRoundedBf16) {
  // Ties go to even, above-half rounds up, below-half down; signs and magnitudes vary.
  const float h = std::ldexp(1.0f, -8);  // half a bf16 ulp at 1.0
  std::vector<float> v = {1.0f + h,        1.0f + 3 * h,        1.0f + h + std::ldexp(1.0f, -20),
                          1.0f + h - std::ldexp(1.0f, -20),     -(1.0f + h),  -(1.0f + 3 * h),
                          3.0e38f,         1.0e-30f,            65504.0f,     -7.0f,
                          0.1f,            -0.3333333f,         1.0e-40f,     12345.678f,
                          -1.0e20f,        2.0f};
  const auto rnd = random(16);
  v.insert(v.end(), rnd.begin(), rnd.end());
  const int rows = 4, cols = 8;
  Weight w = gpu().upload_weight(std::vector<float>(v), rows, cols);
  Buffer y(&gpu(), rows, cols);
  poison(gpu(), y.all());
  const std::vector<int32_t> ids = {0, 1, 2, 3};
  gpu().embed(w, ids, y.all());
  EXPECT_TRUE(exact(get(gpu(), y.all()), bf16_round(v)));
  // Vectors (cols == 1) are kept in fp32: an rms_norm with unit rows returns the weight's values.
  const auto g = random(64);
  Weight wv = gpu().upload_weight(std::vector<float>(g), 64, 1);
  Buffer ones = put(gpu(), std::vector<float>(64, 1.0f), 1, 64), out(&gpu(), 1, 64);
  gpu().rms_norm(ones.all(), wv, 0.0f, out.all());
  EXPECT_TRUE(close(get(gpu(), out.all()), g, 1e-6, 0));
}

// ---- linear ----

void CudaBackendTest::check_linear(const LinearCase& c) {
  SCOPED_TRACE("linear M=" + std::to_string(c.M) + " N=" + std::to_string(c.N) + " K=" + std::to_string(c.K) +
               (c.bias ? " bias" : "") + (c.accumulate ? " accumulate" : ""));
  const auto x = random(static_cast<size_t>(c.M + 2) * c.K);  // the product reads rows 1 .. M
  const auto w = random(static_cast<size_t>(c.N) * c.K);
  const auto b = random(c.N);
  const auto y0 = random(static_cast<size_t>(c.M + 4) * c.N);  // the product writes rows 2 .. M+1
  const auto xr = bf16_round(x), wr = bf16_round(w);

  // gpu: x and y are views into larger buffers; rows outside must not change.
  Buffer gx = put(gpu(), x, c.M + 2, c.K), gy = put(gpu(), y0, c.M + 4, c.N);
  Weight gw = gpu().upload_weight(std::vector<float>(w), c.N, c.K);
  Weight gb = gpu().upload_weight(std::vector<float>(b), c.N, 1);
  if (!c.accumulate) poison(gpu(), gy.view(2, c.M));
  gpu().linear(gx.view(1, c.M), gw, c.bias ? &gb : nullptr, gy.view(2, c.M), c.accumulate);
  const auto got_all = get(gpu(), gy.all());

  auto reference = [&](const std::vector<float>& xs, const std::vector<float>& ws) {
    Buffer cx = put(cpu(), xs, c.M + 2, c.K), cy = put(cpu(), y0, c.M + 4, c.N);
    Weight cw = cpu().upload_weight(std::vector<float>(ws), c.N, c.K);
    Weight cb = cpu().upload_weight(std::vector<float>(b), c.N, 1);
    cpu().linear(cx.view(1, c.M), cw, c.bias ? &cb : nullptr, cy.view(2, c.M), c.accumulate);
    return get(cpu(), cy.all());
  };
  const auto want_bf16 = reference(xr, wr);
  const auto want_f32 = reference(x, w);

  const size_t lo = 2 * static_cast<size_t>(c.N), hi = lo + static_cast<size_t>(c.M) * c.N;
  const std::vector<float> got(got_all.begin() + lo, got_all.begin() + hi);
  EXPECT_TRUE(normwise(got, std::vector<float>(want_bf16.begin() + lo, want_bf16.begin() + hi), 1e-5))
      << "against bf16-rounded inputs";
  EXPECT_TRUE(normwise(got, std::vector<float>(want_f32.begin() + lo, want_f32.begin() + hi), 1e-2))
      << "against fp32 inputs";
  EXPECT_TRUE(exact(std::vector<float>(got_all.begin(), got_all.begin() + lo), std::vector<float>(y0.begin(), y0.begin() + lo)))
      << "rows before the output view changed";
  EXPECT_TRUE(exact(std::vector<float>(got_all.begin() + hi, got_all.end()), std::vector<float>(y0.begin() + hi, y0.end())))
      << "rows after the output view changed";
}

TEST_F(CudaBackendTest, Bf16WeightUploadEqualsTheFp32Upload) {
  // upload_weight_bf16 (a BF16 checkpoint's bits) stores exactly what upload_weight stores for
  // the same values: the products through either weight are bit for bit equal.
  const int M = 3, N = 700, K = 1024;
  std::vector<float> w = bf16_round(random(static_cast<size_t>(N) * K));
  std::vector<uint16_t> bits(w.size());
  for (size_t i = 0; i < w.size(); ++i) {
    uint32_t u;
    std::memcpy(&u, &w[i], 4);
    bits[i] = static_cast<uint16_t>(u >> 16);
  }
  Weight a = gpu().upload_weight(std::vector<float>(w), N, K), b = gpu().upload_weight_bf16(std::move(bits), N, K);
  Buffer x = put(gpu(), random(static_cast<size_t>(M) * K), M, K), ya(&gpu(), M, N), yb(&gpu(), M, N);
  gpu().linear(x.all(), a, nullptr, ya.all());
  gpu().linear(x.all(), b, nullptr, yb.all());
  EXPECT_TRUE(exact(get(gpu(), ya.all()), get(gpu(), yb.all())));
}

TEST_F(CudaBackendTest, LinearGemvRowsMatchCpu) {
  // A few rows with K % 8 == 0: one GEMV launch.
  check_linear({1, 1024, 3072, false, false});
  check_linear({1, 2048, 1280, true, false});
  check_linear({1, 3072, 2048, true, true});
  check_linear({2, 1280, 5120, false, true});
  check_linear({3, 1280, 2048, true, true});
  check_linear({4, 777, 1288, true, false});
  check_linear({5, 64, 9216, false, false});
  check_linear({8, 515, 5120, true, true});
  check_linear({7, 33, 8, false, false});
}

TEST_F(CudaBackendTest, LinearCublasRowsMatchCpu) {
  // Larger batches (the GEMV in groups of rows) and K not a multiple of 8 (cuBLAS).
  check_linear({9, 1280, 1280, true, true});
  check_linear({64, 3072, 1280, false, false});
  check_linear({300, 1000, 384, true, false});
  check_linear({100, 2048, 5120, false, true});
  check_linear({2, 100, 36, true, true});
  check_linear({1, 257, 101, false, false});
  check_linear({37, 131, 3, true, false});
}

TEST_F(CudaBackendTest, LinearOverVectorWeightIsFp32) {
  // A weight stored as a vector ([N, 1], fp32): a linear with K == 1 needs no bf16 rounding.
  const int M = 5, N = 7;
  const auto x = random(M), w = random(N), b = random(N);
  Buffer gx = put(gpu(), x, M, 1), gy(&gpu(), M, N), cx = put(cpu(), x, M, 1), cy(&cpu(), M, N);
  Weight gw = gpu().upload_weight(std::vector<float>(w), N, 1), gb = gpu().upload_weight(std::vector<float>(b), N, 1);
  Weight cw = cpu().upload_weight(std::vector<float>(w), N, 1), cb = cpu().upload_weight(std::vector<float>(b), N, 1);
  poison(gpu(), gy.all());
  gpu().linear(gx.all(), gw, &gb, gy.all());
  cpu().linear(cx.all(), cw, &cb, cy.all());
  EXPECT_TRUE(close(get(gpu(), gy.all()), get(cpu(), cy.all()), 1e-6, 1e-7));
}

TEST_F(CudaBackendTest, LinearShapeMismatchThrows) {
  Buffer x(&gpu(), 2, 16), y(&gpu(), 2, 8);
  Weight w = gpu().upload_weight(random(8 * 15), 8, 15);
  EXPECT_THROW(gpu().linear(x.all(), w, nullptr, y.all()), Error);
}

TEST_F(CudaBackendTest, Conv1dK3MatchesCpu) {
  struct Case {
    int t_out, cin, cout, stride;
  };
  for (const Case c : {Case{60, 128, 64, 1}, Case{4, 96, 80, 2}, Case{33, 64, 48, 2}, Case{3, 128, 40, 1}}) {
    SCOPED_TRACE("conv t_out=" + std::to_string(c.t_out) + " cin=" + std::to_string(c.cin) +
                 " stride=" + std::to_string(c.stride));
    const int t_in = (c.t_out - 1) * c.stride + 3;
    const auto x = random(static_cast<size_t>(t_in) * c.cin);
    const auto w = random(static_cast<size_t>(c.cout) * 3 * c.cin);
    const auto b = random(c.cout);
    // Output as rows 1.. of a buffer, as the conv stem writes it.
    Buffer gx = put(gpu(), x, t_in, c.cin), gy(&gpu(), c.t_out + 1, c.cout);
    Weight gw = gpu().upload_weight(std::vector<float>(w), c.cout, 3 * c.cin);
    Weight gb = gpu().upload_weight(std::vector<float>(b), c.cout, 1);
    poison(gpu(), gy.all());
    gpu().conv1d_k3(gx.all(), gw, gb, c.stride, gy.view(1, c.t_out));
    const auto got = get(gpu(), gy.view(1, c.t_out));
    EXPECT_TRUE(std::isnan(get(gpu(), gy.view(0, 1))[0])) << "row before the output written";
    for (bool rounded : {true, false}) {
      Buffer cx = put(cpu(), rounded ? bf16_round(x) : x, t_in, c.cin), cy(&cpu(), c.t_out, c.cout);
      Weight cw = cpu().upload_weight(rounded ? bf16_round(w) : std::vector<float>(w), c.cout, 3 * c.cin);
      Weight cb = cpu().upload_weight(std::vector<float>(b), c.cout, 1);
      cpu().conv1d_k3(cx.all(), cw, cb, c.stride, cy.all());
      EXPECT_TRUE(normwise(got, get(cpu(), cy.all()), rounded ? 1e-5 : 1e-2)) << (rounded ? "bf16 inputs" : "fp32 inputs");
    }
  }
}

// ---- Row-wise and element-wise ops ----

TEST_F(CudaBackendTest, RmsNormMatchesCpu) {
  for (const int D : {1280, 3072, 1000, 7}) {
    SCOPED_TRACE("D=" + std::to_string(D));
    const int rows = 9;
    const auto x = random(static_cast<size_t>(rows) * D, -3.0f, 3.0f);
    const auto g = random(D, 0.5f, 1.5f);
    const float eps = 1e-5f;
    Weight gw = gpu().upload_weight(std::vector<float>(g), D, 1), cw = cpu().upload_weight(std::vector<float>(g), D, 1);
    Buffer gx = put(gpu(), x, rows, D), gy(&gpu(), rows, D), cx = put(cpu(), x, rows, D), cy(&cpu(), rows, D);
    poison(gpu(), gy.all());
    gpu().rms_norm(gx.all(), gw, eps, gy.all());
    cpu().rms_norm(cx.all(), cw, eps, cy.all());
    const auto want = get(cpu(), cy.all());
    EXPECT_TRUE(close(get(gpu(), gy.all()), want, 1e-5, 1e-7 * max_abs(want))) << "out of place";
    gpu().rms_norm(gx.all(), gw, eps, gx.all());  // in place, as the encoder's final norm
    EXPECT_TRUE(close(get(gpu(), gx.all()), want, 1e-5, 1e-7 * max_abs(want))) << "in place";
  }
}

TEST_F(CudaBackendTest, ScaleRowsMatchesCpu) {
  const int rows = 11, cols = 3072, n_scales = 31;
  const auto x = random(static_cast<size_t>(rows) * cols), s = random(static_cast<size_t>(n_scales) * cols, 0.5f, 2.0f);
  std::vector<int> idx(rows);
  for (int& i : idx) i = random_int(0, n_scales - 1);
  Buffer gx = put(gpu(), x, rows, cols), gs = put(gpu(), s, n_scales, cols);
  Buffer cx = put(cpu(), x, rows, cols), cs = put(cpu(), s, n_scales, cols);
  gpu().scale_rows(gx.all(), gs.all(), idx);
  cpu().scale_rows(cx.all(), cs.all(), idx);
  EXPECT_TRUE(exact(get(gpu(), gx.all()), get(cpu(), cx.all())));
  std::vector<int> bad(rows, 0);
  bad[3] = n_scales;
  EXPECT_THROW(gpu().scale_rows(gx.all(), gs.all(), bad), Error);
}

TEST_F(CudaBackendTest, ElementwiseOpsMatchCpu) {
  // Sizes with a tail after the float4 part, and views starting one float in (unaligned).
  for (const int offset : {0, 1}) {
    for (const int cols : {5120, 1001}) {
      SCOPED_TRACE("offset=" + std::to_string(offset) + " cols=" + std::to_string(cols));
      const int rows = 7;
      const size_t n = static_cast<size_t>(rows) * cols;
      const auto a = random(n + 1, -6.0f, 6.0f), b = random(n + 1, -3.0f, 3.0f);
      Buffer ga = put(gpu(), a, 1, static_cast<int>(n + 1)), gb = put(gpu(), b, 1, static_cast<int>(n + 1));
      Buffer ca = put(cpu(), a, 1, static_cast<int>(n + 1)), cb = put(cpu(), b, 1, static_cast<int>(n + 1));
      const Mat gav{ga.data() + offset, rows, cols}, gbv{gb.data() + offset, rows, cols};
      const Mat cav{ca.data() + offset, rows, cols}, cbv{cb.data() + offset, rows, cols};
      const auto reset = [&] {
        gpu().upload(ga.data(), a.data(), n + 1);
        cpu().upload(ca.data(), a.data(), n + 1);
      };

      gpu().gelu(gav);
      cpu().gelu(cav);
      auto want = get(cpu(), ca.all());
      EXPECT_TRUE(close(get(gpu(), ga.all()), want, 1e-5, 1e-6 * max_abs(want))) << "gelu";

      reset();
      gpu().silu_mul(gav, gbv);
      cpu().silu_mul(cav, cbv);
      want = get(cpu(), ca.all());
      EXPECT_TRUE(close(get(gpu(), ga.all()), want, 1e-5, 1e-6 * max_abs(want))) << "silu_mul";

      reset();
      gpu().add(gav, gbv);
      cpu().add(cav, cbv);
      EXPECT_TRUE(exact(get(gpu(), ga.all()), get(cpu(), ca.all()))) << "add";
    }
  }
}

TEST_F(CudaBackendTest, RopeMatchesCpu) {
  struct Case {
    int n_heads, head_dim, extra_cols;
    double theta;
  };
  for (const Case c : {Case{32, 64, 0, 1e6}, Case{8, 128, 0, 1e6}, Case{4, 32, 9, 1e4}}) {
    SCOPED_TRACE("heads=" + std::to_string(c.n_heads) + " head_dim=" + std::to_string(c.head_dim));
    const auto inv_freq = rope_inv_freq(c.theta, c.head_dim);
    const int cols = c.n_heads * c.head_dim + c.extra_cols;
    // Distinct positions, including 0, large and negative (shift_positions rotates by -shift).
    std::vector<RowRef> refs = {{0, 0}, {1, 1}, {0, 749}, {2, 12345}, {0, 100000}, {1, -4096}, {0, 8191}};
    for (int i = 0; i < 5; ++i) refs.push_back({0, random_int(0, 200000)});
    const int rows = static_cast<int>(refs.size());
    const auto x = random(static_cast<size_t>(rows) * cols);
    Buffer gx = put(gpu(), x, rows, cols), cx = put(cpu(), x, rows, cols);
    gpu().rope(gx.all(), c.n_heads, c.head_dim, refs, inv_freq);
    cpu().rope(cx.all(), c.n_heads, c.head_dim, refs, inv_freq);
    const auto want = get(cpu(), cx.all());
    EXPECT_TRUE(close(get(gpu(), gx.all()), want, 1e-5, 1e-6 * max_abs(want))) << "per-row positions";

    // One position for every row, as shift_positions sends it (the backend's uniform path).
    const int many = 1536;
    const std::vector<RowRef> same(many, RowRef{1, -98304});
    const auto y = random(static_cast<size_t>(many) * cols);
    Buffer gy = put(gpu(), y, many, cols), cy = put(cpu(), y, many, cols);
    gpu().rope(gy.all(), c.n_heads, c.head_dim, same, inv_freq);
    cpu().rope(cy.all(), c.n_heads, c.head_dim, same, inv_freq);
    const auto want2 = get(cpu(), cy.all());
    EXPECT_TRUE(close(get(gpu(), gy.all()), want2, 1e-5, 1e-6 * max_abs(want2))) << "uniform position";
  }
}

// ---- Caches ----

TEST_F(CudaBackendTest, StoreKvWritesRingEntries) {
  const KvCacheShape s{3, 2, 16, 2, 64};
  const int width = s.kv_heads * s.head_dim;
  KvCache gc(&gpu(), s), cc(&cpu(), s);
  const size_t total = s.elements();
  const auto k0 = random(total), v0 = random(total);
  gpu().upload_kv(gc, k0.data(), v0.data());
  cpu().upload_kv(cc, k0.data(), v0.data());
  // Ring wrap-around (19 -> entry 3, 47 -> 15), several slots, both layers.
  const std::vector<RowRef> rows = {{1, 5}, {2, 19}, {0, 47}, {2, 0}, {1, 16}};
  for (int layer = 0; layer < s.layers; ++layer) {
    const auto k = random(rows.size() * width), v = random(rows.size() * width);
    const int n = static_cast<int>(rows.size());
    Buffer gk = put(gpu(), k, n, width), gv = put(gpu(), v, n, width);
    Buffer ck = put(cpu(), k, n, width), cv = put(cpu(), v, n, width);
    gpu().store_kv(gc, layer, gk.all(), gv.all(), rows);
    cpu().store_kv(cc, layer, ck.all(), cv.all(), rows);
  }
  // The GPU holds what the CPU holds, rounded as its cache stores it.
  const KvContents g = contents(gpu(), gc), c = contents(cpu(), cc);
  EXPECT_TRUE(exact(g.keys, as_stored_kv(c.keys))) << "keys";
  EXPECT_TRUE(exact(g.values, as_stored_kv(c.values))) << "values";
  Buffer k(&gpu(), 1, width), v(&gpu(), 1, width);
  const std::vector<RowRef> bad = {{3, 0}};
  EXPECT_THROW(gpu().store_kv(gc, 0, k.all(), v.all(), bad), Error);
}

TEST_F(CudaBackendTest, ShiftCachedKeysMatchesCpu) {
  // A long session's re-base: every key of one slot rotated by -shift positions, the other slot
  // and the values untouched. The CPU rotates the same stored keys in fp32; the GPU's result is
  // that rotation as its cache stores it, so within one rounding of the storage (bf16: 2^-8
  // relative, plus cos/sin ulps on values near zero).
  const KvCacheShape s{2, 3, 24, 2, 64};
  KvCache gc(&gpu(), s), cc(&cpu(), s);
  const size_t total = s.elements();
  const auto k = as_stored_kv(random(total)), v = as_stored_kv(random(total));
  gpu().upload_kv(gc, k.data(), v.data());
  cpu().upload_kv(cc, k.data(), v.data());
  const auto inv_freq = rope_inv_freq(1e6, s.head_dim);
  const int64_t shift = 24 * 5000;
  gpu().shift_cached_keys(gc, 1, shift, inv_freq);
  cpu().shift_cached_keys(cc, 1, shift, inv_freq);
  const KvContents g = contents(gpu(), gc), c = contents(cpu(), cc);
  const double rtol = gpu().kv_element_bytes() == 2 ? 1.0 / 256 : 1e-5;
  EXPECT_TRUE(close(g.keys, c.keys, rtol, 1e-5));
  EXPECT_TRUE(exact(g.values, c.values));
  EXPECT_TRUE(exact(std::vector<float>(g.keys.begin(), g.keys.begin() + static_cast<long>(s.per_slot())),
                    std::vector<float>(k.begin(), k.begin() + static_cast<long>(s.per_slot()))))
      << "slot 0 must not move";
  EXPECT_THROW(gpu().shift_cached_keys(gc, 2, shift, inv_freq), Error);
}

void CudaBackendTest::check_attention(const AttentionCase& c, Backend& g) {
  const KvCacheShape& s = c.shape;
  SCOPED_TRACE("attention heads=" + std::to_string(c.n_heads) + " kv_heads=" + std::to_string(s.kv_heads) +
               " head_dim=" + std::to_string(s.head_dim) + " window=" + std::to_string(c.window) +
               " ring=" + std::to_string(s.ring) + " rows=" + std::to_string(c.rows.size()));
  // Random everywhere in the cache, so reading a wrong entry shows.
  KvCache gc(&g, s), cc(&cpu(), s);
  const size_t total = s.elements();
  const auto k = as_stored_kv(random(total), g), v = as_stored_kv(random(total), g);
  g.upload_kv(gc, k.data(), v.data());
  cpu().upload_kv(cc, k.data(), v.data());
  const int rows = static_cast<int>(c.rows.size()), qw = c.n_heads * s.head_dim;
  const auto q = random(static_cast<size_t>(rows) * qw, -c.q_scale, c.q_scale);
  const AttentionParams p{c.n_heads, s.kv_heads, s.head_dim, c.window, 1.0f / std::sqrt(static_cast<float>(s.head_dim)),
                          c.rows_per_position};
  Buffer gq = put(g, q, rows, qw), go(&g, rows, qw), cq = put(cpu(), q, rows, qw), co(&cpu(), rows, qw);
  poison(g, go.all());
  poison(cpu(), co.all());
  g.attention(gc, c.layer, gq.all(), c.rows, p, go.all());
  cpu().attention(cc, c.layer, cq.all(), c.rows, p, co.all());
  EXPECT_TRUE(close(get(g, go.all()), get(cpu(), co.all()), 1e-5, 2e-6 * max_abs(v)));
}

std::vector<float> CudaBackendTest::attention_on(Backend& b, const KvCacheShape& s, const std::vector<float>& k,
                                                 const std::vector<float>& v, int layer, const std::vector<float>& q,
                                                 const std::vector<RowRef>& rows, const AttentionParams& p) {
  KvCache cache(&b, s);
  for (int e = 0; e < s.pages_per_slot(); ++e)
    for (int slot = s.slots - 1; slot >= 0; --slot) cache.map(slot, static_cast<int64_t>(e) * s.page_len(), 1);
  b.upload_kv(cache, k.data(), v.data());
  const int n = static_cast<int>(rows.size()), qw = p.n_heads * s.head_dim;
  Buffer gq = put(b, q, n, qw), go(&b, n, qw);
  poison(b, go.all());
  b.attention(cache, layer, gq.all(), rows, p, go.all());
  return get(b, go.all());
}

void CudaBackendTest::check_rows_alone_as_together(Backend& b, const KvCacheShape& s, const std::vector<RowRef>& rows,
                                                   const AttentionParams& p) {
  KvCache cache(&b, s);
  const auto k = as_stored_kv(random(s.elements()), b), v = as_stored_kv(random(s.elements()), b);
  b.upload_kv(cache, k.data(), v.data());
  const int n = static_cast<int>(rows.size()), qw = p.n_heads * s.head_dim;
  const auto q = random(static_cast<size_t>(n) * qw);
  Buffer gq = put(b, q, n, qw), together(&b, n, qw), alone(&b, 1, qw);
  b.attention(cache, 0, gq.all(), rows, p, together.all());
  const auto grouped = get(b, together.all());
  for (int i = 0; i < n; ++i) {
    b.attention(cache, 0, gq.view(i, 1), std::span<const RowRef>(rows).subspan(i, 1), p, alone.all());
    EXPECT_TRUE(exact(get(b, alone.all()), std::vector<float>(grouped.begin() + static_cast<ptrdiff_t>(i) * qw,
                                                                grouped.begin() + static_cast<ptrdiff_t>(i + 1) * qw)))
        << "row " << i << " (slot " << rows[i].slot << ", position " << rows[i].pos << ")";
  }
}

TEST_F(CudaBackendTest, AttentionEncoderLikeWithRingWrapAround) {
  // MHA, head_dim 64, window 750 in a ring of 768: a chunk of consecutive rows past the ring's end,
  // plus short histories in another slot, in one batch.
  AttentionCase c{{2, 2, 768, 32, 64}, 1, 32, 750, 1.0f, {}};
  for (int i = 0; i < 24; ++i) c.rows.push_back({1, 1000 + i});
  for (int64_t p : {0, 1, 5, 749, 750}) c.rows.push_back({0, p});
  check_attention(c);
  c.rows_per_position = 4;  // as the encoder plans it: longer key chunks
  check_attention(c);
}

TEST_F(CudaBackendTest, AttentionDecoderGqaOver8192Keys) {
  // GQA 32/8, head_dim 128, window 8192: one decode row over 8192 keys wrapping the ring (the split
  // and combine path), then a batch mixing long and short rows.
  const KvCacheShape s{2, 2, 8192 + 16, 8, 128};
  check_attention({s, 1, 32, 8192, 1.0f, {{0, 20000}}});
  check_attention({s, 0, 32, 8192, 1.0f, {{0, 20000}, {1, 8191}, {1, 100}, {0, 0}, {1, 8192 + 15}}});
  // A peaky softmax (large scores) over a long range.
  check_attention({s, 1, 32, 8192, 8.0f, {{1, 12345}, {0, 30000}}});
}

TEST_F(CudaBackendTest, AttentionRowsSharingABlockComputeTheSameBitsAsAlone) {
  // Consecutive positions of one slot (an encoder step's frames, an offline chunk) share a block's
  // keys and values (attention_rows_per_block); each row must come out bit for bit as when it is
  // launched alone, past the window and before it (where every row's keys start at 0), and for
  // a group cut short by the end of the launch. MHA (the encoder's: 8 rows a block on the tensor
  // cores, 4 on the CUDA cores) and GQA 4 (the decoder's: 2 rows a block on the tensor cores).
  for (const int kv_heads : {32, 8}) {
    const KvCacheShape s{2, 2, 768, kv_heads, 64};
    KvCache cache(&gpu(), s);
    const size_t total = s.elements();
    const auto k = as_stored_kv(random(total)), v = as_stored_kv(random(total));
    gpu().upload_kv(cache, k.data(), v.data());
    const int heads = 32, window = 750, qw = heads * s.head_dim;
    for (const int64_t first : {int64_t{1000}, int64_t{0}, int64_t{745}}) {
      for (const int n_rows : {4, 7, 12, 16}) {
        for (const int rows_per_position : {1, 4}) {
          SCOPED_TRACE("kv_heads=" + std::to_string(kv_heads) + " first=" + std::to_string(first) +
                       " rows=" + std::to_string(n_rows) + " rows_per_position=" + std::to_string(rows_per_position));
          std::vector<RowRef> rows;
          for (int i = 0; i < n_rows; ++i) rows.push_back({1, first + i});
          const auto q = random(static_cast<size_t>(n_rows) * qw);
          const AttentionParams p{heads, s.kv_heads, s.head_dim, window, 0.125f, rows_per_position};
          Buffer gq = put(gpu(), q, n_rows, qw), together(&gpu(), n_rows, qw), alone(&gpu(), 1, qw);
          gpu().attention(cache, 1, gq.all(), rows, p, together.all());
          const auto grouped = get(gpu(), together.all());
          for (int i = 0; i < n_rows; ++i) {
            gpu().attention(cache, 1, gq.view(i, 1), std::span<const RowRef>(rows).subspan(i, 1), p, alone.all());
            const auto single = get(gpu(), alone.all());
            EXPECT_TRUE(exact(single, std::vector<float>(grouped.begin() + static_cast<ptrdiff_t>(i) * qw,
                                                         grouped.begin() + static_cast<ptrdiff_t>(i + 1) * qw)))
                << "row " << i;
          }
        }
      }
    }
  }
}

TEST_F(CudaBackendTest, AttentionOtherHeadShapes) {
  // Group of 16 query heads per kv head (two head blocks), head_dim 32.
  check_attention({{2, 1, 320, 1, 32}, 0, 16, 300, 1.0f, {{0, 5}, {1, 299}, {0, 1000}, {1, 321}}});
  // head_dim 256, GQA 2.
  check_attention({{1, 3, 80, 2, 256}, 2, 4, 64, 2.0f, {{0, 0}, {0, 63}, {0, 64}, {0, 200}}});
  // Window wider than 1024 keys on MHA rows (several chunks per row with many rows).
  check_attention({{1, 1, 4096, 4, 64}, 0, 4, 3000, 1.0f, {{0, 2999}, {0, 3000}, {0, 4500}, {0, 10}}});
}

TEST_F(CudaBackendTest, AttentionSeveralChunksPerBlockComputeTheSameBits) {
  // A tensor-core block taking several consecutive key chunks, double-buffered
  // (CudaOptions::attention_chunks_per_block), computes each chunk as a block of one does: every
  // output bit equal to one chunk a block, on the same caches and rows. Encoder-like (head_dim
  // 64, MHA: 4 rows a block) and decoder-like (head_dim 128, GQA 4, window 8192: 129 chunks, so
  // the last group of 2, 3 or 5 is cut short), unpaged and paged (pages not aligned to the
  // chunks, the slots' pages interleaved); rows whose keys start mid-chunk and mid-group, rows of
  // a few keys, a ring that wraps.
#ifdef VOXRT_WITH_CUDA
  struct Case {
    const char* what;
    KvCacheShape shape;
    int heads, window;
    std::vector<RowRef> rows;
    int rows_per_position;
  };
  std::vector<RowRef> frames, early;
  for (int i = 0; i < 8; ++i) frames.push_back({1, 1000 + i});  // past the ring's end
  for (int i = 0; i < 7; ++i) early.push_back({0, 745 + i});    // the window fills at 749; a group cut short
  const std::vector<RowRef> decode = {{0, 20000}, {1, 8191}, {1, 100}, {0, 0},   {1, 3},
                                      {1, 8192 + 15}, {0, 8192 + 40}, {1, 12345}, {0, 64}};
  const KvCacheShape enc{2, 1, 768, 32, 64}, enc_paged{2, 1, 768, 32, 64, 96, 16};
  const KvCacheShape dec{2, 1, 8192 + 64, 8, 128}, dec_paged{2, 1, 8192 + 64, 8, 128, 344, 48};
  const std::vector<Case> cases = {
      {"encoder frames", enc, 32, 750, frames, 4},
      {"encoder early frames", enc, 32, 750, early, 4},
      {"encoder scattered rows", enc, 32, 750, {{0, 0}, {1, 5}, {0, 749}, {1, 1500}, {0, 1000}}, 1},
      {"encoder paged", enc_paged, 32, 750, frames, 4},
      {"decoder", dec, 32, 8192, decode, 1},
      {"decoder paged", dec_paged, 32, 8192, decode, 1},
  };
  // Blocks of several chunks are built for 64- and 128-key chunks: the default plan gives both
  // shapes 64 on a GPU of 80 SMs or more; 4 blocks an SM give the encoder 128, 2 the decoder 128.
  for (const double blocks_per_sm : {CudaOptions{}.attention_blocks_per_sm, 4.0, 2.0}) {
    CudaOptions one;  // the defaults but for the chunks a block: the engine's kernels, not the environment's
    one.attention_chunks_per_block = 1;
    one.attention_blocks_per_sm = blocks_per_sm;
    const std::unique_ptr<Backend> base = make_cuda_backend(0, one);
    const std::vector<int> chunks_per_block = {2, 3, 5};
    std::vector<std::unique_ptr<Backend>> several;
    for (const int cpb : chunks_per_block) {
      CudaOptions o = one;
      o.attention_chunks_per_block = cpb;
      several.push_back(make_cuda_backend(0, o));
    }
    for (const Case& c : cases) {
      const KvCacheShape& s = c.shape;
      const auto k = bf16_round(random(s.elements())), v = bf16_round(random(s.elements()));
      const int n = static_cast<int>(c.rows.size());
      const auto q = random(static_cast<size_t>(n) * c.heads * s.head_dim);
      const AttentionParams p{c.heads, s.kv_heads, s.head_dim, c.window, 1.0f / std::sqrt(static_cast<float>(s.head_dim)),
                              c.rows_per_position};
      const auto want = attention_on(*base, s, k, v, 0, q, c.rows, p);
      for (size_t i = 0; i < several.size(); ++i) {
        SCOPED_TRACE(std::string(c.what) + ", " + std::to_string(chunks_per_block[i]) + " chunks a block, " +
                     std::to_string(blocks_per_sm) + " blocks an SM");
        EXPECT_TRUE(exact(attention_on(*several[i], s, k, v, 0, q, c.rows, p), want));
      }
    }
  }
#endif
}

TEST_F(CudaBackendTest, AttentionFusedCombineMatchesTheCombinePass) {
  // VOXRT_CUDA_ATTN_COMBINE=fused (CudaOptions::attention_fused_combine): the tensor-core blocks
  // merge their chunks themselves, the last block of each row group to arrive. Rows of at most 32
  // chunks (the encoder's) get the bits of the one-warp combine pass (the same arithmetic,
  // attention_combine.cuh); rows of more (the decoder's 129) are within the reference's tolerance.
  // Either way several chunks a block equal one, rows alone equal rows together, and launch after
  // launch on the same backend stays right (each launch leaves its arrival counters zero).
#ifdef VOXRT_WITH_CUDA
  CudaOptions warp;
  warp.attention_combine_warp = true;
  warp.attention_chunks_per_block = 1;
  CudaOptions fused = warp;
  fused.attention_fused_combine = true;
  CudaOptions fused_multi = fused;
  fused_multi.attention_chunks_per_block = 3;
  const std::unique_ptr<Backend> pass = make_cuda_backend(0, warp), one = make_cuda_backend(0, fused),
                                 several = make_cuda_backend(0, fused_multi);
  std::vector<RowRef> frames;
  for (int i = 0; i < 8; ++i) frames.push_back({1, 1000 + i});
  const KvCacheShape enc{2, 1, 768, 32, 64}, enc_paged{2, 1, 768, 32, 64, 96, 16};
  for (const KvCacheShape& s : {enc, enc_paged}) {
    const auto k = bf16_round(random(s.elements())), v = bf16_round(random(s.elements()));
    for (const auto& [rows, per_position] :
         {std::pair{frames, 4}, std::pair{std::vector<RowRef>{{0, 0}, {1, 5}, {0, 749}, {1, 1500}}, 1}}) {
      const auto q = random(rows.size() * 32 * s.head_dim);
      const AttentionParams p{32, s.kv_heads, s.head_dim, 750, 0.125f, per_position};
      const auto want = attention_on(*pass, s, k, v, 0, q, rows, p);
      EXPECT_TRUE(exact(attention_on(*one, s, k, v, 0, q, rows, p), want));
      EXPECT_TRUE(exact(attention_on(*several, s, k, v, 0, q, rows, p), want));
    }
  }
  const std::vector<RowRef> decode = {{0, 20000}, {1, 8191}, {1, 100}, {0, 0}, {1, 3}, {0, 8192 + 40}, {1, 12345}};
  const KvCacheShape dec{2, 1, 8192 + 64, 8, 128}, dec_paged{2, 1, 8192 + 64, 8, 128, 344, 48};
  for (const KvCacheShape& s : {dec, dec_paged}) {
    const auto k = bf16_round(random(s.elements())), v = bf16_round(random(s.elements()));
    const auto q = random(decode.size() * 32 * s.head_dim);
    const AttentionParams p{32, s.kv_heads, s.head_dim, 8192, 1.0f / std::sqrt(128.0f), 1};
    EXPECT_TRUE(exact(attention_on(*several, s, k, v, 0, q, decode, p), attention_on(*one, s, k, v, 0, q, decode, p)));
  }
  check_rows_alone_as_together(*several, dec, decode, {32, dec.kv_heads, dec.head_dim, 8192, 1.0f / std::sqrt(128.0f), 1});
  check_rows_alone_as_together(*several, enc, frames, {32, enc.kv_heads, enc.head_dim, 750, 0.125f, 4});
  check_attention({dec, 0, 32, 8192, 1.0f, decode}, *one);
  check_attention({dec, 0, 32, 8192, 3.0f, decode}, *several);
  check_attention({enc, 0, 32, 750, 1.0f, frames, 4}, *several);
#endif
}

TEST_F(CudaBackendTest, AttentionOnFp8CachesOnTheTensorCoresMatchesTheCudaCores) {
  // fp8 (e4m3) caches on the tensor cores: each chunk's rows widened to bf16 (exact), each score
  // times its key's scale, each probability times its value's scale. Against the CUDA-core kernel
  // on the same fp8 entries and scales (both fp32-exact products, summed in other orders): within
  // the attention tolerance. Rows alone equal rows together bit for bit, and several chunks a
  // block equal one. Encoder-like and decoder-like shapes, unpaged and paged. (fp8 caches are
  // written by store_kv only, which picks each entry's scales: every ring entry is stored.)
#ifdef VOXRT_WITH_CUDA
  CudaOptions o;
  o.fp8_kv = true;
  o.attention_chunks_per_block = 1;
  const std::unique_ptr<Backend> b8 = make_cuda_backend(0, o);
  o.attention_chunks_per_block = 3;
  const std::unique_ptr<Backend> b8_multi = make_cuda_backend(0, o);
  ASSERT_EQ(b8->kv_element_bytes(), 1u);
  // 128-key chunks, one and three a block (4 blocks an SM give the encoder 128, 2 the decoder).
  std::vector<std::pair<std::unique_ptr<Backend>, std::unique_ptr<Backend>>> wide;
  for (const double blocks_per_sm : {4.0, 2.0}) {
    CudaOptions w = o;
    w.attention_blocks_per_sm = blocks_per_sm;
    w.attention_chunks_per_block = 1;
    auto one = make_cuda_backend(0, w);
    w.attention_chunks_per_block = 3;
    wide.emplace_back(std::move(one), make_cuda_backend(0, w));
  }
  std::vector<RowRef> frames;
  for (int i = 0; i < 8; ++i) frames.push_back({1, 1000 + i});
  frames.push_back({0, 3});
  frames.push_back({0, 749});
  const std::vector<RowRef> decode = {{0, 20000}, {1, 8191}, {1, 100}, {0, 0}, {1, 8192 + 15}, {0, 64}};
  struct Case {
    KvCacheShape shape;
    int heads, window, rows_per_position;
    std::vector<RowRef> rows;
  };
  const std::vector<Case> cases = {
      {{2, 1, 768, 32, 64}, 32, 750, 4, frames},
      {{2, 1, 768, 32, 64, 96, 16}, 32, 750, 4, frames},
      {{2, 1, 8192 + 64, 8, 128}, 32, 8192, 1, decode},
      {{2, 1, 8192 + 64, 8, 128, 344, 48}, 32, 8192, 1, decode},
  };
  for (const Case& c : cases) {
    const KvCacheShape& s = c.shape;
    SCOPED_TRACE("head_dim=" + std::to_string(s.head_dim) + (s.paged() ? " paged" : ""));
    std::vector<RowRef> entries;
    for (int slot = 0; slot < s.slots; ++slot)
      for (int e = 0; e < s.ring; ++e) entries.push_back({slot, e});
    const int width = s.kv_heads * s.head_dim, n_entries = static_cast<int>(entries.size());
    const auto k = random(static_cast<size_t>(n_entries) * width), v = random(static_cast<size_t>(n_entries) * width);
    const int n = static_cast<int>(c.rows.size()), qw = c.heads * s.head_dim;
    const auto q = random(static_cast<size_t>(n) * qw);
    const AttentionParams p{c.heads, s.kv_heads, s.head_dim, c.window, 1.0f / std::sqrt(static_cast<float>(s.head_dim)),
                            c.rows_per_position};
    // Attention of rows [first, first + count) on backend b, its cache holding every entry.
    auto attend = [&](Backend& b, int first, int count) {
      KvCache cache(&b, s);
      for (int e = 0; e < s.pages_per_slot(); ++e)
        for (int slot = s.slots - 1; slot >= 0; --slot) cache.map(slot, static_cast<int64_t>(e) * s.page_len(), 1);
      Buffer kb = put(b, k, n_entries, width), vb = put(b, v, n_entries, width);
      b.store_kv(cache, 0, kb.all(), vb.all(), entries);
      Buffer bq = put(b, q, n, qw), out(&b, count, qw);
      poison(b, out.all());
      b.attention(cache, 0, bq.view(first, count), std::span<const RowRef>(c.rows).subspan(first, count), p, out.all());
      return get(b, out.all());
    };
    ASSERT_TRUE(b8->kernel_switches()->set_attention_kernels(KernelSwitches::AttentionKernels::CudaCores));
    const auto cores = attend(*b8, 0, n);
    ASSERT_TRUE(b8->kernel_switches()->set_attention_kernels(KernelSwitches::AttentionKernels::TensorCores));
    const auto tensor = attend(*b8, 0, n);
    EXPECT_TRUE(close(tensor, cores, 1e-5, 2e-6 * max_abs(v)));
    EXPECT_FALSE(exact(tensor, std::vector<float>(tensor.size(), 0.0f)));
    EXPECT_TRUE(exact(attend(*b8_multi, 0, n), tensor)) << "3 chunks a block";
    for (const auto& [one, multi] : wide) {
      const auto wide_one = attend(*one, 0, n);
      EXPECT_TRUE(close(wide_one, cores, 1e-5, 2e-6 * max_abs(v))) << "wider chunks";
      EXPECT_TRUE(exact(attend(*multi, 0, n), wide_one)) << "wider chunks, 3 a block";
    }
    for (int i = 0; i < n; ++i)
      EXPECT_TRUE(exact(attend(*b8, i, 1), std::vector<float>(tensor.begin() + static_cast<ptrdiff_t>(i) * qw,
                                                              tensor.begin() + static_cast<ptrdiff_t>(i + 1) * qw)))
          << "row " << i << " alone";
    b8->kernel_switches()->set_attention_kernels(KernelSwitches::AttentionKernels::Automatic);
  }
#endif
}

TEST_F(CudaBackendTest, AttentionOneWarpCombineMatchesTheReferenceAndIsBatchInvariant) {
  // Plans of at most 32 chunks a row (the encoder's 13) merge them one warp per (row, head)
  // (CudaOptions::attention_combine_warp, VOXRT_CUDA_ATTN_COMBINE=warp); the block combine otherwise
  // (the default). Both within
  // the attention tolerance of the CPU's reference, 32 chunks exactly included (window 1950, 4 rows
  // a block: (1950 + 2) / 64 + 2), and a row's bits the same alone as with others.
#ifdef VOXRT_WITH_CUDA
  for (const bool warp : {true, false}) {
    SCOPED_TRACE(warp ? "one-warp combine" : "block combine");
    CudaOptions o;
    o.attention_combine_warp = warp;
    const std::unique_ptr<Backend> b = make_cuda_backend(0, o);
    AttentionCase enc{{2, 2, 768, 32, 64}, 1, 32, 750, 1.0f, {}, 4};
    for (int i = 0; i < 8; ++i) enc.rows.push_back({1, 1000 + i});
    for (int64_t pos : {0, 1, 63, 64, 749, 750}) enc.rows.push_back({0, pos});
    check_attention(enc, *b);
    check_attention({{1, 1, 2048, 4, 64}, 0, 4, 1950, 1.0f, {{0, 1949}, {0, 2000}, {0, 3000}, {0, 17}}}, *b);
    const KvCacheShape s{2, 1, 768, 32, 64};
    std::vector<RowRef> rows;
    for (int i = 0; i < 8; ++i) rows.push_back({1, 1000 + i});
    check_rows_alone_as_together(*b, s, rows, {32, s.kv_heads, s.head_dim, 750, 0.125f, 4});
    check_rows_alone_as_together(*b, s, {{0, 3}, {1, 900}, {0, 749}, {1, 64}}, {32, s.kv_heads, s.head_dim, 750, 0.125f, 1});
  }
#endif
}

// ---- Gathers and the sampler ----

TEST_F(CudaBackendTest, EmbedMatchesBf16Table) {
  for (const int cols : {3072, 36}) {
    SCOPED_TRACE("cols=" + std::to_string(cols));
    const int vocab = 1000;
    const auto table = random(static_cast<size_t>(vocab) * cols);
    Weight gt = gpu().upload_weight(std::vector<float>(table), vocab, cols);
    Weight ct = cpu().upload_weight(bf16_round(table), vocab, cols);
    std::vector<int32_t> ids = {0, vocab - 1, 17, 17, 500};
    for (int i = 0; i < 11; ++i) ids.push_back(random_int(0, vocab - 1));
    const int rows = static_cast<int>(ids.size());
    Buffer gy(&gpu(), rows + 1, cols), cy(&cpu(), rows, cols);
    poison(gpu(), gy.all());
    gpu().embed(gt, ids, gy.view(1, rows));
    cpu().embed(ct, ids, cy.all());
    EXPECT_TRUE(exact(get(gpu(), gy.view(1, rows)), get(cpu(), cy.all())));
    const std::vector<int32_t> bad = {vocab};
    EXPECT_THROW(gpu().embed(gt, bad, gy.view(0, 1)), Error);
  }
}

TEST_F(CudaBackendTest, ArgmaxMatchesCpu) {
  for (const int cols : {131072, 7, 1025}) {
    SCOPED_TRACE("cols=" + std::to_string(cols));
    const int rows = 6;
    auto x = random(static_cast<size_t>(rows) * cols, -10.0f, 10.0f);
    auto row = [&](int r) { return x.begin() + static_cast<ptrdiff_t>(r) * cols; };
    // Row 1: the maximum twice (first wins, margin 0). Row 2: all equal. Row 3: max at the end.
    // Row 4: maximum and runner-up in the same thread's columns. Row 5: -inf everywhere but one.
    row(1)[cols / 3] = 50.0f;
    row(1)[cols - 1] = 50.0f;
    std::fill(row(2), row(2) + cols, 1.5f);
    row(3)[cols - 1] = 11.0f;
    if (cols > 1024 + 3) {
      row(4)[3] = 20.0f;
      row(4)[3 + 1024] = 19.0f;
    }
    std::fill(row(5), row(5) + cols, -std::numeric_limits<float>::infinity());
    row(5)[cols / 2] = -1.0f;
    Buffer gx = put(gpu(), x, rows, cols), cx = put(cpu(), x, rows, cols);
    const Argmax a = expect_same_argmax(gx.all(), cx.all());
    EXPECT_EQ(a.ids[1], cols / 3);
    EXPECT_EQ(a.margins[1], 0.0f);
    // Without margins.
    std::vector<int32_t> gi2(rows, -7);
    gpu().argmax(gx.all(), gi2, {});
    EXPECT_EQ(gi2, a.ids);
  }
}

// add_at: a decoder pass's context-bias boosts on its logits, then the argmax. Bit-exact (one fp32
// addition an element): the boosted rows' values and ids equal the CPU's, the other rows untouched;
// an entry outside the matrix throws on both.
TEST_F(CudaBackendTest, AddAtThenArgmaxMatchesCpu) {
  for (const int cols : {131072, 2048, 5}) {
    SCOPED_TRACE("cols=" + std::to_string(cols));
    const int rows = 7;
    const auto x = random(static_cast<size_t>(rows) * cols, -10.0f, 10.0f);
    // Rows 0, 2, 3 and 6 boosted (distinct ids a row, as the decoder's are), rows 1, 4, 5 not; the
    // first and last column of a row among them, and a boost that makes a runner-up win.
    std::vector<MatEntry> entries;
    for (const int r : {0, 2, 3, 6})
      for (int k = 0; k < std::min(cols, 400); ++k) {
        const int c = k == 0 ? 0 : k == 1 ? cols - 1 : random_int(2, std::max(2, cols - 2));
        if (std::none_of(entries.begin(), entries.end(), [&](const MatEntry& e) { return e.row == r && e.col == c; }))
          entries.push_back({r, c, r == 3 ? 25.0f : 3.0f});
      }
    Buffer gx = put(gpu(), x, rows, cols), cx = put(cpu(), x, rows, cols);
    gpu().add_at(gx.all(), entries);
    cpu().add_at(cx.all(), entries);
    const std::vector<float> got = get(gpu(), gx.all()), want = get(cpu(), cx.all());
    EXPECT_TRUE(exact(got, want));
    for (const int r : {1, 4, 5})
      EXPECT_TRUE(exact(std::vector<float>(got.begin() + static_cast<ptrdiff_t>(r) * cols,
                                           got.begin() + static_cast<ptrdiff_t>(r + 1) * cols),
                        std::vector<float>(x.begin() + static_cast<ptrdiff_t>(r) * cols,
                                           x.begin() + static_cast<ptrdiff_t>(r + 1) * cols)))
          << "row " << r << " has no entries";
    const std::vector<int32_t> ids = expect_same_argmax(gx.all(), cx.all()).ids;
    EXPECT_TRUE(std::any_of(entries.begin(), entries.end(), [&](const MatEntry& e) { return e.row == 3 && e.col == ids[3]; }))
        << "row 3's boost of 25 makes one of its boosted columns win";
    gpu().add_at(gx.all(), {});  // nothing to add: nothing launched, nothing changed
    EXPECT_TRUE(exact(get(gpu(), gx.all()), want));
    for (const MatEntry bad : {MatEntry{rows, 0, 1.0f}, MatEntry{0, cols, 1.0f}, MatEntry{-1, 0, 1.0f}}) {
      EXPECT_THROW(gpu().add_at(gx.all(), std::vector<MatEntry>{bad}), Error);
      EXPECT_THROW(cpu().add_at(cx.all(), std::vector<MatEntry>{bad}), Error);
    }
  }
}

// ---- Ops in sequence ----

TEST_F(CudaBackendTest, DecoderLayerSequenceMatchesCpu) {
  // One decoder-style layer (the op order of VoxtralModel::layer) over a prefill of 10 rows and
  // then 20 steps of one row from each of two sessions (wrapping the ring), then logits and argmax. The CPU gets bf16-rounded
  // weights; the GPU also rounds activations to bf16 in every product, hence 1e-2 normwise.
  const int dim = 256, n_heads = 8, kv_heads = 2, hd = 32, hidden = 512, window = 12, vocab = 1000;
  const float eps = 1e-5f;
  const KvCacheShape s{2, 1, window + 9, kv_heads, hd};  // room for the 10-row prefill
  const auto inv_freq = rope_inv_freq(1e6, hd);
  struct W {
    std::vector<float> attn_norm, wq, wk, wv, wo, ffn_norm, w1, w3, w2, scales, emb;
  } w;
  w.attn_norm = random(dim, 0.5f, 1.5f);
  w.ffn_norm = random(dim, 0.5f, 1.5f);
  w.wq = random(static_cast<size_t>(n_heads) * hd * dim, -0.1f, 0.1f);
  w.wk = random(static_cast<size_t>(kv_heads) * hd * dim, -0.1f, 0.1f);
  w.wv = random(static_cast<size_t>(kv_heads) * hd * dim, -0.1f, 0.1f);
  w.wo = random(static_cast<size_t>(dim) * n_heads * hd, -0.1f, 0.1f);
  w.w1 = random(static_cast<size_t>(hidden) * dim, -0.1f, 0.1f);
  w.w3 = random(static_cast<size_t>(hidden) * dim, -0.1f, 0.1f);
  w.w2 = random(static_cast<size_t>(dim) * hidden, -0.1f, 0.1f);
  w.scales = random(4 * static_cast<size_t>(dim), 0.8f, 1.2f);
  w.emb = random(static_cast<size_t>(vocab) * dim);

  struct Run {
    Backend& b;
    bool round;
    Weight attn_norm, wq, wk, wv, wo, ffn_norm, w1, w3, w2, emb;
    Buffer scales;
    KvCache cache;
    std::vector<float> out;
    std::vector<int32_t> ids;
  };
  auto make = [&](Backend& b, bool round) {
    auto m = [&](const std::vector<float>& v, int r, int c) {
      return b.upload_weight(round ? bf16_round(v) : std::vector<float>(v), r, c);
    };
    return Run{b,
               round,
               b.upload_weight(std::vector<float>(w.attn_norm), dim, 1),
               m(w.wq, n_heads * hd, dim),
               m(w.wk, kv_heads * hd, dim),
               m(w.wv, kv_heads * hd, dim),
               m(w.wo, dim, n_heads * hd),
               b.upload_weight(std::vector<float>(w.ffn_norm), dim, 1),
               m(w.w1, hidden, dim),
               m(w.w3, hidden, dim),
               m(w.w2, dim, hidden),
               m(w.emb, vocab, dim),
               put(b, w.scales, 4, dim),
               KvCache(&b, s),
               {},
               {}};
  };
  Run g = make(gpu(), false), c = make(cpu(), true);

  // Steps: a 10-row prefill of session 0, then rows of both sessions (session 1 starts at 0).
  std::vector<std::vector<RowRef>> steps;
  std::vector<RowRef> prefill;
  for (int i = 0; i < 10; ++i) prefill.push_back({0, i});
  steps.push_back(prefill);
  for (int i = 0; i < 20; ++i) steps.push_back({{0, 10 + i}, {1, i}});
  std::vector<std::vector<float>> inputs;
  std::vector<std::vector<int>> delays;
  for (const auto& st : steps) {
    inputs.push_back(random(st.size() * dim));
    std::vector<int> d;
    for (size_t i = 0; i < st.size(); ++i) d.push_back(random_int(0, 3));
    delays.push_back(d);
  }

  for (Run* r : {&g, &c}) {
    Backend& b = r->b;
    for (size_t step = 0; step < steps.size(); ++step) {
      const auto& rows = steps[step];
      const int M = static_cast<int>(rows.size()), qw = n_heads * hd, kvw = kv_heads * hd;
      Buffer x = put(b, inputs[step], M, dim);
      Buffer h(&b, M, dim), q(&b, M, qw), k(&b, M, kvw), v(&b, M, kvw), o(&b, M, qw);
      b.rms_norm(x.all(), r->attn_norm, eps, h.all());
      b.linear(h.all(), r->wq, nullptr, q.all());
      b.linear(h.all(), r->wk, nullptr, k.all());
      b.linear(h.all(), r->wv, nullptr, v.all());
      b.rope(q.all(), n_heads, hd, rows, inv_freq);
      b.rope(k.all(), kv_heads, hd, rows, inv_freq);
      b.store_kv(r->cache, 0, k.all(), v.all(), rows);
      const AttentionParams ap{n_heads, kv_heads, hd, window, 1.0f / std::sqrt(static_cast<float>(hd))};
      b.attention(r->cache, 0, q.all(), rows, ap, o.all());
      b.linear(o.all(), r->wo, nullptr, x.all(), true);
      Buffer gg(&b, M, hidden), u(&b, M, hidden);
      b.rms_norm(x.all(), r->ffn_norm, eps, h.all());
      b.scale_rows(h.all(), r->scales.all(), delays[step]);
      b.linear(h.all(), r->w1, nullptr, gg.all());
      b.linear(h.all(), r->w3, nullptr, u.all());
      b.silu_mul(gg.all(), u.all());
      b.linear(gg.all(), r->w2, nullptr, x.all(), true);
      const auto xs = get(b, x.all());
      r->out.insert(r->out.end(), xs.begin(), xs.end());
      if (step + 1 == steps.size()) {
        Buffer logits(&b, M, vocab);
        b.linear(x.all(), r->emb, nullptr, logits.all());
        r->ids.assign(M, -1);
        std::vector<float> margins(M);
        b.argmax(logits.all(), r->ids, margins);
      }
    }
  }
  EXPECT_TRUE(normwise(g.out, c.out, 1e-2));
  // Greedy ids agree unless the CPU's top two are within the bf16 noise; only report, as a hint.
  if (g.ids != c.ids) std::printf("note: argmax ids differ (%d vs %d): near-tie in logits\n", g.ids[0], c.ids[0]);
}

// ---- Fused products ----

TEST_F(CudaBackendTest, LinearsAndGatedLinearEqualTheSeparateProducts) {
  // linears() (q, k, v in one launch) and gated_linear() (gate, up and silu in one launch) give bit
  // for bit what the separate products give on the GPU (same kernel, same reduction order), and
  // match the CPU on bf16-rounded inputs. Rows 1..M of a larger buffer, for M up to 11 (two groups).
  for (const int M : {1, 3, 8, 11}) {
    SCOPED_TRACE("M=" + std::to_string(M));
    const int K = 1280, nq = 1024, nk = 256, hidden = 1536;
    const auto x = random(static_cast<size_t>(M + 1) * K);
    const auto wq = random(static_cast<size_t>(nq) * K, -0.1f, 0.1f), wk = random(static_cast<size_t>(nk) * K, -0.1f, 0.1f);
    const auto bq = random(nq), yk0 = random(static_cast<size_t>(M) * nk);
    const auto wg = random(static_cast<size_t>(hidden) * K, -0.1f, 0.1f), wu = random(static_cast<size_t>(hidden) * K, -0.1f, 0.1f);

    struct Out {
      std::vector<float> q, k, gated;
    };
    auto run = [&](Backend& b, bool fused, bool round) {
      auto wt = [&](const std::vector<float>& v, int r, int c) {
        return b.upload_weight(round ? bf16_round(v) : std::vector<float>(v), r, c);
      };
      Buffer bx = put(b, round ? bf16_round(x) : x, M + 1, K);
      const Mat xv = bx.view(1, M);
      Weight Wq = wt(wq, nq, K), Wk = wt(wk, nk, K), Bq = b.upload_weight(std::vector<float>(bq), nq, 1);
      Weight Wg = wt(wg, hidden, K), Wu = wt(wu, hidden, K);
      Buffer q(&b, M, nq), k = put(b, yk0, M, nk), g(&b, M, hidden), u(&b, M, hidden);
      if (fused) {
        const LinearOut outs[2] = {{&Wq, &Bq, q.all(), false}, {&Wk, nullptr, k.all(), true}};
        b.linears(xv, outs);
        b.gated_linear(xv, Wg, Wu, g.all(), u.all());
      } else {
        b.linear(xv, Wq, &Bq, q.all());
        b.linear(xv, Wk, nullptr, k.all(), true);
        b.linear(xv, Wg, nullptr, g.all());
        b.linear(xv, Wu, nullptr, u.all());
        b.silu_mul(g.all(), u.all());
      }
      return Out{get(b, q.all()), get(b, k.all()), get(b, g.all())};
    };
    const Out fused = run(gpu(), true, false), separate = run(gpu(), false, false), ref = run(cpu(), false, true);
    EXPECT_TRUE(exact(fused.q, separate.q));
    EXPECT_TRUE(exact(fused.k, separate.k));
    EXPECT_TRUE(exact(fused.gated, separate.gated));
    EXPECT_TRUE(normwise(fused.q, ref.q, 1e-5));
    EXPECT_TRUE(normwise(fused.k, ref.k, 1e-5));
    EXPECT_TRUE(normwise(fused.gated, ref.gated, 1e-5));
  }
}

TEST_F(CudaBackendTest, SplitKProductsAreBatchInvariantAndRepeatable) {
  // Few output features over a long K: each 16-feature tile's K is cut into many pieces whose
  // partial sums the last block to finish adds in a fixed order (kernels_gemv_mma.cu). Every row
  // must come out bit for bit the same alone (M = 1), in any batch, and on every repeat (so the
  // arrival counters are left at zero), and match the CPU on bf16-rounded inputs.
  for (const auto& [N, K] : std::vector<std::pair<int, int>>{{64, 9216}, {40, 3072}, {300, 5120}, {16, 1288}}) {
    SCOPED_TRACE("N=" + std::to_string(N) + " K=" + std::to_string(K));
    const int M = 45;
    const auto x = random(static_cast<size_t>(M) * K), w = random(static_cast<size_t>(N) * K, -0.1f, 0.1f);
    Weight W = gpu().upload_weight(std::vector<float>(w), N, K);
    Buffer gx = put(gpu(), x, M, K), all(&gpu(), M, N), one(&gpu(), 1, N);
    poison(gpu(), all.all());
    gpu().linear(gx.all(), W, nullptr, all.all());
    const auto batched = get(gpu(), all.all());
    for (int rep = 0; rep < 2; ++rep) {
      for (const int m : {0, 7, 31, 44}) {
        poison(gpu(), one.all());
        gpu().linear(gx.view(m, 1), W, nullptr, one.all());
        const auto row = get(gpu(), one.all());
        EXPECT_TRUE(exact(row, std::vector<float>(batched.begin() + static_cast<long>(m) * N,
                                                  batched.begin() + static_cast<long>(m + 1) * N)))
            << "row " << m << ", repeat " << rep;
      }
    }
    Buffer cx = put(cpu(), bf16_round(x), M, K), cy(&cpu(), M, N);
    Weight cw = cpu().upload_weight(bf16_round(w), N, K);
    cpu().linear(cx.all(), cw, nullptr, cy.all());
    EXPECT_TRUE(normwise(batched, get(cpu(), cy.all()), 1e-5));
  }
}

TEST_F(CudaBackendTest, TiledGemmComputesTheGemvsBitsForEveryRow) {
  // The tiled GEMM on mma.sync (kernels_gemm_mma.cu) takes over from the GEMV for many rows, so for
  // every row it must compute exactly the GEMV's bits (the products' order, tensor_core.cuh): plain,
  // fused (q/k/v with a bias and an accumulating output) and gated products; K cut into pieces (long
  // rows), K not a multiple of the 64-element chunk, K shorter than one chunk; features and rows
  // that do not fill a tile; 64- and 128-row tiles; launches split across blocks by piece and not
  // (each case both ways).
  check_gemm_against_gemv(/*wgmma=*/false);
}

TEST_F(CudaBackendTest, WgmmaGemmIsTheDefaultOnHopper) {
  // The backend falls back to mma.sync where the wgmma kernel was not built for the device; on a
  // Hopper GPU (sm_90, the build's 90a) that fallback would be a silent slowdown.
#ifdef VOXRT_WITH_CUDA
  if (cuda::device_description(0).find("sm_90") == std::string::npos) GTEST_SKIP() << "not a Hopper GPU";
  // A build whose code for this GPU is older than sm_90a (a compute_80 PTX variant) has no wgmma.
  if (cuda::device_code_arch(0) != 900) GTEST_SKIP() << "this build's code for the GPU is not sm_90a";
  EXPECT_TRUE(cuda::gemm_wgmma_available()) << cuda::device_description(0);
#endif
}

TEST_F(CudaBackendTest, WgmmaGemmComputesTheGemvsBitsForEveryRow) {
  // The same cases through the wgmma GEMM (kernels_gemm_wgmma.cu, the default on Hopper): each k16
  // group of a piece's chain one wgmma, both operands staged by TMA in the 128-byte swizzle, so
  // every output must be the GEMV's, bit for bit.
  check_gemm_against_gemv(/*wgmma=*/true);
}

void CudaBackendTest::check_gemm_against_gemv(bool wgmma) {
#ifdef VOXRT_WITH_CUDA
  // Every case both ways, whatever the default: split across blocks wherever there are pieces
  // (1000 % of the SMs), and never.
  for (const int split_percent : {1000, 0}) {
    SCOPED_TRACE("gemm_split_percent " + std::to_string(split_percent));
    CudaOptions o;
    o.wgmma_gemm = wgmma;
    o.gemm_split_percent = split_percent;
    const std::unique_ptr<Backend> b = make_cuda_backend(0, o);
    check_gemm_against_gemv(*b);
  }
#else
  (void)wgmma;
#endif
}

void CudaBackendTest::check_gemm_against_gemv(Backend& b) {
  struct Case {
    int K;
    std::vector<int> n;
    bool gated;
    std::vector<int> rows;
  };
  // Under racecheck (scripts/gpu_sanitize.sh sets VOXRT_TEST_SMALL_GEMM_CASES) every shared-memory
  // access is checked, and the full sweep outruns a device call: small shapes that still take every
  // path (pieces of K, K not a multiple of a chunk and shorter than one, partial tiles, one 128-row
  // tile when split, fused and gated products).
  const std::vector<Case> small_cases = {
      {3072, {300}, false, {1, 31, 100}},   {1288, {40}, false, {70}}, {40, {24}, false, {65}},
      {1280, {512, 128, 128}, false, {77}}, {1280, {256, 256}, true, {65}},
  };
  const std::vector<Case> all_cases = {
      {3072, {300}, false, {1, 31, 64, 100, 129, 300}},
      {9216, {200}, false, {33, 200}},
      {5120, {1280}, false, {130}},
      {1288, {40}, false, {70}},
      {40, {24}, false, {65}},
      {1280, {512, 128, 128}, false, {77, 256, 1000}},
      {1280, {1000, 1000}, true, {65, 200, 600}},
      {4096, {200, 200}, true, {96}},
      {9216, {3072}, false, {600}},
      {512, {5000}, false, {512}},
      {9216, {3072}, false, {1000}},        // 128-row tiles, not split, two pieces folded in the block
      {2048, {3000, 3000}, true, {300}},    // gated, 128-row tiles, not split
  };
  const std::vector<Case>& cases = std::getenv("VOXRT_TEST_SMALL_GEMM_CASES") ? small_cases : all_cases;
  for (const Case& c : cases) {
    const int K = c.K, n_outs = static_cast<int>(c.n.size());
    const int M = *std::max_element(c.rows.begin(), c.rows.end());
    const auto x = random(static_cast<size_t>(M) * K);
    std::vector<Weight> w;
    std::vector<std::vector<float>> y0;
    for (int i = 0; i < n_outs; ++i) {
      w.push_back(b.upload_weight(random(static_cast<size_t>(c.n[i]) * K, -0.1f, 0.1f), c.n[i], K));
      y0.push_back(random(static_cast<size_t>(M) * c.n[i]));
    }
    Weight bias = b.upload_weight(random(c.n[0]), c.n[0], 1);
    Buffer gx = put(b, x, M, K);
    for (const int rows : c.rows) {
      SCOPED_TRACE("K=" + std::to_string(K) + " outputs=" + std::to_string(n_outs) + (c.gated ? " gated" : "") +
                   " M=" + std::to_string(rows));
      auto run = [&](KernelSwitches::ProductKernels kernels) {
        EXPECT_TRUE(b.kernel_switches()->set_product_kernels(kernels));
        std::vector<Buffer> y;
        for (int i = 0; i < n_outs; ++i) {
          y.push_back(put(b, std::vector<float>(y0[i].begin(), y0[i].begin() + static_cast<long>(rows) * c.n[i]), rows,
                          c.n[i]));
        }
        const Mat xv = gx.view(0, rows);
        if (c.gated) {
          b.gated_linear(xv, w[0], w[1], y[0].all(), y[1].all());
        } else if (n_outs == 1) {
          b.linear(xv, w[0], &bias, y[0].all(), true);
        } else {
          std::vector<LinearOut> outs;
          for (int i = 0; i < n_outs; ++i) outs.push_back({&w[i], i == 0 ? &bias : nullptr, y[i].all(), i == 1});
          b.linears(xv, outs);
        }
        std::vector<std::vector<float>> out;
        for (int i = 0; i < (c.gated ? 1 : n_outs); ++i) out.push_back(get(b, y[i].all()));
        return out;
      };
      const auto gemv = run(KernelSwitches::ProductKernels::Gemv), gemm = run(KernelSwitches::ProductKernels::Gemm);
      for (size_t i = 0; i < gemv.size(); ++i) EXPECT_TRUE(exact(gemm[i], gemv[i])) << "output " << i;
    }
  }
  EXPECT_TRUE(b.kernel_switches()->set_product_kernels(KernelSwitches::ProductKernels::Automatic));
}

TEST_F(CudaBackendTest, OptionsGivenAtConstructionTakeEffect) {
  // The switches come with the backend (CudaOptions), not from the process: two backends side by
  // side keep their own. fp32 K/V, cuBLAS products (no longer batch-invariant), graphs off.
#ifdef VOXRT_WITH_CUDA
  CudaOptions o;
  o.fp32_kv = true;
  o.library_products = true;
  o.graphs = false;
  const std::unique_ptr<Backend> other = make_cuda_backend(0, o);
  EXPECT_EQ(other->kv_element_bytes(), 4u);
  EXPECT_FALSE(other->batch_invariant());
  EXPECT_EQ(gpu().kv_element_bytes(), 2u);
  EXPECT_TRUE(gpu().batch_invariant());
  Buffer a(other.get(), 1, 8);
  for (int i = 0; i < 3; ++i) other->run_recorded("options recording", [&] { other->fill(a.data(), 1.0f, 8); });
  EXPECT_EQ(other->recording_stats().captured, 0u);
  EXPECT_EQ(other->recording_stats().replayed, 0u);
  // The library products give the GEMV's results within the products' tolerance.
  const int M = 5, N = 64, K = 256;
  const auto x = random(static_cast<size_t>(M) * K), w = random(static_cast<size_t>(N) * K, -0.1f, 0.1f);
  Buffer gx = put(gpu(), x, M, K), ox = put(*other, x, M, K), gy(&gpu(), M, N), oy(other.get(), M, N);
  Weight gw = gpu().upload_weight(std::vector<float>(w), N, K), ow = other->upload_weight(std::vector<float>(w), N, K);
  gpu().linear(gx.all(), gw, nullptr, gy.all());
  other->linear(ox.all(), ow, nullptr, oy.all());
  EXPECT_TRUE(normwise(get(*other, oy.all()), get(gpu(), gy.all()), 1e-5));
#endif
}

TEST_F(CudaBackendTest, UnalignedActivationsGiveTheSameProduct) {
  // x rows that are not 16-byte aligned go through a bf16 copy; the result is bit for bit the one
  // the kernel gives reading aligned fp32 rows (the same rounding).
  const int M = 3, N = 300, K = 1024;
  const auto x = random(static_cast<size_t>(M) * K + 1), w = random(static_cast<size_t>(N) * K);
  Buffer bx = put(gpu(), x, 1, static_cast<int>(x.size()));
  Buffer aligned(&gpu(), M, K);
  gpu().copy(aligned.data(), bx.data() + 1, static_cast<size_t>(M) * K);
  Weight W = gpu().upload_weight(std::vector<float>(w), N, K);
  Buffer y1(&gpu(), M, N), y2(&gpu(), M, N);
  gpu().linear(Mat{bx.data() + 1, M, K}, W, nullptr, y1.all());
  gpu().linear(aligned.all(), W, nullptr, y2.all());
  EXPECT_TRUE(exact(get(gpu(), y1.all()), get(gpu(), y2.all())));
}

TEST_F(CudaBackendTest, FusedNormAndRopeStoreEqualTheSeparateOps) {
  // rms_norm_scaled and rope_store_kv give bit for bit what their separate ops give on the GPU.
  const int rows = 5, dim = 320, heads = 8, kv_heads = 2, hd = 64, ring = 7;
  const auto x = random(static_cast<size_t>(rows) * dim), norm = random(dim, 0.5f, 1.5f);
  const auto scales = random(3 * static_cast<size_t>(dim), 0.8f, 1.2f);
  const std::vector<int> scale_row = {2, 0, 1, 1, 2};
  const auto q0 = random(static_cast<size_t>(rows) * heads * hd), k0 = random(static_cast<size_t>(rows) * kv_heads * hd),
             v0 = random(static_cast<size_t>(rows) * kv_heads * hd);
  // Two sessions, slot 0 past a ring wrap; no two rows share a ring entry (as in the model, whose
  // rings hold a window plus a batch).
  const std::vector<RowRef> refs = {{1, 3}, {0, 9}, {1, 4}, {0, 10}, {1, 5}};
  const auto inv_freq = rope_inv_freq(1e4, hd);
  const KvCacheShape shape{2, 2, ring, kv_heads, hd};
  struct Out {
    std::vector<float> y, q, k, keys, values;
  };
  auto run = [&](bool fused) {
    Backend& b = gpu();
    Weight W = b.upload_weight(std::vector<float>(norm), dim, 1);
    Buffer bx = put(b, x, rows, dim), by(&b, rows, dim), S = put(b, scales, 3, dim);
    Buffer q = put(b, q0, rows, heads * hd), k = put(b, k0, rows, kv_heads * hd), v = put(b, v0, rows, kv_heads * hd);
    KvCache cache(&b, shape);
    if (fused) {
      b.rms_norm_scaled(bx.all(), W, 1e-5f, by.all(), S.all(), scale_row);
      b.rope_store_kv(q.all(), k.all(), v.all(), heads, refs, inv_freq, cache, 1);
    } else {
      b.rms_norm(bx.all(), W, 1e-5f, by.all());
      b.scale_rows(by.all(), S.all(), scale_row);
      b.rope(q.all(), heads, hd, refs, inv_freq);
      b.rope(k.all(), kv_heads, hd, refs, inv_freq);
      b.store_kv(cache, 1, k.all(), v.all(), refs);
    }
    KvContents kv = contents(b, cache);
    return Out{get(b, by.all()), get(b, q.all()), get(b, k.all()), std::move(kv.keys), std::move(kv.values)};
  };
  const Out f = run(true), s = run(false);
  EXPECT_TRUE(exact(f.y, s.y));
  EXPECT_TRUE(exact(f.q, s.q));
  EXPECT_TRUE(exact(f.k, s.k));
  EXPECT_TRUE(exact(f.keys, s.keys));
  EXPECT_TRUE(exact(f.values, s.values));
}

// ---- Recordings (CUDA graphs) ----

TEST_F(CudaBackendTest, RecordingsReplayExactlyWithNewData) {
  // A recording of the model's op kinds (upload, embed, rms_norm, fused products, rope, store_kv,
  // attention over a ring that wraps, scale_rows, copy) run 12 times at new positions with new
  // inputs and ids, under run_recorded (eager, captured, then replayed) and on a backend with graphs
  // off: every output bit for bit equal. Then the recording moves to another buffer: the signature
  // changes and the recording is captured again, still exact.
#ifdef VOXRT_WITH_CUDA
  setenv("VOXRT_CUDA_GRAPHS", "0", 1);
  std::unique_ptr<Backend> plain = make_cuda_backend(0);
  unsetenv("VOXRT_CUDA_GRAPHS");
#else
  std::unique_ptr<Backend> plain;  // not reached: the fixture skips without CUDA
#endif
  const int dim = 256, heads = 8, kv_heads = 2, hd = 32, window = 6, vocab = 50;
  const KvCacheShape shape{1, 1, window, kv_heads, hd};
  const auto inv_freq = rope_inv_freq(1e4, hd);
  const auto norm = random(dim, 0.5f, 1.5f), wq = random(static_cast<size_t>(heads) * hd * dim, -0.1f, 0.1f),
             wk = random(static_cast<size_t>(kv_heads) * hd * dim, -0.1f, 0.1f),
             wv = random(static_cast<size_t>(kv_heads) * hd * dim, -0.1f, 0.1f), emb = random(static_cast<size_t>(vocab) * dim),
             scales = random(3 * static_cast<size_t>(dim), 0.8f, 1.2f);
  std::vector<std::vector<float>> audio;
  std::vector<int32_t> ids;
  std::vector<int> delay;
  for (int i = 0; i < 14; ++i) {
    audio.push_back(random(dim));
    ids.push_back(random_int(0, vocab - 1));
    delay.push_back(random_int(0, 2));
  }

  auto run = [&](Backend& b) {
    Weight Wn = b.upload_weight(std::vector<float>(norm), dim, 1), Wq = b.upload_weight(std::vector<float>(wq), heads * hd, dim),
           Wk = b.upload_weight(std::vector<float>(wk), kv_heads * hd, dim),
           Wv = b.upload_weight(std::vector<float>(wv), kv_heads * hd, dim), E = b.upload_weight(std::vector<float>(emb), vocab, dim);
    Buffer S = put(b, scales, 3, dim);
    KvCache cache(&b, shape);
    Buffer in_a(&b, 1, dim), in_b(&b, 1, dim), x(&b, 1, dim), h(&b, 1, dim), q(&b, 1, heads * hd), k(&b, 1, kv_heads * hd),
        v(&b, 1, kv_heads * hd), o(&b, 1, heads * hd), out(&b, 1, dim);
    std::vector<float> all;
    for (int i = 0; i < 14; ++i) {
      Buffer& in = i < 10 ? in_a : in_b;  // the last 4 runs read another buffer: recaptured
      const RowRef row{0, i};
      b.run_recorded("test recording", [&] {
        b.upload(in.data(), audio[i].data(), dim);
        b.embed(E, std::span<const int32_t>(&ids[i], 1), x.all());
        b.add(x.all(), in.all());
        b.rms_norm(x.all(), Wn, 1e-5f, h.all());
        const LinearOut qkv[3] = {{&Wq, nullptr, q.all()}, {&Wk, nullptr, k.all()}, {&Wv, nullptr, v.all()}};
        b.linears(h.all(), qkv);
        b.rope(q.all(), heads, hd, std::span<const RowRef>(&row, 1), inv_freq);
        b.rope(k.all(), kv_heads, hd, std::span<const RowRef>(&row, 1), inv_freq);
        b.store_kv(cache, 0, k.all(), v.all(), std::span<const RowRef>(&row, 1));
        const AttentionParams ap{heads, kv_heads, hd, window, 1.0f / std::sqrt(static_cast<float>(hd))};
        b.attention(cache, 0, q.all(), std::span<const RowRef>(&row, 1), ap, o.all());
        b.scale_rows(o.all(), S.all(), std::span<const int>(&delay[i], 1));
        b.copy(out.data(), o.data(), dim);
      });
      const auto r = get(b, out.all());
      all.insert(all.end(), r.begin(), r.end());
    }
    return all;
  };
  const RecordingStats before = gpu().recording_stats();
  const auto graphed = run(gpu());
  const auto eager = run(*plain);
  EXPECT_TRUE(exact(graphed, eager));
  const RecordingStats after = gpu().recording_stats();
  // Run 1 eager, 2 captured, 3..10 replayed; 11 (new buffer) mismatches and is captured again.
  EXPECT_EQ(after.captured - before.captured, 2u);
  EXPECT_EQ(after.replayed - before.replayed, 11u);
  EXPECT_EQ(after.eager - before.eager, 1u);
  EXPECT_EQ(plain->recording_stats().replayed, 0u);
}

TEST_F(CudaBackendTest, RecordingThatAllocatesRunsEagerlyAndForbiddenOpsThrow) {
  Buffer a(&gpu(), 1, 16);
  gpu().fill(a.data(), 1.0f, 16);
  for (int i = 0; i < 3; ++i) {
    gpu().run_recorded("allocating recording", [&] {
      Buffer tmp(&gpu(), 1, 16);  // cannot be captured: the recording runs op by op
      gpu().fill(tmp.data(), 2.0f, 16);
      gpu().add(a.all(), tmp.all());
    });
  }
  EXPECT_TRUE(exact(get(gpu(), a.all()), std::vector<float>(16, 7.0f)));
  std::vector<float> host(16);
  for (int i = 0; i < 3; ++i) {
    EXPECT_THROW(gpu().run_recorded("downloading recording", [&] { gpu().download(host.data(), a.data(), 16); }), Error);
  }
  EXPECT_TRUE(exact(get(gpu(), a.all()), std::vector<float>(16, 7.0f)));  // still usable
}

// A GPU older than voxrt needs gets its answer when the backend is made, naming the GPU and its
// capability, before any kernel runs (CudaOptions::as_gpu hands the backend a T4's figures on the
// GPU there is); a GPU the table does not know is named back with the ones it does.
TEST(CudaBackendGpus, AGpuOlderThanAmpereIsRefusedWhenTheBackendIsMade) {
#ifndef VOXRT_WITH_CUDA
  GTEST_SKIP() << "built without CUDA (cmake --preset cuda builds it)";
#else
  if (cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device on this machine: GPU test skipped";
  const auto refusal = [](const char* as_gpu) -> std::string {
    CudaOptions o = cuda_options_from_environment();
    o.as_gpu = as_gpu;
    try {
      make_cuda_backend(0, o);
    } catch (const Error& e) {
      return e.what();
    }
    return {};
  };
  const std::string t4 = refusal("T4");
  EXPECT_NE(t4.find("Tesla T4 (sm_75"), std::string::npos) << t4;
  EXPECT_NE(t4.find("8.0 or newer"), std::string::npos) << t4;
  const std::string unknown = refusal("A10");
  EXPECT_NE(unknown.find("VOXRT_CUDA_AS_GPU"), std::string::npos) << unknown;
  EXPECT_NE(unknown.find("A10G"), std::string::npos) << unknown;
  EXPECT_EQ(refusal("A10G"), "");
  EXPECT_EQ(refusal("L4"), "");
#endif
}

}  // namespace
}  // namespace voxrt
