// The CPU backend's fp8 products (W8A8, quant/weight_format.h) against the definition computed by
// hand in double: the activations quantized per row, the product of e4m3 values, the scales on the
// product alone, then the bias and the accumulation; alone, fused (linears) and gated.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "common/bf16.h"
#include "quant/fp8_e4m3.h"
#include "quant/quantizer.h"
#include "runtime/backend.h"

namespace voxrt {
namespace {

std::vector<float> normal_values(size_t n, float sigma, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0, sigma);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

// The definition, one output at a time: y[m, n] = (acc * s_x[m]) * s_w[n] (+ y0) (+ bias), acc
// summed in double; and beside it a bound on what fp32 sums may differ by (the sum of magnitudes).
struct Expected {
  std::vector<double> y, magnitude;
};
Expected reference(const std::vector<float>& x, int M, int K, const QuantizedMatrix& w, const float* bias,
                   const std::vector<float>* y0) {
  const int N = w.rows;
  Expected e{std::vector<double>(static_cast<size_t>(M) * N), std::vector<double>(static_cast<size_t>(M) * N)};
  std::vector<double> xq(K);
  for (int m = 0; m < M; ++m) {
    float a = 0;
    for (int k = 0; k < K; ++k) a = std::max(a, std::fabs(x[m * K + k]));
    const float inv = a > 0 ? 448.0f / a : 0.0f, sx = a / 448.0f;
    for (int k = 0; k < K; ++k) xq[k] = a > 0 ? e4m3_to_float(float_to_e4m3(x[m * K + k] * inv)) : 0.0;
    for (int n = 0; n < N; ++n) {
      double acc = 0, magnitude = 0;
      for (int k = 0; k < K; ++k) {
        const double term = xq[k] * e4m3_to_float(w.packed[static_cast<size_t>(n) * K + k]);
        acc += term;
        magnitude += std::fabs(term);
      }
      const double sw = bf16_to_float(w.scales[n]);
      double y = acc * sx * sw;
      magnitude *= sx * sw;
      if (y0) y += (*y0)[m * N + n], magnitude += std::fabs((*y0)[m * N + n]);
      if (bias) y += bias[n], magnitude += std::fabs(bias[n]);
      e.y[m * N + n] = y;
      e.magnitude[m * N + n] = magnitude;
    }
  }
  return e;
}

// y within fp32's rounding of the sums: a few units of 2^-24 of the magnitudes summed a term,
// far below e4m3's own steps (2^-4 of a value), so a scale misplaced or missed fails it.
void expect_definition(const std::vector<float>& y, const Expected& e, const std::string& what) {
  ASSERT_EQ(y.size(), e.y.size());
  for (size_t i = 0; i < y.size(); ++i)
    ASSERT_LE(std::fabs(y[i] - e.y[i]), 1e-5 * e.magnitude[i] + 1e-30) << what << " element " << i << ": " << y[i]
                                                                        << " against " << e.y[i];
}

TEST(Fp8Linear, TheCpuComputesTheDefinitionWithBiasAndAccumulation) {
  auto b = make_cpu_backend(2);
  // 150 rows: two slices of 64 and a remainder; K 160.
  const int N = 150, K = 160;
  const QuantizedMatrix q = quantize(normal_values(static_cast<size_t>(N) * K, 0.05f, 1).data(), N, K, {QuantKind::Fp8, K});
  const Weight w = b->upload_quantized(QuantizedMatrix(q));
  const std::vector<float> bias_values = normal_values(N, 0.5f, 2);
  const Weight bias = b->upload_weight(std::vector<float>(bias_values), N, 1);
  for (const int M : {1, 5}) {
    std::vector<float> xh = normal_values(static_cast<size_t>(M) * K, 1.0f, 10 + M);
    for (int k = 0; k < K; ++k) xh[(M - 1) * K + k] *= 1000.0f;  // rows of their own magnitudes
    if (M > 1) std::fill(xh.begin() + K, xh.begin() + 2 * K, 0.0f);  // and a row of zeros
    const std::vector<float> y0 = normal_values(static_cast<size_t>(M) * N, 3.0f, 20 + M);
    Buffer x(b.get(), M, K), y(b.get(), M, N);
    b->upload(x.data(), xh.data(), xh.size());
    for (const bool with_bias : {false, true})
      for (const bool accumulate : {false, true}) {
        b->upload(y.data(), y0.data(), y0.size());
        b->linear(x.all(), w, with_bias ? &bias : nullptr, y.all(), accumulate);
        std::vector<float> out(y.size());
        b->download(out.data(), y.data(), out.size());
        const std::string what = "M " + std::to_string(M) + (with_bias ? " bias" : "") + (accumulate ? " accumulate" : "");
        expect_definition(out, reference(xh, M, K, q, with_bias ? bias_values.data() : nullptr, accumulate ? &y0 : nullptr),
                          what);
      }
  }
}

TEST(Fp8Linear, FusedAndGatedProductsAreTheSameProducts) {
  auto b = make_cpu_backend(2);
  const int N = 70, K = 96, M = 3;
  const QuantizedMatrix gate = quantize(normal_values(static_cast<size_t>(N) * K, 0.05f, 3).data(), N, K, {QuantKind::Fp8, K});
  const QuantizedMatrix up = quantize(normal_values(static_cast<size_t>(N) * K, 0.05f, 4).data(), N, K, {QuantKind::Fp8, K});
  const Weight wg = b->upload_quantized(QuantizedMatrix(gate)), wu = b->upload_quantized(QuantizedMatrix(up));
  const std::vector<float> xh = normal_values(static_cast<size_t>(M) * K, 1.0f, 5);
  Buffer x(b.get(), M, K), yg(b.get(), M, N), yu(b.get(), M, N), fused_g(b.get(), M, N), fused_u(b.get(), M, N),
      gated(b.get(), M, N), scratch(b.get(), M, N);
  b->upload(x.data(), xh.data(), xh.size());
  b->linear(x.all(), wg, nullptr, yg.all());
  b->linear(x.all(), wu, nullptr, yu.all());
  const LinearOut outs[] = {{&wg, nullptr, fused_g.all(), false}, {&wu, nullptr, fused_u.all(), false}};
  b->linears(x.all(), outs);
  b->gated_linear(x.all(), wg, wu, gated.all(), scratch.all());
  auto host = [&](const Buffer& buf) {
    std::vector<float> h(buf.size());
    b->download(h.data(), buf.data(), h.size());
    return h;
  };
  const std::vector<float> g = host(yg), u = host(yu);
  expect_definition(g, reference(xh, M, K, gate, nullptr, nullptr), "gate");
  EXPECT_EQ(host(fused_g), g);
  EXPECT_EQ(host(fused_u), u);
  const std::vector<float> silu = host(gated);
  for (size_t i = 0; i < g.size(); ++i) EXPECT_FLOAT_EQ(silu[i], g[i] / (1.0f + std::exp(-g[i])) * u[i]) << i;
}

}  // namespace
}  // namespace voxrt
