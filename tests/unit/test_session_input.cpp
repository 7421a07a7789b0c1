// A live session fed audio at any rate and channel count (SessionOptions::sample_rate, channels):
// it hears exactly what transcribe_file hears of a file holding those samples, however the feeds
// cut the frames; bad options are refused when the session opens. And the version macros.
#include <gtest/gtest.h>
#include <sndfile.h>

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

Engine& tiny_engine() {
  static std::unique_ptr<Engine> engine = Engine::load(test_data() / "tiny" / "mistral", {.device = Device::Cpu});
  return *engine;
}

// jfk.wav at 48 kHz in two channels that differ (the right one at half the left's level).
std::vector<float> stereo_48k() {
  const std::vector<float> mono = resample(load_audio_mono(test_data() / "audio" / "jfk.wav"), 16000, 48000);
  std::vector<float> frames(2 * mono.size());
  for (size_t i = 0; i < mono.size(); ++i) {
    frames[2 * i] = mono[i];
    frames[2 * i + 1] = 0.5f * mono[i];
  }
  return frames;
}

TEST(SessionInput, StereoAt48kHzHearsWhatTheFileGives) {
  const std::vector<float> frames = stereo_48k();
  const testutil::TempDir dir;
  const auto file = dir / "stereo48k.wav";
  testutil::write_audio_file(file, frames, 48000, 2, SF_FORMAT_WAV | SF_FORMAT_FLOAT);
  const Transcript offline = tiny_engine().transcribe_file(file);
  ASSERT_FALSE(offline.tokens.empty());

  for (const size_t chunk : {size_t{997}, size_t{48000}}) {  // odd: frames split across feeds
    SCOPED_TRACE("chunks of " + std::to_string(chunk) + " samples");
    auto session = tiny_engine().open_session({.sample_rate = 48000, .channels = 2, .stop_at_eos = true});
    for (size_t at = 0; at < frames.size(); at += chunk)
      session->feed(std::span<const float>(frames).subspan(at, std::min(chunk, frames.size() - at)));
    session->flush();
    const Transcript live = session->transcript();
    EXPECT_EQ(live.tokens, offline.tokens);
    EXPECT_EQ(live.text, offline.text);
    EXPECT_NEAR(live.duration, offline.duration, 1e-6);
  }
}

TEST(SessionInput, RatesAndChannelsOutsideTheirRangesAreRefusedAtOpen) {
  for (const int rate : {-16000, 999, 1'000'001}) {
    try {
      tiny_engine().open_session({.sample_rate = rate});
      ADD_FAILURE() << rate << " Hz was taken";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("SessionOptions::sample_rate " + std::to_string(rate)), std::string::npos)
          << e.what();
    }
  }
  for (const int channels : {0, -1, 257}) {
    try {
      tiny_engine().open_session({.channels = channels});
      ADD_FAILURE() << channels << " channels were taken";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("SessionOptions::channels"), std::string::npos) << e.what();
    }
  }
  EXPECT_EQ(tiny_engine().stats().sessions_open, 0);  // nothing was reserved for them
}

TEST(Version, MacrosFollowTheProjectAndTheLibrarySaysItsOwn) {
  EXPECT_STREQ(VOXRT_VERSION_STRING, VOXRT_PROJECT_VERSION);
  EXPECT_STREQ(version(), VOXRT_VERSION_STRING);
  EXPECT_EQ(VOXRT_VERSION, VOXRT_VERSION_MAJOR * 10000 + VOXRT_VERSION_MINOR * 100 + VOXRT_VERSION_PATCH);
  EXPECT_EQ(std::to_string(VOXRT_VERSION_MAJOR) + "." + std::to_string(VOXRT_VERSION_MINOR) + "." +
                std::to_string(VOXRT_VERSION_PATCH),
            VOXRT_VERSION_STRING);
}

}  // namespace
}  // namespace voxrt::test
