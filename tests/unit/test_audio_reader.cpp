// The incremental file reader (AudioFileReader) and writer (WavFileWriter): the same samples as the
// whole-file pipeline (read, down-mix, one-shot soxr) bit for bit whatever the read sizes, the same
// errors, and buffers that do not grow with the file.
#include <gtest/gtest.h>
#include <sndfile.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <csignal>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "../test_paths.h"
#include "audio/audio_file.h"
#include "audio/audio_reader.h"
#include "audio/wav_writer.h"
#include "common/error.h"
#include "audio_fixtures.h"
#include "temp_dir.h"

namespace voxrt::test {
namespace {

namespace fs = std::filesystem;
using testutil::TempDir;

// Deterministic noise plus a tone: every sample differs, so an off-by-one in the stream shows.
std::vector<float> signal(size_t frames, int channels, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> noise(-0.2f, 0.2f);
  std::vector<float> v(frames * static_cast<size_t>(channels));
  for (size_t i = 0; i < v.size(); ++i) v[i] = 0.5f * std::sin(0.01f * static_cast<float>(i)) + noise(rng);
  return v;
}

// What the library did before it read incrementally, and still does for whole-file use.
std::vector<float> whole_file_pipeline(const fs::path& path, int target_rate = 16000) {
  const DecodedAudio a = read_audio_file(path);
  return resample(downmix_to_mono(a.samples, a.channels), a.sample_rate, target_rate);
}

std::vector<float> read_all(AudioFileReader& reader, size_t max_samples) {
  std::vector<float> all, block;
  while (reader.read(block, max_samples) > 0) {
    EXPECT_LE(block.size(), max_samples);
    all.insert(all.end(), block.begin(), block.end());
  }
  return all;
}

template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no voxrt::Error thrown)";
}

struct Format {
  int rate, channels, sf_format;
  double seconds;
};

TEST(AudioReader, GivesTheWholeFilePipelineBitForBit) {
  TempDir dir;
  const Format formats[] = {
      {48000, 2, SF_FORMAT_FLAC | SF_FORMAT_PCM_16, 3.7},  // the common case: many blocks, resampled
      {44100, 1, SF_FORMAT_WAV | SF_FORMAT_FLOAT, 2.3},
      {8000, 3, SF_FORMAT_WAV | SF_FORMAT_PCM_16, 1.1},   // upsampled, odd channel count
      {16000, 2, SF_FORMAT_WAV | SF_FORMAT_FLOAT, 1.9},   // no resampling
      {16000, 1, SF_FORMAT_WAV | SF_FORMAT_FLOAT, 0.01},  // shorter than one block
  };
  unsigned seed = 1;
  for (const Format& f : formats) {
    const fs::path p = dir / ("in_" + std::to_string(seed) + ((f.sf_format & SF_FORMAT_FLAC) ? ".flac" : ".wav"));
    testutil::write_audio_file(p, signal(static_cast<size_t>(f.seconds * f.rate), f.channels, seed++), f.rate, f.channels, f.sf_format);
    const std::vector<float> want = whole_file_pipeline(p);
    for (size_t max_samples : {size_t{1}, size_t{777}, size_t{16000}, size_t{480000}}) {
      SCOPED_TRACE(p.filename().string() + ", reads of " + std::to_string(max_samples));
      AudioFileReader reader(p);
      EXPECT_EQ(reader.source_rate(), f.rate);
      EXPECT_EQ(reader.source_channels(), f.channels);
      const std::vector<float> got = read_all(reader, max_samples);
      ASSERT_EQ(got.size(), want.size());
      EXPECT_TRUE(got == want) << "streaming soxr differs from the one-shot call";
      EXPECT_EQ(reader.samples_read(), static_cast<int64_t>(got.size()));
      EXPECT_EQ(reader.expected_samples(), static_cast<int64_t>(got.size()));
      EXPECT_EQ(load_audio_mono(p), want);
    }
  }
}

// stereo_44k_heard.wav is the committed decode of stereo_44k.wav that the golden tokens were made
// from: the streaming reader must hear exactly that.
TEST(AudioReader, HearsTheCommittedDecodeOfStereo44k) {
  AudioFileReader reader(test_data() / "audio" / "stereo_44k.wav");
  const std::vector<float> got = read_all(reader, 4096);
  const std::vector<float> committed = load_audio_mono(test_data() / "audio" / "stereo_44k_heard.wav");
  ASSERT_EQ(got.size(), committed.size());
  float worst = 0;
  for (size_t i = 0; i < got.size(); ++i) worst = std::max(worst, std::abs(got[i] - committed[i]));
  EXPECT_LE(worst, 1e-5f);
}

