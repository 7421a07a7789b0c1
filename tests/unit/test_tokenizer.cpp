// tekken.json loading and byte-level decoding. Small tekken.json files are written into a temporary
// directory: 1000 special tokens, the 256 byte tokens, and a few merged tokens that split multi-byte
// UTF-8 characters across token boundaries.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "temp_dir.h"
#include "tokenizer/tekken.h"

namespace fs = std::filesystem;
using nlohmann::json;
using voxrt::Error;
using voxrt::Tokenizer;
using voxrt::Utf8Assembler;

namespace {

const std::string kFffd = "\xEF\xBF\xBD";

// Tokenizer files in a temp dir; each gets its own sub-directory so that it can be named
// tekken.json like the real one.
class TekkenFiles {
 public:
  fs::path write(const std::string& text) {
    const fs::path dir = dir_ / std::to_string(count_++);
    fs::create_directories(dir);
    std::ofstream(dir / "tekken.json", std::ios::binary) << text;
    return dir / "tekken.json";
  }
  fs::path write_json(const json& j) { return write(j.dump()); }

 private:
  voxrt::testutil::TempDir dir_;
  int count_ = 0;
};

std::string base64(const std::string& bytes) {
  static const char* alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  size_t i = 0;
  for (; i + 3 <= bytes.size(); i += 3) {
    const unsigned v = (static_cast<unsigned char>(bytes[i]) << 16) | (static_cast<unsigned char>(bytes[i + 1]) << 8) |
                       static_cast<unsigned char>(bytes[i + 2]);
    for (int s : {18, 12, 6, 0}) out += alphabet[(v >> s) & 63];
  }
  if (bytes.size() - i == 1) {
    const unsigned v = static_cast<unsigned char>(bytes[i]) << 16;
    out += alphabet[(v >> 18) & 63], out += alphabet[(v >> 12) & 63], out += "==";
  } else if (bytes.size() - i == 2) {
    const unsigned v = (static_cast<unsigned char>(bytes[i]) << 16) | (static_cast<unsigned char>(bytes[i + 1]) << 8);
    out += alphabet[(v >> 18) & 63], out += alphabet[(v >> 12) & 63], out += alphabet[(v >> 6) & 63], out += "=";
  }
  return out;
}

// Merged tokens after the 256 byte tokens (ranks 256..). "é" = C3 A9, "中" = E4 B8 AD.
const std::vector<std::string> kMerged = {"he", "llo", " w\xC3", "\xA9t", "\xE4\xB8", "\xAD!", " the"};
constexpr int kRankHe = 256, kRankLlo = 257, kRankWE1 = 258, kRankE2t = 259, kRankCjk12 = 260, kRankCjk3 = 261;
constexpr int kSpecial = 1000;
int id(int rank) { return kSpecial + rank; }

json make_tekken(int extra_ranks_listed = 5) {
  json special = json::array();
  for (int r = 0; r < kSpecial; ++r) {
    std::string name = "<SPECIAL_" + std::to_string(r) + ">";
    if (r == 0) name = "<unk>";
    if (r == 1) name = "<s>";
    if (r == 2) name = "</s>";
    if (r == 32) name = "[STREAMING_PAD]";
    if (r == 33) name = "[STREAMING_WORD]";
    special.push_back({{"rank", r}, {"token_str", name}, {"is_control", true}});
  }
  json vocab = json::array();
  for (int b = 0; b < 256; ++b) vocab.push_back({{"rank", b}, {"token_bytes", base64(std::string(1, static_cast<char>(b)))}, {"token_str", nullptr}});
  int rank = 256;
  for (const auto& m : kMerged) {
    // Like the real file: token_str is null where the bytes are not valid UTF-8 on their own.
    const bool ascii = std::all_of(m.begin(), m.end(), [](char c) { return static_cast<unsigned char>(c) < 0x80; });
    vocab.push_back({{"rank", rank++}, {"token_bytes", base64(m)}, {"token_str", ascii ? json(m) : json(nullptr)}});
  }
  // Ranks past default_vocab_size are listed (as in the real file) but must be ignored.
  for (int i = 0; i < extra_ranks_listed; ++i) vocab.push_back({{"rank", rank++}, {"token_bytes", base64("zz")}, {"token_str", "zz"}});
  return {
      {"config",
       {{"pattern", "[^\\r\\n]+"},
        {"num_vocab_tokens", 256 + static_cast<int>(kMerged.size()) + extra_ranks_listed},
        {"default_vocab_size", kSpecial + 256 + static_cast<int>(kMerged.size())},
        {"default_num_special_tokens", kSpecial},
        {"version", "v13"}}},
      {"vocab", vocab},
      {"special_tokens", special},
      {"audio",
       {{"sampling_rate", 16000},
        {"frame_rate", 12.5},
        {"transcription_delay_ms", 480},
        {"streaming_look_ahead_ms", 2.5},
        {"streaming_look_back_ms", 52.5},
        {"streaming_n_left_pad_tokens", 32}}},
  };
}

Tokenizer load(TekkenFiles& dir, const json& j) { return Tokenizer::load(dir.write_json(j)); }

std::string decode(const Tokenizer& t, std::vector<int32_t> ids) { return t.decode(ids); }

// Loads a malformed file, expecting an Error that names tekken.json and `field`.
void expect_load_error(TekkenFiles& dir, const std::string& text, const std::string& field) {
  const fs::path p = dir.write(text);
  try {
    Tokenizer::load(p);
    ADD_FAILURE() << "expected an error mentioning " << field;
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("tekken.json"), std::string::npos) << msg;
    EXPECT_NE(msg.find(field), std::string::npos) << msg;
  }
}

}  // namespace

