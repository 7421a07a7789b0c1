#include "bench/benchmark.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>

#include "bench/bench_attention.h"
#include "bench/bench_products.h"
#include "bench/bench_support.h"
#include "models/voxtral/decoder_pass.h"

namespace voxrt {
namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

nlohmann::json percentiles(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  auto at = [&](double q) { return v[std::min(v.size() - 1, static_cast<size_t>(q * (v.size() - 1) + 0.5))]; };
  return {{"p50_ms", at(0.5)}, {"p99_ms", at(0.99)}, {"min_ms", v.front()}};
}

// Parameters (elements) of one stack's layers, as the model stores them.
double layer_params(int dim, int heads, int kv_heads, int head_dim, int hidden) {
  return static_cast<double>(dim) * head_dim * (2.0 * heads + 2.0 * kv_heads) + 3.0 * dim * hidden;
}

}  // namespace

double median_op_us(Backend& b, const std::string& what, const OpTiming& t, const std::function<void()>& op) {
  const std::string key = unique_recording_key(what);
  std::vector<double> us;
  for (int i = 0; i < t.warmup + t.runs; ++i) {
    b.synchronize();
    const auto t0 = Clock::now();
    b.run_recorded(key, [&] {
      for (int r = 0; r < t.repeats; ++r) op();
    });
    b.synchronize();
    if (i >= t.warmup) us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count() / t.repeats);
  }
  std::sort(us.begin(), us.end());
  return us[us.size() / 2];
}

nlohmann::json ceilings_json(const Ceilings& c) {
  return {{"copy_GBps", c.copy_gbps}, {"matmul_TFLOPs", c.matmul_tflops}, {"matmul", c.matmul_what}};
}

namespace {

// A weight that stands for each part's format: the encoder's (with the adapter), the decoder's, the LM head.
struct PartWeights {
  const Weight &encoder, &decoder, &head;
};
PartWeights part_weights(const VoxtralModel& m) {
  const ModelWeights& w = m.weights();
  return {w.encoder.at(0).wq, w.decoder.at(0).wq, w.lm_head};
}


}  // namespace

WeightElementBytes weight_element_bytes(const VoxtralModel& m) {
  const double stored = static_cast<double>(m.backend().weight_element_bytes());
  const PartWeights w = part_weights(m);
  return {bytes_per_element(w.encoder.format, stored), bytes_per_element(w.decoder.format, stored),
          bytes_per_element(w.head.format, stored)};
}

PassCosts pass_costs(const ModelConfig& c, const WeightElementBytes& weights, size_t kv_bytes) {
  const EncoderConfig& e = c.encoder;
  const DecoderConfig& d = c.decoder;
  const double enc_w = e.n_layers * layer_params(e.dim, e.n_heads, e.n_kv_heads, e.head_dim, e.hidden_dim);
  const double adapter_w = static_cast<double>(e.dim) * c.downsample_factor * d.dim + static_cast<double>(d.dim) * d.dim;
  const double dec_w = d.n_layers * layer_params(d.dim, d.n_heads, d.n_kv_heads, d.head_dim, d.hidden_dim);
  const double head_w = static_cast<double>(d.vocab_size) * d.dim;
  const double enc_kv = 2.0 * e.n_layers * e.sliding_window * e.n_kv_heads * e.head_dim * kv_bytes;
  const double dec_kv_per_key = 2.0 * d.n_layers * d.n_kv_heads * d.head_dim * kv_bytes;
  const double dec_weights = dec_w * weights.decoder + head_w * weights.head;
  const double enc_weights = (enc_w + adapter_w) * weights.encoder;
  return {enc_weights + enc_kv,
          dec_weights + dec_kv_per_key * d.sliding_window,
          enc_weights,
          enc_kv,
          dec_weights,
          dec_kv_per_key,
          2.0 * (enc_w + adapter_w / c.downsample_factor),
          2.0 * (dec_w + head_w)};
}

