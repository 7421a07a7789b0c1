// voxrt bench --model DIR [--audio FILE] [--passes N] [--offline-seconds 30,300] [--figures LIST] [--out DIR]
// (LIST: encoder, decoder, offline by default; products adds each product of a pass timed alone,
// attention one layer's attention for many streams at once)
// voxrt bench --model DIR --streams N [--find-capacity] [--stream-seconds 300] [--measure-seconds 10] [--windows K]: N live streams
// at once (bench/streams_bench.h) instead of the per-stream figures.
// voxrt bench --model DIR --offline-batch B [--offline-seconds 30]: B offline transcriptions at once.
// With --gpus, --streams and --offline-batch spread their sessions over the devices.
// Prints each figure against its floor (from ceilings measured in the same run) and writes the
// whole result as JSON under --out (default: the current directory), named by date and backend.
// Works from any directory: the default audio is found next to the program (see data_files.h).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <iostream>
#include <memory>
#include <random>

#include "audio/audio_file.h"
#include "bench/benchmark.h"
#include "bench/engine_bench.h"
#include "cli/commands.h"
#include "cli/data_files.h"
#include "cli/engine_options.h"
#include "cli/input_check.h"
#include "cli/output_sink.h"
#include "cli/usage.h"
#include "common/error.h"

