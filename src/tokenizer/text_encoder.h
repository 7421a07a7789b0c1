// Text to tekken token ids, the encode side of Tokenizer (tekken.h), as mistral-common encodes with
// tiktoken: the text is split into pieces by tekken.json's pattern, a piece that is a token whole
// is that token, and any other piece is byte-pair merged (its bytes, then repeatedly the adjacent
// pair whose joined bytes are the lowest-ranked token, leftmost first) over the ranks the model uses.
//
// The pattern (config.pattern, the same since tekken v3) is written out by hand rather than run as a
// regular expression: its classes need Unicode's letter and number categories, which the standard
// library does not have. ASCII is classified exactly; beyond it, Unicode's white space is white space,
// Latin-1's and the General Punctuation block's symbols are punctuation, and every other character
// is a letter without case. That places every piece boundary of the exact pattern where the text is
// ASCII, and beyond it only ever joins pieces the exact pattern would split (a non-ASCII digit, an
// upper-case letter after lower-case ones), which changes nothing: no token spans two of the exact
// pattern's pieces, so byte-pair merging cannot join across them.
// Used for context biasing's phrases (engine/bias_phrases.h), not on any per-position path.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tokenizer/tekken.h"

namespace voxrt {

class TextEncoder {
 public:
  // Indexes the tokenizer's regular tokens by their bytes (the tokenizer need not outlive it).
  explicit TextEncoder(const Tokenizer& tokenizer);

  // The ids of `text` (regular tokens only, never a special one). Throws voxrt::Error if a byte has
  // no token of its own (a tekken.json without the 256 byte tokens).
  std::vector<int32_t> encode(std::string_view text) const;

  // The pieces the pattern splits `text` into (for tests), in order; joined they are `text`.
  static std::vector<std::string_view> split(std::string_view text);

 private:
  void encode_piece(std::string_view piece, std::vector<int32_t>& ids) const;

  int num_special_ = 0;
  std::unordered_map<std::string, int32_t> rank_of_;  // token bytes -> rank
};

}  // namespace voxrt
