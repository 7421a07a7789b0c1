#include "engine/bias_phrases.h"

#include <algorithm>

#include "voxrt/context_bias.h"
#include "voxrt/error.h"

namespace voxrt {
namespace {

// The phrase with its first letter upper-case: a-z, and Latin-1's à-þ (UTF-8 C3 A0-BE, less ÷ C3 B7),
// whose capitals are 0x20 below them.
std::string capitalized(std::string s) {
  if (s.empty()) return s;
  const auto b0 = static_cast<unsigned char>(s[0]);
  if (b0 >= 'a' && b0 <= 'z') {
    s[0] = static_cast<char>(b0 - 0x20);
  } else if (b0 == 0xC3 && s.size() > 1) {
    const auto b1 = static_cast<unsigned char>(s[1]);
    if (b1 >= 0xA0 && b1 <= 0xBE && b1 != 0xB7) s[1] = static_cast<char>(b1 - 0x20);
  }
  return s;
}

}  // namespace

std::vector<std::string> bias_phrase_forms(const std::string& phrase) {
  std::vector<std::string> forms;
  for (const std::string& f : {phrase, capitalized(phrase)})
    for (const std::string& spaced : {f, " " + f})
      if (std::find(forms.begin(), forms.end(), spaced) == forms.end()) forms.push_back(spaced);
  return forms;
}

std::shared_ptr<const BiasTrie> make_bias_trie(const std::vector<std::string>& phrases, float strength,
                                               const TextEncoder& encoder, int32_t first_text_id) {
  validate_context_bias(phrases, strength);
  if (phrases.empty() || strength == 0.0f) return nullptr;
  std::vector<std::vector<int32_t>> sequences;
  for (size_t i = 0; i < phrases.size(); ++i) {
    for (const std::string& form : bias_phrase_forms(trim_context_bias_phrase(phrases[i]))) {
      std::vector<int32_t> ids = encoder.encode(form);
      if (ids.size() > static_cast<size_t>(kMaxContextBiasPhraseTokens))
        throw OptionError("context_bias", ": phrase " + std::to_string(i + 1) + " (\"" + form + "\") is " +
                                              std::to_string(ids.size()) + " tokens, more than the " +
                                              std::to_string(kMaxContextBiasPhraseTokens) + " allowed");
      sequences.push_back(std::move(ids));
    }
  }
  return std::make_shared<const BiasTrie>(sequences, first_text_id, strength);
}

}  // namespace voxrt