namespace voxrt::cli {
namespace {

constexpr int kSampleRate = 16000;
const char* const kFigures[] = {"encoder", "decoder", "offline", "products", "attention"};
// The offline inputs are tiled in memory (4 bytes a sample): an hour is 230 MB.
constexpr double kMaxOfflineSeconds = 3600;
constexpr int kMaxPasses = 1'000'000;
constexpr int kMaxStreams = 4096;
constexpr int kMaxProductRows = 16384;  // an offline encoder pass has 8192

struct BenchArgs {
  EngineArgs engine;
  int delay_ms = 0;
  std::string audio;  // empty: jfk.wav found next to the program, else generated
  int passes = 200;
  std::string passes_flag = "--passes";  // or --steps, its old name, when given so: errors name it
  std::string steps;  // --steps as typed (deprecated, kept for one release): the old name of --passes
  std::vector<double> offline_seconds{30, 300};
  std::vector<std::string> figures{"encoder", "decoder", "offline"};
  std::string out = ".";
  int streams = 0;  // > 0: the live streams benchmark
  int offline_batch = 0;  // > 0: the batched offline benchmark
  double stream_seconds = 300, measure_seconds = 10;
  int windows = 1;
  bool find_capacity = false;
  bool aligned_arrivals = false;
  bool fill_drafts = false;
  std::vector<int> product_rows;
  std::vector<int> attention_streams;
};

std::string utc_stamp() {
  const std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H%M%SZ", std::gmtime(&t));
  return buf;
}

void check_args(const BenchArgs& a) {
  if (a.engine.gpus.size() > 1 && a.streams == 0 && a.offline_batch == 0)
    throw UsageError("--gpus: bench spreads --streams or --offline-batch over several devices; its other figures time one device");
  if (a.passes < 1 || a.passes > kMaxPasses)
    throw UsageError(a.passes_flag + " " + std::to_string(a.passes) + ": expected 1 to " + std::to_string(kMaxPasses));
  for (double s : a.offline_seconds)
    if (!(s >= 1 && s <= kMaxOfflineSeconds)) {
      char v[32];
      std::snprintf(v, sizeof v, "%g", s);
      throw UsageError(std::string("--offline-seconds ") + v + ": expected 1 to 3600 seconds");
    }
  if (a.figures.empty()) throw UsageError("--figures: name at least one of encoder, decoder, offline, products, attention");
  for (const std::string& f : a.figures)
    if (std::find(std::begin(kFigures), std::end(kFigures), f) == std::end(kFigures))
      throw UsageError("--figures " + f + ": expected encoder, decoder, offline, products or attention");
  for (const int rows : a.product_rows)
    if (rows < 1 || rows > kMaxProductRows)
      throw UsageError("--product-rows " + std::to_string(rows) + ": expected 1 to " + std::to_string(kMaxProductRows));
  for (const int n : a.attention_streams)
    if (n < 1 || n > kMaxStreams)
      throw UsageError("--attention-streams " + std::to_string(n) + ": expected 1 to " + std::to_string(kMaxStreams));
  if (a.streams < 0 || a.streams > kMaxStreams)
    throw UsageError("--streams " + std::to_string(a.streams) + ": expected 1 to " + std::to_string(kMaxStreams));
  if (!(a.measure_seconds >= 1 && a.measure_seconds <= kMaxOfflineSeconds))
    throw UsageError("--measure-seconds: expected 1 to 3600 seconds");
  if (a.windows < 1 || a.windows > 100) throw UsageError("--windows " + std::to_string(a.windows) + ": expected 1 to 100");
  if (a.windows > 1 && a.streams == 0) throw UsageError("--windows needs --streams N");
  if (!(a.stream_seconds >= a.windows * a.measure_seconds && a.stream_seconds <= 4 * kMaxOfflineSeconds))
    throw UsageError("--stream-seconds: expected --measure-seconds times --windows (" +
                     std::to_string(static_cast<int>(a.windows * a.measure_seconds)) + ") to 14400 seconds");
  if (a.offline_batch < 0 || a.offline_batch > kMaxStreams)
    throw UsageError("--offline-batch " + std::to_string(a.offline_batch) + ": expected 1 to " + std::to_string(kMaxStreams));
  if (a.offline_batch > 0 && a.streams > 0) throw UsageError("--streams and --offline-batch: give one of them");
  if (a.find_capacity && a.streams == 0) throw UsageError("--find-capacity needs --streams N (the first count tried)");
  if (a.aligned_arrivals && a.streams == 0) throw UsageError("--aligned-arrivals needs --streams N");
  if (a.fill_drafts && a.streams == 0) throw UsageError("--fill-drafts needs --streams N");
  check_engine_args(a.engine);
  if (!a.audio.empty()) check_audio_input(a.audio);
}

// Speech-like stand-in when no recording is at hand: pink-ish noise shaped into 4 Hz syllables
// with pauses, 11 s like jfk.wav. The random test models do not understand speech anyway; what the
// bench needs is audio with the level and rhythm of speech, the same on every run.
std::vector<float> generated_speechlike_audio() {
  std::mt19937 rng(20261201);
  std::normal_distribution<float> white(0.0f, 1.0f);
  std::vector<float> v(11 * kSampleRate);
  float low = 0;
  for (size_t i = 0; i < v.size(); ++i) {
    const double t = static_cast<double>(i) / kSampleRate;
    low = 0.97f * low + 0.03f * white(rng);  // a one-pole low-pass: energy where speech has it
    const double syllables = std::max(0.0, std::sin(2 * M_PI * 4.0 * t));
    const double phrase = std::fmod(t, 3.0) < 2.4 ? 1.0 : 0.0;  // a pause every 3 s
    v[i] = static_cast<float>(0.3 * low * syllables * phrase * 6.0);
  }
  return v;
}

std::vector<float> bench_audio(const BenchArgs& a, std::string& name) {
  if (!a.audio.empty()) {
    name = a.audio;
    return load_audio_mono(a.audio, kSampleRate);
  }
  if (const auto jfk = find_data_file("audio/jfk.wav", "tests/data/audio/jfk.wav")) {
    name = jfk->string();
    return load_audio_mono(*jfk, kSampleRate);
  }
  name = "generated";
  if (!a.engine.quiet) std::cerr << "voxrt: bench: no jfk.wav next to the program: using 11 s of generated audio\n";
  return generated_speechlike_audio();
}

// Writes the result as JSON under --out, named by date, backend and `what`; returns the file.
std::filesystem::path write_result(nlohmann::json& r, const BenchArgs& a, const std::string& audio_name,
                                   const std::string& what) {
  r["audio"] = audio_name;
  r["date_utc"] = utc_stamp();
  const std::filesystem::path file = std::filesystem::path(a.out) / (r["date_utc"].get<std::string>() + "-" +
                                                                     r["backend"].get<std::string>() + what + ".json");
  const std::unique_ptr<OutputSink> json = OutputSink::file(file);
  json->write(r.dump(2) + "\n");
  json->commit();
  return file;
}

// The engine the figures run on: loaded for the bench (bench/engine_bench.h), not through
// Engine::load, so that they reach its devices' models and schedulers.
BenchEngine load_bench(const EngineArgs& a) {
  BenchEngine loaded;
  load_engine_with(a, [&loaded](const std::filesystem::path& dir, const EngineOptions& options) -> Engine& {
    loaded = load_bench_engine(dir, options);
    return *loaded.engine;
  });
  return loaded;
}

void run_streams(BenchEngine& engine, const BenchArgs& a, const std::vector<float>& audio, const std::string& audio_name) {
  StreamsBenchOptions o;
  o.streams = a.streams;
  o.find_capacity = a.find_capacity;
  o.stream_seconds = a.stream_seconds;
  o.measure_seconds = a.measure_seconds;
  o.windows = a.windows;
  o.delay_ms = a.delay_ms;
  o.aligned_arrivals = a.aligned_arrivals;
  o.fill_drafts = a.fill_drafts;
  const std::unique_ptr<OutputSink> out = OutputSink::standard_output();
  o.on_trial = [&](const nlohmann::json& trial) { out->write(format_streams_benchmark(trial)); };
  nlohmann::json r = benchmark_streams(engine, audio, o);
  const std::filesystem::path file =
      write_result(r, a, audio_name, a.find_capacity ? std::string("-capacity") : "-streams" + std::to_string(a.streams));
  out->write(format_streams_benchmark(r, /*trials=*/false) + "wrote " + file.string() + "\n");
}

void run_offline_batch(BenchEngine& engine, const BenchArgs& a, const std::vector<float>& audio, const std::string& audio_name) {
  OfflineBatchOptions o;
  o.batch = a.offline_batch;
  o.seconds = a.offline_seconds.at(0);  // the first length given (30 s by default)
  o.delay_ms = a.delay_ms;
  nlohmann::json r = benchmark_offline_batch(engine, audio, o);
  const std::filesystem::path file = write_result(r, a, audio_name, "-offline-batch" + std::to_string(a.offline_batch));
  const std::unique_ptr<OutputSink> out = OutputSink::standard_output();
  out->write(format_offline_batch_benchmark(r) + "wrote " + file.string() + "\n");
}

void run_bench(BenchArgs a) {
  check_args(a);
  // Many sessions at once: caches for exactly that many, allocated at load, so that memory per
  // stream is what a server loaded for them holds (not the slack of caches grown by doubling).
  // Their length is known: that is what each reserves (and what the caches are sized by).
  // Over several devices the sessions spread evenly (placement by the fewest sessions): each
  // device's share.
  const bool capacity_given = a.engine.max_sessions > 0 || a.engine.max_memory > 0 || a.engine.max_memory_fraction > 0;
  if (!capacity_given && !a.find_capacity) {
    const int devices = std::max<int>(1, static_cast<int>(a.engine.gpus.size()));
    a.engine.max_sessions = (std::max(a.streams, a.offline_batch) + devices - 1) / devices;
  }
  // The capacity search on a GPU: the caches get what the weights and the passes' working memory
  // leave, at load (grown caches, copied as they grow, would reach about four fifths of it), so that
  // its figure is the GPU's, whichever bound (memory or time) comes first. Not on the CPU, whose
  // caches would take the host's memory.
  const bool on_gpu = a.engine.device == "cuda" || (a.engine.device == "auto" && cuda_device_count() > 0);
  if (!capacity_given && a.find_capacity && on_gpu) a.engine.max_memory_fraction = 0.95;
  if (a.engine.max_session_seconds == 0) {
    if (a.streams > 0) a.engine.max_session_seconds = a.stream_seconds;
    else if (a.offline_batch > 0 && !a.offline_seconds.empty()) a.engine.max_session_seconds = a.offline_seconds.front() + 1;
  }
  std::string audio_name;
  const std::vector<float> audio = bench_audio(a, audio_name);
  std::error_code ec;
  std::filesystem::create_directories(a.out, ec);
  if (!std::filesystem::is_directory(a.out))
    throw Error("--out " + a.out + ": cannot create the directory" + (ec ? ": " + ec.message() : ""));
  BenchEngine engine = load_bench(a.engine);
  if (a.streams > 0) return run_streams(engine, a, audio, audio_name);
  if (a.offline_batch > 0) return run_offline_batch(engine, a, audio, audio_name);
  BenchOptions b;
  b.passes = a.passes;
  auto wanted = [&](const char* f) { return std::find(a.figures.begin(), a.figures.end(), f) != a.figures.end(); };
  b.encoder_passes = wanted("encoder");
  b.decoder_passes = wanted("decoder");
  b.products = wanted("products") || !a.product_rows.empty();
  b.product_rows = a.product_rows;
  if (wanted("attention") || !a.attention_streams.empty())
    b.attention_streams = a.attention_streams.empty() ? std::vector<int>{1, 64, 128, 256} : a.attention_streams;
  if (wanted("offline")) b.offline_seconds = a.offline_seconds;
  else b.offline_seconds.clear();
  nlohmann::json r = benchmark_engine(engine, audio, a.delay_ms, b);
  const std::filesystem::path file = write_result(r, a, audio_name, "");
  char load[64];
  std::snprintf(load, sizeof load, "load %.2f s (", r["load_s"].get<double>());
  const std::unique_ptr<OutputSink> out = OutputSink::standard_output();
  out->write(load + r["layout"].get<std::string>() + " layout)\n" + format_benchmark(r) + "wrote " + file.string() +
             "\n");
}

// --steps N, the old name of --passes N (deprecated, kept for one release), into passes.
void take_steps_as_passes(BenchArgs& a, bool passes_given) {
  if (a.steps.empty()) return;
  if (passes_given) throw UsageError("--steps and --passes: give one of them (--steps is the old name of --passes)");
  size_t used = 0;
  try {
    a.passes = std::stoi(a.steps, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != a.steps.size()) throw UsageError("--steps " + a.steps + ": not a number");
  a.passes_flag = "--steps";
}

}  // namespace

void add_bench_command(CLI::App& app) {
  auto args = std::make_shared<BenchArgs>();
  CLI::App* cmd = app.add_subcommand("bench", "Measure load, per-pass and offline speed against the hardware floor");
  add_engine_options(cmd, args->engine);
  add_delay_option(cmd, args->delay_ms);
  cmd->add_option("--audio", args->audio,
                  "Speech to tile into the offline inputs (default: jfk.wav next to the program, else generated)");
  CLI::Option* passes =
      cmd->add_option("--passes", args->passes, "Timed passes per pass figure (encoder, decoder)")->capture_default_str();
  // The old name of --passes, left out of the help (group ""). Taken as text: CLI11 names a hidden
  // option nowhere in its errors, so take_steps_as_passes reads it and names it.
  cmd->add_option("--steps", args->steps)->group("");
  cmd->add_option("--offline-seconds", args->offline_seconds, "Offline input lengths in seconds (1 to 3600)")
      ->delimiter(',')
      ->capture_default_str();
  cmd->add_option("--figures", args->figures,
                  "Which figures to measure (encoder, decoder, offline; products: each product of a pass alone; "
                  "attention: one layer's attention for many streams)")
      ->delimiter(',')
      ->capture_default_str();
  cmd->add_option("--product-rows", args->product_rows,
                  "Time each product at these row counts through every product kernel (GEMV, tiled GEMM, cuBLAS), "
                  "side by side; implies --figures products")
      ->delimiter(',');
  cmd->add_option("--attention-streams", args->attention_streams,
                  "Time one layer's attention for these many streams through every attention kernel (default 1,64,128,256); "
                  "implies --figures attention")
      ->delimiter(',');
  cmd->add_option("--streams", args->streams,
                  "Run N live streams at once, paced at real time, instead of the per-stream figures");
  cmd->add_option("--stream-seconds", args->stream_seconds,
                  "With --streams: the length the streams reach (their caches filled first)")
      ->capture_default_str();
  cmd->add_option("--measure-seconds", args->measure_seconds, "With --streams: the paced, measured part at the end")
      ->capture_default_str();
  cmd->add_option("--windows", args->windows,
                  "With --streams: measure K windows of --measure-seconds one after the other after one fill, each "
                  "reported on its own (a figure's repeats without filling the streams again)")
      ->capture_default_str();
  add_capacity_options(cmd, args->engine,
                       "Caches for this many sessions, allocated at load, on each device (default with --streams N or "
                       "--offline-batch B: N or B, shared evenly by the --gpus)");
  add_gpus_option(cmd, args->engine);
  cmd->add_flag("--aligned-arrivals", args->aligned_arrivals,
                "With --streams: every stream's 80 ms chunks arrive at the same instant (default: spread over the 80 ms)");
  cmd->add_flag("--fill-drafts", args->fill_drafts,
                "With --streams: fill the streams' caches keeping every drafted row (a stream fills many positions a "
                "pass; the fill's text is then not the model's, the measured part is the same)");
  cmd->add_flag("--find-capacity", args->find_capacity,
                "With --streams N: search the most streams (from N up) that all keep within 80 ms of real time");
  cmd->add_option("--offline-batch", args->offline_batch,
                  "Run B offline transcriptions at once (each as long as the first --offline-seconds), instead of the per-stream figures");
  cmd->add_option("--out", args->out, "Folder for the JSON result (default: the current directory)");
  cmd->callback([args, passes] {
    take_steps_as_passes(*args, passes->count() > 0);
    run_bench(*args);
  });
}

}  // namespace voxrt::cli
