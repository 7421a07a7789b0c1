// Context biasing's phrases (include/voxrt/context_bias.h) into the trie of token sequences a stream
// follows (models/context_bias.h): the list checked by its rules, each phrase trimmed and written in
// its forms, each form tokenized and its token count checked.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "models/context_bias.h"
#include "tokenizer/text_encoder.h"

namespace voxrt {

// The forms a (trimmed) phrase is tokenized in, distinct: as given and with its first letter
// capitalized (ASCII and Latin-1 letters: "émile" -> "Émile"; other scripts as given), each without
// and with a leading space (Tekken's tokens carry the space before a word, so a phrase within a
// sentence comes out in the spaced form, at the start of a segment in the other).
std::vector<std::string> bias_phrase_forms(const std::string& phrase);

// The trie of every phrase's forms, tokenized by `encoder`, ids from `first_text_id` (the
// tokenizer's first regular token): null for an empty list or a strength of 0 (no biasing, no work).
// Throws OptionError naming context_bias or context_bias_strength (validate_context_bias, and a form
// of more than kMaxContextBiasPhraseTokens tokens).
std::shared_ptr<const BiasTrie> make_bias_trie(const std::vector<std::string>& phrases, float strength,
                                               const TextEncoder& encoder, int32_t first_text_id);

}  // namespace voxrt
