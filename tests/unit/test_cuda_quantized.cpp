// The CUDA backend's quantized weights (4w, 8w; fp8 at the end): every
// product and lookup is, bit for bit, what the same backend computes with a bf16 weight holding the
// dequantized values (quant/weight_format.h), at every row count, through the GEMV and the tiled
// GEMM (so a quantized product keeps the batch invariance of the bf16 ones), alone,
// fused (linears, gated_linear) and as the embedding; and the tiny model with quantized weights
// on the GPU agrees with the CPU backend's within the bf16 tolerances. Skipped, saying so, without
// a CUDA device.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <initializer_list>
#include <string>
#include <random>
#include <utility>
#include <vector>

#include "../parity/gpu_here.h"
#include "common/bf16.h"
#include "quant/quantizer.h"
#include "runtime/backend.h"
#include "runtime/cuda_options.h"
#ifdef VOXRT_WITH_CUDA
#include "runtime/cuda/cuda_device.h"
#endif
#include "voxrt/error.h"

namespace voxrt {
namespace {

#ifdef VOXRT_WITH_CUDA
struct Quantized {
  QuantizedMatrix q;
  std::vector<uint16_t> dequantized;  // bf16 bits
};

Quantized make_weight(int n, int k, WeightFormat f, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0, 0.05f);
  std::vector<float> w(static_cast<size_t>(n) * k);
  for (float& x : w) x = d(rng);
  Quantized out;
  out.q = quantize(w.data(), n, k, f);
  out.dequantized = dequantize_bf16(out.q);
  return out;
}

std::vector<float> random_rows(int m, int k, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-1, 1);
  std::vector<float> x(static_cast<size_t>(m) * k);
  for (float& v : x) v = d(rng);
  return x;
}

std::vector<float> download(Backend& b, const Buffer& y) {
  std::vector<float> h(y.size());
  b.download(h.data(), y.data(), h.size());
  return h;
}

class CudaQuantized : public ::testing::TestWithParam<WeightFormat> {};

// A backend whose bf16 products cut K into the pieces quantized weights get (CudaOptions'
// gemv_packed_*): the reference a quantized product must equal bit for bit.
std::unique_ptr<Backend> bf16_reference_backend() {
  CudaOptions o = cuda_options_from_environment();
  o.gemv_split_warps_per_sm = o.gemv_packed_split_warps_per_sm;
  o.gemv_min_piece_chunks = o.gemv_packed_min_piece_chunks;
  return make_cuda_backend(0, o);
}

// Every product of N x K weights, alone and fused, on b, against the bf16 weights of the
// dequantized values on the reference backend r.
void expect_bf16_products(Backend& b, Backend& r, WeightFormat f, int N, int K, std::initializer_list<int> row_counts) {
  Quantized w = make_weight(N, K, f, 11), w2 = make_weight(N, K, f, 12);
  const Weight q = b.upload_quantized(QuantizedMatrix(w.q)), q2 = b.upload_quantized(QuantizedMatrix(w2.q));
  const Weight d = r.upload_weight_bf16(std::vector<uint16_t>(w.dequantized), N, K);
  const Weight d2 = r.upload_weight_bf16(std::vector<uint16_t>(w2.dequantized), N, K);
  EXPECT_TRUE(q.format == f);
  const std::string what = format_name(f) + " [" + std::to_string(N) + ", " + std::to_string(K) + "] ";
  for (int M : row_counts) {
    const std::vector<float> xh = random_rows(M, K, 100 + M);
    Buffer x(&b, M, K), yq(&b, M, N), uq(&b, M, N), xr(&r, M, K), yd(&r, M, N), ud(&r, M, N);
    b.upload(x.data(), xh.data(), xh.size());
    r.upload(xr.data(), xh.data(), xh.size());
    b.linear(x.all(), q, nullptr, yq.all());
    r.linear(xr.all(), d, nullptr, yd.all());
    EXPECT_EQ(download(b, yq), download(r, yd)) << what << "linear, " << M << " rows";
    // Fused: two products over one x, and the gated pair.
    const LinearOut lq[2] = {{&q, nullptr, yq.all()}, {&q2, nullptr, uq.all()}};
    const LinearOut ld[2] = {{&d, nullptr, yd.all()}, {&d2, nullptr, ud.all()}};
    b.linears(x.all(), lq);
    r.linears(xr.all(), ld);
    EXPECT_EQ(download(b, yq), download(r, yd)) << what << "linears, " << M << " rows";
    EXPECT_EQ(download(b, uq), download(r, ud)) << what << "linears, " << M << " rows";
    b.gated_linear(x.all(), q, q2, yq.all(), uq.all());
    r.gated_linear(xr.all(), d, d2, yd.all(), ud.all());
    EXPECT_EQ(download(b, yq), download(r, yd)) << what << "gated_linear, " << M << " rows";
  }
}

