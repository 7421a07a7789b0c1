// Audio decoding (libsndfile), downmix and resampling (soxr): files are written with libsndfile into
// a temporary directory, so every expected value is known exactly.
#include <gtest/gtest.h>
#include <sndfile.h>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <numbers>
#include <random>
#include <string>
#include <vector>

#include "audio/audio_file.h"
#include "common/error.h"
#include "audio_fixtures.h"
#include "temp_dir.h"

namespace fs = std::filesystem;
using voxrt::DecodedAudio;
using voxrt::Error;

namespace {

using voxrt::testutil::TempDir;

std::vector<float> sine(double freq, int rate, size_t n, double amplitude = 0.5, double phase = 0.0) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i)
    v[i] = static_cast<float>(amplitude * std::sin(2.0 * std::numbers::pi * freq * static_cast<double>(i) / rate + phase));
  return v;
}

// Interleaves equal-length channels.
std::vector<float> interleave(const std::vector<std::vector<float>>& channels) {
  std::vector<float> out;
  for (size_t i = 0; i < channels[0].size(); ++i)
    for (const auto& c : channels) out.push_back(c[i]);
  return out;
}

void write_float_file(const fs::path& path, const std::vector<float>& interleaved, int rate, int channels, int format) {
  voxrt::testutil::write_audio_file(path, interleaved, rate, channels, format);
}

void write_s16_wav(const fs::path& path, const std::vector<int16_t>& samples, int rate) {
  SF_INFO info{};
  info.samplerate = rate;
  info.channels = 1;
  info.format = SF_FORMAT_WAV | SF_FORMAT_PCM_16;
  SNDFILE* f = sf_open(path.c_str(), SFM_WRITE, &info);
  ASSERT_NE(f, nullptr) << sf_strerror(nullptr);
  EXPECT_EQ(sf_writef_short(f, samples.data(), static_cast<sf_count_t>(samples.size())),
            static_cast<sf_count_t>(samples.size()));
  sf_close(f);
}

void write_bytes(const fs::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out << bytes;
}

// Runs f, expecting a voxrt::Error whose message contains `needle`.
template <typename F>
void expect_error_containing(F&& f, const std::string& needle) {
  try {
    f();
    ADD_FAILURE() << "expected voxrt::Error containing \"" << needle << "\"";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << "message: " << e.what();
  }
}

}  // namespace

TEST(AudioFile, ReadsFloatWavExactly) {
  TempDir dir;
  const auto samples = sine(440.0, 16000, 8000);
  write_float_file(dir / "mono.wav", samples, 16000, 1, SF_FORMAT_WAV | SF_FORMAT_FLOAT);
  const DecodedAudio a = voxrt::read_audio_file(dir / "mono.wav");
  EXPECT_EQ(a.sample_rate, 16000);
  EXPECT_EQ(a.channels, 1);
  EXPECT_EQ(a.samples, samples);
}

TEST(AudioFile, ReadsPcm16WavAsScaledFloats) {
  TempDir dir;
  std::vector<int16_t> pcm(4000);
  for (size_t i = 0; i < pcm.size(); ++i)
    pcm[i] = static_cast<int16_t>(std::lround(20000.0 * std::sin(2.0 * std::numbers::pi * 300.0 * i / 8000.0)));
  pcm[0] = -32768;
  pcm[1] = 32767;
  write_s16_wav(dir / "s16.wav", pcm, 8000);
  const DecodedAudio a = voxrt::read_audio_file(dir / "s16.wav");
  EXPECT_EQ(a.sample_rate, 8000);
  ASSERT_EQ(a.samples.size(), pcm.size());
  // libsndfile's normalised float reading divides 16-bit PCM by 32768: exact in float.
  for (size_t i = 0; i < pcm.size(); ++i) ASSERT_EQ(a.samples[i], static_cast<float>(pcm[i]) / 32768.0f) << i;
}

