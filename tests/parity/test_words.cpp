// Word timestamps on the tiny model, through both routes: a live session's Word events and transcript
// give exactly the offline words for the same audio, and no time a session reports (events, segments,
// words) passes the end of the audio, including those decided while flush() decodes the right pad.
#include <gtest/gtest.h>

#include "audio/audio_file.h"
#include "golden.h"
#include "tiny_engine.h"
#include "voxrt/session.h"
#include "voxrt/voxrt.h"

namespace voxrt::test {
namespace {

struct Live {
  Transcript t;
  std::vector<StreamEvent> events;
};

Live live(const std::vector<float>& audio, int delay_ms, size_t chunk) {
  Live r;
  SessionOptions o;
  o.delay_ms = delay_ms;
  o.on_event = [&r](const StreamEvent& e) { r.events.push_back(e); };
  auto s = tiny_engine().open_session(o);
  for (size_t at = 0; at < audio.size(); at += chunk)
    s->feed(std::span<const float>(audio.data() + at, std::min(chunk, audio.size() - at)));
  s->flush();
  r.t = s->transcript();
  return r;
}

void expect_same_words(const std::vector<Word>& got, const std::vector<Word>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].text, want[i].text) << "word " << i;
    EXPECT_EQ(got[i].start, want[i].start) << "word " << i;
    EXPECT_EQ(got[i].end, want[i].end) << "word " << i;
  }
}

struct Case {
  std::string audio;
  int delay_ms;
};
void PrintTo(const Case& c, std::ostream* os) { *os << c.audio << " at " << c.delay_ms << " ms"; }

class Words : public ::testing::TestWithParam<Case> {};

TEST_P(Words, LiveWordsAreTheOfflineWords) {
  const std::vector<float> audio = wav(GetParam().audio);
  const Transcript offline = tiny_engine().transcribe(audio, {.delay_ms = GetParam().delay_ms});
  ASSERT_GT(offline.words.size(), 3u) << "the tiny model says some words";
  const Live l = live(audio, GetParam().delay_ms, 1000);
  expect_same_words(l.t.words, offline.words);
  std::vector<Word> events;
  for (const StreamEvent& e : l.events)
    if (e.kind == StreamEvent::Kind::Word) events.push_back({e.start, e.end, e.text});
  expect_same_words(events, offline.words);
  ASSERT_EQ(l.t.segments.size(), offline.segments.size());
  std::vector<Word> in_segments;
  for (size_t i = 0; i < offline.segments.size(); ++i) {
    expect_same_words(l.t.segments[i].words, offline.segments[i].words);
    in_segments.insert(in_segments.end(), offline.segments[i].words.begin(), offline.segments[i].words.end());
  }
  expect_same_words(in_segments, offline.words);
}

// Defect: a jsonl text event had start 3.84 s with duration 3.07 s: the right pad's steps map past
// the end of the audio and their times were reported as they were.
TEST_P(Words, NoTimePassesTheEndOfTheAudio) {
  const std::vector<float> audio = wav(GetParam().audio);
  const Live l = live(audio, GetParam().delay_ms, 1280);
  const double duration = l.t.duration;
  EXPECT_EQ(duration, static_cast<double>(audio.size()) / 16000);
  bool text_in_the_pad = false;
  for (const StreamEvent& e : l.events) {
    EXPECT_LE(e.start, duration) << "event " << static_cast<int>(e.kind) << " at step " << e.step;
    EXPECT_LE(e.end, duration) << "event " << static_cast<int>(e.kind) << " at step " << e.step;
    EXPECT_LE(e.start, e.end);
    text_in_the_pad |= e.kind == StreamEvent::Kind::Text && (e.step + 1) * 1280 > static_cast<int64_t>(audio.size());
  }
  EXPECT_TRUE(text_in_the_pad) << "the case must decode text in the right pad";
  for (const Segment& s : l.t.segments) {
    EXPECT_LE(s.start, s.end);
    EXPECT_LE(s.end, duration);
    for (const Word& w : s.words) EXPECT_LE(w.end, duration);
  }
  for (const Word& w : l.t.words) {
    EXPECT_LE(w.start, w.end);
    EXPECT_LE(w.end, duration);
  }
  const Transcript offline = tiny_engine().transcribe(audio, {.delay_ms = GetParam().delay_ms});
  for (const Word& w : offline.words) EXPECT_LE(w.end, offline.duration);
  for (const Segment& s : offline.segments) EXPECT_LE(s.end, offline.duration);
}

INSTANTIATE_TEST_SUITE_P(Clips, Words,
                         ::testing::Values(Case{"speech_short", 480}, Case{"speech_short", 2400},
                                           Case{"odd_length", 480}, Case{"speech_to_end", 160}, Case{"jfk", 480}),
                         [](const auto& info) { return info.param.audio + "_" + std::to_string(info.param.delay_ms); });

}  // namespace
}  // namespace voxrt::test
