#include "tokenizer/tekken.h"

#include <array>
#include <cmath>
#include <fstream>
#include <limits>
#include <sstream>
#include <system_error>

#include <nlohmann/json.hpp>

#include "common/base64.h"
#include "common/error.h"

namespace voxrt {
namespace {

using nlohmann::json;

constexpr std::string_view kReplacementChar = "\xEF\xBF\xBD";  // U+FFFD in UTF-8

// ---------------------------------------------------------------------------------------------
// JSON field access: every failure names the file and the dotted field path.

class Fields {
 public:
  explicit Fields(std::string file) : file_(std::move(file)) {}

  [[noreturn]] void fail(const std::string& field, const std::string& what) const {
    throw Error(file_ + ": " + field + ": " + what);
  }

  const json& require(const json& obj, const std::string& key, const std::string& where) const {
    auto it = obj.find(key);
    if (it == obj.end()) throw Error(file_ + ": missing field " + where);
    return *it;
  }

  const json& object(const json& v, const std::string& field) const {
    if (!v.is_object()) fail(field, "expected an object");
    return v;
  }

  const json& array(const json& v, const std::string& field) const {
    if (!v.is_array()) fail(field, "expected an array");
    return v;
  }

  // Accepts JSON integers and integral floats (480.0) that fit an int.
  int integer(const json& v, const std::string& field) const {
    if (v.is_number_unsigned()) {
      const auto x = v.get<uint64_t>();
      if (x > static_cast<uint64_t>(std::numeric_limits<int>::max())) fail(field, "integer out of range");
      return static_cast<int>(x);
    }
    if (v.is_number_integer()) {
      const auto x = v.get<int64_t>();
      if (x < std::numeric_limits<int>::min() || x > std::numeric_limits<int>::max())
        fail(field, "integer out of range");
      return static_cast<int>(x);
    }
    if (v.is_number_float()) {
      const double d = v.get<double>();
      if (std::isfinite(d) && d == std::floor(d) && std::fabs(d) <= std::numeric_limits<int>::max())
        return static_cast<int>(d);
    }
    fail(field, "expected an integer");
  }

  double number(const json& v, const std::string& field) const {
    if (!v.is_number()) fail(field, "expected a number");
    const double d = v.get<double>();
    if (!std::isfinite(d)) fail(field, "expected a finite number");
    return d;
  }

  const std::string& string(const json& v, const std::string& field) const {
    if (!v.is_string()) fail(field, "expected a string");
    return v.get_ref<const std::string&>();
  }

  bool boolean(const json& v, const std::string& field) const {
    if (!v.is_boolean()) fail(field, "expected a boolean");
    return v.get<bool>();
  }

  // Optional field: absent or null means "use the default".
  const json* optional(const json& obj, const std::string& key) const {
    auto it = obj.find(key);
    if (it == obj.end() || it->is_null()) return nullptr;
    return &*it;
  }

