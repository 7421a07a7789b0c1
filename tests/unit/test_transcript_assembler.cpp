// Words and times from decoder ids (no model: the tiny model's tokenizer and hand-picked ids). A word
// spans tokens and ends at whitespace, a segment mark, EOS or the end; punctuation stays in it; a
// character split over tokens is never split and starts the word where its first byte came; every
// time is whole milliseconds and within the audio; the live Word events are the transcript's words.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "../parity/golden.h"
#include "tokenizer/tekken.h"
#include "models/voxtral/transcript_assembler.h"

namespace voxrt::test {
namespace {

const Tokenizer& tokenizer() {
  static const Tokenizer tok = Tokenizer::load(test_data() / "tiny" / "mistral" / "tekken.json");
  return tok;
}

constexpr double kStep = 0.08;
constexpr int32_t kPad = 32, kMark = 33, kEos = 2;

// The regular token whose bytes are `text` (the tiny vocabulary has " hello", "brown", ...).
int32_t id(const std::string& text) {
  const Tokenizer& tok = tokenizer();
  for (int i = tok.num_special(); i < tok.vocab_size(); ++i)
    if (tok.token_bytes(i) == text) return i;
  ADD_FAILURE() << "no token for '" << text << "'";
  return kPad;
}
int32_t byte(unsigned char b) { return tokenizer().num_special() + b; }

struct Assembled {
  Transcript t;
  std::vector<StreamEvent> events;
  std::vector<StreamEvent> of(StreamEvent::Kind kind) const {
    std::vector<StreamEvent> out;
    for (const StreamEvent& e : events)
      if (e.kind == kind) out.push_back(e);
    return out;
  }
};

// Id by id as a live session does: the limit is set just before the right pad (after `audio_steps`).
Assembled assemble(const std::vector<int32_t>& ids, double duration, size_t audio_steps = SIZE_MAX) {
  TranscriptAssembler a(tokenizer(), kStep);
  Assembled r;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i == audio_steps) a.limit_times(duration);
    a.push(ids[i], r.events);
  }
  a.finish(duration, r.events);
  r.t.text = a.text();
  r.t.segments = a.segments();
  r.t.words = a.words();
  return r;
}

void expect_word(const Word& w, const std::string& text, double start, double end) {
  EXPECT_EQ(w.text, text);
  EXPECT_EQ(w.start, start) << text;
  EXPECT_EQ(w.end, end) << text;
}

TEST(TranscriptAssembler, WordsSpanTokensAndEndAtWhitespaceMarksAndEos) {
  //                     0     1      2         3     4         5        6          7     8       9
  const Assembled r = assemble({kPad, kMark, id(" hello"), kPad, id(" quick"), id("brown"), byte(','), kPad, id(" fox"), kEos},
                         10.0);
  ASSERT_EQ(r.t.words.size(), 3u);
  expect_word(r.t.words[0], "hello", 0.16, 0.24);
  expect_word(r.t.words[1], "quickbrown,", 0.32, 0.56);  // punctuation stays with its word
  expect_word(r.t.words[2], "fox", 0.64, 0.72);
  ASSERT_EQ(r.t.segments.size(), 1u);
  EXPECT_EQ(r.t.segments[0].text, "hello quickbrown, fox");
  EXPECT_EQ(r.t.segments[0].start, 0.08);
  EXPECT_EQ(r.t.segments[0].end, 0.72);
  ASSERT_EQ(r.t.segments[0].words.size(), 3u);
  // Each word is announced as soon as it is known to be over.
  const auto words = r.of(StreamEvent::Kind::Word);
  ASSERT_EQ(words.size(), 3u);
  EXPECT_EQ(words[0].step, 4);  // " quick" begins with a space
  EXPECT_EQ(words[1].step, 8);
  EXPECT_EQ(words[2].step, 9);  // EOS
  EXPECT_EQ(words[2].text, "fox");
  EXPECT_EQ(words[2].start, 0.64);
  EXPECT_EQ(words[2].end, 0.72);
}

TEST(TranscriptAssembler, ASegmentMarkEndsTheWord) {
  const Assembled r = assemble({kMark, id("hello"), kMark, id("world"), kPad}, 10.0);
  ASSERT_EQ(r.t.words.size(), 2u);
  expect_word(r.t.words[0], "hello", 0.08, 0.16);
  expect_word(r.t.words[1], "world", 0.24, 0.32);  // closed by the end of the input
  ASSERT_EQ(r.t.segments.size(), 2u);
  EXPECT_EQ(r.t.segments[1].words.size(), 1u);
}

TEST(TranscriptAssembler, ACharacterSplitOverTokensIsNeverSplit) {
  // " é" + "t": é is C3 A9, its bytes two steps apart. The word starts at the step of C3.
  const Assembled r = assemble({id(" hello"), byte(' '), byte(0xC3), kPad, byte(0xA9), byte('t'), kPad}, 10.0);
  ASSERT_EQ(r.t.words.size(), 2u);
  expect_word(r.t.words[1], "\xC3\xA9t", 0.16, 0.48);
  EXPECT_EQ(r.t.text, "hello \xC3\xA9t");
}

