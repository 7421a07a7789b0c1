#include "server/context_bias_fields.h"

#include <charconv>

#include "voxrt/error.h"

namespace voxrt::server {

std::vector<std::string> prompt_phrases(std::string_view prompt) {
  std::vector<std::string> phrases;
  size_t start = 0;
  for (size_t i = 0; i <= prompt.size(); ++i) {
    if (i < prompt.size() && prompt[i] != ',' && prompt[i] != ';' && prompt[i] != '\n' && prompt[i] != '\r') continue;
    std::string phrase = trim_context_bias_phrase(std::string(prompt.substr(start, i - start)));
    if (!phrase.empty()) phrases.push_back(std::move(phrase));
    start = i + 1;
  }
  return phrases;
}

void check_bias(const BiasRequest& bias, const std::string& phrases_param, const std::string& strength_param) {
  try {
    validate_context_bias(bias.phrases, bias.strength);
  } catch (const OptionError& e) {
    const std::string& param = e.field() == "context_bias_strength" ? strength_param : phrases_param;
    throw BiasFieldError(param, e.renamed(param));
  }
}

BiasRequest updated_bias(const nlohmann::json& holder, const BiasRequest& current, const std::string& path) {
  BiasRequest bias = current;
  if (!holder.is_object()) return bias;
  const std::string list_param = path + "context_bias", strength_param = path + "context_bias_strength";
  if (holder.contains("context_bias")) {
    const nlohmann::json& list = holder["context_bias"];
    bias.phrases.clear();
    if (!list.is_null()) {
      if (!list.is_array()) throw BiasFieldError(list_param, list_param + ": expected an array of strings (or null)");
      if (list.size() > static_cast<size_t>(kMaxContextBiasPhrases))
        throw BiasFieldError(list_param, list_param + ": " + std::to_string(list.size()) + " phrases, at most " +
                                             std::to_string(kMaxContextBiasPhrases));
      for (const nlohmann::json& p : list) {
        if (!p.is_string()) throw BiasFieldError(list_param, list_param + ": expected an array of strings");
        bias.phrases.push_back(p.get<std::string>());
      }
    }
  }
  if (holder.contains("context_bias_strength") && !holder["context_bias_strength"].is_null()) {
    const nlohmann::json& s = holder["context_bias_strength"];
    if (!s.is_number()) throw BiasFieldError(strength_param, strength_param + ": expected a number");
    bias.strength = s.get<float>();
  }
  check_bias(bias, list_param, strength_param);
  return bias;
}

void put_bias(nlohmann::json& session, const BiasRequest& bias) {
  session["context_bias"] = bias.phrases;
  session["context_bias_strength"] = bias.strength;
}

}  // namespace voxrt::server
