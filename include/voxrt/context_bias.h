// Context biasing (Mistral's API calls it context_bias): words and phrases a transcription or a
// live session should prefer, such as names and terms the model may not know
// (TranscribeOptions::context_bias, SessionOptions::context_bias).
//
// Each phrase is tokenized in four forms (as given and with its first letter capitalized, each with
// and without a leading space, identical token sequences kept once). While decoding greedily, the
// logit of the first token of every form is raised by the strength at every position, and once a
// form's first tokens have come out, so is the logit of its next token, until the form is complete
// or the text goes another way (the boost of that form is then withdrawn; others that still match
// keep theirs). The model's control tokens ([STREAMING_PAD], [STREAMING_WORD], ...) between a
// phrase's tokens do not break it. The boosts change which token wins, not the model: without a
// list, or with a strength of 0, the ids are exactly those of no biasing, and no work is done.
//
// Every limit and rule is here, in one place, and checked by validate_context_bias (front ends call
// it before anything loads; the engine calls it when a transcription or session starts, and checks
// the token count, which needs the model's tokenizer, as each phrase is tokenized).
#pragma once

#include <string>
#include <vector>

#include "voxrt/export.h"

namespace voxrt {

// At most this many phrases a list.
inline constexpr int kMaxContextBiasPhrases = 100;
// A phrase (leading and trailing whitespace trimmed, which is what counts) is 1 to this many bytes of
// UTF-8...
inline constexpr int kMaxContextBiasPhraseBytes = 100;
// ... and at most this many tokens in each of its forms.
inline constexpr int kMaxContextBiasPhraseTokens = 32;
// The strength, in logit units (log-probability differences: 3 makes a token e^3 = 20 times as likely
// against the others). The default, 3, sways the choice wherever the model hesitates between a
// phrase's token and another (a runner-up within 3 of the winner) and leaves it alone where the
// model is sure: over speech the model's [STREAMING_PAD] leads the next token by 3.5 to 6.6 even
// where it wrongly hears nothing, and by 8.5 or more over silence (docs/model.md §13, §14), so
// a phrase is not pushed into audio where nothing like it was said.
inline constexpr float kDefaultContextBiasStrength = 3.0f;
// Strengths are 0 (no biasing) to this: beyond it a phrase's first token would win over silence too.
inline constexpr float kMaxContextBiasStrength = 20.0f;

// Throws an OptionError naming context_bias (too many phrases; a phrase empty once trimmed, longer
// than kMaxContextBiasPhraseBytes, or not UTF-8, naming which) or context_bias_strength (not 0 to
// kMaxContextBiasStrength).
VOXRT_API void validate_context_bias(const std::vector<std::string>& phrases, float strength);

// A phrase as it is tokenized: leading and trailing whitespace (spaces, tabs, line breaks) removed.
VOXRT_API std::string trim_context_bias_phrase(const std::string& phrase);

}  // namespace voxrt
