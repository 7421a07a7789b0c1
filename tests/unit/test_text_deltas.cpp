// The text deltas the server sends (src/server/text_deltas.h): joined, they are the final text
// exactly, whatever whitespace the tokens carry at either end, and no delta holds a replacement
// character for a character whose bytes came in separate tokens. The engine's assembly of the text
// (TranscriptAssembler, as a live session runs it) is fed hand-picked ids of the tiny model's
// tokenizer, whose byte tokens (id 1000 + byte) split multi-byte characters anywhere.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "../test_paths.h"
#include "server/text_deltas.h"
#include "tokenizer/tekken.h"
#include "models/voxtral/transcript_assembler.h"

namespace voxrt::test {
namespace {

const Tokenizer& tokenizer() {
  static const Tokenizer tok = Tokenizer::load(test_data() / "tiny" / "mistral" / "tekken.json");
  return tok;
}

constexpr int32_t kPad = 32, kMark = 33, kEos = 2;
constexpr const char* kReplacement = "\xEF\xBF\xBD";  // U+FFFD

int32_t byte(unsigned char b) { return tokenizer().num_special() + b; }
// The merged token (not a byte token) whose bytes are `piece`.
int32_t merged(const std::string& piece) {
  for (int i = tokenizer().num_special() + 256; i < tokenizer().vocab_size(); ++i)
    if (tokenizer().token_bytes(i) == piece) return i;
  ADD_FAILURE() << "no merged token for these bytes";
  return kPad;
}
std::vector<int32_t> bytes_of(const std::string& text) {
  std::vector<int32_t> ids;
  for (char c : text) ids.push_back(byte(static_cast<unsigned char>(c)));
  return ids;
}

struct Streamed {
  std::vector<std::string> deltas;  // what a client is sent, in order
  std::string joined, final_text;
};

// Id by id, as a live session assembles its text, each Text event through the server's deltas.
Streamed stream(const std::vector<int32_t>& ids) {
  TranscriptAssembler a(tokenizer(), 0.08);
  server::TextDeltas deltas;
  Streamed s;
  std::vector<StreamEvent> events;
  const auto send = [&] {
    for (const StreamEvent& e : events) {
      if (e.kind != StreamEvent::Kind::Text) continue;
      const std::string d = deltas.next(e.text);
      if (d.empty()) continue;
      s.deltas.push_back(d);
      s.joined += d;
    }
    events.clear();
  };
  for (int32_t id : ids) {
    a.push(id, events);
    send();
  }
  a.finish(static_cast<double>(ids.size()) * 0.08, events);
  send();
  s.final_text = a.text();
  return s;
}

TEST(TextDeltas, JoinedTheyAreTheFinalTextWithoutItsLeadingAndTrailingSpace) {
  std::vector<int32_t> ids = {kPad, kMark};
  for (int32_t id : bytes_of(" hello  world \n")) ids.push_back(id);
  ids.push_back(kPad);
  const Streamed s = stream(ids);
  EXPECT_EQ(s.final_text, "hello  world");
  EXPECT_EQ(s.joined, s.final_text);
  ASSERT_FALSE(s.deltas.empty());
  EXPECT_EQ(s.deltas.front(), "h");  // not " ", nor " h"
}

TEST(TextDeltas, CharactersSplitAcrossTokensNeverReachADeltaAsReplacementCharacters) {
  // " é 中 😀" byte by byte, with a segment mark and an EOS between the bytes of one character, then
  // the tiny vocabulary's merged tokens that cut "é", "語", "日" and "🎤" in two (" caf\xC3" + "\xA9s"...).
  std::vector<int32_t> ids = {kMark, byte(' '), byte(0xC3), kPad, byte(0xA9), byte(' '), byte(0xE4), kMark,
                              byte(0xB8), kEos, byte(0xAD), byte(' '), byte(0xF0), byte(0x9F), byte(0x98), byte(0x80)};
  for (const char* piece : {" caf\xC3", "\xA9s", "\xE8\xAA", "\x9E ", "\xE6\x97", "\xA5\xE6\x9C\xAC", "\xF0\x9F", "\x8E\xA4"})
    ids.push_back(merged(piece));
  ids.push_back(byte(' '));
  const Streamed s = stream(ids);
  EXPECT_EQ(s.final_text, "\xC3\xA9 \xE4\xB8\xAD \xF0\x9F\x98\x80 caf\xC3\xA9s\xE8\xAA\x9E \xE6\x97\xA5\xE6\x9C\xAC\xF0\x9F\x8E\xA4");
  EXPECT_EQ(s.joined, s.final_text);
  for (const std::string& d : s.deltas) EXPECT_EQ(d.find(kReplacement), std::string::npos) << d;
}

TEST(TextDeltas, WhitespaceIsHeldUntilTextFollowsIt) {
  server::TextDeltas d;
  EXPECT_EQ(d.next(" \t"), "");  // before the first word: never sent
  EXPECT_EQ(d.next(" Hi "), "Hi");
  EXPECT_EQ(d.next("\n"), "");
  EXPECT_EQ(d.next(" there"), " \n there");  // the whitespace held, with the text that follows it
  EXPECT_EQ(d.next(" "), "");                 // at the end: the final text has none
  d.reset();                                  // the next utterance starts afresh
  EXPECT_EQ(d.next(" again"), "again");
}

}  // namespace
}  // namespace voxrt::test
