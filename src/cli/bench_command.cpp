// voxrt bench --model DIR [--audio FILE] [--steps N] [--offline-seconds 30,300] [--figures LIST] [--out DIR]
// (LIST: encoder, decoder, offline by default; products adds each product of a step timed alone)
// Prints each figure against its floor (from ceilings measured in the same run) and writes the
// whole result as JSON under --out (bench/results by default), named by date and backend.
#include <algorithm>
#include <chrono>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>

#include "audio/audio_file.h"
#include "cli/commands.h"
#include "cli/engine_options.h"
#include "common/error.h"
#include "engine/engine_bench.h"
#include "voxtral/benchmark.h"
#include "voxtral/protocol.h"

namespace voxrt::cli {
namespace {

struct BenchArgs {
  EngineArgs engine;
  int delay_ms = 0;
  std::string audio = "tests/data/audio/jfk.wav";
  int steps = 200;
  std::vector<double> offline_seconds{30, 300};
  std::vector<std::string> figures{"encoder", "decoder", "offline"};
  std::string out = "bench/results";
};

std::string utc_stamp() {
  const std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H%M%SZ", std::gmtime(&t));
  return buf;
}

void run_bench(const BenchArgs& a) {
  if (a.delay_ms != 0) delay_tokens_from_ms(a.delay_ms);
  if (a.steps < 1) throw Error("--steps " + std::to_string(a.steps) + ": expected at least 1");
  const std::vector<float> audio = load_audio_mono(a.audio);
  std::unique_ptr<Engine> engine = load_engine(a.engine);
  BenchOptions b;
  b.steps = a.steps;
  auto wanted = [&](const char* f) { return std::find(a.figures.begin(), a.figures.end(), f) != a.figures.end(); };
  for (const std::string& f : a.figures)
    if (f != "encoder" && f != "decoder" && f != "offline" && f != "products")
      throw Error("--figures " + f + ": expected encoder, decoder, offline or products");
  b.encoder_steps = wanted("encoder");
  b.decoder_steps = wanted("decoder");
  b.products = wanted("products");
  if (wanted("offline")) b.offline_seconds = a.offline_seconds;
  else b.offline_seconds.clear();
  nlohmann::json r = benchmark_engine(*engine, audio, a.delay_ms, b);
  r["audio"] = a.audio;
  r["date_utc"] = utc_stamp();
  std::cout << "load " << r["load_s"].get<double>() << " s (" << r["layout"].get<std::string>() << " layout)\n"
            << format_benchmark(r);
  std::filesystem::create_directories(a.out);
  const std::filesystem::path file = std::filesystem::path(a.out) / (r["date_utc"].get<std::string>() + "-" +
                                                                     r["backend"].get<std::string>() + ".json");
  std::ofstream(file) << r.dump(2) << "\n";
  std::cout << "wrote " << file.string() << "\n";
}

}  // namespace

void add_bench_command(CLI::App& app) {
  auto args = std::make_shared<BenchArgs>();
  CLI::App* cmd = app.add_subcommand("bench", "Measure load, per-step and offline speed against the hardware floor");
  add_engine_options(cmd, args->engine);
  add_delay_option(cmd, args->delay_ms);
  cmd->add_option("--audio", args->audio, "Speech to tile into the offline inputs")->capture_default_str();
  cmd->add_option("--steps", args->steps, "Timed steps per per-step figure")->capture_default_str();
  cmd->add_option("--offline-seconds", args->offline_seconds, "Offline input lengths in seconds")
      ->delimiter(',')
      ->capture_default_str();
  cmd->add_option("--figures", args->figures, "Which figures to measure (encoder, decoder, offline; products: each product of a step alone)")
      ->delimiter(',')
      ->capture_default_str();
  cmd->add_option("--out", args->out, "Folder for the JSON result")->capture_default_str();
  cmd->callback([args] { run_bench(*args); });
}

}  // namespace voxrt::cli
