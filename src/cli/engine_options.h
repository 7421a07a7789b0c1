// The options every model-running subcommand shares (--model, --device, --gpu, --layout,
// --threads, --quiet) and loading the engine they describe.
#pragma once

#include <CLI/CLI.hpp>
#include <memory>
#include <string>

#include "voxrt/voxrt.h"

namespace voxrt::cli {

struct EngineArgs {
  std::string model;
  std::string device = "auto";
  int gpu = 0;
  std::string layout = "auto";
  int threads = 0;
  int draft_rows = 0;
  bool quiet = false;
};

void add_engine_options(CLI::App* cmd, EngineArgs& args);
void add_delay_option(CLI::App* cmd, int& delay_ms);
// Resolves the model directory, loads it, and (unless quiet) says what was loaded and where.
std::unique_ptr<Engine> load_engine(const EngineArgs& args);

}  // namespace voxrt::cli
