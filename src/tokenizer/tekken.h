// Mistral's tekken.json tokenizer, decode side (docs/model.md §7, §8). Ids below num_special_tokens
// are special (control) tokens; regular id = rank + num_special_tokens; ranks 0-255 are raw bytes.
// Text is assembled from raw bytes across tokens, so a UTF-8 character may span several tokens.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace voxrt {

// tekken.json's "audio" block (all optional in the file; these are the official values).
struct TekkenAudio {
  int sampling_rate = 16000;
  double frame_rate = 12.5;
  int transcription_delay_ms = 480;
  int streaming_n_left_pad_tokens = 32;
  int streaming_look_ahead_ms = 0;
  int streaming_look_back_ms = 0;
  // The official file has fractional look-ahead/back (2.5 and 52.5 ms): the int fields above hold
  // them rounded to the nearest ms, these the exact values.
  double streaming_look_ahead_ms_exact = 0.0;
  double streaming_look_back_ms_exact = 0.0;
};

class Tokenizer {
 public:
  // Throws voxrt::Error("<path>: <field> ...") on malformed files.
  static Tokenizer load(const std::filesystem::path& tekken_json);

  int vocab_size() const { return vocab_size_; }          // num_special + regular tokens kept
  int num_special() const { return num_special_; }
  bool is_special(int id) const { return id >= 0 && id < num_special_; }
  // Special token id by its string, e.g. "[STREAMING_PAD]"; nullopt when absent.
  std::optional<int> special_id(std::string_view token_str) const;
  int bos_id() const { return bos_; }            // "<s>", default 1
  int eos_id() const { return eos_; }            // "</s>", default 2
  int streaming_pad_id() const { return streaming_pad_; }    // "[STREAMING_PAD]", default 32
  int streaming_word_id() const { return streaming_word_; }  // "[STREAMING_WORD]", default 33
  const TekkenAudio& audio() const { return audio_; }

  // Raw bytes of a regular token ("" for special tokens and ids out of range).
  std::string_view token_bytes(int id) const;
  // Decodes ids to UTF-8 text, leaving special tokens out. Invalid UTF-8 sequences become U+FFFD.
  std::string decode(std::span<const int32_t> ids) const;

 private:
  int num_special_ = 1000;
  int vocab_size_ = 0;
  int bos_ = 1, eos_ = 2, streaming_pad_ = 32, streaming_word_ = 33;
  std::vector<std::string> bytes_;  // by rank
  std::unordered_map<std::string, int> special_by_name_;
  TekkenAudio audio_;
};

// Assembles UTF-8 text from a byte stream that arrives token by token: complete characters come out
// at once, a partial one waits for its remaining bytes, an invalid sequence becomes U+FFFD.
class Utf8Assembler {
 public:
  std::string push(std::string_view bytes);  // returns the text completed by these bytes
  std::string finish();                       // flushes a dangling partial character as U+FFFD
  bool pending() const { return !pending_.empty(); }  // a character's first bytes wait for the rest
 private:
  std::string pending_;
};

}  // namespace voxrt