TEST_P(CudaQuantized, ProductsAreTheBf16ProductsOfTheDequantizedWeightsAtEveryRowCount) {
  REQUIRE_GPU();
  const WeightFormat f = GetParam();
  auto r = bf16_reference_backend();
  // Both tiled GEMMs: the default (on Hopper, wgmma taking the fragments dequantized in registers as
  // its A operand) and mma.sync (every other GPU; VOXRT_CUDA_GEMM=mma).
  for (const bool wgmma : {true, false}) {
    SCOPED_TRACE(wgmma ? "tiled GEMM: the default (wgmma on Hopper)" : "tiled GEMM: mma.sync");
    CudaOptions o = cuda_options_from_environment();
    o.wgmma_gemm = wgmma;
    auto b = make_cuda_backend(0, o);
    const int K = 1280, N = 640;  // the encoder's width
    // From CudaOptions::gemm_packed_min_rows rows on, the quantized tiled GEMM against the bf16 one
    // (wgmma on Hopper): 200 and 300 rows split K across blocks.
    expect_bf16_products(*b, *r, f, N, K, {1, 3, 8, 17, 32, 33, 100, 200, 300});
    // A ragged last tile of features, and (groups of 32) a last chunk of K that is half padding.
    expect_bf16_products(*b, *r, f, 653, f.group_size == 32 ? 1312 : K, {1, 17, 33, 130});
    // Enough tiles that the GEMM does not split: each block adds its pieces of K itself.
    expect_bf16_products(*b, *r, f, 2048, K, {520});
    Quantized w = make_weight(N, K, f, 11);
    const Weight q = b->upload_quantized(QuantizedMatrix(w.q));
    // A row's result does not depend on the rows beside it (40 rows: the tiled GEMM; one: the GEMV).
    const int M = 40;
    const std::vector<float> xh = random_rows(M, K, 7);
    Buffer x(b.get(), M, K), y(b.get(), M, N), one(b.get(), 1, N);
    b->upload(x.data(), xh.data(), xh.size());
    b->linear(x.all(), q, nullptr, y.all());
    const std::vector<float> all = download(*b, y);
    for (int row : {0, 17, 39}) {
      b->linear(x.view(row, 1), q, nullptr, one.all());
      const std::vector<float> alone = download(*b, one);
      EXPECT_TRUE(std::equal(alone.begin(), alone.end(), all.begin() + static_cast<size_t>(row) * N))
          << format_name(f) << " row " << row;
    }
  }
}

TEST_P(CudaQuantized, TheEmbeddingLooksUpTheDequantizedRows) {
  REQUIRE_GPU();
  const WeightFormat f = GetParam();
  auto b = make_cuda_backend(0);
  const int V = 300, D = 1280;
  Quantized w = make_weight(V, D, f, 5);
  const Weight q = b->upload_quantized(QuantizedMatrix(w.q));
  const std::vector<int32_t> ids = {0, 299, 17, 17, 150};
  Buffer y(b.get(), static_cast<int>(ids.size()), D);
  b->embed(q, ids, y.all());
  const std::vector<float> got = download(*b, y);
  for (size_t r = 0; r < ids.size(); ++r)
    for (int c = 0; c < D; ++c)
      ASSERT_EQ(got[r * D + c], bf16_to_float(w.dequantized[static_cast<size_t>(ids[r]) * D + c]))
          << format_name(f) << " id " << ids[r] << " column " << c;
}