namespace {

// Steady-state encoder pass as a live session runs it (one recording, then the adapter vector
// downloaded): 8 mel rows -> conv stem -> 4 encoder frames -> 1 adapter vector, at positions past
// the window so attention reads a full window.
std::vector<double> time_encoder_passes(VoxtralModel& m, int passes) {
  Backend& be = m.backend();
  const ModelConfig& c = m.config();
  const int frames = c.downsample_factor, mel_rows = 2 * frames;
  KvCache cache(&be, m.encoder_cache_shape(1, c.encoder.sliding_window + frames));
  Buffer mel(&be, mel_rows + 2, c.encoder.num_mel_bins), ctx(&be, 1, c.encoder.dim);
  Buffer x(&be, frames, c.encoder.dim), adapter(&be, 1, c.decoder.dim);
  const auto mel_host = random_rows(mel_rows + 2, c.encoder.num_mel_bins, 1);
  std::vector<float> adapter_host(c.decoder.dim);
  be.fill(ctx.data(), 0.1f, ctx.size());
  const std::string key = unique_recording_key("bench encoder");
  std::vector<double> t;
  int64_t pos = c.encoder.sliding_window;
  std::vector<RowRef> rows(frames);
  for (int i = 0; i < passes + 20; ++i) {
    be.synchronize();
    const auto t0 = Clock::now();
    for (int f = 0; f < frames; ++f) rows[f] = {0, pos + f};
    be.run_recorded(key, [&] {
      be.upload(mel.data(), mel_host.data(), mel_host.size());
      m.encode_positions(mel.all(), ctx.all(), x.all(), rows, cache, adapter.all());
    });
    be.download(adapter_host.data(), adapter.data(), adapter_host.size());
    if (i >= 20) t.push_back(ms_since(t0));
    pos += frames;
  }
  return t;
}

// Steady-state decoder pass as a live session runs it (SessionDecoder: one token + one audio vector
// through every layer, the LM head and the argmax, whose id is the only device -> host transfer),
// from position `first` on (keys: min(position + 1, window)).
std::vector<double> time_decoder_passes(VoxtralModel& m, const Protocol& proto, int passes, int64_t first) {
  Backend& be = m.backend();
  const ModelConfig& c = m.config();
  KvCache cache(&be, m.decoder_cache_shape(1, c.decoder.sliding_window + 1));
  const auto audio_host = random_rows(1, c.decoder.dim, 2);
  Buffer audio(&be, 1, c.decoder.dim);
  be.upload(audio.data(), audio_host.data(), audio_host.size());
  SessionDecoder decoder(m, unique_recording_key("bench decoder"));
  std::vector<double> t;
  int32_t tok = 32;
  int64_t pos = first;
  for (int i = 0; i < passes + 20; ++i) {
    const auto t0 = Clock::now();
    tok = decoder.run(tok, audio.all(), pos++, proto.n_delay, cache).id;
    if (i >= 20) t.push_back(ms_since(t0));
  }
  return t;
}

}  // namespace

std::vector<float> random_rows(int rows, int cols, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> n(0.0f, 1.0f);
  std::vector<float> v(static_cast<size_t>(rows) * cols);
  for (float& x : v) x = n(rng);
  return v;
}

nlohmann::json run_benchmark(VoxtralModel& m, std::span<const float> audio,
                             const BenchOptions& o) {
  Backend& be = m.backend();
  const ModelConfig& c = m.config();
  nlohmann::json r;
  r["backend"] = be.name();
  const Ceilings ceil = be.measure_ceilings();
  r["ceilings"] = ceilings_json(ceil);
  const PassCosts k = pass_costs(c, weight_element_bytes(m), be.kv_element_bytes());
  // Reads only: a copy moves each byte twice (read + write), a pass reads its bytes once.
  const double read_bps = ceil.copy_gbps * 1e9;

  // Each pass figure goes under its old key too (encoder_step, ...): deprecated, kept for one
  // release for the scripts written against them.
  auto pass_figure = [&r](const std::string& key, const std::string& old_key, const nlohmann::json& figure) {
    r[key] = figure;
    r[old_key] = figure;
  };
  if (o.encoder_passes) {
    nlohmann::json enc = percentiles(time_encoder_passes(m, o.passes));
    enc["floor_ms"] = k.enc_pass_bytes / read_bps * 1e3;
    enc["bytes"] = k.enc_pass_bytes;
    pass_figure("encoder_pass", "encoder_step", enc);
  }
  if (o.decoder_passes) {
    // Twice: 20 s into a stream (250 keys per layer) and with the full window of keys (a stream
    // past 11 minutes), the most a pass ever reads.
    const int64_t window = c.decoder.sliding_window;
    const int64_t short_keys = std::min<int64_t>(250, window);
    nlohmann::json dec = percentiles(time_decoder_passes(m, o.protocol, o.passes, short_keys - 1));
    dec["keys"] = short_keys;
    dec["bytes"] = k.dec_weight_bytes + k.dec_kv_bytes_per_key * static_cast<double>(short_keys);
    dec["floor_ms"] = dec["bytes"].get<double>() / read_bps * 1e3;
    pass_figure("decoder_pass", "decoder_step", dec);
    nlohmann::json full = percentiles(time_decoder_passes(m, o.protocol, o.passes, window));
    full["keys"] = window;
    full["bytes"] = k.dec_pass_bytes;
    full["floor_ms"] = k.dec_pass_bytes / read_bps * 1e3;
    pass_figure("decoder_pass_full_window", "decoder_step_full_window", full);
  }

  // A live session's memory: the model, one session's caches and the passes' scratch. (The
  // figures below add the products' test weights and an offline session's caches, which the
  // backend's pool keeps reserved after they are freed.)
  if (o.encoder_passes || o.decoder_passes) r["memory_after_pass_figures_bytes"] = be.memory_in_use();
  if (o.products) {
    ProductTiming timing;
    timing.read_bytes_per_s = read_bps;
    timing.matmul_flops_per_s = ceil.matmul_tflops * 1e12;
    timing.rows = o.product_rows;
    const PartWeights w = part_weights(m);
    // As the plan names them, for weights of other widths: a loaded 8w or fp8 weight whose group is
    // its whole row is one scale an output channel (group 0), not a group of that row's length.
    timing.encoder = plan_format_of(w.encoder.format, w.encoder.cols);
    timing.decoder = plan_format_of(w.decoder.format, w.decoder.cols);
    timing.head = plan_format_of(w.head.format, w.head.cols);
    r["products"] = time_products(be, c, timing);
  }
  if (!o.attention_streams.empty()) r["attention"] = time_attention(be, c, AttentionTiming{read_bps, o.attention_streams});

  r["offline"] = nlohmann::json::array();
  for (double seconds : o.offline_seconds) {
    std::vector<float> input(static_cast<size_t>(seconds * c.audio.sampling_rate));
    for (size_t i = 0; i < input.size(); ++i) input[i] = audio[i % audio.size()];
    be.synchronize();
    const auto t0 = Clock::now();
    const OfflineRun run = o.transcribe(input);
    const double wall = ms_since(t0) / 1e3;
    const double positions = static_cast<double>(o.protocol.offline_positions(input.size()));
    const double frames = positions * c.downsample_factor;
    const double flops = frames * k.enc_flops_per_frame + positions * k.dec_flops_per_position;
    // Every decoder pass reads all the weights. floor_s decodes one position a pass (as the
    // reference does); passes_floor_s is the floor of the passes this run made (draft rows).
    const double compute_s = flops / (ceil.matmul_tflops * 1e12);
    const double floor_s = std::max(compute_s, run.positions * k.dec_pass_bytes / read_bps);
    const double passes_floor_s = std::max(compute_s, run.decoder_passes * k.dec_pass_bytes / read_bps);
    r["offline"].push_back({{"audio_s", seconds}, {"wall_s", wall}, {"rtfx", seconds / wall},
                            {"floor_s", floor_s}, {"rtfx_floor", seconds / floor_s}, {"steps", run.positions},
                            {"decoder_passes", run.decoder_passes}, {"passes_floor_s", passes_floor_s},
                            {"in_steps_s", run.position_seconds}, {"encoder_s", run.encoder_seconds}});
  }
  r["memory_in_use_bytes"] = be.memory_in_use();
  r["recordings"] = bench_support::recordings_json(be);
  return r;
}

