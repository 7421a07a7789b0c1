// The CUDA backend's quantized weights (4w, 8w; fp8 refused at upload until its kernels come): every
// product and lookup is, bit for bit, what the same backend computes with a bf16 weight holding the
// dequantized values (quant/weight_format.h), at every row count, through the GEMV and the tiled
// GEMM (so a quantized product keeps the batch invariance of the bf16 ones), alone,
// fused (linears, gated_linear) and as the embedding; and the tiny model with quantized weights
// on the GPU agrees with the CPU backend's within the bf16 tolerances. Skipped, saying so, without
// a CUDA device.
#include <gtest/gtest.h>

#include <cstring>
#include <initializer_list>
#include <string>
#include <random>
#include <vector>

#include "../parity/gpu_here.h"
#include "common/bf16.h"
#include "quant/quantizer.h"
#include "runtime/backend.h"
#include "runtime/cuda_options.h"
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

// fp8 weights (W8A8) have no kernels on the GPU yet: refused at upload, saying why (on a GPU without
// fp8 tensor cores, that it has none), before the model would run on them.
TEST(CudaQuantizedFp8, Fp8WeightsAreRefusedAtUploadSayingWhy) {
  REQUIRE_GPU();
  auto b = make_cuda_backend(0);
  std::vector<float> w(64 * 64, 0.25f);
  try {
    b->upload_quantized(quantize(w.data(), 64, 64, {QuantKind::Fp8, 64}));
    FAIL() << "an fp8 weight was taken";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_TRUE(m.find("fp8 weights: the CUDA backend's fp8 products are not built yet") != std::string::npos ||
                m.find("fp8 weights need a GPU with fp8 tensor cores (sm_89 or later)") != std::string::npos)
        << m;
  }
}
#else
TEST(CudaQuantized, SkippedWithoutTheCudaBackend) {
  GTEST_SKIP() << "no CUDA backend in this build: GPU case skipped (runs on the GPU machine)";
}
#endif

}  // namespace
}  // namespace voxrt
