// Subtitle cues from hand-made transcripts (no model): line and cue limits hold, words keep their order
// and text exactly, times are monotonic and within the audio, UTF-8 characters are never cut, and an
// empty transcript is a valid empty file.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "formats/output_formats.h"
#include "formats/subtitle_cues.h"
#include "common/error.h"

namespace voxrt::formats {
namespace {

// One segment holding every word (what the random test model gives for a long file).
Transcript one_segment(std::vector<Word> words, double duration) {
  Transcript t;
  t.duration = duration;
  Segment s;
  for (const Word& w : words) s.text += (s.text.empty() ? "" : " ") + w.text;
  if (!words.empty()) {
    s.start = words.front().start;
    s.end = words.back().end;
  }
  s.words = words;
  t.text = s.text;
  t.words = std::move(words);
  if (!t.words.empty()) t.segments.push_back(std::move(s));
  return t;
}

// `count` words of random lengths (1-14 letters, some multi-byte), each `seconds` long, no pauses.
Transcript random_speech(size_t count, double seconds, unsigned seed) {
  std::mt19937 rng(seed);
  const std::vector<std::string> letters = {"a", "b", "e", "s", "t", "é", "ü", "日", "語", "🎉", ","};
  std::vector<Word> words;
  for (size_t i = 0; i < count; ++i) {
    std::string text;
    for (size_t n = 1 + rng() % 14; n > 0; --n) text += letters[rng() % letters.size()];
    if (rng() % 9 == 0) text += ".";
    words.push_back({static_cast<double>(i) * seconds, static_cast<double>(i + 1) * seconds, text});
  }
  return one_segment(std::move(words), static_cast<double>(count) * seconds);
}

std::string joined(const std::vector<std::string>& parts) {
  std::string s;
  for (const std::string& p : parts) s += (s.empty() ? "" : " ") + p;
  return s;
}

bool valid_utf8(const std::string& s) {
  for (size_t i = 0; i < s.size();) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    const size_t n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (n == 0 || i + n > s.size()) return false;
    for (size_t k = 1; k < n; ++k)
      if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return false;
    i += n;
  }
  return true;
}

void expect_readable(const Transcript& t, const std::vector<Cue>& cues, const CueLimits& limits) {
  std::vector<Word> words;
  for (size_t i = 0; i < cues.size(); ++i) {
    const Cue& c = cues[i];
    SCOPED_TRACE("cue " + std::to_string(i) + ": " + joined(c.lines));
    ASSERT_FALSE(c.words.empty());
    ASSERT_GE(c.lines.size(), 1u);
    ASSERT_LE(c.lines.size(), 2u);
    for (const std::string& line : c.lines) {
      EXPECT_TRUE(valid_utf8(line));
      // A line over the limit is one word alone.
      if (utf8_length(line) > static_cast<size_t>(limits.max_line_chars))
        EXPECT_EQ(line.find(' '), std::string::npos) << line;
    }
    std::vector<std::string> texts;
    for (const Word& w : c.words) texts.push_back(w.text);
    EXPECT_EQ(joined(c.lines), joined(texts)) << "lines are the words, broken between them";
    if (c.words.size() > 1) EXPECT_LE(c.words.back().end - c.words.front().start, limits.max_cue_seconds + 1e-9);
    EXPECT_LT(c.start, c.end) << "a cue of 0 s is never shown";
    EXPECT_GE(c.start, 0.0);
    EXPECT_LE(c.end, t.duration);
    if (i + 1 < cues.size()) EXPECT_LE(c.end, cues[i + 1].start);
    // A cue may start before its first word (to get its least time on screen), never after it.
    EXPECT_LE(c.start, c.words.front().start + 1e-9);
    words.insert(words.end(), c.words.begin(), c.words.end());
  }
  ASSERT_EQ(words.size(), t.words.size()) << "every word in one cue, in order";
  for (size_t i = 0; i < words.size(); ++i) {
    EXPECT_EQ(words[i].text, t.words[i].text);
    EXPECT_EQ(words[i].start, t.words[i].start);
    EXPECT_EQ(words[i].end, t.words[i].end);
  }
}

TEST(SubtitleCues, LongSegmentBecomesReadableCuesUnderEveryLimit) {
  const Transcript t = random_speech(400, 0.35, 1);
  for (int chars : {1, 5, 12, 42, 80})
    for (double seconds : {0.5, 3.0, 7.0, 60.0}) {
      SCOPED_TRACE(std::to_string(chars) + " chars, " + std::to_string(seconds) + " s");
      const CueLimits limits{chars, seconds};
      const std::vector<Cue> cues = build_cues(t, limits);
      expect_readable(t, cues, limits);
      if (chars >= 12 && seconds >= 3.0) EXPECT_GT(cues.size(), 400u / 40) << "not one huge cue";
    }
}

TEST(SubtitleCues, DefaultLimitsAreFortyTwoCharactersAndSevenSeconds) {
  const Transcript t = random_speech(300, 0.2, 2);
  const std::vector<Cue> cues = build_cues(t);
  expect_readable(t, cues, {42, 7.0});
  size_t longest = 0;
  for (const Cue& c : cues)
    for (const std::string& line : c.lines) longest = std::max(longest, utf8_length(line));
  EXPECT_LE(longest, 42u);
  EXPECT_GT(longest, 30u) << "lines are filled";
}

TEST(SubtitleCues, SlowSpeechIsCutAtTheCueDuration) {
  // Two-second words: three fit in 7 s, whatever the characters.
  std::vector<Word> words;
  for (int i = 0; i < 10; ++i) words.push_back({2.0 * i, 2.0 * i + 2.0, "w" + std::to_string(i)});
  const Transcript t = one_segment(words, 20.0);
  const std::vector<Cue> cues = build_cues(t);
  expect_readable(t, cues, {});
  ASSERT_EQ(cues.size(), 4u);
  EXPECT_EQ(cues[0].lines, std::vector<std::string>{"w0 w1 w2"});
  EXPECT_EQ(cues[0].start, 0.0);
  EXPECT_EQ(cues[0].end, 6.0);
}

TEST(SubtitleCues, TwoLinesOfBalancedLength) {
  std::vector<Word> words;
  for (int i = 0; i < 12; ++i) words.push_back({0.1 * i, 0.1 * i + 0.1, "word" + std::to_string(i % 10)});
  const Transcript t = one_segment(words, 2.0);  // 12 words of 5: 71 characters
  const std::vector<Cue> cues = build_cues(t);
  ASSERT_EQ(cues.size(), 1u);
  ASSERT_EQ(cues[0].lines.size(), 2u);
  EXPECT_EQ(cues[0].lines[0], "word0 word1 word2 word3 word4 word5");
  EXPECT_EQ(cues[0].lines[1], "word6 word7 word8 word9 word0 word1");
}

TEST(SubtitleCues, AWordLongerThanALineGetsALineOfItsOwnUncut) {
  const std::string long_word = "Donaudampfschifffahrtsgesellschaftskapitänsmütze";  // 48 characters
  const Transcript t = one_segment({{0.0, 0.5, "the"}, {0.5, 1.5, long_word}, {1.5, 2.0, "is"}, {2.0, 2.2, "lost"}}, 3.0);
  const std::vector<Cue> cues = build_cues(t);
  expect_readable(t, cues, {});
  std::vector<std::string> lines;
  for (const Cue& c : cues) lines.insert(lines.end(), c.lines.begin(), c.lines.end());
  EXPECT_NE(std::find(lines.begin(), lines.end(), long_word), lines.end());
}

TEST(SubtitleCues, LineLengthCountsCharactersNotBytes) {
  // "日本語日本語" is 6 characters in 18 bytes: two fit a 13-character line.
  std::vector<Word> words;
  for (int i = 0; i < 4; ++i) words.push_back({0.5 * i, 0.5 * i + 0.5, "日本語日本語"});
  const Transcript t = one_segment(words, 2.0);
  const std::vector<Cue> cues = build_cues(t, {13, 7.0});
  expect_readable(t, cues, {13, 7.0});
  ASSERT_EQ(cues.size(), 1u);
  EXPECT_EQ(cues[0].lines, (std::vector<std::string>{"日本語日本語 日本語日本語", "日本語日本語 日本語日本語"}));
}

TEST(SubtitleCues, APauseStartsANewCue) {
  const Transcript t = one_segment({{0.0, 0.4, "Hello"}, {0.4, 0.8, "there"}, {5.0, 5.4, "again"}}, 6.0);
  const std::vector<Cue> cues = build_cues(t);
  expect_readable(t, cues, {});
  ASSERT_EQ(cues.size(), 2u);
  EXPECT_EQ(cues[1].lines, std::vector<std::string>{"again"});
}

TEST(SubtitleCues, OverlappingWordTimesAndTimesPastTheAudioAreClamped) {
  // A token holding the end of one word and the start of the next makes their times overlap.
  std::vector<Word> words;
  for (int i = 0; i < 40; ++i) words.push_back({0.3 * i, 0.3 * i + 0.6, "overlap" + std::to_string(i)});
  Transcript t = one_segment(words, 11.9);
  t.words.back().end = 12.5;
  const std::vector<Cue> cues = build_cues(t);
  ASSERT_GT(cues.size(), 1u);
  for (size_t i = 0; i + 1 < cues.size(); ++i) EXPECT_LE(cues[i].end, cues[i + 1].start);
  EXPECT_LE(cues.back().end, 11.9);
}

// The words said after the audio has ended are timed at its end: their cue used to be
// "00:00:02,665 --> 00:00:02,665", which players never show. It ends with the audio and starts a
// second before, the cue before it making room.
TEST(SubtitleCues, ACueAtTheEndOfTheAudioIsShownForASecondBeforeItsEnd) {
  const Transcript t = one_segment({{0.0, 2.0, "Hello"}, {2.0, 2.4, "there."}, {2.665, 2.665, "Goodbye"}}, 2.665);
  const std::vector<Cue> cues = build_cues(t, {10, 7.0});
  ASSERT_EQ(cues.size(), 2u);
  EXPECT_DOUBLE_EQ(cues[1].end, 2.665);
  EXPECT_DOUBLE_EQ(cues[1].start, 2.665 - kMinCueSeconds);
  EXPECT_DOUBLE_EQ(cues[0].start, 0.0);
  EXPECT_DOUBLE_EQ(cues[0].end, cues[1].start);
  EXPECT_EQ(render(t, Format::Srt, "x.wav", {.max_line_chars = 10}),
            "1\n00:00:00,000 --> 00:00:01,665\nHello\nthere.\n\n2\n00:00:01,665 --> 00:00:02,665\nGoodbye\n\n");
}

// Several cues' worth of words at the very end: each gets its second, one after the other.
TEST(SubtitleCues, SeveralCuesAtTheEndOfTheAudioEachGetTheirTime) {
  std::vector<Word> words = {{0.0, 1.0, "start"}};
  for (int i = 0; i < 12; ++i) words.push_back({20.0, 20.0, "lastword" + std::to_string(i)});
  const Transcript t = one_segment(words, 20.0);
  const std::vector<Cue> cues = build_cues(t, {20, 7.0});
  ASSERT_GE(cues.size(), 4u);
  expect_readable(t, cues, {20, 7.0});
  for (size_t i = 1; i < cues.size(); ++i) EXPECT_NEAR(cues[i].end - cues[i].start, kMinCueSeconds, 1e-9) << i;
  EXPECT_DOUBLE_EQ(cues.back().end, 20.0);
}

// A short word before a pause stays up for a second rather than its 80 ms.
TEST(SubtitleCues, AShortCueBeforeAPauseStaysUpASecond) {
  const Transcript t = one_segment({{1.0, 1.08, "Yes."}, {5.0, 5.5, "Then"}, {5.5, 5.9, "more."}}, 6.0);
  const std::vector<Cue> cues = build_cues(t);
  expect_readable(t, cues, {});
  ASSERT_EQ(cues.size(), 2u);
  EXPECT_DOUBLE_EQ(cues[0].start, 1.0);
  EXPECT_DOUBLE_EQ(cues[0].end, 1.0 + kMinCueSeconds);
}

// Audio too short for its cues at a second each: they run past its end rather than vanish.
TEST(SubtitleCues, CuesOfAClipTooShortForThemStillLast) {
  std::vector<Word> words;
  for (int i = 0; i < 6; ++i) words.push_back({0.0, 0.0, "word" + std::to_string(i)});
  Transcript t = one_segment(words, 0.5);
  const std::vector<Cue> cues = build_cues(t, {10, 7.0});
  ASSERT_GE(cues.size(), 2u);
  for (size_t i = 0; i < cues.size(); ++i) {
    EXPECT_GT(cues[i].end, cues[i].start) << i;
    if (i + 1 < cues.size()) EXPECT_LE(cues[i].end, cues[i + 1].start) << i;
  }
}

TEST(SubtitleCues, SegmentsWithoutWordTimesAreSpreadOverTheSegment) {
  Transcript t;
  t.duration = 10;
  t.text = "one two three four";
  t.segments = {{1.0, 3.0, "one two", {}}, {4.0, 9.0, "three four", {}}};
  const std::vector<Cue> cues = build_cues(t, {42, 7.0});
  std::vector<std::string> lines;
  for (const Cue& c : cues) lines.insert(lines.end(), c.lines.begin(), c.lines.end());
  EXPECT_EQ(joined(lines), "one two three four");
  ASSERT_FALSE(cues.empty());
  EXPECT_EQ(cues.front().start, 1.0);
  EXPECT_EQ(cues.back().end, 9.0);
}

TEST(SubtitleCues, EmptyTranscriptGivesValidEmptyFiles) {
  const Transcript t;
  EXPECT_TRUE(build_cues(t).empty());
  EXPECT_EQ(render(t, Format::Vtt, "x.wav"), "WEBVTT\n\n");
  EXPECT_EQ(render(t, Format::Srt, "x.wav"), "");
  EXPECT_EQ(render(t, Format::Txt, "x.wav", {.timestamps = true}), "");
}

TEST(SubtitleCues, LimitsThatHoldNothingAreRefused) {
  const Transcript t = random_speech(3, 0.3, 3);
  EXPECT_THROW(build_cues(t, {0, 7.0}), Error);
  EXPECT_THROW(build_cues(t, {42, 0.0}), Error);
}

}  // namespace
}  // namespace voxrt::formats
