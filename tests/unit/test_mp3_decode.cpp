// MP3 through libmpg123 (Mpg123Source), issue 33 point 10: a clean file gives exactly the samples
// libsndfile gives; a damaged one decodes past the damage, and a non-MP3 is refused, without a word
// from libmpg123 on standard error; files joined end to end decode whole (one of another rate or
// channel count converted to the first's); a misnamed WAV and a
// FLAC behind an ID3 tag still go to libsndfile. The MP3s are written here with libsndfile's LAME
// encoder.
#include <gtest/gtest.h>
#include <sndfile.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <numbers>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "audio/audio_file.h"
#include "audio_fixtures.h"
#include "common/error.h"
#include "temp_dir.h"

namespace fs = std::filesystem;

namespace {

using voxrt::testutil::TempDir;

constexpr int kMp3 = SF_FORMAT_MPEG | SF_FORMAT_MPEG_LAYER_III;

// A tone that changes pitch, so that a shifted or repeated piece would not match.
std::vector<float> chirp(int rate, int channels, double seconds) {
  const size_t frames = static_cast<size_t>(seconds * rate);
  std::vector<float> out(frames * static_cast<size_t>(channels));
  for (size_t i = 0; i < frames; ++i) {
    const double t = static_cast<double>(i) / rate;
    for (int c = 0; c < channels; ++c)
      out[i * static_cast<size_t>(channels) + static_cast<size_t>(c)] =
          static_cast<float>(0.4 * std::sin(2.0 * std::numbers::pi * (200.0 + 150.0 * t + 60.0 * c) * t));
  }
  return out;
}

// Writes an MP3 with libsndfile; false where this libsndfile was built without MPEG writing.
bool write_mp3(const fs::path& path, int rate, int channels, double seconds) {
  SF_INFO probe{};
  probe.samplerate = rate;
  probe.channels = channels;
  probe.format = kMp3;
  if (!sf_format_check(&probe)) return false;
  voxrt::testutil::write_audio_file(path, chirp(rate, channels, seconds), rate, channels, kMp3);
  return true;
}

// What libsndfile itself decodes of a file: the samples voxrt read through it before libmpg123.
std::vector<float> libsndfile_samples(const fs::path& path, int* rate, int* channels) {
  SF_INFO info{};
  SNDFILE* f = sf_open(path.c_str(), SFM_READ, &info);
  if (!f) throw std::runtime_error(path.string() + ": " + sf_strerror(nullptr));
  std::vector<float> out, block(4096 * static_cast<size_t>(info.channels));
  for (sf_count_t got; (got = sf_readf_float(f, block.data(), 4096)) > 0;)
    out.insert(out.end(), block.begin(), block.begin() + got * info.channels);
  sf_close(f);
  *rate = info.samplerate;
  *channels = info.channels;
  return out;
}

std::string slurp(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

void write_bytes(const fs::path& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

#define SKIP_WITHOUT_MP3_WRITING(ok) \
  if (!(ok)) GTEST_SKIP() << "this libsndfile cannot write MP3 (no LAME): the MP3 tests are skipped"

TEST(Mp3Decode, CleanFilesGiveLibsndfilesSamplesExactly) {
  TempDir dir;
  struct Case {
    const char* name;
    int rate, channels;
    double seconds;
  };
  for (const Case c : {Case{"mono16k.mp3", 16000, 1, 3.0}, Case{"stereo44k.mp3", 44100, 2, 2.5},
                       Case{"stereo48k.mp3", 48000, 2, 1.0}, Case{"mono8k.mp3", 8000, 1, 2.0}}) {
    SCOPED_TRACE(c.name);
    const fs::path p = dir / c.name;
    SKIP_WITHOUT_MP3_WRITING(write_mp3(p, c.rate, c.channels, c.seconds));
    int rate = 0, channels = 0;
    const std::vector<float> expected = libsndfile_samples(p, &rate, &channels);
    testing::internal::CaptureStderr();
    const voxrt::DecodedAudio got = voxrt::read_audio_file(p);
    const std::string said = testing::internal::GetCapturedStderr();
    EXPECT_EQ(got.sample_rate, rate);
    EXPECT_EQ(got.channels, channels);
    ASSERT_EQ(got.samples.size(), expected.size());
    EXPECT_TRUE(got.samples == expected) << "the samples differ from libsndfile's";
    EXPECT_EQ(said, "");
  }
}

TEST(Mp3Decode, DamageInTheMiddleIsSkippedQuietly) {
  TempDir dir;
  const fs::path clean = dir / "clean.mp3", damaged = dir / "damaged.mp3";
  SKIP_WITHOUT_MP3_WRITING(write_mp3(clean, 16000, 1, 10.0));
  const std::string bytes = slurp(clean);
  // 2000 random bytes replace a stretch a third of the way in: libsndfile (libmpg123's default
  // resync limit, 1 KiB) stopped there, with "Note: Illegal Audio-MPEG-Header" on standard error.
  std::mt19937 rng(7);
  std::string noise(2000, '\0');
  for (char& c : noise) c = static_cast<char>(rng() & 0xFF);
  const size_t at = bytes.size() / 3;
  ASSERT_GT(bytes.size(), at + noise.size());
  write_bytes(damaged, bytes.substr(0, at) + noise + bytes.substr(at + noise.size()));
  testing::internal::CaptureStderr();
  const voxrt::DecodedAudio got = voxrt::read_audio_file(damaged);
  const std::string said = testing::internal::GetCapturedStderr();
  EXPECT_EQ(said, "") << "libmpg123 printed to standard error";
  const double seconds = static_cast<double>(got.samples.size()) / got.sample_rate;
  // What the noise replaced is lost (and a frame on either side), the rest decodes.
  const double kept = 10.0 * (1.0 - static_cast<double>(noise.size()) / static_cast<double>(bytes.size()));
  EXPECT_GT(seconds, kept - 0.5) << "decoding stopped at the damage (" << bytes.size() << " bytes, noise at " << at << ")";
  EXPECT_LE(seconds, 10.0);
}

TEST(Mp3Decode, FilesJoinedEndToEndDecodeWhole) {
  TempDir dir;
  const fs::path one = dir / "one.mp3", joined = dir / "joined.mp3";
  SKIP_WITHOUT_MP3_WRITING(write_mp3(one, 16000, 1, 3.0));
  write_bytes(joined, slurp(one) + slurp(one));  // `cat one.mp3 one.mp3`: libsndfile stopped at the join
  const size_t alone = voxrt::read_audio_file(one).samples.size();
  const size_t both = voxrt::read_audio_file(joined).samples.size();
  // The second file's encoder delay and padding stay in (the gapless data describes the first).
  EXPECT_GE(both, 2 * alone);
  EXPECT_LE(both, 2 * alone + 2 * 1152);
}

TEST(Mp3Decode, AJoinToAnotherFormatIsConvertedToTheFirstQuietly) {
  TempDir dir;
  const fs::path a = dir / "a.mp3", b = dir / "b.mp3", joined = dir / "joined.mp3";
  SKIP_WITHOUT_MP3_WRITING(write_mp3(a, 16000, 1, 2.0));
  ASSERT_TRUE(write_mp3(b, 44100, 2, 1.0));
  write_bytes(joined, slurp(a) + slurp(b));
  testing::internal::CaptureStderr();
  const voxrt::DecodedAudio got = voxrt::read_audio_file(joined);
  const std::string said = testing::internal::GetCapturedStderr();
  EXPECT_EQ(said, "") << "libmpg123 printed to standard error";
  EXPECT_EQ(got.sample_rate, 16000);
  EXPECT_EQ(got.channels, 1);
  // The first file's samples unchanged, then the second's second, mixed to mono at 16 kHz.
  const std::vector<float> first = voxrt::read_audio_file(a).samples;
  ASSERT_GE(got.samples.size(), first.size());
  EXPECT_TRUE(std::equal(first.begin(), first.end(), got.samples.begin()));
  EXPECT_NEAR(static_cast<double>(got.samples.size() - first.size()) / 16000, 1.0, 0.1);
}

TEST(Mp3Decode, TextNamedMp3IsRefusedQuietly) {
  TempDir dir;
  const fs::path p = dir / "notes.mp3";
  write_bytes(p, "these are notes, not audio\n");
  testing::internal::CaptureStderr();
  std::string error;
  try {
    voxrt::read_audio_file(p);
  } catch (const voxrt::Error& e) {
    error = e.what();
  }
  const std::string said = testing::internal::GetCapturedStderr();
  EXPECT_EQ(error, p.string() + ": cannot decode audio: not a readable MP3 file (no MPEG audio frames in it), nor "
                                "another audio format");
  EXPECT_EQ(said, "") << "libmpg123 printed to standard error";
}

TEST(Mp3Decode, AWavNamedMp3IsReadAsTheWavItIs) {
  TempDir dir;
  const fs::path p = dir / "actually_a_wav.mp3";
  const std::vector<float> samples = chirp(16000, 1, 0.5);
  voxrt::testutil::write_audio_file(p, samples, 16000, 1, SF_FORMAT_WAV | SF_FORMAT_FLOAT);
  const voxrt::DecodedAudio got = voxrt::read_audio_file(p);
  EXPECT_EQ(got.sample_rate, 16000);
  EXPECT_TRUE(got.samples == samples);
}

TEST(Mp3Decode, AnId3TagBeforeFlacLeavesItToLibsndfile) {
  TempDir dir;
  const fs::path flac = dir / "plain.flac", tagged = dir / "tagged.flac";
  voxrt::testutil::write_audio_file(flac, chirp(16000, 1, 0.5), 16000, 1, SF_FORMAT_FLAC | SF_FORMAT_PCM_16);
  // An ID3v2.4 tag of 20 bytes of padding, as some taggers put before a FLAC stream.
  const std::string id3 = std::string("ID3\x04\x00\x00\x00\x00\x00\x14", 10) + std::string(20, '\0');
  write_bytes(tagged, id3 + slurp(flac));
  EXPECT_TRUE(voxrt::read_audio_file(tagged).samples == voxrt::read_audio_file(flac).samples);
}

}  // namespace