TEST(AudioReader, ErrorsNameTheFileAsTheWholeFileReaderDoes) {
  TempDir dir;
  fs::create_directories(dir / "sub.wav");
  std::ofstream(dir / "empty.wav").flush();
  {
    std::ofstream garbage(dir / "garbage.wav", std::ios::binary);
    for (int i = 0; i < 4096; ++i) garbage.put(static_cast<char>((i * 7919) & 0xFF));
  }
  const std::pair<std::string, std::string> cases[] = {
      {"nope.wav", ": no such file"},
      {"sub.wav", ": is a directory, not an audio file"},
      {"empty.wav", ": cannot decode audio"},
      {"garbage.wav", ": cannot decode audio"},
  };
  for (const auto& [name, what] : cases) {
    const fs::path p = dir / name;
    const std::string message = error_of([&] { AudioFileReader reader(p); });
    EXPECT_NE(message.find(p.string() + what), std::string::npos) << message;
    EXPECT_EQ(message, error_of([&] { read_audio_file(p); }));
  }
}

TEST(AudioReader, ZeroFrameFileReadsAsEmptyAudio) {
  TempDir dir;
  const fs::path p = dir / "zero.wav";
  testutil::write_audio_file(p, {}, 44100, 2, SF_FORMAT_WAV | SF_FORMAT_PCM_16);
  AudioFileReader reader(p);
  EXPECT_EQ(reader.source_frames(), 0);
  EXPECT_EQ(reader.expected_samples(), 0);
  std::vector<float> block{1.0f};
  EXPECT_EQ(reader.read(block, 1000), 0u);
  EXPECT_TRUE(block.empty());
  EXPECT_EQ(reader.read(block, 1000), 0u);  // and stays at the end
}

TEST(AudioReader, TruncatedFileKeepsWhatDecodes) {
  TempDir dir;
  const fs::path p = dir / "cut.wav";
  testutil::write_audio_file(p, signal(16000, 1, 9), 16000, 1, SF_FORMAT_WAV | SF_FORMAT_PCM_16);
  fs::resize_file(p, fs::file_size(p) - 20000);  // the header still announces 16000 frames
  AudioFileReader reader(p);
  const std::vector<float> got = read_all(reader, 1000);
  EXPECT_EQ(got.size(), 6000u);
  EXPECT_EQ(got, whole_file_pipeline(p));

  const fs::path flac = dir / "cut.flac";
  testutil::write_audio_file(flac, signal(16000, 2, 9), 44100, 2, SF_FORMAT_FLAC | SF_FORMAT_PCM_16);
  testutil::cut_flac_after_metadata(flac);  // nothing of the audio left: a damaged file, not empty audio
  AudioFileReader cut(flac);
  EXPECT_EQ(cut.source_frames(), 16000);
  std::vector<float> block;
  const std::string message = error_of([&] { cut.read(block, 1000); });
  EXPECT_NE(message.find(flac.string() + ": no audio samples decode"), std::string::npos) << message;
}

// 20 minutes of 48 kHz stereo (what whole-file reading held as 460 MB of floats) pass through
// buffers of one read and one block.
struct ReadThrough {
  int64_t total = 0;         // samples read
  size_t most_buffered = 0;  // the reader's buffers at their largest
};
ReadThrough read_through(const fs::path& p, size_t max_samples) {
  AudioFileReader reader(p);
  std::vector<float> block;
  ReadThrough r;
  while (reader.read(block, max_samples) > 0) {
    r.total += static_cast<int64_t>(block.size());
    r.most_buffered = std::max(r.most_buffered, reader.buffered_capacity());
  }
  return r;
}

TEST(AudioReader, BuffersDoNotGrowWithTheFile) {
  TempDir dir;
  const fs::path p = dir / "long.wav";
  const uint64_t frames = 48000ull * 60 * 20;
  testutil::write_sparse_silent_wav(p, 48000, 2, frames);
  const size_t max_samples = 16000 * 30;
  const ReadThrough r = read_through(p, max_samples);
  EXPECT_EQ(r.total, 16000ll * 60 * 20);
  // One read's output, one block in and its down-mix, and the resampler's output of one block.
  const size_t bound = 2 * max_samples + 4 * AudioFileReader::kBlockFrames;
  EXPECT_LE(r.most_buffered, bound) << "the reader's buffers grew with the file";
}

