// Context biasing's rules (include/voxrt/context_bias.h): the one place its limits are checked, for
// the engine and for the front ends that check their options before loading. (The token count of a
// phrase needs the tokenizer: bias_phrases.cpp checks it as it tokenizes, against the header's limit.)
#include "voxrt/context_bias.h"

#include <cmath>
#include <cstdio>
#include <string>

#include "tokenizer/tekken.h"
#include "voxrt/error.h"

namespace voxrt {
namespace {

bool valid_utf8(const std::string& s) {
  Utf8Assembler utf8;  // invalid bytes come out as U+FFFD, which they are not
  std::string out = utf8.push(s);
  out += utf8.finish();
  return out == s;
}

// "phrase 3 (\"Kubernetes\")", the phrase cut short for the message.
std::string phrase_named(size_t index, const std::string& phrase) {
  constexpr size_t kShown = 40;
  const std::string shown = phrase.size() > kShown ? phrase.substr(0, kShown) + "..." : phrase;
  return "phrase " + std::to_string(index + 1) + " (\"" + (valid_utf8(shown) ? shown : std::string("?")) + "\")";
}

}  // namespace

std::string trim_context_bias_phrase(const std::string& phrase) {
  constexpr const char* kSpace = " \t\r\n\v\f";
  const size_t first = phrase.find_first_not_of(kSpace);
  if (first == std::string::npos) return {};
  return phrase.substr(first, phrase.find_last_not_of(kSpace) - first + 1);
}

void validate_context_bias(const std::vector<std::string>& phrases, float strength) {
  if (!(strength >= 0.0f && strength <= kMaxContextBiasStrength)) {
    char text[48];
    std::snprintf(text, sizeof text, " %g: expected 0 to %g (logit units)", static_cast<double>(strength),
                  static_cast<double>(kMaxContextBiasStrength));
    throw OptionError("context_bias_strength", text);
  }
  if (phrases.size() > static_cast<size_t>(kMaxContextBiasPhrases))
    throw OptionError("context_bias", ": " + std::to_string(phrases.size()) + " phrases, more than the " +
                                          std::to_string(kMaxContextBiasPhrases) + " allowed");
  for (size_t i = 0; i < phrases.size(); ++i) {
    const std::string phrase = trim_context_bias_phrase(phrases[i]);
    if (phrase.empty())
      throw OptionError("context_bias", ": phrase " + std::to_string(i + 1) + " is empty (or only whitespace)");
    if (!valid_utf8(phrase)) throw OptionError("context_bias", ": " + phrase_named(i, phrase) + " is not valid UTF-8");
    if (phrase.size() > static_cast<size_t>(kMaxContextBiasPhraseBytes))
      throw OptionError("context_bias", ": " + phrase_named(i, phrase) + " is " + std::to_string(phrase.size()) +
                                            " bytes, more than the " + std::to_string(kMaxContextBiasPhraseBytes) +
                                            " allowed");
  }
}

}  // namespace voxrt