TEST(Tokenizer, LoadsSizesSpecialIdsAndAudioBlock) {
  TekkenFiles dir;
  const Tokenizer t = load(dir, make_tekken());
  EXPECT_EQ(t.num_special(), kSpecial);
  EXPECT_EQ(t.vocab_size(), kSpecial + 256 + static_cast<int>(kMerged.size()));
  EXPECT_EQ(t.bos_id(), 1);
  EXPECT_EQ(t.eos_id(), 2);
  EXPECT_EQ(t.streaming_pad_id(), 32);
  EXPECT_EQ(t.streaming_word_id(), 33);
  EXPECT_EQ(t.special_id("[STREAMING_WORD]"), 33);
  EXPECT_EQ(t.special_id("<SPECIAL_500>"), 500);
  EXPECT_FALSE(t.special_id("[NOT_THERE]").has_value());
  EXPECT_TRUE(t.is_special(0));
  EXPECT_TRUE(t.is_special(999));
  EXPECT_FALSE(t.is_special(1000));
  EXPECT_EQ(t.audio().sampling_rate, 16000);
  EXPECT_DOUBLE_EQ(t.audio().frame_rate, 12.5);
  EXPECT_EQ(t.audio().transcription_delay_ms, 480);
  EXPECT_EQ(t.audio().streaming_n_left_pad_tokens, 32);
  EXPECT_DOUBLE_EQ(t.audio().streaming_look_ahead_ms_exact, 2.5);
  EXPECT_DOUBLE_EQ(t.audio().streaming_look_back_ms_exact, 52.5);
  EXPECT_EQ(t.audio().streaming_look_ahead_ms, 3);  // rounded half away from zero
  EXPECT_EQ(t.audio().streaming_look_back_ms, 53);
}

TEST(Tokenizer, ByteTokensRoundTrip) {
  TekkenFiles dir;
  const Tokenizer t = load(dir, make_tekken());
  for (int b = 0; b < 256; ++b) ASSERT_EQ(t.token_bytes(id(b)), std::string(1, static_cast<char>(b))) << b;
  EXPECT_EQ(t.token_bytes(id(kRankWE1)), " w\xC3");
  EXPECT_EQ(t.token_bytes(5), "");                   // special
  EXPECT_EQ(t.token_bytes(t.vocab_size()), "");      // listed in the file but beyond default_vocab_size
  EXPECT_EQ(t.token_bytes(-1), "");
}

