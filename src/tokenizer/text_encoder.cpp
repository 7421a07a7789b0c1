#include "tokenizer/text_encoder.h"

#include <limits>

#include "common/error.h"

namespace voxrt {
namespace {

// A character's class as tekken's pattern sees it:
//   [^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+
//   |[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*
//   |\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+
// Upper and Lower are the cased letters, Caseless a letter of both sets (\p{Lm}, \p{Lo}).
enum class Cls { Upper, Lower, Caseless, Number, Newline, Space, Other };

struct Char {
  Cls cls;
  uint32_t code;      // the code point (0xFFFD for a byte that starts no character)
  size_t begin, end;  // its bytes in the text
};

Cls classify(uint32_t c) {
  if (c < 0x80) {
    if (c >= 'A' && c <= 'Z') return Cls::Upper;
    if (c >= 'a' && c <= 'z') return Cls::Lower;
    if (c >= '0' && c <= '9') return Cls::Number;
    if (c == '\r' || c == '\n') return Cls::Newline;
    if (c == ' ' || (c >= '\t' && c <= '\f')) return Cls::Space;
    return Cls::Other;
  }
  if (c == 0x85 || c == 0xA0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 ||
      c == 0x202F || c == 0x205F || c == 0x3000)
    return Cls::Space;
  // Latin-1's symbols (¡ to ¿, ×, ÷), General Punctuation (dashes, quotes, …), CJK punctuation.
  if ((c >= 0xA1 && c <= 0xBF) || c == 0xD7 || c == 0xF7 || (c >= 0x2010 && c <= 0x205E) ||
      (c >= 0x3001 && c <= 0x303F) || c == 0xFFFD)
    return Cls::Other;
  return Cls::Caseless;
}

// The characters of `text`; a byte that starts no well-formed UTF-8 character is one Other.
std::vector<Char> characters(std::string_view text) {
  std::vector<Char> out;
  for (size_t i = 0; i < text.size();) {
    const auto b = static_cast<unsigned char>(text[i]);
    const size_t len = b < 0x80 ? 1 : (b >> 5) == 0x6 ? 2 : (b >> 4) == 0xE ? 3 : (b >> 3) == 0x1E ? 4 : 0;
    uint32_t c = len == 2 ? b & 0x1Fu : len == 3 ? b & 0x0Fu : b & 0x07u;
    bool ok = len > 0 && i + len <= text.size();
    for (size_t k = 1; ok && k < len; ++k) {
      const auto t = static_cast<unsigned char>(text[i + k]);
      ok = (t & 0xC0) == 0x80;
      c = (c << 6) | (t & 0x3Fu);
    }
    if (len == 1) c = b;
    const size_t n = ok ? len : 1;
    out.push_back({ok ? classify(c) : Cls::Other, ok ? c : 0xFFFDu, i, i + n});
    i += n;
  }
  return out;
}

bool letter(Cls c) { return c == Cls::Upper || c == Cls::Lower || c == Cls::Caseless; }
bool upper_set(Cls c) { return c == Cls::Upper || c == Cls::Caseless; }
bool lower_set(Cls c) { return c == Cls::Lower || c == Cls::Caseless; }
bool space(Cls c) { return c == Cls::Space || c == Cls::Newline; }

// The end (in characters) of the pattern's match at character i, trying its alternatives in order.
size_t match_end(const std::vector<Char>& s, size_t i) {
  const size_t n = s.size();
  const Cls c = s[i].cls;
  const auto run = [&](size_t from, bool (*in)(Cls)) {
    while (from < n && in(s[from].cls)) ++from;
    return from;
  };
  // The letter alternatives, after an optional character that is no line break, letter or number.
  const bool prefix = c == Cls::Space || c == Cls::Other;
  if (prefix || letter(c)) {
    const size_t from = prefix ? i + 1 : i;
    const size_t uppers = run(from, upper_set);
    // [upper]*[lower]+: the longest upper run that a lower-set character follows.
    for (size_t k = uppers + 1; k-- > from;)
      if (k < n && lower_set(s[k].cls)) return run(k, lower_set);
    if (uppers > from) return uppers;  // [upper]+[lower]*: no lower-set character follows the run
  }
  if (c == Cls::Number) return i + 1;
  // ' ?[^\s\p{L}\p{N}]+[\r\n/]*'
  const size_t from = s[i].code == ' ' ? i + 1 : i;
  const size_t symbols = run(from, [](Cls k) { return k == Cls::Other; });
  if (symbols > from) return run(symbols, [](Cls k) { return k == Cls::Newline; });
  // White space: up to its last line break; else all of it but the last before a non-space.
  const size_t spaces = run(i, space);
  for (size_t k = spaces; k-- > i;)
    if (s[k].cls == Cls::Newline) return k + 1;
  if (spaces == n || spaces - i == 1) return spaces;
  return spaces - 1;
}

}  // namespace

TextEncoder::TextEncoder(const Tokenizer& tokenizer) : num_special_(tokenizer.num_special()) {
  rank_of_.reserve(static_cast<size_t>(tokenizer.vocab_size() - num_special_));
  for (int id = num_special_; id < tokenizer.vocab_size(); ++id)
    rank_of_.emplace(std::string(tokenizer.token_bytes(id)), id - num_special_);  // the first of equal bytes wins
}

std::vector<std::string_view> TextEncoder::split(std::string_view text) {
  const std::vector<Char> s = characters(text);
  std::vector<std::string_view> pieces;
  for (size_t i = 0; i < s.size();) {
    const size_t end = match_end(s, i);
    pieces.push_back(text.substr(s[i].begin, s[end - 1].end - s[i].begin));
    i = end;
  }
  return pieces;
}

std::vector<int32_t> TextEncoder::encode(std::string_view text) const {
  std::vector<int32_t> ids;
  for (std::string_view piece : split(text)) encode_piece(piece, ids);
  return ids;
}

void TextEncoder::encode_piece(std::string_view piece, std::vector<int32_t>& ids) const {
  if (const auto whole = rank_of_.find(std::string(piece)); whole != rank_of_.end()) {
    ids.push_back(whole->second + num_special_);
    return;
  }
  // Byte-pair merging: parts[i] is the piece's bytes [parts[i], parts[i + 1]).
  std::vector<size_t> parts;
  for (size_t i = 0; i <= piece.size(); ++i) parts.push_back(i);
  const auto rank = [&](size_t from, size_t to) {
    const auto it = rank_of_.find(std::string(piece.substr(from, to - from)));
    return it == rank_of_.end() ? std::numeric_limits<int32_t>::max() : it->second;
  };
  while (parts.size() > 2) {
    size_t best = 0;
    int32_t best_rank = std::numeric_limits<int32_t>::max();
    for (size_t i = 0; i + 2 < parts.size(); ++i) {
      const int32_t r = rank(parts[i], parts[i + 2]);
      if (r < best_rank) best = i, best_rank = r;
    }
    if (best_rank == std::numeric_limits<int32_t>::max()) break;
    parts.erase(parts.begin() + static_cast<std::ptrdiff_t>(best) + 1);
  }
  for (size_t i = 0; i + 1 < parts.size(); ++i) {
    const int32_t r = rank(parts[i], parts[i + 1]);
    check_with(r != std::numeric_limits<int32_t>::max(), "tekken.json", [&] {
      return "no token for the byte " + std::to_string(static_cast<unsigned char>(piece[parts[i]]));
    });
    ids.push_back(r + num_special_);
  }
}

}  // namespace voxrt