INSTANTIATE_TEST_SUITE_P(Formats, CudaQuantized,
                         ::testing::Values(WeightFormat{QuantKind::Int4, 32}, WeightFormat{QuantKind::Int4, 128},
                                           WeightFormat{QuantKind::Int8, 1280}, WeightFormat{QuantKind::Int8, 64}),
                         [](const auto& info) {
                           return std::string(info.param.kind == QuantKind::Int4 ? "W4" : "W8") + "Group" +
                                  std::to_string(info.param.group_size);
                         });

// fp8 weights (W8A8): each row of x quantized to e4m3 on its own, the codes multiplied on the e4m3
// tensor cores (mma.sync m16n8k32; on Hopper wgmma, for every row count), the sum scaled by the
// row's and the feature's scales. Where the
// GPU or this build's code for it has no fp8 tensor cores the weights are refused at upload, saying
// why. Elsewhere: every product agrees with the CPU backend's (the same codes and scales; only the
// order and precision of the sum differ), and a row's result is the same bits whatever shares its
// launch: alone (the GEMV), among 40 or 300 rows (the tiled GEMM), fused with another product.
// The largest |got - want| and the largest |want|.
std::pair<double, double> largest_difference(const std::vector<float>& got, const std::vector<float>& want) {
  double worst = 0, largest = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    worst = std::max(worst, static_cast<double>(std::fabs(got[i] - want[i])));
    largest = std::max(largest, static_cast<double>(std::fabs(want[i])));
  }
  return {worst, largest};
}

