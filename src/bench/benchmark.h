// `voxrt bench`: what one stream costs on a backend, each figure next to its floor from the
// ceilings measured in the same run (bytes over copy bandwidth, FLOPs over matrix rate).
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <vector>

#include "models/voxtral/model.h"
#include "models/voxtral/protocol.h"

namespace voxrt {

// What an offline transcription did: its decoder steps, and the seconds spent inside the model's
// steps (each decoder step and its share of the encoder batches, host launch and wait included;
// the rest of the wall time is outside the model: log-mel, queues, the caller).
struct OfflineRun {
  int64_t positions = 0;         // decoded (an output each)
  double position_seconds = 0;   // the compute time attributed to them (PositionOutput::seconds)
  int64_t decoder_passes = 0;  // decoder forward passes (each reads all the weights): positions / drafted rows kept
  double encoder_seconds = 0;  // in the encoder's passes (all of them: also positions never decoded)
};

struct BenchOptions {
  int passes = 200;                    // timed passes per pass figure (after 20 warm-up passes)
  bool encoder_passes = true, decoder_passes = true;  // which pass figures to measure
  bool products = false;  // each product of a pass alone (bench_products.h) ...
  std::vector<int> product_rows;  // ... at these row counts through every kernel path (empty: a live pass's rows)
  std::vector<int> attention_streams;  // one layer's attention for these many streams (bench_attention.h)
  std::vector<double> offline_seconds{30, 300};
  Protocol protocol;
  // Offline transcription of 16 kHz audio as `voxrt transcribe` runs it, without stopping at EOS.
  std::function<OfflineRun(std::span<const float>)> transcribe;
};

// What a live pass (one stream's position: the encoder's frames, the decoder's row) reads and
// computes, from the model's shapes and the backend's storage.
struct PassCosts {
  double enc_pass_bytes, dec_pass_bytes;  // weights + caches read per pass (a full window of keys)
  double enc_weight_bytes, enc_kv_bytes;  // the encoder's weights (adapter included), its full window's K/V
  double dec_weight_bytes, dec_kv_bytes_per_key;
  double enc_flops_per_frame, dec_flops_per_position;
};
// Bytes an element of each part's weights takes as loaded (bf16, or a quantized format's packed
// values with their scales): the encoder's linears with the adapter, the decoder's, the LM head.
struct WeightElementBytes {
  double encoder, decoder, head;
};
WeightElementBytes weight_element_bytes(const VoxtralModel& m);
PassCosts pass_costs(const ModelConfig& c, const WeightElementBytes& weights, size_t kv_bytes);

// The measured ceilings as every benchmark result records them.
nlohmann::json ceilings_json(const Ceilings& c);

// One operation timed alone (the products and attention figures): `op` launched `repeats` times
// back to back inside a recording (launch overheads amortised as in a pass), the median over
// `runs` such recordings after `warmup` more, in microseconds per launch.
struct OpTiming {
  int warmup = 5, runs = 30, repeats = 10;
};
double median_op_us(Backend& backend, const std::string& what, const OpTiming& timing, const std::function<void()>& op);

// rows x cols standard-normal values from a fixed seed: the benchmarks' inputs and test weights.
std::vector<float> random_rows(int rows, int cols, unsigned seed);

// Runs every measurement; `audio` (16 kHz mono) is tiled to the offline lengths.
nlohmann::json run_benchmark(VoxtralModel& model, std::span<const float> audio,
                             const BenchOptions& opts);

// A table of the figures for people.
std::string format_benchmark(const nlohmann::json& result);

}  // namespace voxrt
