#include "bench/bench_products.h"

#include <algorithm>
#include <cstdio>
#include <utility>

#include "bench/benchmark.h"
#include "quant/quantizer.h"
#include "runtime/kernel_switches.h"

namespace voxrt {
namespace {

using Kernels = KernelSwitches::ProductKernels;

enum class Part { Encoder, Decoder, Head };  // whose weight format a product takes (the adapter: the encoder's)

struct Product {
  std::string name;
  Part part;
  int M, K;            // M: the rows a live pass has
  std::vector<int> n;  // outputs over the same x (q, k, v), or the gate and up widths when gated
  bool gated = false, accumulate = false;
};

// A product's weights and buffers, made once and timed at every row count and kernel path.
struct Prepared {
  std::vector<Weight> w;
  std::vector<Buffer> y;
  Buffer x;
  double weight_bytes = 0;
};

Prepared prepare(Backend& b, const Product& p, int max_rows, const WeightFormat& f) {
  Prepared d;
  for (size_t i = 0; i < p.n.size(); ++i) {
    std::vector<float> values = random_rows(p.n[i], p.K, static_cast<unsigned>(i + 1));
    if (f.quantized()) d.w.push_back(b.upload_quantized(quantize(values.data(), p.n[i], p.K, f, QuantMethod::Rtn)));
    else d.w.push_back(b.upload_weight(std::move(values), p.n[i], p.K));
    d.y.emplace_back(&b, max_rows, p.n[i]);
    b.fill(d.y.back().data(), 0.0f, d.y.back().size());
    d.weight_bytes += static_cast<double>(p.n[i]) * p.K * bytes_per_element(f, static_cast<double>(b.weight_element_bytes()));
  }
  d.x = Buffer(&b, max_rows, p.K);
  b.fill(d.x.data(), 0.5f, d.x.size());
  return d;
}

// Median microseconds of one product of M rows.
double time_us(Backend& b, const Product& p, Prepared& d, int M, const std::string& key) {
  const Mat x = d.x.view(0, M);
  auto run = [&] {
    if (p.gated) {
      b.gated_linear(x, d.w[0], d.w[1], d.y[0].view(0, M), d.y[1].view(0, M));
    } else if (d.w.size() > 1) {
      std::vector<LinearOut> outs;
      for (size_t i = 0; i < d.w.size(); ++i) outs.push_back({&d.w[i], nullptr, d.y[i].view(0, M), p.accumulate});
      b.linears(x, outs);
    } else {
      b.linear(x, d.w[0], nullptr, d.y[0].view(0, M), p.accumulate);
    }
  };
  return median_op_us(b, key, OpTiming{}, run);
}

std::vector<Product> pass_products(const ModelConfig& c) {
  const EncoderConfig& e = c.encoder;
  const DecoderConfig& d = c.decoder;
  const int frames = c.downsample_factor;
  return {
      {"encoder q/k/v", Part::Encoder, frames, e.dim, {e.n_heads * e.head_dim, e.n_kv_heads * e.head_dim, e.n_kv_heads * e.head_dim}},
      {"encoder wo", Part::Encoder, frames, e.n_heads * e.head_dim, {e.dim}, false, true},
      {"encoder gate+up", Part::Encoder, frames, e.dim, {e.hidden_dim, e.hidden_dim}, true},
      {"encoder w2", Part::Encoder, frames, e.hidden_dim, {e.dim}, false, true},
      {"adapter w1", Part::Encoder, 1, e.dim * frames, {d.dim}},
      {"adapter w2", Part::Encoder, 1, d.dim, {d.dim}},
      {"decoder q/k/v", Part::Decoder, 1, d.dim, {d.n_heads * d.head_dim, d.n_kv_heads * d.head_dim, d.n_kv_heads * d.head_dim}},
      {"decoder wo", Part::Decoder, 1, d.n_heads * d.head_dim, {d.dim}, false, true},
      {"decoder gate+up", Part::Decoder, 1, d.dim, {d.hidden_dim, d.hidden_dim}, true},
      {"decoder w2", Part::Decoder, 1, d.hidden_dim, {d.dim}, false, true},
      {"lm head", Part::Head, 1, d.dim, {d.vocab_size}},
  };
}

}  // namespace

nlohmann::json time_products(Backend& b, const ModelConfig& c, const ProductTiming& t) {
  // Forcing a path takes the backend's switches; without them (the CPU) its own kernels alone run.
  KernelSwitches* switches = b.kernel_switches();
  const auto use = [switches](Kernels k) {
    return switches != nullptr ? switches->set_product_kernels(k) : k == Kernels::Automatic;
  };
  // The kernel paths to compare: the backend's own choice alone, or every path it has.
  std::vector<std::pair<const char*, Kernels>> paths;
  if (!t.rows.empty()) {
    for (const auto& [name, k] :
         {std::pair{"gemv", Kernels::Gemv}, std::pair{"gemm", Kernels::Gemm}, std::pair{"library", Kernels::Library}})
      if (use(k)) paths.emplace_back(name, k);
    use(Kernels::Automatic);
  }
  if (paths.empty()) paths = {{"auto", Kernels::Automatic}};  // the CPU: its own kernels only
  nlohmann::json out = nlohmann::json::array();
  for (const Product& p : pass_products(c)) {
    const std::vector<int> rows = t.rows.empty() ? std::vector<int>{p.M} : t.rows;
    const WeightFormat quantized =  // a group of 0: one scale a channel, this product's K
        format_for_width(p.part == Part::Encoder ? t.encoder : p.part == Part::Decoder ? t.decoder : t.head, p.K);
    std::vector<WeightFormat> formats = {WeightFormat{}};
    if (quantized.quantized()) formats.push_back(quantized);
    for (const WeightFormat& f : formats) {
      Prepared d = prepare(b, p, *std::max_element(rows.begin(), rows.end()), f);
      // bf16 takes each path; a quantized weight each but the library's (cuBLAS takes no packed
      // weights: the kernels dequantize them).
      std::vector<std::pair<const char*, Kernels>> through;
      for (const auto& path : paths)
        if (!f.quantized() || path.second != Kernels::Library) through.push_back(path);
      for (const int M : rows) {
        double flops = 0;
        for (const int n : p.n) flops += 2.0 * M * n * p.K;
        const double floor_s = std::max(d.weight_bytes / t.read_bytes_per_s, flops / t.matmul_flops_per_s);
        const std::string format = f.quantized() ? format_name(f) : "bf16";
        nlohmann::json e = {{"name", p.name}, {"format", format}, {"rows", M}, {"weight_bytes", d.weight_bytes},
                            {"flops", flops}, {"floor_us", floor_s * 1e6}};
        for (const auto& [name, k] : through) {
          use(k);
          const double us =
              time_us(b, p, d, M, "bench product " + p.name + " " + format + " " + name + " x" + std::to_string(M));
          e["kernels"][name] = {{"p50_us", us}, {"TFLOPs", flops / (us * 1e-6) / 1e12}};
        }
        use(Kernels::Automatic);
        out.push_back(e);
      }
    }
  }
  return out;
}

std::string format_products(const nlohmann::json& products) {
  if (products.empty()) return {};
  std::vector<std::string> paths;
  for (const auto& [name, _] : products[0]["kernels"].items()) paths.push_back(name);
  // The library last: the GEMM's rate is given as a share of it.
  std::stable_partition(paths.begin(), paths.end(), [](const std::string& p) { return p != "library"; });
  char buf[256];
  std::string out = "product (alone, back to back)  weights  rows  weight MB  floor us";
  for (const std::string& p : paths) {
    std::snprintf(buf, sizeof buf, " %10s us %7s TF/s", p.c_str(), p.c_str());
    out += buf;
  }
  const bool versus = std::count(paths.begin(), paths.end(), "gemm") && std::count(paths.begin(), paths.end(), "library");
  out += versus ? "  gemm/library rate\n" : "\n";
  for (const auto& e : products) {
    std::snprintf(buf, sizeof buf, "%-30s %7s %5d %10.1f %9.1f", e["name"].get<std::string>().c_str(),
                  e.value("format", std::string("bf16")).c_str(), e["rows"].get<int>(),
                  e["weight_bytes"].get<double>() / 1e6, e["floor_us"].get<double>());
    out += buf;
    const nlohmann::json& k = e["kernels"];
    for (const std::string& p : paths) {
      // A quantized product's own path is the GEMV: its time stands in that column.
      const std::string from = k.contains(p) ? p : p == "gemv" && k.contains("auto") ? "auto" : "";
      if (from.empty()) std::snprintf(buf, sizeof buf, " %13s %12s", "-", "-");
      else std::snprintf(buf, sizeof buf, " %13.1f %12.1f", k[from]["p50_us"].get<double>(), k[from]["TFLOPs"].get<double>());
      out += buf;
    }
    if (versus && k.contains("gemm") && k.contains("library")) {
      std::snprintf(buf, sizeof buf, " %12.0f %%", 100.0 * k["library"]["p50_us"].get<double>() / k["gemm"]["p50_us"].get<double>());
      out += buf;
    }
    out += "\n";
  }
  return out;
}

}  // namespace voxrt
