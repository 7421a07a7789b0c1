// Live sessions give exactly the offline token ids (hence the reference's) for the same audio,
// whatever the chunk sizes, at delays 160, 480 and 2400 ms; sessions sharing an engine do not see
// each other; flush() recovers the words at the very end.
#include <gtest/gtest.h>

#include <random>
#include <thread>

#include "audio/audio_file.h"
#include "golden.h"
#include "tiny_engine.h"
#include "voxrt/session.h"
#include "voxrt/voxrt.h"

namespace voxrt::test {
namespace {

std::vector<int32_t> offline_tokens(const std::string& golden_case) {
  return Golden(test_data() / "tiny" / "golden" / (golden_case + ".safetensors")).i32("tokens");
}

// Chunk sizes: a fixed size, or (size 0) a reproducible random mix of 1..5000 samples.
std::vector<size_t> chunking(size_t total, size_t size, unsigned seed = 1) {
  std::vector<size_t> out;
  std::mt19937 rng(seed);
  std::uniform_int_distribution<size_t> mix(1, 5000);
  for (size_t done = 0; done < total;) {
    const size_t n = std::min(total - done, size ? size : mix(rng));
    out.push_back(n);
    done += n;
  }
  return out;
}

Transcript stream(const std::vector<float>& audio, int delay_ms, size_t chunk, std::vector<StreamEvent>* events = nullptr) {
  SessionOptions o;
  o.delay_ms = delay_ms;
  if (events) o.on_event = [events](const StreamEvent& e) { events->push_back(e); };
  auto s = tiny_engine().open_session(o);
  size_t at = 0;
  for (size_t n : chunking(audio.size(), chunk)) {
    s->feed(std::span<const float>(audio.data() + at, n));
    at += n;
  }
  s->flush();
  return s->transcript();
}

struct Case {
  std::string audio;
  int delay_ms;
  size_t chunk;
};

class StreamingEqualsOffline : public ::testing::TestWithParam<Case> {};

TEST_P(StreamingEqualsOffline, TokenIds) {
  const Case& c = GetParam();
  const Transcript t = stream(wav(c.audio), c.delay_ms, c.chunk);
  EXPECT_EQ(t.tokens, offline_tokens(c.audio + "_" + std::to_string(c.delay_ms)));
  EXPECT_EQ(t.delay_ms, c.delay_ms);
}

std::vector<Case> cases() {
  std::vector<Case> v;
  for (int delay : {160, 480, 2400})
    for (size_t chunk : {1, 37, 160, 1280, 4000, 0}) v.push_back({"speech_short", delay, chunk});
  for (size_t chunk : {37, 1280, 0}) {
    v.push_back({"speech_long", 480, chunk});  // passes both windows (15 s encoder, 64-token decoder)
    v.push_back({"odd_length", 480, chunk});
  }
  return v;
}

INSTANTIATE_TEST_SUITE_P(Chunks, StreamingEqualsOffline, ::testing::ValuesIn(cases()), [](const auto& info) {
  const Case& c = info.param;
  return c.audio + "_" + std::to_string(c.delay_ms) + "ms_" + (c.chunk ? std::to_string(c.chunk) : std::string("mix"));
});

TEST(Streaming, InterleavedSessionsGiveWhatEachGivesAlone) {
  const std::vector<float> a = wav("speech_short"), b = wav("jfk");
  auto sa = tiny_engine().open_session({.delay_ms = 160});
  auto sb = tiny_engine().open_session({.delay_ms = 480});
  const auto ca = chunking(a.size(), 0, 7), cb = chunking(b.size(), 0, 8);
  size_t ia = 0, ib = 0, pa = 0, pb = 0;
  while (ia < ca.size() || ib < cb.size()) {
    if (ia < ca.size()) {
      sa->feed(std::span<const float>(a.data() + pa, ca[ia]));
      pa += ca[ia++];
    }
    if (ib < cb.size()) {
      sb->feed(std::span<const float>(b.data() + pb, cb[ib]));
      pb += cb[ib++];
    }
  }
  sb->flush();
  sa->flush();
  EXPECT_EQ(sa->transcript().tokens, offline_tokens("speech_short_160"));
  EXPECT_EQ(sb->transcript().tokens, offline_tokens("jfk_480"));
}

TEST(Streaming, SessionsOnSeveralThreadsShareOneEngine) {
  const std::vector<float> a = wav("speech_short"), b = wav("speech_long");
  Transcript ta, tb;
  std::thread t1([&] { ta = stream(a, 2400, 0); });
  std::thread t2([&] { tb = stream(b, 480, 0); });
  t1.join();
  t2.join();
  EXPECT_EQ(ta.tokens, offline_tokens("speech_short_2400"));
  EXPECT_EQ(tb.tokens, offline_tokens("speech_long_480"));
}

TEST(Streaming, FlushRecoversTheLastWords) {
  // speech_to_end.wav is cut mid-word: without the right pad the model never gets to say it.
  const std::vector<float> audio = wav("speech_to_end");
  auto s = tiny_engine().open_session({.delay_ms = 480});
  s->feed(audio);
  const size_t before = s->transcript().tokens.size();
  s->flush();
  const Transcript t = s->transcript();
  EXPECT_EQ(t.tokens, offline_tokens("speech_to_end_480"));
  // n_delay + 1 + 10 right-pad steps plus the partial step decode after the flush.
  EXPECT_GE(t.tokens.size(), before + 6 + 1 + 10 - 1);
}

TEST(Streaming, NoOutputBeforeThePromptWindowIsFilled) {
  // The first step needs (1 + n_delay) * 1280 samples of audio plus 40 of look-ahead.
  auto s = tiny_engine().open_session({.delay_ms = 480});
  const std::vector<float> audio = wav("jfk");
  const size_t needed = (1 + 6) * 1280 + 40;
  s->feed(std::span<const float>(audio.data(), needed - 1));
  EXPECT_EQ(s->stats().steps, 0);
  s->feed(std::span<const float>(audio.data() + needed - 1, 1));
  EXPECT_EQ(s->stats().steps, 1);
  s->feed(std::span<const float>(audio.data() + needed, 1280));
  EXPECT_EQ(s->stats().steps, 2);  // then one step per 80 ms
  // positions and position_ms are the names; steps and step_ms the deprecated ones, the same.
  EXPECT_EQ(s->stats().positions, 2);
  EXPECT_EQ(s->stats().position_ms.size(), 2u);
  EXPECT_EQ(s->stats().step_ms, s->stats().position_ms);
}

TEST(Streaming, EventsRebuildTheTranscript) {
  std::vector<StreamEvent> events;
  const Transcript t = stream(wav("jfk"), 480, 1280, &events);
  std::string text;
  std::vector<Segment> segments;
  for (const StreamEvent& e : events) {
    EXPECT_EQ(e.position, e.step) << "step is the deprecated name of position";
    if (e.kind == StreamEvent::Kind::Text) text += e.text;
    if (e.kind == StreamEvent::Kind::SegmentEnd) segments.push_back({e.start, e.end, e.text});
  }
  const auto b = text.find_first_not_of(' ');
  EXPECT_EQ(b == std::string::npos ? "" : text.substr(b, text.find_last_not_of(' ') - b + 1), t.text);
  ASSERT_EQ(segments.size(), t.segments.size());
  for (size_t i = 0; i < segments.size(); ++i) {
    EXPECT_EQ(segments[i].text, t.segments[i].text);
    EXPECT_DOUBLE_EQ(segments[i].start, t.segments[i].start);
  }
}

TEST(Streaming, FeedAfterFlushIsAnError) {
  // At the model's rate and at another (the resampler's path): the refused audio is not counted in
  // the engine's audio_seconds either.
  for (const int rate : {0, 48000}) {
    SCOPED_TRACE(rate);
    auto s = tiny_engine().open_session({.sample_rate = rate});
    s->feed(wav("speech_short"));
    s->flush();
    s->flush();  // harmless
    const double counted = tiny_engine().stats().audio_seconds;
    EXPECT_THROW(s->feed(wav("speech_short")), voxrt::Error);
    EXPECT_EQ(tiny_engine().stats().audio_seconds, counted);
  }
}

}  // namespace
}  // namespace voxrt::test
