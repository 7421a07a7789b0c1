#include "audio/audio_file.h"

#include <sndfile.h>
#include <soxr.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <system_error>

#include "common/error.h"

namespace voxrt {
namespace {

struct SndfileCloser {
  void operator()(SNDFILE* f) const { sf_close(f); }
};
using SndfileHandle = std::unique_ptr<SNDFILE, SndfileCloser>;

// Samples read per sf_readf_float call: bounded so that a header claiming a huge length cannot make
// us allocate it up front; the vector grows only with what actually decodes.
constexpr sf_count_t kReadChunkSamples = 1 << 16;

SndfileHandle open_sndfile(const std::filesystem::path& path, SF_INFO& info) {
  const std::string where = path.string();
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) throw Error(where + ": no such file");
  if (std::filesystem::is_directory(path, ec)) throw Error(where + ": is a directory, not an audio file");
  info = {};
  SNDFILE* f = sf_open(where.c_str(), SFM_READ, &info);
  if (f == nullptr) throw Error(where + ": cannot decode audio: " + sf_strerror(nullptr));
  return SndfileHandle(f);
}

// Reads frames until the decoder stops. A truncated file ends early (or with a decoder error): we
// keep whatever decoded, because partial audio is more useful than none.
std::vector<float> read_all_frames(SNDFILE* f, int channels) {
  const sf_count_t chunk_frames = std::max<sf_count_t>(1, kReadChunkSamples / channels);
  std::vector<float> samples;
  std::vector<float> chunk(static_cast<size_t>(chunk_frames) * static_cast<size_t>(channels));
  for (;;) {
    const sf_count_t got = sf_readf_float(f, chunk.data(), chunk_frames);
    if (got <= 0) break;
    samples.insert(samples.end(), chunk.begin(), chunk.begin() + got * channels);
  }
  return samples;
}

}  // namespace

DecodedAudio read_audio_file(const std::filesystem::path& path) {
  const std::string where = path.string();
  SF_INFO info;
  SndfileHandle f = open_sndfile(path, info);
  check(info.samplerate > 0, where, "invalid sample rate " + std::to_string(info.samplerate));
  check(info.channels > 0, where, "invalid channel count " + std::to_string(info.channels));

  DecodedAudio out;
  out.sample_rate = info.samplerate;
  out.channels = info.channels;
  out.samples = read_all_frames(f.get(), info.channels);
  check(!out.samples.empty(), where, "no audio samples");
  return out;
}

std::vector<float> downmix_to_mono(const std::vector<float>& interleaved, int channels) {
  check(channels > 0, "downmix_to_mono", "invalid channel count " + std::to_string(channels));
  check(interleaved.size() % static_cast<size_t>(channels) == 0, "downmix_to_mono",
        std::to_string(interleaved.size()) + " samples is not a whole number of " +
            std::to_string(channels) + "-channel frames");
  if (channels == 1) return interleaved;
  const size_t frames = interleaved.size() / static_cast<size_t>(channels);
  std::vector<float> mono(frames);
  for (size_t i = 0; i < frames; ++i) {
    const float* frame = interleaved.data() + i * static_cast<size_t>(channels);
    double sum = 0.0;  // double so that the average of many channels is exact to float rounding
    for (int c = 0; c < channels; ++c) sum += frame[c];
    mono[i] = static_cast<float>(sum / channels);
  }
  return mono;
}

std::vector<float> resample(const std::vector<float>& mono, int from_rate, int to_rate) {
  check(from_rate > 0, "resample", "invalid source rate " + std::to_string(from_rate));
  check(to_rate > 0, "resample", "invalid target rate " + std::to_string(to_rate));
  if (from_rate == to_rate || mono.empty()) return mono;

  // round(n * to / from) in integer arithmetic, so long inputs do not lose precision.
  const uint64_t n = mono.size();
  const uint64_t olen = (n * static_cast<uint64_t>(to_rate) + static_cast<uint64_t>(from_rate) / 2) /
                        static_cast<uint64_t>(from_rate);
  std::vector<float> out(olen);
  if (olen == 0) return out;

  const soxr_io_spec_t io = soxr_io_spec(SOXR_FLOAT32_I, SOXR_FLOAT32_I);
  const soxr_quality_spec_t quality = soxr_quality_spec(SOXR_VHQ, 0);
  size_t odone = 0;
  const soxr_error_t err = soxr_oneshot(from_rate, to_rate, 1, mono.data(), mono.size(), nullptr,
                                        out.data(), out.size(), &odone, &io, &quality, nullptr);
  if (err != nullptr) throw Error(std::string("resample: soxr failed: ") + err);
  // soxr produces round(n * ratio) samples for a one-shot call; should it ever stop short, the
  // remainder stays zero (the tail of the filter response) and the length contract still holds.
  return out;
}

std::vector<float> load_audio_mono(const std::filesystem::path& path, int target_rate) {
  check(target_rate > 0, path.string(), "invalid target sample rate " + std::to_string(target_rate));
  DecodedAudio audio = read_audio_file(path);
  std::vector<float> mono = downmix_to_mono(audio.samples, audio.channels);
  return resample(mono, audio.sample_rate, target_rate);
}

void write_wav_f32(const std::filesystem::path& path, const std::vector<float>& mono, int sample_rate) {
  SF_INFO info{};
  info.samplerate = sample_rate;
  info.channels = 1;
  info.format = SF_FORMAT_WAV | SF_FORMAT_FLOAT;
  SNDFILE* f = sf_open(path.c_str(), SFM_WRITE, &info);
  if (!f) throw Error(path.string() + ": cannot write audio: " + sf_strerror(nullptr));
  const sf_count_t n = static_cast<sf_count_t>(mono.size());
  const sf_count_t written = sf_writef_float(f, mono.data(), n);
  const int close_error = sf_close(f);
  if (written != n || close_error != 0) throw Error(path.string() + ": short write (disk full?)");
}

}  // namespace voxrt
