// `voxrt quantize MODEL_DIR OUT_DIR [--qlinear 4w ...]`: writes a quantized copy of a model
// directory (either layout in, the Mistral layout out) that every command loads with --model.
#include <cstdio>
#include <iostream>
#include <memory>

#include "cli/commands.h"
#include "cli/engine_options.h"
#include "cli/quantize_options.h"
#include "cli/usage.h"
#include "voxrt/voxrt.h"

namespace voxrt::cli {
namespace {

struct QuantizeCommandArgs {
  std::string model, out, layout = "auto";
  QuantizeArgs quantize;
  bool quiet = false;
};

std::string gigabytes(size_t bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3f GB", static_cast<double>(bytes) / 1e9);
  return text;
}

void run(const QuantizeCommandArgs& a) {
  WeightQuantization q;
  Layout layout = Layout::Auto;
  try {
    q = weight_quantization(a.quantize);
    layout = parse_layout(a.layout);
    validate_quantization(q);
  } catch (const OptionError& e) {
    throw UsageError(as_option(e));
  }
  if (!q.any()) throw UsageError("nothing to quantize: give --qlinear, --qlinear-encoder or --qembedding (4w, 8w or fp8)");
  const QuantizeResult r = quantize_model(a.model, a.out, q, layout);
  if (a.quiet) return;
  char line[256];
  std::snprintf(line, sizeof line, "voxrt: quantized %zu of %zu tensors (%s) in %.1f s: weights %s -> %s\n", r.quantized,
                r.tensors, r.weights.c_str(), r.seconds, gigabytes(r.bytes_before).c_str(),
                gigabytes(r.bytes_after).c_str());
  std::cerr << line;
  std::snprintf(line, sizeof line,
                "voxrt: relative error of the quantized weights: encoder %.4f, decoder %.4f, embedding %.4f, LM head %.4f "
                "(0: not quantized, or the head tied to the embedding)\n",
                r.encoder_error, r.decoder_error, r.embedding_error, r.head_error);
  std::cerr << line << "voxrt: wrote " << a.out << " (load it with --model " << a.out << ")\n";
}

}  // namespace

void add_quantize_command(CLI::App& app) {
  auto args = std::make_shared<QuantizeCommandArgs>();
  CLI::App* cmd = app.add_subcommand("quantize", "Write a copy of a model with quantized weights (4w, 8w, fp8)");
  cmd->add_option("model", args->model, "Model directory to read (either layout)")->required();
  cmd->add_option("out", args->out, "Directory to write (new, or empty)")->required();
  cmd->add_option("--layout", args->layout, "Checkpoint files to read: auto, mistral or hf")->capture_default_str();
  cmd->add_flag("--quiet,-q", args->quiet, "No messages on standard error (errors excepted)");
  add_quantize_options(cmd, args->quantize);
  cmd->callback([args] { run(*args); });
}

}  // namespace voxrt::cli
