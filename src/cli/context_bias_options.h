// --context-bias, --context-bias-file and --context-bias-strength (transcribe, stream): the words
// and phrases the model should prefer (include/voxrt/context_bias.h), read and checked before the
// model loads.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "voxrt/context_bias.h"

namespace voxrt::cli {

struct ContextBiasArgs {
  std::vector<std::string> lists;  // each --context-bias: phrases separated by commas
  std::string file;                // --context-bias-file: one phrase a line
  float strength = kDefaultContextBiasStrength;
  std::vector<std::string> phrases;  // all of them, once check_context_bias_args has read them
};

void add_context_bias_options(CLI::App* cmd, ContextBiasArgs& args);

// Reads the phrases (--context-bias's, then the file's) into args.phrases and checks them
// (validate_context_bias): UsageError naming the option, Error for a file that cannot be read.
void check_context_bias_args(ContextBiasArgs& args);

}  // namespace voxrt::cli
