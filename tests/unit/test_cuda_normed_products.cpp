// The CUDA backend's normed products (Backend::normed_linears, normed_gated_linear): where the GEMV
// folds the RMS norm into its staging of x (CudaOptions::norm_in_products), every output is bit
// for bit what the norm kernel followed by the products gives (the same sums in the same order,
// rms_norm_math.cuh), and h, which the fold never writes, is left as it was; where it cannot fold
// (the tiled GEMM's row counts, fp8 weights), the backend norms into h first. Over the widths the
// model's norms have (the encoder's 1280, the decoder's 3072), one to 40 rows, bf16 and 4w weights,
// fp32 and bf16 norm weights, plain and row-scaled norms (the decoder's delay conditioning), one,
// three and gated products. Skipped, saying so, without a CUDA device.
#include <gtest/gtest.h>

#include <memory>
#include <random>
#include <string>
#include <vector>

#include "../parity/gpu_here.h"
#include "common/bf16.h"
#include "quant/quantizer.h"
#include "runtime/backend.h"
#include "runtime/cuda_options.h"
#ifdef VOXRT_WITH_CUDA
#include "runtime/cuda/cuda_device.h"
#endif

namespace voxrt {
namespace {

#ifdef VOXRT_WITH_CUDA
std::vector<float> uniform(size_t n, float lo, float hi, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

std::vector<float> download(Backend& b, const Buffer& y) {
  std::vector<float> h(y.size());
  b.download(h.data(), y.data(), h.size());
  return h;
}

Buffer put(Backend& b, const std::vector<float>& v, int rows, int cols) {
  Buffer out(&b, rows, cols);
  b.upload(out.data(), v.data(), v.size());
  return out;
}

// One backend's weights and buffers for a case: a layer's norm, q/k/v-like products, a gate and up
// pair and a single wide product, quantized (4w) or bf16.
struct Layer {
  Weight norm, wq, bq, wk, wv, wg, wu, head;
  Layer(Backend& b, int K, bool quantized, bool bf16_norm) {
    const auto nw = uniform(K, 0.5f, 1.5f, 1);
    if (bf16_norm) {
      std::vector<uint16_t> bits(K);
      for (int i = 0; i < K; ++i) bits[i] = float_to_bf16(nw[i]);
      norm = b.upload_weight_bf16(std::move(bits), K, 1);
    } else {
      norm = b.upload_weight(std::vector<float>(nw), K, 1);
    }
    auto matrix = [&](int n, unsigned seed) {
      auto w = uniform(static_cast<size_t>(n) * K, -0.05f, 0.05f, seed);
      if (quantized) return b.upload_quantized(quantize(w.data(), n, K, WeightFormat{QuantKind::Int4, 32}));
      return b.upload_weight(std::move(w), n, K);
    };
    wq = matrix(1024, 2), wk = matrix(256, 3), wv = matrix(256, 4), wg = matrix(1536, 5), wu = matrix(1536, 6);
    head = matrix(2000, 7);
    bq = b.upload_weight(uniform(1024, -1, 1, 8), 1024, 1);
  }
};

struct Outputs {
  std::vector<float> q, k, v, gated, head, h;
};

// The normed products of M rows on b (h filled with a sentinel first), the norm scaled by rows of
// `scales` when scaled.
Outputs run(Backend& b, int M, int K, bool quantized, bool bf16_norm, bool scaled) {
  Layer l(b, K, quantized, bf16_norm);
  const Buffer x = put(b, uniform(static_cast<size_t>(M) * K, -2, 2, 100 + M), M, K);
  const Buffer scales = put(b, uniform(static_cast<size_t>(4) * K, 0.5f, 2, 9), 4, K);
  std::vector<int> scale_row(M);
  for (int m = 0; m < M; ++m) scale_row[m] = (3 * m + 1) % 4;
  Buffer h = put(b, std::vector<float>(static_cast<size_t>(M) * K, 12345.0f), M, K);
  Buffer q(&b, M, 1024), k = put(b, uniform(static_cast<size_t>(M) * 256, -1, 1, 10), M, 256), v(&b, M, 256);
  Buffer g(&b, M, 1536), u(&b, M, 1536), head(&b, M, 2000);
  RowNorm norm{&l.norm, 1e-5f};
  if (scaled) norm.scales = scales.all(), norm.scale_row = scale_row;
  const LinearOut qkv[3] = {{&l.wq, &l.bq, q.all()}, {&l.wk, nullptr, k.all(), true}, {&l.wv, nullptr, v.all()}};
  b.normed_linears(x.all(), norm, h.all(), qkv);
  Outputs out;
  out.h = download(b, h);
  b.normed_gated_linear(x.all(), norm, h.all(), l.wg, l.wu, g.all(), u.all());
  const LinearOut one[1] = {{&l.head, nullptr, head.all()}};
  b.normed_linears(x.all(), norm, h.all(), one);
  out.q = download(b, q), out.k = download(b, k), out.v = download(b, v);
  out.gated = download(b, g), out.head = download(b, head);
  return out;
}

#endif

TEST(CudaNormedProducts, TheFoldedNormGivesTheBitsOfTheNormKernelThenTheProducts) {
  REQUIRE_GPU();
#ifdef VOXRT_WITH_CUDA
  const CudaOptions folding = cuda_options_from_environment();
  ASSERT_TRUE(folding.norm_in_products) << "VOXRT_CUDA_NORM_IN_PRODUCTS=0 is set: nothing to compare";
  CudaOptions separate = folding;
  separate.norm_in_products = false;
  auto b = make_cuda_backend(0, folding), r = make_cuda_backend(0, separate);
  for (const int K : {1280, 3072})
    for (const bool quantized : {false, true})
      for (const int M : {1, 2, 5, 8, 9, 33, 40})
        for (const bool scaled : {false, true}) {
          const bool bf16_norm = (M + K / 1280) % 2 == 0;  // both kinds of norm weight over the cases
          SCOPED_TRACE("K=" + std::to_string(K) + (quantized ? " 4w" : " bf16") + " M=" + std::to_string(M) +
                       (scaled ? " scaled" : "") + (bf16_norm ? " bf16 norm" : " fp32 norm"));
          const Outputs a = run(*b, M, K, quantized, bf16_norm, scaled);
          const Outputs e = run(*r, M, K, quantized, bf16_norm, scaled);
          EXPECT_EQ(a.q, e.q);
          EXPECT_EQ(a.k, e.k);
          EXPECT_EQ(a.v, e.v);
          EXPECT_EQ(a.gated, e.gated);
          EXPECT_EQ(a.head, e.head);
          // One row always folds (the decoder's step, the model's widths): h keeps its sentinel.
          // The separate norm wrote it.
          if (M == 1) {
            EXPECT_EQ(a.h, std::vector<float>(static_cast<size_t>(K), 12345.0f));
          }
          EXPECT_NE(e.h[0], 12345.0f);
        }
#endif
}

}  // namespace
}  // namespace voxrt