void expect_fp8_products(bool wgmma) {
  CudaOptions o = cuda_options_from_environment();
  o.wgmma_gemm = wgmma;
  auto b = make_cuda_backend(0, o);
  auto cpu = make_cpu_backend();
  const int N = 640, K = 1280;
  std::mt19937 rng(3);
  std::normal_distribution<float> d(0, 0.05f);
  std::vector<float> w(static_cast<size_t>(N) * K), w2(w.size());
  for (float& v : w) v = d(rng);
  for (float& v : w2) v = d(rng);
  const QuantizedMatrix qm = quantize(w.data(), N, K, {QuantKind::Fp8, K}), qm2 = quantize(w2.data(), N, K, {QuantKind::Fp8, K});
  Weight q, q2;
  try {
    q = b->upload_quantized(QuantizedMatrix(qm));
  } catch (const Error& e) {
    const std::string m = e.what();
    // Refused only where there are no fp8 tensor cores to run on, saying so.
    EXPECT_TRUE(m.find("fp8 weights need a GPU with fp8 tensor cores (sm_89 or later)") != std::string::npos ||
                m.find("this build's code for the GPU has no fp8 tensor-core instructions") != std::string::npos)
        << m;
    EXPECT_TRUE(cuda::device_code_arch(0) < 890) << "refused on " << cuda::device_description(0) << ": " << m;
    GTEST_SKIP() << "fp8 weights refused here, as they must be: " << m;
  }
  q2 = b->upload_quantized(QuantizedMatrix(qm2));
  const Weight c = cpu->upload_quantized(QuantizedMatrix(qm)), c2 = cpu->upload_quantized(QuantizedMatrix(qm2));
  // Agreement with the CPU: the largest difference against the largest output, over every row count
  // (GEMV and GEMM). The codes are the same; the tensor cores round the sums their own way, where
  // the CPU adds in fp32 (tools/probes/mma_fp8_numerics.cu): mma.sync's e4m3 within 1.4e-7 of the
  // largest output (an H100 through VOXRT_CUDA_GEMM=mma), Hopper's wgmma, which keeps fewer bits of
  // each chunk's sum, within 1e-3 (a misplaced scale or code costs of order 1).
  const double kTolerance = wgmma ? 1e-3 : 1e-4;
  const int M_max = 300;
  const std::vector<float> xh = random_rows(M_max, K, 21);
  Buffer x(b.get(), M_max, K), y(b.get(), M_max, N), u(b.get(), M_max, N), xc(cpu.get(), M_max, K),
      yc(cpu.get(), M_max, N);
  b->upload(x.data(), xh.data(), xh.size());
  cpu->upload(xc.data(), xh.data(), xh.size());
  b->linear(x.all(), q, nullptr, y.all());
  cpu->linear(xc.all(), c, nullptr, yc.all());
  const std::vector<float> all = download(*b, y), want = download(*cpu, yc);
  const auto [worst, largest] = largest_difference(all, want);
  std::printf("[fp8 on the GPU, %s] %d x %d against the CPU: largest difference %.3g of the largest output %.3g (%.2g)\n",
              wgmma ? "default kernels" : "mma.sync", N, K, worst, largest, worst / largest);
  EXPECT_LE(worst, kTolerance * largest);
  // Each row alone (the GEMV; on Hopper the GEMM), in the first 40 (the tiled GEMM from
  // gemm_fp8_min_rows on), in all 300, and fused with a second product: the same bits.
  for (const int M : {1, 3, 17, 40}) {
    Buffer part(b.get(), M, N), other(b.get(), M, N);
    b->linear(x.view(0, M), q, nullptr, part.all());
    const std::vector<float> got = download(*b, part);
    EXPECT_TRUE(std::equal(got.begin(), got.end(), all.begin())) << "the first " << M << " rows";
    const LinearOut fused[2] = {{&q, nullptr, part.all()}, {&q2, nullptr, other.all()}};
    b->linears(x.view(0, M), fused);
    const std::vector<float> got_fused = download(*b, part);
    EXPECT_TRUE(std::equal(got_fused.begin(), got_fused.end(), all.begin())) << "the first " << M << " rows, fused";
  }
  for (const int r : {5, 250, 299}) {
    Buffer one(b.get(), 1, N);
    b->linear(x.view(r, 1), q, nullptr, one.all());
    const std::vector<float> alone = download(*b, one);
    EXPECT_TRUE(std::equal(alone.begin(), alone.end(), all.begin() + static_cast<size_t>(r) * N)) << "row " << r;
  }
  // The gated pair (SwiGLU's silu(gate) * up in the epilogue) against the CPU's, at a GEMV's and a
  // GEMM's row count.
  for (const int M : {8, 300}) {
    Buffer g(b.get(), M, N), gu(b.get(), M, N), gc(cpu.get(), M, N), guc(cpu.get(), M, N);
    b->gated_linear(x.view(0, M), q, q2, g.all(), gu.all());
    cpu->gated_linear(xc.view(0, M), c, c2, gc.all(), guc.all());
    const std::vector<float> got = download(*b, g), ref = download(*cpu, gc);
    const auto [gated_worst, gated_largest] = largest_difference(got, ref);
    EXPECT_LE(gated_worst, kTolerance * gated_largest) << "gated, " << M << " rows";
  }
}
TEST(CudaQuantizedFp8, ProductsAgreeWithTheCpuAndKeepEachRowsBitsWhateverItsBatch) {
  REQUIRE_GPU();
  for (const bool wgmma : {true, false}) {
    SCOPED_TRACE(wgmma ? "the default kernels (on Hopper: wgmma for every row count)" : "mma.sync (VOXRT_CUDA_GEMM=mma)");
    expect_fp8_products(wgmma);
    if (::testing::Test::IsSkipped()) return;
  }
}
#else
TEST(CudaQuantized, SkippedWithoutTheCudaBackend) {
  GTEST_SKIP() << "no CUDA backend in this build: GPU case skipped (runs on the GPU machine)";
}
#endif

}  // namespace
}  // namespace voxrt