 private:
  std::string file_;
};

// ---------------------------------------------------------------------------------------------
// UTF-8 validation with "maximal subpart" error handling (Unicode §3.9, what Python's
// bytes.decode(errors="replace") does): a maximal prefix of a well-formed sequence that is cut
// short becomes one U+FFFD, and decoding resumes at the byte that broke it.

enum class Utf8Step { kChar, kInvalid, kTruncated };
struct Utf8Scan {
  Utf8Step step;
  size_t len;  // bytes of the character, of the invalid subpart, or of the truncated prefix
};

Utf8Scan scan_utf8(std::string_view s, size_t pos) {
  const auto b0 = static_cast<unsigned char>(s[pos]);
  if (b0 < 0x80) return {Utf8Step::kChar, 1};
  size_t trail = 0;
  unsigned char lo = 0x80, hi = 0xBF;  // allowed range of the first continuation byte
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    trail = 1;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    trail = 2;
    if (b0 == 0xE0) lo = 0xA0;  // no overlong 3-byte forms
    if (b0 == 0xED) hi = 0x9F;  // no UTF-16 surrogates
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    trail = 3;
    if (b0 == 0xF0) lo = 0x90;  // no overlong 4-byte forms
    if (b0 == 0xF4) hi = 0x8F;  // nothing above U+10FFFF
  } else {
    return {Utf8Step::kInvalid, 1};  // stray continuation byte, C0/C1, F5..FF
  }
  for (size_t k = 1; k <= trail; ++k) {
    if (pos + k >= s.size()) return {Utf8Step::kTruncated, k};
    const auto b = static_cast<unsigned char>(s[pos + k]);
    if (b < lo || b > hi) return {Utf8Step::kInvalid, k};
    lo = 0x80;
    hi = 0xBF;
  }
  return {Utf8Step::kChar, trail + 1};
}

// ---------------------------------------------------------------------------------------------
// tekken.json sections.

struct VocabSizes {
  int num_special = 1000;
  int vocab_size = 131072;
};

VocabSizes read_sizes(const Fields& f, const json& root) {
  VocabSizes sizes;
  const json* special = f.optional(root, "special_tokens");
  if (special != nullptr && special->is_array()) sizes.num_special = static_cast<int>(special->size());
  if (const json* config = f.optional(root, "config")) {
    f.object(*config, "config");
    if (const json* v = f.optional(*config, "default_num_special_tokens"))
      sizes.num_special = f.integer(*v, "config.default_num_special_tokens");
    if (const json* v = f.optional(*config, "default_vocab_size"))
      sizes.vocab_size = f.integer(*v, "config.default_vocab_size");
  }
  if (sizes.num_special < 0) f.fail("config.default_num_special_tokens", "must not be negative");
  if (sizes.vocab_size < sizes.num_special)
    f.fail("config.default_vocab_size", "smaller than the number of special tokens");
  return sizes;
}

// Decodes the first `count` ranks of "vocab"; ranks must be 0, 1, 2, ... in order.
std::vector<std::string> read_vocab(const Fields& f, const json& root, size_t count) {
  const json& vocab = f.array(f.require(root, "vocab", "vocab"), "vocab");
  const size_t n = std::min(count, vocab.size());
  std::vector<std::string> bytes(n);
  for (size_t i = 0; i < n; ++i) {
    const std::string where = "vocab[" + std::to_string(i) + "]";
    const json& entry = f.object(vocab[i], where);
    const int rank = f.integer(f.require(entry, "rank", where + ".rank"), where + ".rank");
    if (rank != static_cast<int>(i)) f.fail(where + ".rank", "expected " + std::to_string(i) + ", got " + std::to_string(rank));
    const std::string& b64 =
        f.string(f.require(entry, "token_bytes", where + ".token_bytes"), where + ".token_bytes");
    std::optional<std::string> decoded = base64_decode(b64);
    if (!decoded) f.fail(where + ".token_bytes", "invalid base64");
    bytes[i] = std::move(*decoded);
  }
  return bytes;
}

std::unordered_map<std::string, int> read_special_tokens(const Fields& f, const json& root, int num_special) {
  std::unordered_map<std::string, int> by_name;
  const json* special = f.optional(root, "special_tokens");
  if (special == nullptr) return by_name;
  f.array(*special, "special_tokens");
  for (size_t i = 0; i < special->size(); ++i) {
    const std::string where = "special_tokens[" + std::to_string(i) + "]";
    const json& entry = f.object((*special)[i], where);
    const int rank = f.integer(f.require(entry, "rank", where + ".rank"), where + ".rank");
    if (rank < 0 || rank >= num_special)
      f.fail(where + ".rank", std::to_string(rank) + " is not below num_special_tokens " + std::to_string(num_special));
    const std::string& name = f.string(f.require(entry, "token_str", where + ".token_str"), where + ".token_str");
    if (const json* v = f.optional(entry, "is_control")) f.boolean(*v, where + ".is_control");
    by_name.emplace(name, rank);  // first occurrence wins
  }
  return by_name;
}

TekkenAudio read_audio(const Fields& f, const json& root) {
  TekkenAudio audio;
  const json* block = f.optional(root, "audio");
  if (block == nullptr) return audio;
  f.object(*block, "audio");
  auto int_field = [&](const char* key, int& dst) {
    if (const json* v = f.optional(*block, key)) dst = f.integer(*v, std::string("audio.") + key);
  };
  auto ms_field = [&](const char* key, int& rounded, double& exact) {
    if (const json* v = f.optional(*block, key)) {
      exact = f.number(*v, std::string("audio.") + key);
      if (exact < 0 || exact > 1e9) f.fail(std::string("audio.") + key, "out of range");
      rounded = static_cast<int>(std::lround(exact));
    }
  };
  int_field("sampling_rate", audio.sampling_rate);
  if (const json* v = f.optional(*block, "frame_rate")) audio.frame_rate = f.number(*v, "audio.frame_rate");
  int_field("transcription_delay_ms", audio.transcription_delay_ms);
  int_field("streaming_n_left_pad_tokens", audio.streaming_n_left_pad_tokens);
  audio.streaming_look_ahead_ms_exact = audio.streaming_look_ahead_ms;
  audio.streaming_look_back_ms_exact = audio.streaming_look_back_ms;
  ms_field("streaming_look_ahead_ms", audio.streaming_look_ahead_ms, audio.streaming_look_ahead_ms_exact);
  ms_field("streaming_look_back_ms", audio.streaming_look_back_ms, audio.streaming_look_back_ms_exact);
  if (audio.sampling_rate <= 0) f.fail("audio.sampling_rate", "must be positive");
  if (!(audio.frame_rate > 0)) f.fail("audio.frame_rate", "must be positive");
  if (audio.transcription_delay_ms < 0) f.fail("audio.transcription_delay_ms", "must not be negative");
  if (audio.streaming_n_left_pad_tokens < 0) f.fail("audio.streaming_n_left_pad_tokens", "must not be negative");
  return audio;
}

json parse_file(const std::filesystem::path& path) {
  const std::string where = path.string();
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) throw Error(where + ": no such file");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(where + ": cannot open");
  std::ostringstream text;
  text << in.rdbuf();
  json root = json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded()) throw Error(where + ": not valid JSON");
  if (!root.is_object()) throw Error(where + ": expected a JSON object at the top level");
  return root;
}

}  // namespace

