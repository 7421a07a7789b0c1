#include "cli/quantize_options.h"

namespace voxrt::cli {

void add_quantize_options(CLI::App* cmd, QuantizeArgs& a) {
  const std::string group = "Quantization";
  cmd->add_option("--qlinear", a.linear, "Decoder linear layers: none, 4w (int4, W4A16), 8w (int8, W8A16) or fp8 (e4m3, W8A8: GPUs with fp8 tensor cores, sm_89 and later, and the CPU)")
      ->capture_default_str()
      ->group(group);
  cmd->add_option("--qlinear-group-size", a.linear_group_size,
                  "Elements a scale along the input: 32, 64 or 128 for 4w (0: 32), a multiple of 32 for 8w (0: one an output channel); fp8 takes none (one an output channel)")
      ->group(group);
  cmd->add_option("--qlinear-encoder", a.encoder, "Encoder linear layers and the adapter: none, 4w, 8w or fp8")
      ->capture_default_str()
      ->group(group);
  cmd->add_option("--qlinear-encoder-group-size", a.encoder_group_size, "As --qlinear-group-size, for the encoder")
      ->group(group);
  cmd->add_option("--qembedding", a.embedding, "Token embedding: none, 8w (or 4w; not fp8: a lookup, not a product); the LM head follows --qlinear when given, else the embedding")
      ->capture_default_str()
      ->group(group);
  cmd->add_option("--qembedding-group-size", a.embedding_group_size, "Elements a scale of the embedding (0: 128)")
      ->group(group);
  cmd->add_option("--quantize-method", a.method,
                  "How scales are chosen: search (least error over clipped ranges) or rtn (round over the whole range)")
      ->capture_default_str()
      ->group(group);
}

WeightQuantization weight_quantization(const QuantizeArgs& a) {
  WeightQuantization q;
  q.linear = parse_weight_scheme(a.linear, "qlinear");
  q.encoder = parse_weight_scheme(a.encoder, "qlinear_encoder");
  q.embedding = parse_weight_scheme(a.embedding, "qembedding");
  q.linear_group_size = a.linear_group_size;
  q.encoder_group_size = a.encoder_group_size;
  q.embedding_group_size = a.embedding_group_size;
  q.method = parse_quantization_method(a.method);
  return q;
}

}  // namespace voxrt::cli
