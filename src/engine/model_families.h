// Which model family a checkpoint directory holds (docs/architecture.md, section 5): the one place
// Engine::load asks, and where a family beside Voxtral (src/models/<family>/) is added.
#pragma once

#include <filesystem>

namespace voxrt {

enum class ModelFamily { Voxtral };

// The family of the model in `dir`, by the model_type its config.json names. A directory whose
// config.json names a model no family runs (transformers' "whisper", say) is a voxrt::Error naming
// the file and the field. Without a config.json (Mistral layout: params.json), or one that names no
// model_type or is not readable JSON (the family's own reading then says what is wrong), it is
// Voxtral's, as every directory was before there were families.
ModelFamily model_family_of(const std::filesystem::path& dir);

}  // namespace voxrt