TEST(Tokenizer, SpecialIdsComeFromNamesAndDefaultWhenAbsent) {
  TekkenFiles dir;
  json j = make_tekken();
  j["special_tokens"][32]["token_str"] = "<SPECIAL_32>";
  j["special_tokens"][40]["token_str"] = "[STREAMING_PAD]";
  EXPECT_EQ(load(dir, j).streaming_pad_id(), 40);

  json bare = make_tekken();
  bare.erase("special_tokens");
  bare["config"].erase("default_num_special_tokens");
  const Tokenizer t = load(dir, bare);
  EXPECT_EQ(t.num_special(), 1000);
  EXPECT_EQ(t.bos_id(), 1);
  EXPECT_EQ(t.eos_id(), 2);
  EXPECT_EQ(t.streaming_pad_id(), 32);
  EXPECT_EQ(t.streaming_word_id(), 33);
}

// Found by the fuzz target's check (tests/fuzz/fuzz_tekken.cpp) on an input written for it
// (tests/fuzz/corpus/tekken/finding-10-special-tokens.json): a file of fewer than 34 special
// tokens that does not name [STREAMING_PAD] took the official id 32 for it, a text token there
// (rank 22 of 10 special tokens), whose bytes decode() printed wherever the model emitted the pad.
// Such a file is refused, naming the token.
TEST(Tokenizer, ControlTokenDefaultsMustBeSpecial) {
  TekkenFiles dir;
  json j = make_tekken();
  j.erase("special_tokens");
  j["config"]["default_num_special_tokens"] = 10;
  j["config"]["default_vocab_size"] = 10 + 256;
  expect_load_error(dir, j.dump(), "special_tokens: [STREAMING_PAD] is not listed, and its default id 32 is not "
                                   "below num_special_tokens 10");
  j["config"]["default_num_special_tokens"] = 2;
  j["config"]["default_vocab_size"] = 2 + 256;
  expect_load_error(dir, j.dump(), "special_tokens: </s> is not listed, and its default id 2");

  // Named, the controls may sit anywhere among the special tokens.
  j["special_tokens"] = json::array({{{"rank", 0}, {"token_str", "[STREAMING_PAD]"}},
                                     {{"rank", 1}, {"token_str", "[STREAMING_WORD]"}},
                                     {{"rank", 2}, {"token_str", "<s>"}},
                                     {{"rank", 3}, {"token_str", "</s>"}}});
  j["config"]["default_num_special_tokens"] = 4;
  j["config"]["default_vocab_size"] = 4 + 256;
  const Tokenizer t = load(dir, j);
  EXPECT_EQ(t.streaming_pad_id(), 0);
  EXPECT_EQ(t.streaming_word_id(), 1);
  EXPECT_EQ(t.bos_id(), 2);
  EXPECT_EQ(t.eos_id(), 3);
}

TEST(Tokenizer, NumSpecialFallsBackToSpecialTokensLength) {
  TekkenFiles dir;
  json j = make_tekken();
  j["config"].erase("default_num_special_tokens");
  EXPECT_EQ(load(dir, j).num_special(), 1000);
}

TEST(Tokenizer, DecodeJoinsCharactersSplitAcrossTokens) {
  TekkenFiles dir;
  const Tokenizer t = load(dir, make_tekken());
  EXPECT_EQ(decode(t, {id(kRankHe), id(kRankLlo), id(kRankWE1), id(kRankE2t), id(kRankCjk12), id(kRankCjk3)}),
            "hello w\xC3\xA9t\xE4\xB8\xAD!");
}

TEST(Tokenizer, DecodeLeavesOutSpecialAndOutOfRangeIds) {
  TekkenFiles dir;
  const Tokenizer t = load(dir, make_tekken());
  EXPECT_EQ(decode(t, {1, 32, id(kRankHe), 33, id(kRankLlo), 2, -7, t.vocab_size(), 1 << 30}), "hello");
  EXPECT_EQ(decode(t, {1, 2, 32, 33}), "");
  // A special token between the halves of a character does not break it.
  EXPECT_EQ(decode(t, {id(kRankCjk12), 32, id(kRankCjk3)}), "\xE4\xB8\xAD!");
}