TEST(AudioFile, StereoDownmixIsChannelAverage) {
  TempDir dir;
  const auto left = sine(440.0, 48000, 4800);
  const auto right = sine(1000.0, 48000, 4800, 0.25, 0.3);
  write_float_file(dir / "stereo.wav", interleave({left, right}), 48000, 2, SF_FORMAT_WAV | SF_FORMAT_FLOAT);
  const DecodedAudio a = voxrt::read_audio_file(dir / "stereo.wav");
  EXPECT_EQ(a.channels, 2);
  EXPECT_EQ(a.sample_rate, 48000);
  const auto mono = voxrt::downmix_to_mono(a.samples, a.channels);
  ASSERT_EQ(mono.size(), left.size());
  for (size_t i = 0; i < mono.size(); ++i)
    ASSERT_EQ(mono[i], static_cast<float>((static_cast<double>(left[i]) + right[i]) / 2.0)) << i;
}

TEST(AudioFile, DownmixRejectsBadShapes) {
  EXPECT_THROW(voxrt::downmix_to_mono({1, 2, 3}, 0), Error);
  EXPECT_THROW(voxrt::downmix_to_mono({1, 2, 3}, 2), Error);
  EXPECT_EQ(voxrt::downmix_to_mono({1, 2, 3}, 1), (std::vector<float>{1, 2, 3}));
  EXPECT_EQ(voxrt::downmix_to_mono({1, 3, 5, 7, 0, -3}, 3), (std::vector<float>{3, 4 / 3.0f}));
}

TEST(AudioFile, LoadsStereoFlacAt44kToMono16k) {
  TempDir dir;
  const size_t n = 44100;
  const auto tone = sine(440.0, 44100, n);
  write_float_file(dir / "stereo.flac", interleave({tone, tone}), 44100, 2, SF_FORMAT_FLAC | SF_FORMAT_PCM_16);
  const auto mono = voxrt::load_audio_mono(dir / "stereo.flac");
  EXPECT_EQ(mono.size(), 16000u);
  // 16-bit quantisation plus resampling: still the same 440 Hz tone.
  const auto expected = sine(440.0, 16000, 16000);
  for (size_t i = 500; i + 500 < mono.size(); ++i) ASSERT_NEAR(mono[i], expected[i], 2e-3) << i;
}

TEST(AudioResample, OutputLengthIsRoundedRatio) {
  const std::pair<int, int> rates[] = {{44100, 16000}, {48000, 16000}, {8000, 16000}, {22050, 16000}, {16000, 44100}};
  for (auto [from, to] : rates) {
    for (size_t n : {1u, 2u, 3u, 441u, 1000u, 44101u, 96001u}) {
      const std::vector<float> in(n, 0.1f);
      const auto out = voxrt::resample(in, from, to);
      const auto expected = static_cast<size_t>(std::llround(static_cast<double>(n) * to / from));
      EXPECT_EQ(out.size(), expected) << from << "->" << to << " n=" << n;
    }
  }
}

TEST(AudioResample, SameRateAndEmptyInputAreIdentity) {
  const auto tone = sine(100.0, 16000, 333);
  EXPECT_EQ(voxrt::resample(tone, 16000, 16000), tone);
  EXPECT_TRUE(voxrt::resample({}, 44100, 16000).empty());
  EXPECT_THROW(voxrt::resample(tone, 0, 16000), Error);
  EXPECT_THROW(voxrt::resample(tone, 16000, -1), Error);
}

// A pure tone resampled by soxr must equal the analytic tone at the new rate (the one-shot call
// compensates the filter delay), away from the edges where the filter sees the implicit zeros.
TEST(AudioResample, SineMatchesAnalyticSine) {
  for (int from : {44100, 48000, 8000}) {
    const size_t n = static_cast<size_t>(from) * 2;
    const auto in = sine(440.0, from, n);
    const auto out = voxrt::resample(in, from, 16000);
    ASSERT_EQ(out.size(), 32000u);
    const auto expected = sine(440.0, 16000, out.size());
    double max_err = 0.0;
    for (size_t i = 800; i + 800 < out.size(); ++i)
      max_err = std::max(max_err, std::fabs(static_cast<double>(out[i]) - expected[i]));
    EXPECT_LT(max_err, 1e-3) << "from " << from;
  }
}

TEST(AudioFile, MissingFileThrows) {
  TempDir dir;
  const fs::path p = dir / "nope.wav";
  expect_error_containing([&] { voxrt::read_audio_file(p); }, p.string() + ": no such file");
  expect_error_containing([&] { voxrt::load_audio_mono(p); }, p.string());
}

TEST(AudioFile, EmptyFileThrows) {
  TempDir dir;
  const fs::path p = dir / "empty.wav";
  write_bytes(p, "");
  expect_error_containing([&] { voxrt::read_audio_file(p); }, p.string() + ": cannot decode audio");
}