TEST(TranscriptAssembler, ACharacterCutByAMarkIsAReplacementInTextAndWord) {
  const Assembled r = assemble({kMark, id("hello"), byte(0xC3), kMark, id("world")}, 10.0);
  ASSERT_EQ(r.t.segments.size(), 2u);
  EXPECT_EQ(r.t.segments[0].text, "hello\xEF\xBF\xBD");
  ASSERT_EQ(r.t.words.size(), 2u);
  expect_word(r.t.words[0], "hello\xEF\xBF\xBD", 0.08, 0.24);
}

TEST(TranscriptAssembler, TimesAreWholeMilliseconds) {
  std::vector<int32_t> ids(48, kPad);  // 48 * 0.08 is 3.8400000000000003 in binary
  ids.push_back(id(" hello"));
  const Assembled r = assemble(ids, 10.0);
  ASSERT_EQ(r.t.words.size(), 1u);
  expect_word(r.t.words[0], "hello", 3.84, 3.92);
  EXPECT_EQ(r.of(StreamEvent::Kind::Text).at(0).start, 3.84);
}

TEST(TranscriptAssembler, TimesInTheRightPadAreClampedToTheAudio) {
  // 1.0333 s of audio: at the default delay (6 steps) a session decodes steps 0-5 before flush(),
  // the rest during it, where text keeps coming in steps that map past the end.
  std::vector<int32_t> ids(12, kPad);
  for (const char* w : {" the", " quick", " brown", " fox", " jumps", " over", " the", " lazy"}) ids.push_back(id(w));
  ids.push_back(kMark);
  ids.push_back(id(" dog"));
  const double duration = 16533 / 16000.0;
  const Assembled r = assemble(ids, duration, 6);
  ASSERT_EQ(r.t.words.size(), 9u);
  for (const StreamEvent& e : r.events) {
    EXPECT_LE(e.start, duration) << static_cast<int>(e.kind) << " at step " << e.step;
    EXPECT_LE(e.end, duration) << static_cast<int>(e.kind) << " at step " << e.step;
  }
  for (const Segment& s : r.t.segments) EXPECT_LE(s.end, duration);
  for (const Word& w : r.t.words) {
    EXPECT_LE(w.start, w.end);
    EXPECT_LE(w.end, duration);
  }
  expect_word(r.t.words[0], "the", 0.96, 1.033);  // heard at the end: reported at most at the end
  expect_word(r.t.words.back(), "dog", 1.033, 1.033);
}

// Random ids (text with and without leading spaces, raw bytes that split characters, marks, EOS):
// the words are each segment's text split at whitespace, the Word events are the words, times are
// ordered and within the audio.
TEST(TranscriptAssembler, WordsAreTheSegmentsTextSplitAtWhitespace) {
  std::mt19937 rng(5);
  const std::vector<int32_t> vocab = {id(" hello"), id("world"), id(" the"), byte(' '), byte('\n'), byte('.'),
                                      byte(0xC3), byte(0xA9), byte(0xE6), byte(0x97), byte(0xA5), byte(0xF0),
                                      byte(0x9F), byte(0x8E), byte(0x89), byte(0xFF), kPad, kMark, kEos};
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<int32_t> ids(1 + rng() % 120);
    for (int32_t& i : ids) i = vocab[rng() % vocab.size()];
    const double duration = static_cast<double>(rng() % 200000) / 16000.0;
    // Before flush() a session only decodes steps whose audio has come (a step ends within it).
    const auto heard = static_cast<size_t>(std::max(0.0, std::floor((duration - 0.001) / kStep)));
    const Assembled r = assemble(ids, duration, std::min(ids.size(), heard));
    SCOPED_TRACE(trial);
    std::vector<Word> all;
    for (const Segment& s : r.t.segments) {
      std::vector<std::string> split;
      for (size_t b = 0; (b = s.text.find_first_not_of(" \t\n\r\v\f", b)) != std::string::npos;) {
        const size_t e = std::min(s.text.find_first_of(" \t\n\r\v\f", b), s.text.size());
        split.push_back(s.text.substr(b, e - b));
        b = e;
      }
      ASSERT_EQ(s.words.size(), split.size()) << s.text;
      for (size_t i = 0; i < split.size(); ++i) EXPECT_EQ(s.words[i].text, split[i]);
      all.insert(all.end(), s.words.begin(), s.words.end());
    }
    const auto events = r.of(StreamEvent::Kind::Word);
    ASSERT_EQ(all.size(), r.t.words.size());
    ASSERT_EQ(events.size(), all.size());
    double last_start = 0;
    for (size_t i = 0; i < all.size(); ++i) {
      EXPECT_EQ(r.t.words[i].text, all[i].text);
      EXPECT_EQ(events[i].text, all[i].text);
      EXPECT_EQ(events[i].start, all[i].start);
      EXPECT_EQ(events[i].end, all[i].end);
      EXPECT_LE(last_start, all[i].start);
      EXPECT_LE(all[i].start, all[i].end);
      EXPECT_LE(all[i].end, duration);
      last_start = all[i].start;
    }
  }
}

}  // namespace
}  // namespace voxrt::test
