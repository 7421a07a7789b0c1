// Context biasing's parts, without a model: text to tekken ids (TextEncoder: the pattern's pieces,
// byte-pair merging by rank), the phrases' forms and limits (bias_phrases.h, the public rules), and
// the trie and a stream's place in it (models/context_bias.h): prefixes followed through the
// model's control tokens, dropped when the text goes another way, other partial matches kept.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "../test_paths.h"
#include "common/base64.h"
#include "common/error.h"
#include "engine/bias_phrases.h"
#include "models/context_bias.h"
#include "temp_dir.h"
#include "tokenizer/tekken.h"
#include "tokenizer/text_encoder.h"
#include "voxrt/context_bias.h"

namespace voxrt {
namespace {

using Ids = std::vector<int32_t>;
constexpr int32_t kPad = 32, kWord = 33, kEos = 2, kText = 1000;  // kText: the first text id

std::vector<std::string> pieces(const std::string& text) {
  std::vector<std::string> out;
  for (std::string_view p : TextEncoder::split(text)) out.emplace_back(p);
  return out;
}

// ---- the pattern's pieces ----

TEST(TextEncoderSplit, FollowsTekkensPattern) {
  using V = std::vector<std::string>;
  EXPECT_EQ(pieces("Hello world"), (V{"Hello", " world"}));
  // A letter piece takes one non-letter before it (a space, an apostrophe); numbers are one digit a piece.
  EXPECT_EQ(pieces("it's 2024!"), (V{"it", "'s", " ", "2", "0", "2", "4", "!"}));
  // Upper-case runs: the longest that lower-case letters follow, or the whole run.
  EXPECT_EQ(pieces("McDonald HTTPServer NASA"), (V{"Mc", "Donald", " HTTPServer", " NASA"}));
  // Punctuation runs (with a space before them and line breaks after), white space before a word.
  EXPECT_EQ(pieces("a ... b"), (V{"a", " ...", " b"}));
  EXPECT_EQ(pieces("end.\n\nNext"), (V{"end", ".\n\n", "Next"}));
  EXPECT_EQ(pieces("a   b"), (V{"a", "  ", " b"}));
  EXPECT_EQ(pieces("a \n b"), (V{"a", " \n", " b"}));
  EXPECT_EQ(pieces("tail  "), (V{"tail", "  "}));
  // Beyond ASCII: letters without case, Unicode white space and General Punctuation as they are.
  EXPECT_EQ(pieces("caf\xC3\xA9 na\xC3\xAFve"), (V{"caf\xC3\xA9", " na\xC3\xAFve"}));
  EXPECT_EQ(pieces("l\xE2\x80\x99homme"), (V{"l", "\xE2\x80\x99homme"}));
  EXPECT_EQ(pieces("a\xC2\xA0" "b"), (V{"a", "\xC2\xA0" "b"}));
  // Joined, the pieces are the text, whatever it holds (a stray byte is a piece of its own).
  const std::string odd = "x\xFFy \xE4\xB8\xAD\xE6\x96\x87 9\tq";
  std::string joined;
  for (const std::string& p : pieces(odd)) joined += p;
  EXPECT_EQ(joined, odd);
}

// ---- byte-pair merging, on a tekken.json of our own ----

class TextEncoderMerges : public ::testing::Test {
 protected:
  // The 256 byte tokens, then `merged` (ranks 256, 257, ...), 1000 special ids before them.
  Tokenizer tokenizer(const std::vector<std::string>& merged) {
    nlohmann::json vocab = nlohmann::json::array();
    for (int b = 0; b < 256; ++b)
      vocab.push_back({{"rank", b}, {"token_bytes", base64_encode(std::string(1, static_cast<char>(b)))}});
    int rank = 256;
    for (const std::string& m : merged) vocab.push_back({{"rank", rank++}, {"token_bytes", base64_encode(m)}});
    const nlohmann::json j = {{"config", {{"default_vocab_size", kText + rank}, {"default_num_special_tokens", kText}}},
                              {"vocab", vocab}};
    const auto path = dir_ / ("tekken" + std::to_string(files_++) + ".json");
    std::ofstream(path) << j.dump();
    return Tokenizer::load(path);
  }
  static int32_t byte(char c) { return kText + static_cast<unsigned char>(c); }

