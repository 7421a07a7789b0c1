// The quantization options, spelled as ExecuTorch's export spells them: --qlinear (the decoder's
// linear layers, and the LM head apart from the embedding), --qlinear-encoder (the encoder's and the
// adapter), --qembedding (the token embedding), each with its --*-group-size, and --quantize-method. Every
// model-running command takes them (quantizing while loading), and `voxrt quantize` (writing a
// quantized model directory).
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "voxrt/engine_options.h"

namespace voxrt::cli {

struct QuantizeArgs {
  std::string linear = "none", encoder = "none", embedding = "none";
  int linear_group_size = 0, encoder_group_size = 0, embedding_group_size = 0;
  std::string method = "search";
};

void add_quantize_options(CLI::App* cmd, QuantizeArgs& args);
// OptionError naming the field for an unknown scheme or method (front ends map it to the option).
WeightQuantization weight_quantization(const QuantizeArgs& args);

}  // namespace voxrt::cli