TEST(AudioFile, GarbageBytesThrow) {
  TempDir dir;
  const fs::path p = dir / "garbage.wav";
  std::mt19937 rng(1234);
  std::string bytes(4096, '\0');
  for (auto& c : bytes) c = static_cast<char>(rng() & 0xFF);
  write_bytes(p, bytes);
  expect_error_containing([&] { voxrt::read_audio_file(p); }, p.string());
}

// A file named .mp3 that holds no MP3 (issue 33): libsndfile said "File does not exist or is not a
// regular file (possibly a pipe?)"; the message says what the file is not.
TEST(AudioFile, NotAnMp3NamedMp3IsSaidToBeNoReadableMp3) {
  TempDir dir;
  for (const std::string name : {"notes.mp3", "NOTES.MP3"}) {
    const fs::path p = dir / name;
    write_bytes(p, "these are notes, not audio\n");
    expect_error_containing([&] { voxrt::read_audio_file(p); }, p.string() + ": cannot decode audio: not a readable MP3 file");
    try {
      voxrt::read_audio_file(p);
    } catch (const Error& e) {
      EXPECT_EQ(std::string(e.what()).find("does not exist"), std::string::npos) << e.what();
    }
  }
}

TEST(AudioFile, DirectoryThrows) {
  TempDir dir;
  fs::create_directories(dir / "sub.wav");
  expect_error_containing([&] { voxrt::read_audio_file(dir / "sub.wav"); }, (dir / "sub.wav").string());
}

// A WAV whose header promises more data than the file holds decodes the part that is there.
TEST(AudioFile, TruncatedWavDecodesAvailablePart) {
  TempDir dir;
  const fs::path p = dir / "truncated.wav";
  std::vector<int16_t> pcm(16000);
  for (size_t i = 0; i < pcm.size(); ++i) pcm[i] = static_cast<int16_t>(i % 1000);
  write_s16_wav(p, pcm, 16000);
  const auto full_size = fs::file_size(p);
  const auto header = full_size - pcm.size() * 2;
  fs::resize_file(p, header + 1001);  // 500 whole frames and half of one more

  DecodedAudio a;
  try {
    a = voxrt::read_audio_file(p);
  } catch (const Error& e) {
    FAIL() << "truncated file should decode its available part: " << e.what();
  }
  ASSERT_GE(a.samples.size(), 500u);
  ASSERT_LE(a.samples.size(), 501u);
  for (size_t i = 0; i < 500; ++i) ASSERT_EQ(a.samples[i], static_cast<float>(pcm[i]) / 32768.0f) << i;
}

// A file of 0 frames is empty audio (an empty transcript), not an error.
TEST(AudioFile, HeaderOnlyWavIsEmptyAudio) {
  TempDir dir;
  const fs::path p = dir / "zero.wav";
  write_s16_wav(p, {}, 16000);
  const DecodedAudio a = voxrt::read_audio_file(p);
  EXPECT_TRUE(a.samples.empty());
  EXPECT_EQ(a.sample_rate, 16000);
  EXPECT_TRUE(voxrt::load_audio_mono(p).empty());
}

// libsndfile counts a WAV's frames from what the file holds: cut right after its header, it is
// empty audio. A FLAC announces its length in its header: when none of it decodes, the file is
// damaged, an error rather than empty audio.
TEST(AudioFile, TruncatedToHeaderIsEmptyWavOrDamagedFlac) {
  TempDir dir;
  const fs::path wav = dir / "cut.wav";
  write_s16_wav(wav, std::vector<int16_t>(1000, 7), 16000);
  fs::resize_file(wav, fs::file_size(wav) - 2000);  // header intact, every data byte gone
  EXPECT_TRUE(voxrt::read_audio_file(wav).samples.empty());

  const fs::path flac = dir / "cut.flac";
  write_float_file(flac, sine(440.0, 16000, 16000), 16000, 1, SF_FORMAT_FLAC | SF_FORMAT_PCM_16);
  voxrt::testutil::cut_flac_after_metadata(flac);
  expect_error_containing([&] { voxrt::read_audio_file(flac); }, flac.string() + ": no audio samples decode");
  expect_error_containing([&] { voxrt::load_audio_mono(flac); }, flac.string() + ": no audio samples decode");
}