// Fuzzing found a WAV of 181 Hz: each block of 16384 frames came out of the resampler as 1.4 M
// samples (88 times the buffers of a 16 kHz file); a rate of 1 Hz would have made 1 GB of one. Files
// below the target's rate are read in blocks that resample to at most kBlockFrames samples.
TEST(AudioReader, LowRateFileKeepsTheBuffersOfOneBlock) {
  TempDir dir;
  const fs::path p = dir / "1k.wav";
  testutil::write_sparse_silent_wav(p, 1000, 1, 1000 * 60 * 10);  // the lowest rate read: 16x upsampled
  const size_t max_samples = 1 << 16;  // what load_audio_mono reads an upload in
  const ReadThrough r = read_through(p, max_samples);
  EXPECT_EQ(r.total, 16000ll * 60 * 10);
  const size_t bound = 2 * max_samples + 4 * AudioFileReader::kBlockFrames;  // as for a 48 kHz file
  EXPECT_LE(r.most_buffered, bound) << "a block of a low-rate file resampled to more than a block";
}

// Rates no audio file has, which a header may state all the same: fuzzing found the 181 Hz WAV above,
// then an AIFF of 1 Hz (a frame of it is 16000 samples, all held back by the filter until the end:
// 100 MB from 4 KB); at 2^31 - 1 Hz soxr takes seconds over a short file.
TEST(AudioReader, RatesOutsideAudioFilesAreRefusedNamingTheRate) {
  TempDir dir;
  for (int rate : {1, 181, 999, 1'000'001, 2'147'483'647}) {
    const fs::path p = dir / ("rate_" + std::to_string(rate) + ".wav");
    testutil::write_sparse_silent_wav(p, rate, 1, 1000);
    const std::string message = error_of([&] { AudioFileReader reader(p); });
    EXPECT_NE(message.find(p.string() + ": sample rate " + std::to_string(rate) + " Hz is outside the 1000 to 1000000 Hz"),
              std::string::npos) << message;
    EXPECT_EQ(message, error_of([&] { read_audio_file(p); }));
  }
  for (int rate : {1000, 1'000'000}) {
    const fs::path p = dir / ("rate_" + std::to_string(rate) + ".wav");
    testutil::write_sparse_silent_wav(p, rate, 1, 1000);
    AudioFileReader reader(p);
    EXPECT_EQ(reader.source_rate(), rate);
    EXPECT_EQ(read_all(reader, 4096).size(), static_cast<size_t>(*reader.expected_samples()));
  }
}

TEST(WavWriter, WritesBlocksAsOneFile) {
  TempDir dir;
  const fs::path p = dir / "out.wav";
  const std::vector<float> x = signal(40000, 1, 5);
  WavFileWriter w(p, 16000);
  for (size_t at = 0; at < x.size(); at += 4321)
    w.write(std::span<const float>(x).subspan(at, std::min<size_t>(4321, x.size() - at)));
  w.close();
  EXPECT_EQ(w.samples_written(), 40000);
  const DecodedAudio back = read_audio_file(p);
  EXPECT_EQ(back.sample_rate, 16000);
  EXPECT_EQ(back.channels, 1);
  EXPECT_EQ(back.samples, x);  // 32-bit float: exact
}

TEST(WavWriter, ErrorsNameTheOutput) {
  TempDir dir;
  const fs::path missing_dir = dir / "no" / "such" / "out.wav";
  std::string m = error_of([&] { WavFileWriter w(missing_dir, 16000); });
  EXPECT_NE(m.find(missing_dir.string() + ": cannot write audio"), std::string::npos) << m;
  m = error_of([&] { write_wav_f32("/dev/full", std::vector<float>(100000, 0.5f), 16000); });
  EXPECT_NE(m.find("/dev/full"), std::string::npos) << m;
}

// A write that fails half way (here the file size limit, as a full disk would) is an error naming
// the file, not a short file reported as written. Run in a child: the limit is per process.
TEST(WavWriter, FailedWriteMidFileIsAnError) {
  TempDir dir;
  const fs::path p = dir / "big.wav";
  const fs::path message_file = dir / "message";
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    std::signal(SIGXFSZ, SIG_IGN);  // the write then fails with EFBIG instead of killing us
    const rlimit limit{100000, 100000};
    setrlimit(RLIMIT_FSIZE, &limit);
    std::string m = "(no error)";
    try {
      WavFileWriter w(p, 16000);
      const std::vector<float> block(16000, 0.25f);
      for (int i = 0; i < 4; ++i) w.write(block);
      w.close();
    } catch (const Error& e) {
      m = e.what();
    }
    std::ofstream(message_file) << m;
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  std::ifstream in(message_file);
  const std::string m((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(m.find(p.string() + ": write failed"), std::string::npos) << m;
}

}  // namespace
}  // namespace voxrt::test
