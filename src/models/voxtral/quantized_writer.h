// `voxrt quantize`'s work: a model directory written with quantized weights, in the Mistral layout
// whatever the layout read (params.json, consolidated.safetensors with the plan in its metadata,
// tekken.json copied), which Checkpoint::open loads as any other. Tensors the plan leaves alone are
// written as the checkpoint stores them (BF16 as BF16 bits, others as F32).
#pragma once

#include <cstddef>
#include <filesystem>
#include <string>

#include "models/voxtral/checkpoint.h"
#include "models/voxtral/quant_plan.h"

namespace voxrt {

struct QuantizeReport {
  size_t tensors = 0, quantized = 0;  // tensors written, of them quantized
  size_t weight_bytes_before = 0;     // the tensors' bytes as bf16 (what the GPU holds for them)
  size_t weight_bytes_after = 0;      // as written
  // The quantized weights' error against the checkpoint's values, per component: sqrt(sum of
  // squared errors / sum of squares) over all of a component's weights (QuantError).
  double encoder_error = 0, decoder_error = 0, embedding_error = 0, head_error = 0;  // head: the untied LM head's
};

// Throws an Error when the plan quantizes nothing, the checkpoint is quantized already, `out` is
// `ckpt`'s own directory or a directory that is not empty, or a tensor's group size does not
// divide its dimension.
QuantizeReport write_quantized_model(const Checkpoint& ckpt, const QuantPlan& plan, const std::filesystem::path& out);

// params.json for a configuration (the Mistral layout's file), as parse_params_json reads it.
std::string params_json_text(const ModelConfig& config);

}  // namespace voxrt
