// The prefixes of Voxtral's canonical (Mistral) tensor names, for the files that address tensors
// by name (checkpoint.cpp, weights.cpp, quant_plan.cpp).
#pragma once

#include <string>

namespace voxrt::tensor_names {

inline const std::string kEmbedding = "mm_streams_embeddings.embedding_module.";
inline const std::string kEncoder = kEmbedding + "whisper_encoder.";
inline const std::string kEncoderLayers = kEncoder + "transformer.layers.";
inline const std::string kTokEmbeddings = kEmbedding + "tok_embeddings.weight";
inline const std::string kDecoderLayers = "layers.";
// The LM head when stored apart from the embedding it is tied to (Mistral's name for an untied
// head): `voxrt quantize` writes it when the head's format differs from the embedding's.
inline const std::string kLmHead = "output.weight";

}  // namespace voxrt::tensor_names
