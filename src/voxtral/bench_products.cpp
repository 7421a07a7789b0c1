#include "voxtral/bench_products.h"

#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

#include "voxtral/benchmark.h"
#include "voxtral/decoder_step.h"

namespace voxrt {
namespace {

using Clock = std::chrono::steady_clock;

constexpr int kRepeats = 10;  // products per recorded step (launch overheads amortised as in a step)
constexpr int kRuns = 30;     // timed steps (after 5 warm-up runs)

struct Product {
  std::string name;
  int M, K;
  std::vector<int> n;  // outputs over the same x (q, k, v), or the gate and up widths when gated
  bool gated = false, accumulate = false;
};

nlohmann::json time_one(Backend& b, const Product& p, double read_bps) {
  std::vector<Weight> w;
  std::vector<Buffer> y;
  double bytes = 0;
  for (size_t i = 0; i < p.n.size(); ++i) {
    w.push_back(b.upload_weight(random_rows(p.n[i], p.K, static_cast<unsigned>(i + 1)), p.n[i], p.K));
    y.emplace_back(&b, p.M, p.n[i]);
    b.fill(y.back().data(), 0.0f, y.back().size());
    bytes += static_cast<double>(p.n[i]) * p.K * b.weight_element_bytes();
  }
  Buffer x(&b, p.M, p.K);
  b.fill(x.data(), 0.5f, x.size());
  auto run = [&] {
    if (p.gated) {
      b.gated_linear(x.all(), w[0], w[1], y[0].all(), y[1].all());
    } else if (w.size() > 1) {
      std::vector<LinearOut> outs;
      for (size_t i = 0; i < w.size(); ++i) outs.push_back({&w[i], nullptr, y[i].all(), p.accumulate});
      b.linears(x.all(), outs);
    } else {
      b.linear(x.all(), w[0], nullptr, y[0].all(), p.accumulate);
    }
  };
  const std::string key = unique_step_key("bench product " + p.name);
  std::vector<double> us;
  for (int i = 0; i < kRuns + 5; ++i) {
    b.synchronize();
    const auto t0 = Clock::now();
    b.run_step(key, [&] {
      for (int r = 0; r < kRepeats; ++r) run();
    });
    b.synchronize();
    if (i >= 5) us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count() / kRepeats);
  }
  std::sort(us.begin(), us.end());
  const double p50 = us[us.size() / 2];
  return {{"name", p.name}, {"rows", p.M}, {"weight_bytes", bytes}, {"p50_us", p50},
          {"floor_us", bytes / read_bps * 1e6}, {"GBps", bytes / (p50 * 1e-6) / 1e9}};
}

}  // namespace

nlohmann::json time_products(Backend& b, const ModelConfig& c, double read_bps) {
  const EncoderConfig& e = c.encoder;
  const DecoderConfig& d = c.decoder;
  const int frames = c.downsample_factor;
  const std::vector<Product> products = {
      {"encoder q/k/v", frames, e.dim, {e.n_heads * e.head_dim, e.n_kv_heads * e.head_dim, e.n_kv_heads * e.head_dim}},
      {"encoder wo", frames, e.n_heads * e.head_dim, {e.dim}, false, true},
      {"encoder gate+up", frames, e.dim, {e.hidden_dim, e.hidden_dim}, true},
      {"encoder w2", frames, e.hidden_dim, {e.dim}, false, true},
      {"adapter w1", 1, e.dim * frames, {d.dim}},
      {"adapter w2", 1, d.dim, {d.dim}},
      {"decoder q/k/v", 1, d.dim, {d.n_heads * d.head_dim, d.n_kv_heads * d.head_dim, d.n_kv_heads * d.head_dim}},
      {"decoder wo", 1, d.n_heads * d.head_dim, {d.dim}, false, true},
      {"decoder gate+up", 1, d.dim, {d.hidden_dim, d.hidden_dim}, true},
      {"decoder w2", 1, d.hidden_dim, {d.dim}, false, true},
      {"lm head", 1, d.dim, {d.vocab_size}},
  };
  nlohmann::json out = nlohmann::json::array();
  for (const Product& p : products) out.push_back(time_one(b, p, read_bps));
  return out;
}

}  // namespace voxrt