  testutil::TempDir dir_;
  int files_ = 0;
};

TEST_F(TextEncoderMerges, LowestRankFirstLeftmostOnTies) {
  const TextEncoder e(tokenizer({"el", "he", "ll", "aa", "hello"}));
  // "hell": "el" (rank 256) before "he" (257) and "ll" (258); then nothing joins.
  EXPECT_EQ(e.encode("hell"), (Ids{byte('h'), kText + 256, byte('l')}));
  // A piece that is a token whole is that token, merges or not.
  EXPECT_EQ(e.encode("hello"), (Ids{kText + 260}));
  // Equal ranks: the leftmost pair first.
  EXPECT_EQ(e.encode("aaaa"), (Ids{kText + 259, kText + 259}));
  EXPECT_EQ(e.encode("aaa"), (Ids{kText + 259, byte('a')}));
  // Pieces are merged apart: "x", then " hello", which is no token: "el" first again.
  EXPECT_EQ(e.encode("x hello"), (Ids{byte('x'), byte(' '), byte('h'), kText + 256, byte('l'), byte('o')}));
  EXPECT_TRUE(e.encode("").empty());
}

TEST(TextEncoderTiny, TheTinyModelsWordTokens) {
  const Tokenizer tok = Tokenizer::load(test::test_data() / "tiny" / "mistral" / "tekken.json");
  const TextEncoder e(tok);
  const Ids ids = e.encode("the quick Brown fox");
  ASSERT_EQ(ids.size(), 4u);
  EXPECT_EQ(tok.decode(ids), "the quick Brown fox");
  for (const int32_t id : ids) EXPECT_GE(id, tok.num_special() + 256) << "a word token, not bytes";
  // Text no token covers comes out as bytes, and decodes back.
  const std::string odd = "Zq\xC3\xA9!";
  EXPECT_EQ(tok.decode(e.encode(odd)), odd);
}

// ---- the trie and a stream's place in it ----

std::vector<int32_t> boosted(const BiasMatcher& m) {
  std::vector<int32_t> out;
  m.boosted(out);
  return out;
}

TEST(BiasTrie, IdenticalSequencesAreKeptOnce) {
  const std::vector<Ids> seqs{{1001, 1002}, {1001, 1002}, {1001}, {1003, 1004, 1005}, {1001, 1002}};
  const BiasTrie t(seqs, kText, 2.5f);
  EXPECT_EQ(t.sequences(), 3u);
  EXPECT_EQ(t.strength(), 2.5f);
  EXPECT_EQ(std::vector<int32_t>(t.next_ids(BiasTrie::kRoot).begin(), t.next_ids(BiasTrie::kRoot).end()),
            (Ids{1001, 1003}));
  EXPECT_GE(t.child(BiasTrie::kRoot, 1001), 1);
  EXPECT_EQ(t.child(BiasTrie::kRoot, 1002), -1);
}

TEST(BiasTrie, RefusesWhatCannotBeBoosted) {
  EXPECT_THROW(BiasTrie(std::vector<Ids>{{}}, kText, 1.0f), Error);
  EXPECT_THROW(BiasTrie(std::vector<Ids>{{1001, kPad}}, kText, 1.0f), Error);  // a control token
  EXPECT_THROW(BiasTrie(std::vector<Ids>{{1001}}, kText, 0.0f), Error);
}

TEST(BiasMatcher, FollowsAPrefixThroughControlTokens) {
  const std::vector<Ids> seqs{{1010, 1011, 1012}, {1020}};
  const BiasTrie t(seqs, kText, 3.0f);
  BiasMatcher m(t);
  EXPECT_EQ(boosted(m), (Ids{1010, 1020}));  // every first token, always
  m.advance(1010);
  EXPECT_EQ(boosted(m), (Ids{1010, 1011, 1020}));
  // The model emits pads and word marks between a word's tokens: the prefix stays.
  for (const int32_t control : {kPad, kPad, kWord, kEos, kPad}) {
    m.advance(control);
    EXPECT_EQ(boosted(m), (Ids{1010, 1011, 1020})) << control;
  }
  m.advance(1011);
  EXPECT_EQ(boosted(m), (Ids{1010, 1012, 1020}));
  m.advance(1012);  // complete, and nothing continues it: back to the first tokens
  EXPECT_TRUE(m.alive().empty());
  EXPECT_EQ(boosted(m), (Ids{1010, 1020}));
}

TEST(BiasMatcher, ABrokenPrefixWithdrawsItsBoost) {
  const std::vector<Ids> seqs{{1010, 1011, 1012}, {1011, 1013}};
  const BiasTrie t(seqs, kText, 3.0f);
  BiasMatcher m(t);
  m.advance(1010);
  m.advance(1099);  // another word: the prefix is gone
  EXPECT_TRUE(m.alive().empty());
  EXPECT_EQ(boosted(m), (Ids{1010, 1011}));
  // A token that breaks one prefix may start another: 1010 then 1011 continues the first sequence
  // and starts the second; 1013 then breaks the first and continues the second.
  m.advance(1010);
  m.advance(1011);
  EXPECT_EQ(m.alive().size(), 2u);
  EXPECT_EQ(boosted(m), (Ids{1010, 1011, 1012, 1013}));
  m.advance(1013);
  EXPECT_TRUE(m.alive().empty());
  EXPECT_EQ(boosted(m), (Ids{1010, 1011}));
}

TEST(BiasMatcher, APhraseThatPrefixesAnotherStaysAlive) {
  const std::vector<Ids> seqs{{1010}, {1010, 1011}};
  const BiasTrie t(seqs, kText, 3.0f);
  BiasMatcher m(t);
  m.advance(1010);  // "New" complete, and "New York" goes on
  EXPECT_EQ(boosted(m), (Ids{1010, 1011}));
  // A copy goes on alone (a drafted row's place): the original is as it was.
  BiasMatcher draft = m;
  draft.advance(1099);
  EXPECT_TRUE(draft.alive().empty());
  EXPECT_EQ(m.alive().size(), 1u);
}

// ---- the phrases: forms, tokens, limits ----

TEST(BiasPhrases, FormsAsGivenCapitalizedWithAndWithoutASpace) {
  using V = std::vector<std::string>;
  EXPECT_EQ(bias_phrase_forms("kubernetes"), (V{"kubernetes", " kubernetes", "Kubernetes", " Kubernetes"}));
  EXPECT_EQ(bias_phrase_forms("Ada Lovelace"), (V{"Ada Lovelace", " Ada Lovelace"}));
  EXPECT_EQ(bias_phrase_forms("\xC3\xA9mile"), (V{"\xC3\xA9mile", " \xC3\xA9mile", "\xC3\x89mile", " \xC3\x89mile"}));
  EXPECT_EQ(bias_phrase_forms("42nd street"), (V{"42nd street", " 42nd street"}));
}

class BiasPhraseLimits : public ::testing::Test {
 protected:
  std::shared_ptr<const BiasTrie> trie(const std::vector<std::string>& phrases, float strength = 3.0f) const {
    return make_bias_trie(phrases, strength, encoder, tok.num_special());
  }
  // The OptionError a list gets: its field, and that its message holds `part`.
  void expect_refused(const std::vector<std::string>& phrases, float strength, const std::string& field,
                      const std::string& part) const {
    try {
      trie(phrases, strength);
      ADD_FAILURE() << "accepted; expected an error about " << field;
    } catch (const OptionError& e) {
      EXPECT_EQ(e.field(), field) << e.what();
      EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
    }
  }