std::string format_benchmark(const nlohmann::json& r) {
  char buf[512];
  std::string out;
  std::snprintf(buf, sizeof buf, "backend %s: copy %.1f GB/s, %s %.3f TFLOP/s (measured now)\n",
                r["backend"].get<std::string>().c_str(), r["ceilings"]["copy_GBps"].get<double>(),
                r["ceilings"]["matmul"].get<std::string>().c_str(), r["ceilings"]["matmul_TFLOPs"].get<double>());
  out += buf;
  out += "figure                          ours p50     ours p99     floor     ours/floor\n";
  for (const char* name : {"encoder_pass", "decoder_pass", "decoder_pass_full_window"}) {
    if (!r.contains(name)) continue;
    const auto& s = r[name];
    std::snprintf(buf, sizeof buf, "%-26s %9.3f ms %9.3f ms %9.3f ms %8.1fx\n", name, s["p50_ms"].get<double>(),
                  s["p99_ms"].get<double>(), s["floor_ms"].get<double>(),
                  s["p50_ms"].get<double>() / s["floor_ms"].get<double>());
    out += buf;
  }
  if (r.contains("products")) out += format_products(r["products"]);
  if (r.contains("attention")) out += format_attention(r["attention"]);
  for (const auto& o : r["offline"]) {
    std::snprintf(buf, sizeof buf,
                  "offline %4.0f s audio     RTFx %8.1f   (wall %.2f s, %.2f s of it in the model's steps, %.2f s in the "
                  "encoder's; %lld steps in %lld decoder passes; floor at one step a pass %.3f s = RTFx %.0f, at the "
                  "passes run %.3f s)\n",
                  o["audio_s"].get<double>(), o["rtfx"].get<double>(), o["wall_s"].get<double>(),
                  o["in_steps_s"].get<double>(), o["encoder_s"].get<double>(),
                  static_cast<long long>(o["steps"].get<int64_t>()),
                  static_cast<long long>(o["decoder_passes"].get<int64_t>()), o["floor_s"].get<double>(),
                  o["rtfx_floor"].get<double>(), o["passes_floor_s"].get<double>());
    out += buf;
  }
  if (r.contains("memory_after_pass_figures_bytes")) {
    std::snprintf(buf, sizeof buf, "memory in use after the pass figures (one live session): %.2f GB\n",
                  r["memory_after_pass_figures_bytes"].get<double>() / 1e9);
    out += buf;
  }
  std::snprintf(buf, sizeof buf, "memory in use at the end: %.2f GB\n", r["memory_in_use_bytes"].get<double>() / 1e9);
  out += buf;
  return out;
}

}  // namespace voxrt