// Invalid UTF-8 decodes as Python's bytes.decode("utf-8", errors="replace") does.
TEST(Tokenizer, InvalidBytesBecomeReplacementCharacters) {
  TekkenFiles dir;
  const Tokenizer t = load(dir, make_tekken());
  auto bytes = [&](std::initializer_list<int> bs) {
    std::vector<int32_t> ids;
    for (int b : bs) ids.push_back(id(b));
    return t.decode(ids);
  };
  EXPECT_EQ(bytes({0xFF}), kFffd);
  EXPECT_EQ(bytes({'a', 0x80, 'b'}), "a" + kFffd + "b");
  EXPECT_EQ(bytes({0xC3, 'A'}), kFffd + "A");                      // lead byte cut short
  EXPECT_EQ(bytes({0xE4, 0xB8}), kFffd);                           // truncated at the end: one U+FFFD
  EXPECT_EQ(bytes({0xF0, 0x9F, 0x98, 'A'}), kFffd + "A");          // maximal subpart -> one U+FFFD
  EXPECT_EQ(bytes({0xED, 0xA0, 0x80}), kFffd + kFffd + kFffd);     // surrogate: each byte
  EXPECT_EQ(bytes({0xE0, 0x80, 0x80}), kFffd + kFffd + kFffd);     // overlong
  EXPECT_EQ(bytes({0xC0, 0xAF}), kFffd + kFffd);                   // overlong 2-byte
  EXPECT_EQ(bytes({0xF4, 0x90, 0x80, 0x80}), kFffd + kFffd + kFffd + kFffd);  // above U+10FFFF
  EXPECT_EQ(bytes({0xF0, 0x9F, 0x98, 0x80}), "\xF0\x9F\x98\x80");  // valid 4-byte: U+1F600
}

TEST(Utf8, AssemblerYieldsEachCharacterOnce) {
  Utf8Assembler a;
  EXPECT_EQ(a.push("he"), "he");
  EXPECT_EQ(a.push(" w\xC3"), " w");
  EXPECT_EQ(a.push("\xA9t"), "\xC3\xA9t");
  EXPECT_EQ(a.push("\xE4"), "");
  EXPECT_EQ(a.push("\xB8"), "");
  EXPECT_EQ(a.push("\xAD"), "\xE4\xB8\xAD");
  EXPECT_EQ(a.push(""), "");
  EXPECT_EQ(a.finish(), "");
}

TEST(Utf8, AssemblerFinishFlushesPartialCharacter) {
  Utf8Assembler a;
  EXPECT_EQ(a.push("a\xE4\xB8"), "a");
  EXPECT_EQ(a.finish(), kFffd);
  EXPECT_EQ(a.finish(), "");
  EXPECT_EQ(a.push("b"), "b");  // usable again after finish()
}

TEST(Utf8, AssemblerInvalidContinuationReleasesReplacementAtOnce) {
  Utf8Assembler a;
  EXPECT_EQ(a.push("\xE4\xB8"), "");
  EXPECT_EQ(a.push("x"), kFffd + "x");
}

// Feeding any byte string one byte at a time gives the same text as decoding it whole.
TEST(Utf8, AssemblerByteAtATimeMatchesWholeDecode) {
  TekkenFiles dir;
  const Tokenizer t = load(dir, make_tekken());
  std::mt19937 rng(99);
  const std::vector<std::string> pieces = {"a", "\xC3\xA9", "\xE4\xB8\xAD", "\xF0\x9F\x98\x80", "\xFF", "\x80",
                                           "\xE4\xB8", "\xED\xA0\x80", "\xF0\x9F", "\xC3", " "};
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<int32_t> ids;
    Utf8Assembler a;
    std::string streamed;
    for (int k = 0; k < 12; ++k) {
      for (unsigned char c : pieces[rng() % pieces.size()]) {
        ids.push_back(id(c));
        streamed += a.push(std::string(1, static_cast<char>(c)));
      }
    }
    streamed += a.finish();
    ASSERT_EQ(streamed, t.decode(ids)) << "trial " << trial;
  }
}