  const Tokenizer tok = Tokenizer::load(test::test_data() / "tiny" / "mistral" / "tekken.json");
  const TextEncoder encoder{tok};
};

TEST_F(BiasPhraseLimits, TheTinyVocabularysWordsAreOneTokenInEachForm) {
  const auto t = trie({"  quick\t", "quick", "Quick", "fox"});
  ASSERT_TRUE(t);
  EXPECT_EQ(t->sequences(), 8u);  // "quick" and "fox" in 4 forms each, the repeats kept once
  EXPECT_EQ(t->next_ids(BiasTrie::kRoot).size(), 8u);
  EXPECT_EQ(t->strength(), 3.0f);
  EXPECT_EQ(trie({}), nullptr);          // no list: no biasing
  EXPECT_EQ(trie({"quick"}, 0.0f), nullptr);  // nor with a strength of 0
}

TEST_F(BiasPhraseLimits, EachLimitIsRefusedNamingItsField) {
  std::vector<std::string> many(kMaxContextBiasPhrases, "fox");
  EXPECT_TRUE(trie(many));
  many.push_back("fox");
  expect_refused(many, 3.0f, "context_bias", "101 phrases, more than the 100 allowed");
  expect_refused({"fox", " \t "}, 3.0f, "context_bias", "phrase 2 is empty");
  expect_refused({std::string(kMaxContextBiasPhraseBytes + 1, 'a')}, 3.0f, "context_bias", "101 bytes");
  expect_refused({"bad \xC3("}, 3.0f, "context_bias", "not valid UTF-8");
  // 35 bytes are allowed, but as 35 byte tokens of this vocabulary they are too many tokens.
  expect_refused({"zq zq zq zq zq zq zq zq zq zq zq zq"}, 3.0f, "context_bias", "tokens, more than the 32 allowed");
  expect_refused({"fox"}, -1.0f, "context_bias_strength", "expected 0 to 20");
  expect_refused({"fox"}, 20.5f, "context_bias_strength", "expected 0 to 20");
  expect_refused({"fox"}, std::nanf(""), "context_bias_strength", "expected 0 to 20");
  // The public check says the same before any model is loaded (the token count aside).
  EXPECT_THROW(validate_context_bias({""}, 3.0f), OptionError);
  EXPECT_NO_THROW(validate_context_bias({"fox"}, kMaxContextBiasStrength));
  EXPECT_EQ(trim_context_bias_phrase("\n New York \r\n"), "New York");
}

}  // namespace
}  // namespace voxrt
