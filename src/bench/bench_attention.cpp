#include "bench/bench_attention.h"

#include <cmath>
#include <cstdio>
#include <utility>

#include "bench/benchmark.h"
#include "runtime/kernel_switches.h"

namespace voxrt {
namespace {

using Kernels = KernelSwitches::AttentionKernels;

struct Shape {
  std::string name;
  AttentionParams p;
  int rows_per_stream;  // consecutive positions a stream's step attends with
  int keys;             // keys the first of them attends
};

std::vector<Shape> live_shapes(const ModelConfig& c) {
  const EncoderConfig& e = c.encoder;
  const DecoderConfig& d = c.decoder;
  auto params = [](int heads, int kv_heads, int head_dim, int window, int rows_per_position) {
    return AttentionParams{heads, kv_heads, head_dim, window, 1.0f / std::sqrt(static_cast<float>(head_dim)), rows_per_position};
  };
  const AttentionParams enc = params(e.n_heads, e.n_kv_heads, e.head_dim, e.sliding_window, c.downsample_factor);
  const AttentionParams dec = params(d.n_heads, d.n_kv_heads, d.head_dim, d.sliding_window, 1);
  // A decoder position is 80 ms of audio: 750 keys are a minute, 3750 five.
  std::vector<Shape> shapes = {{"encoder step", enc, c.downsample_factor, e.sliding_window}};
  for (const int keys : {750, 3750})
    if (keys < d.sliding_window) shapes.push_back({"decoder step", dec, 1, keys});
  shapes.push_back({"decoder step", dec, 1, d.sliding_window});
  return shapes;
}

// Median microseconds of one layer's attention for `streams` streams, each in its own slot.
double time_us(Backend& b, const Shape& s, KvCache& cache, int streams, const std::string& key) {
  const int rows = streams * s.rows_per_stream, width = s.p.n_heads * s.p.head_dim;
  std::vector<RowRef> refs;
  // A stream that far in: short of a window, its first row's position is keys - 1; a full window
  // is taken past a few rings' worth, as a long stream's (the ring has wrapped).
  const int64_t first = s.keys < s.p.window ? s.keys - 1 : 3 * static_cast<int64_t>(cache.shape().ring) + s.keys - 1;
  for (int st = 0; st < streams; ++st)
    for (int i = 0; i < s.rows_per_stream; ++i) refs.push_back({st, first + i});
  Buffer q(&b, rows, width), out(&b, rows, width);
  b.fill(q.data(), 0.01f, q.size());
  // Fewer runs than the products: a launch over 256 full decoder windows takes milliseconds.
  return median_op_us(b, key, OpTiming{3, 20, 10}, [&] { b.attention(cache, 0, q.all(), refs, s.p, out.all()); });
}

}  // namespace

nlohmann::json time_attention(Backend& b, const ModelConfig& c, const AttentionTiming& t) {
  // Forcing a path takes the backend's switches; without them (the CPU) its own kernels alone run.
  KernelSwitches* switches = b.kernel_switches();
  const auto use = [switches](Kernels k) {
    return switches != nullptr ? switches->set_attention_kernels(k) : k == Kernels::Automatic;
  };
  std::vector<std::pair<const char*, Kernels>> paths;
  for (const auto& [name, k] : {std::pair{"tensor_cores", Kernels::TensorCores}, std::pair{"cuda_cores", Kernels::CudaCores}})
    if (use(k)) paths.emplace_back(name, k);
  use(Kernels::Automatic);
  if (paths.empty()) paths = {{"auto", Kernels::Automatic}};  // the CPU: its own kernel only
  nlohmann::json out = nlohmann::json::array();
  for (const Shape& s : live_shapes(c)) {
    for (const int streams : t.streams) {
      // One layer, a slot a stream, a ring that holds the step's keys (filled with zeros: the
      // kernels' time does not depend on the values).
      const int span = s.keys + s.rows_per_stream - 1;
      KvCacheShape shape{streams, 1, (s.p.window + s.rows_per_stream - 1 + 63) / 64 * 64, s.p.n_kv_heads, s.p.head_dim};
      KvCache cache(&b, shape);
      const size_t words = shape.elements() * cache.element_bytes() / sizeof(float);
      b.fill(static_cast<float*>(cache.key_data()), 0.0f, words);
      b.fill(static_cast<float*>(cache.value_data()), 0.0f, words);
      const double kv_bytes = 2.0 * streams * span * shape.row_elements() * static_cast<double>(cache.element_bytes());
      const double floor_us = kv_bytes / t.read_bytes_per_s * 1e6;
      nlohmann::json e = {{"name", s.name},      {"streams", streams}, {"rows", streams * s.rows_per_stream},
                          {"keys", s.keys},      {"kv_bytes", kv_bytes}, {"floor_us", floor_us}};
      for (const auto& [name, k] : paths) {
        use(k);
        const double us = time_us(b, s, cache, streams,
                                  "bench attention " + s.name + " " + name + " " + std::to_string(s.keys) + "x" +
                                      std::to_string(streams));
        e["kernels"][name] = {{"p50_us", us}, {"GBps", kv_bytes / (us * 1e-6) / 1e9}};
      }
      use(Kernels::Automatic);
      out.push_back(e);
    }
  }
  return out;
}

std::string format_attention(const nlohmann::json& attention) {
  if (attention.empty()) return {};
  std::vector<std::string> paths;
  for (const auto& [name, _] : attention[0]["kernels"].items()) paths.push_back(name);
  char buf[256];
  std::string out = "attention (one layer)          streams  keys   K/V MB  floor us";
  for (const std::string& p : paths) {
    std::snprintf(buf, sizeof buf, " %14s us   GB/s", p.c_str());
    out += buf;
  }
  out += "\n";
  for (const auto& e : attention) {
    std::snprintf(buf, sizeof buf, "%-30s %7d %5d %8.1f %9.1f", e["name"].get<std::string>().c_str(),
                  e["streams"].get<int>(), e["keys"].get<int>(), e["kv_bytes"].get<double>() / 1e6,
                  e["floor_us"].get<double>());
    out += buf;
    for (const std::string& p : paths) {
      std::snprintf(buf, sizeof buf, " %17.1f %6.0f", e["kernels"][p]["p50_us"].get<double>(),
                    e["kernels"][p]["GBps"].get<double>());
      out += buf;
    }
    out += "\n";
  }
  return out;
}

}  // namespace voxrt
