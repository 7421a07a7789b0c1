#include "cli/context_bias_options.h"

#include <fstream>

#include "cli/engine_options.h"
#include "cli/list_file.h"
#include "cli/usage.h"

namespace voxrt::cli {

void add_context_bias_options(CLI::App* cmd, ContextBiasArgs& a) {
  cmd->add_option("--context-bias", a.lists,
                  "Words and phrases to prefer (names, terms), separated by commas: \"Kubernetes,Ada Lovelace\"; may be "
                  "given again. At most " + std::to_string(kMaxContextBiasPhrases) + " phrases of " +
                      std::to_string(kMaxContextBiasPhraseBytes) + " bytes and " +
                      std::to_string(kMaxContextBiasPhraseTokens) + " tokens each")
      ->allow_extra_args(false);  // one value an occurrence: the audio after it is no phrase
  cmd->add_option("--context-bias-file", a.file,
                  "More phrases to prefer, one a line (blank lines and # comments skipped; for phrases with commas)");
  cmd->add_option("--context-bias-strength", a.strength,
                  "How strongly the phrases are preferred: added to their tokens' logits, 0 (not at all) to " +
                      std::to_string(static_cast<int>(kMaxContextBiasStrength)))
      ->capture_default_str();
}

void check_context_bias_args(ContextBiasArgs& a) {
  a.phrases.clear();
  for (const std::string& list : a.lists)
    for (size_t from = 0;;) {
      const size_t comma = list.find(',', from);
      a.phrases.push_back(list.substr(from, comma == std::string::npos ? std::string::npos : comma - from));
      if (comma == std::string::npos) break;
      from = comma + 1;
    }
  if (!a.file.empty()) {
    std::ifstream in(a.file);
    if (!in) throw Error("--context-bias-file " + a.file + ": cannot open it");
    for (std::string& phrase : read_list(in, "--context-bias-file " + a.file)) a.phrases.push_back(std::move(phrase));
  }
  try {
    validate_context_bias(a.phrases, a.strength);
  } catch (const OptionError& e) {
    throw UsageError(as_option(e));
  }
}

}  // namespace voxrt::cli
