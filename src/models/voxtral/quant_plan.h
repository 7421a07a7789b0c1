// Which of Voxtral's weights are quantized, and how: the encoder's linear layers with the adapter,
// the decoder's linear layers, the token embedding and the LM head, each a format of its own
// (quant/weight_format.h); the convolutions, norms, biases and the delay conditioning stay as
// the checkpoint has them. Made from the engine's options to quantize while loading, or read from
// the metadata of a directory `voxrt quantize` wrote, where it is stored as JSON under
// kQuantMetadataKey beside tensors named as quant_scales_name / quant_biases_name say.
#pragma once

#include <cstdint>
#include <string>

#include "quant/quantizer.h"
#include "quant/weight_format.h"
#include "safetensors/safetensors.h"
#include "voxrt/engine_options.h"

namespace voxrt {

inline constexpr const char* kQuantMetadataKey = "voxrt.quantization";

struct QuantPlan {
  // A W8 format of group_size 0 is one scale an output channel: its group is the row's length.
  // fp8 is always so (group_size 0), and never the embedding's (a lookup: no activations to quantize).
  WeightFormat encoder, decoder, embedding;
  // The LM head, tied to the embedding in the checkpoint. Quantizing the decoder's linears
  // quantizes it on its own in their format, as ExecuTorch does (it is the largest product of a
  // step); otherwise it stays the embedding. Untied, it is a weight of its own (tensor_names::kLmHead).
  WeightFormat head;
  QuantMethod method = QuantMethod::Search;

  static QuantPlan from_options(const WeightQuantization& q);
  bool any() const { return encoder.quantized() || decoder.quantized() || embedding.quantized() || head.quantized(); }
  bool head_untied() const { return !(head == embedding); }
  // The format of the canonical tensor `name` of K columns: None for a tensor the plan leaves
  // alone. Throws naming the tensor when its group does not divide K.
  WeightFormat format_for(const std::string& name, int64_t K) const;
  // "encoder 4w/32, decoder 4w/32, embedding 8w/128, LM head 4w/32" (bf16 where not quantized;
  // "LM head tied" when it is the embedding).
  std::string describe() const;

  std::string to_metadata() const;
  // Throws naming `where` and the field at fault (malformed JSON, an unknown format, a group size
  // the format does not take).
  static QuantPlan from_metadata(const std::string& json, const std::string& where);
};

// The dtype a quantized tensor's packed values are stored as: U8 (4w, two a byte), I8 (8w),
// F8_E4M3 (fp8).
DType packed_dtype(QuantKind kind);

// Where a quantized tensor's scales and biases are stored: "layers.0.attention.wq.weight" ->
// "layers.0.attention.wq.scales" / ".biases" (MLX's names).
std::string quant_scales_name(const std::string& weight_name);
std::string quant_biases_name(const std::string& weight_name);

}  // namespace voxrt
