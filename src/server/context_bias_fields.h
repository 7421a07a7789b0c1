// Context biasing (include/voxrt/context_bias.h) as clients ask for it (docs/serve.md, "Context
// biasing"): Mistral's `context_bias` (a list of words and phrases: repeated form fields on the
// transcription route, a JSON array in a realtime session.update), voxrt's `context_bias_strength`,
// and OpenAI's `prompt`, whose text is taken as a list: split at commas, semicolons and line breaks.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "voxrt/context_bias.h"

namespace voxrt::server {

struct BiasRequest {
  std::vector<std::string> phrases;
  float strength = kDefaultContextBiasStrength;
};

// A field at fault: `param` as the client wrote it, what() the message (the limit, the phrase).
class BiasFieldError : public std::runtime_error {
 public:
  BiasFieldError(std::string param, const std::string& message) : std::runtime_error(message), param_(std::move(param)) {}
  const std::string& param() const { return param_; }

 private:
  std::string param_;
};

// The prompt's phrases: split at ',', ';', '\n', '\r', each trimmed, empty pieces dropped.
std::vector<std::string> prompt_phrases(std::string_view prompt);

// Checks the list and strength as the engine would (validate_context_bias), naming `param_prefix`
// + the field (context_bias or context_bias_strength; `phrases_param` for the phrases when they
// came from another field, such as a prompt). Throws BiasFieldError.
void check_bias(const BiasRequest& bias, const std::string& phrases_param, const std::string& strength_param);

// A session update's context_bias (a JSON array of strings, or null for none) and
// context_bias_strength (a number) in `holder`, over `current`; `path` names the holder in errors.
BiasRequest updated_bias(const nlohmann::json& holder, const BiasRequest& current, const std::string& path);

// Echoed in session events: {context_bias: [...], context_bias_strength}.
void put_bias(nlohmann::json& session, const BiasRequest& bias);

}  // namespace voxrt::server
