// The options every model-running subcommand shares (--model, --device, --gpu, --layout, --threads,
// --draft-rows, --quiet, --delay-ms): registering them, checking their values before anything loads,
// and loading the engine they describe.
#pragma once

#include <CLI/CLI.hpp>
#include <cstddef>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "cli/quantize_options.h"
#include "voxrt/voxrt.h"

namespace voxrt::cli {

struct EngineArgs {
  std::string model;
  std::string device = "auto";
  int gpu = 0;
  std::string layout = "auto";
  int threads = 0;  // 0: not given (all cores)
  int draft_rows = 0;
  std::string kv_cache = "auto";
  QuantizeArgs quantize;  // --qlinear and the others (cli/quantize_options.h)
  // Set by the commands that offer them (add_capacity_options):
  int max_sessions = 0;
  size_t max_memory = 0;  // bytes
  double max_memory_fraction = 0;  // or a fraction of what the weights leave free
  double max_session_seconds = 0;
  bool refuse_when_overloaded = false;  // serve: new live sessions refused while the open ones lag
  std::vector<int> gpus;  // --gpus (add_gpus_option): empty, or the devices to spread over
  bool quiet = false;
};

void add_engine_options(CLI::App* cmd, EngineArgs& args);
// The library's OptionError about a field, its message naming the command-line option instead.
std::string as_option(const OptionError& e);
// --max-sessions, --max-memory and --max-session-seconds: how many sessions the engine holds at
// once (EngineOptions's fields of those names).
void add_capacity_options(CLI::App* cmd, EngineArgs& args, const std::string& sessions_help);
// --max-memory's value: "40GB", "512MiB", "1073741824" (bytes), or "0.8" (a fraction, 0 to 1, of
// the memory free once the weights are loaded). Sets one of the two; UsageError naming --max-memory
// otherwise.
void parse_max_memory(const std::string& text, EngineArgs& args);

// --gpus all|N|LIST (serve, transcribe): the devices sessions and files are spread over. Added after
// add_capacity_options where a command has both (its help names them).
void add_gpus_option(CLI::App* cmd, EngineArgs& args);
// --gpus's value: "all" (every CUDA device; cuda_devices of them), "N" (devices 0 .. N-1; on the CPU, N
// copies of the model) or "0,2,3" (those). UsageError naming --gpus otherwise.
std::vector<int> parse_gpus(const std::string& text, int cuda_devices);

// --delay-ms; 0 stays "not given" (tekken.json's default), any given value (0 too) is checked as it
// is parsed.
void add_delay_option(CLI::App* cmd, int& delay_ms);

// Checks the shared options' values (UsageError, exit 2) and that --model names a directory
// (Error, exit 1). Every command calls it before opening inputs or loading the model.
void check_engine_args(const EngineArgs& args);

// Resolves the model directory, loads it, and (unless quiet) says what was loaded and where.
std::unique_ptr<Engine> load_engine(const EngineArgs& args);
// load_engine with `load` in place of Engine::load (bench loads its engine its own way,
// bench/engine_bench.h): `load` loads the model directory with the options, keeps the engine and
// returns it.
using EngineLoader = std::function<Engine&(const std::filesystem::path& dir, const EngineOptions& options)>;
void load_engine_with(const EngineArgs& args, const EngineLoader& load);

}  // namespace voxrt::cli
