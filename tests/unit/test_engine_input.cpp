// The engine's input routes on the tiny model: a file is read incrementally with the ids of the
// whole-file pass and an honest progress, and empty input (issue 12, defect 8) is an empty
// transcript on every route: a span of 0 samples, a file of 0 frames, a session flushed without
// audio. A file that does not decode at all stays an error.
#include <gtest/gtest.h>
#include <sndfile.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "../parity/golden.h"
#include "audio/audio_file.h"
#include "audio_fixtures.h"
#include "temp_dir.h"
#include "voxrt/session.h"
#include "voxrt/voxrt.h"

namespace voxrt::test {
namespace {

namespace fs = std::filesystem;
using testutil::TempDir;

Engine& tiny_engine() {
  static std::unique_ptr<Engine> engine = Engine::load(test_data() / "tiny" / "mistral", {.device = Device::Cpu});
  return *engine;
}

void expect_empty(const Transcript& t) {
  EXPECT_TRUE(t.tokens.empty()) << t.tokens.size() << " tokens";
  EXPECT_EQ(t.text, "");
  EXPECT_TRUE(t.segments.empty());
  EXPECT_EQ(t.duration, 0.0);
  EXPECT_FALSE(t.eos);
}

fs::path zero_frame_wav(const TempDir& dir) {
  const fs::path p = dir / "zero.wav";
  testutil::write_audio_file(p, {}, 44100, 2, SF_FORMAT_WAV | SF_FORMAT_PCM_16);
  return p;
}

TEST(EngineEmptyInput, NoSamplesGiveAnEmptyTranscript) {
  int progress_calls = 0;
  const Transcript t = tiny_engine().transcribe({}, {.progress = [&](int, int) { ++progress_calls; }});
  expect_empty(t);
  EXPECT_EQ(t.delay_ms, 480);
  EXPECT_EQ(progress_calls, 0);
}

TEST(EngineEmptyInput, ZeroFrameFileGivesAnEmptyTranscript) {
  TempDir dir;
  expect_empty(tiny_engine().transcribe_file(zero_frame_wav(dir)));
}

TEST(EngineEmptyInput, SessionFlushedWithoutAudioIsEmpty) {
  std::vector<StreamEvent> events;
  auto s = tiny_engine().open_session({.on_event = [&](const StreamEvent& e) { events.push_back(e); }});
  s->flush();
  expect_empty(s->transcript());
  EXPECT_EQ(s->stats().steps, 0);
  for (const StreamEvent& e : events) EXPECT_NE(e.kind, StreamEvent::Kind::Text) << e.text;

  auto fed_nothing = tiny_engine().open_session({});
  fed_nothing->feed({});
  fed_nothing->feed(std::vector<float>{});
  fed_nothing->flush();
  expect_empty(fed_nothing->transcript());
}

// Not a rule for "short": one sample of audio is audio, decoded with its padding as before.
TEST(EngineEmptyInput, OneSampleIsStillTranscribed) {
  const std::vector<float> one{0.0f};
  const Transcript t = tiny_engine().transcribe(one);
  EXPECT_FALSE(t.tokens.empty());
  auto s = tiny_engine().open_session({});
  s->feed(one);
  s->flush();
  EXPECT_EQ(s->transcript().tokens, t.tokens);
}

TEST(EngineEmptyInput, UndecodableFileIsStillAnError) {
  TempDir dir;
  std::ofstream(dir / "empty.flac").flush();
  EXPECT_THROW(tiny_engine().transcribe_file(dir / "empty.flac"), Error);
  const fs::path cut = dir / "cut.flac";
  testutil::write_audio_file(cut, std::vector<float>(16000, 0.1f), 16000, 1, SF_FORMAT_FLAC | SF_FORMAT_PCM_16);
  testutil::cut_flac_after_metadata(cut);  // the header announces 16000 frames, none is there
  EXPECT_THROW(tiny_engine().transcribe_file(cut), Error);
}

// The file route reads incrementally; its ids are those of the committed whole-file decode.
TEST(EngineFileInput, StereoAt44kGivesTheReferenceTokens) {
  const std::vector<int32_t> golden =
      Golden(test_data() / "tiny" / "golden" / "stereo_44k_heard_480.safetensors").i32("tokens");
  std::vector<std::pair<int, int>> progress;
  const Transcript t = tiny_engine().transcribe_file(test_data() / "audio" / "stereo_44k.wav",
                                                     {.progress = [&](int d, int n) { progress.emplace_back(d, n); }});
  EXPECT_EQ(t.tokens, golden);
  EXPECT_EQ(t.tokens, tiny_engine().transcribe(load_audio_mono(test_data() / "audio" / "stereo_44k.wav")).tokens);
  EXPECT_NEAR(t.duration, 42641 / 16000.0, 1e-9);
  ASSERT_EQ(progress.size(), t.tokens.size());
  for (size_t i = 0; i < progress.size(); ++i) {
    EXPECT_EQ(progress[i].first, static_cast<int>(i + 1));
    EXPECT_LE(progress[i].first, progress[i].second);
  }
  if (!t.eos) EXPECT_EQ(progress.back().first, progress.back().second);  // the header's count was exact
}

// A file whose header does not give its length (a FLAC stream written without seeking back: total
// samples 0, "unknown") must not take the progress past 100 % nor to a total of 0.
TEST(EngineFileInput, ProgressNeverPassesItsTotal) {
  TempDir dir;
  const fs::path p = dir / "unknown_length.flac";
  const std::vector<float> audio = load_audio_mono(test_data() / "audio" / "speech_short.wav");
  testutil::write_audio_file(p, audio, 16000, 1, SF_FORMAT_FLAC | SF_FORMAT_PCM_16);
  // STREAMINFO's total-samples field (36 bits: the low nibble of byte 21, bytes 22-25): 0 is unknown.
  {
    std::fstream f(p, std::ios::in | std::ios::out | std::ios::binary);
    char b[42];
    f.read(b, 42);
    ASSERT_EQ(std::string(b, 4), "fLaC");
    b[21] = static_cast<char>(b[21] & 0xF0);
    b[22] = b[23] = b[24] = b[25] = 0;
    f.seekp(0);
    f.write(b, 42);
  }
  int calls = 0;
  const Transcript t = tiny_engine().transcribe_file(p, {.progress = [&](int done, int total) {
    ++calls;
    EXPECT_GE(total, 1);
    EXPECT_LE(done, total);
  }});
  EXPECT_EQ(calls, static_cast<int>(t.tokens.size()));
  EXPECT_NEAR(t.duration, static_cast<double>(audio.size()) / 16000.0, 1e-9);
}

}  // namespace
}  // namespace voxrt::test