TEST(Tokenizer, MalformedFilesNameTheField) {
  TekkenFiles dir;
  expect_load_error(dir, "{ this is not json", "not valid JSON");
  expect_load_error(dir, "[1, 2, 3]", "top level");

  json j = make_tekken();
  j.erase("vocab");
  expect_load_error(dir, j.dump(), "missing field vocab");

  j = make_tekken();
  j["vocab"] = "nope";
  expect_load_error(dir, j.dump(), "vocab: expected an array");

  j = make_tekken();
  j["vocab"][17]["token_bytes"] = "ab$=";
  expect_load_error(dir, j.dump(), "vocab[17].token_bytes: invalid base64");

  j = make_tekken();
  j["vocab"][17]["token_bytes"] = "QQ=";  // padding without a whole quantum
  expect_load_error(dir, j.dump(), "vocab[17].token_bytes: invalid base64");

  j = make_tekken();
  j["vocab"][17].erase("token_bytes");
  expect_load_error(dir, j.dump(), "missing field vocab[17].token_bytes");

  j = make_tekken();
  j["vocab"][5]["rank"] = 6;
  expect_load_error(dir, j.dump(), "vocab[5].rank");

  j = make_tekken();
  j["vocab"][3]["rank"] = "3";
  expect_load_error(dir, j.dump(), "vocab[3].rank");

  j = make_tekken();
  j["audio"]["transcription_delay_ms"] = "480";
  expect_load_error(dir, j.dump(), "audio.transcription_delay_ms");

  j = make_tekken();
  j["audio"]["frame_rate"] = true;
  expect_load_error(dir, j.dump(), "audio.frame_rate");

  j = make_tekken();
  j["audio"] = 12;
  expect_load_error(dir, j.dump(), "audio");

  j = make_tekken();
  j["config"]["default_vocab_size"] = "131072";
  expect_load_error(dir, j.dump(), "config.default_vocab_size");

  j = make_tekken();
  j["special_tokens"][7]["rank"] = 5000;
  expect_load_error(dir, j.dump(), "special_tokens[7].rank");

  j = make_tekken();
  j["special_tokens"][7]["token_str"] = 7;
  expect_load_error(dir, j.dump(), "special_tokens[7].token_str");
}

TEST(Tokenizer, MissingFileThrows) {
  TekkenFiles dir;
  const fs::path p = dir.write(std::string("{}")).parent_path() / "absent" / "tekken.json";
  try {
    Tokenizer::load(p);
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(p.string()), std::string::npos) << e.what();
  }
}

TEST(Tokenizer, AudioBlockIsOptionalAndAcceptsIntegralFloats) {
  TekkenFiles dir;
  json j = make_tekken();
  j.erase("audio");
  const Tokenizer t = load(dir, j);
  EXPECT_EQ(t.audio().transcription_delay_ms, 480);
  EXPECT_EQ(t.audio().streaming_n_left_pad_tokens, 32);

  j = make_tekken();
  j["audio"]["transcription_delay_ms"] = 960.0;
  j["audio"]["streaming_look_back_ms"] = nullptr;  // null means absent
  const Tokenizer u = load(dir, j);
  EXPECT_EQ(u.audio().transcription_delay_ms, 960);
  EXPECT_EQ(u.audio().streaming_look_back_ms, 0);
}

TEST(Tokenizer, KeepsOnlyDefaultVocabSizeRanks) {
  TekkenFiles dir;
  json j = make_tekken(/*extra_ranks_listed=*/50);
  j["config"]["default_vocab_size"] = kSpecial + 258;  // bytes + "he" + "llo"
  j["vocab"][300]["token_bytes"] = "!!!";              // past the kept ranks: never looked at
  const Tokenizer t = load(dir, j);
  EXPECT_EQ(t.vocab_size(), kSpecial + 258);
  EXPECT_EQ(decode(t, {id(kRankHe), id(kRankLlo), id(kRankWE1)}), "hello");
}