Tokenizer Tokenizer::load(const std::filesystem::path& tekken_json) {
  const json root = parse_file(tekken_json);
  const Fields f(tekken_json.string());

  Tokenizer t;
  const VocabSizes sizes = read_sizes(f, root);
  t.num_special_ = sizes.num_special;
  // The file may list more ranks than the model uses (150000 vs 131072 - 1000): keep only those.
  t.bytes_ = read_vocab(f, root, static_cast<size_t>(sizes.vocab_size - sizes.num_special));
  t.vocab_size_ = t.num_special_ + static_cast<int>(t.bytes_.size());
  t.special_by_name_ = read_special_tokens(f, root, t.num_special_);
  // The control tokens the engine steers by, by name or else at their official ids. An official id
  // must then be special here too: with fewer special tokens it is a text token, whose bytes decode()
  // would print wherever the model emits the control.
  auto control = [&](const char* name, int official) {
    const std::optional<int> id = t.special_id(name);
    if (!id && official >= t.num_special_)
      f.fail("special_tokens", std::string(name) + " is not listed, and its default id " + std::to_string(official) +
                                   " is not below num_special_tokens " + std::to_string(t.num_special_));
    return id.value_or(official);
  };
  t.bos_ = control("<s>", 1);
  t.eos_ = control("</s>", 2);
  t.streaming_pad_ = control("[STREAMING_PAD]", 32);
  t.streaming_word_ = control("[STREAMING_WORD]", 33);
  t.audio_ = read_audio(f, root);
  return t;
}

std::optional<int> Tokenizer::special_id(std::string_view token_str) const {
  auto it = special_by_name_.find(std::string(token_str));
  if (it == special_by_name_.end()) return std::nullopt;
  return it->second;
}

std::string_view Tokenizer::token_bytes(int id) const {
  if (id < num_special_ || id >= vocab_size_) return {};
  return bytes_[static_cast<size_t>(id - num_special_)];
}

std::string Tokenizer::decode(std::span<const int32_t> ids) const {
  std::string raw;
  for (int32_t id : ids) raw += token_bytes(id);
  Utf8Assembler assembler;
  std::string text = assembler.push(raw);
  text += assembler.finish();
  return text;
}

std::string Utf8Assembler::push(std::string_view bytes) {
  pending_.append(bytes);
  std::string out;
  size_t pos = 0;
  while (pos < pending_.size()) {
    const Utf8Scan scan = scan_utf8(pending_, pos);
    if (scan.step == Utf8Step::kTruncated) break;  // wait for the rest of the character
    if (scan.step == Utf8Step::kChar) {
      out.append(pending_, pos, scan.len);
    } else {
      out.append(kReplacementChar);
    }
    pos += scan.len;
  }
  pending_.erase(0, pos);
  return out;
}

std::string Utf8Assembler::finish() {
  // Only a truncated (so far valid) prefix can remain: Python replaces it with one U+FFFD.
  if (pending_.empty()) return {};
  pending_.clear();
  return std::string(kReplacementChar);
}

}  // namespace voxrt
