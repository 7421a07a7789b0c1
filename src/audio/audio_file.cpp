#include "audio/audio_file.h"

#include <soxr.h>

#include <algorithm>
#include <cstdint>
#include <string>

#include "audio/audio_reader.h"
#include "audio/audio_source.h"
#include "audio/wav_writer.h"
#include "common/error.h"

namespace voxrt {
namespace {

// Samples read per call: bounded so that a header claiming a huge length cannot make us allocate
// it up front; the vector grows only with what actually decodes.
constexpr size_t kReadChunkSamples = 1 << 16;

}  // namespace

DecodedAudio read_audio_file(const std::filesystem::path& path) {
  const std::unique_ptr<AudioSource> opened = open_audio_source(path);
  AudioSource& source = *opened;
  DecodedAudio out;
  out.sample_rate = source.sample_rate();
  out.channels = source.channels();
  const size_t channels = static_cast<size_t>(source.channels());
  const size_t chunk_frames = std::max<size_t>(1, kReadChunkSamples / channels);
  for (;;) {
    const size_t at = out.samples.size();
    out.samples.resize(at + chunk_frames * channels);
    const size_t got = source.read(out.samples.data() + at, chunk_frames);
    out.samples.resize(at + got * channels);
    if (got == 0) break;
  }
  source.check_not_truncated_to_nothing();
  return out;
}

void downmix_frames(const float* interleaved, size_t frames, int channels, float* mono) {
  for (size_t i = 0; i < frames; ++i) {
    const float* frame = interleaved + i * static_cast<size_t>(channels);
    double sum = 0.0;  // double so that the average of many channels is exact to float rounding
    for (int c = 0; c < channels; ++c) sum += frame[c];
    mono[i] = static_cast<float>(sum / channels);
  }
}

std::vector<float> downmix_to_mono(const std::vector<float>& interleaved, int channels) {
  check(channels > 0, "downmix_to_mono", "invalid channel count " + std::to_string(channels));
  check(interleaved.size() % static_cast<size_t>(channels) == 0, "downmix_to_mono",
        std::to_string(interleaved.size()) + " samples is not a whole number of " +
            std::to_string(channels) + "-channel frames");
  if (channels == 1) return interleaved;
  std::vector<float> mono(interleaved.size() / static_cast<size_t>(channels));
  downmix_frames(interleaved.data(), mono.size(), channels, mono.data());
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
  AudioFileReader reader(path, target_rate);
  std::vector<float> all, block;
  while (reader.read(block, kReadChunkSamples) > 0) all.insert(all.end(), block.begin(), block.end());
  return all;
}

void write_wav_f32(const std::filesystem::path& path, const std::vector<float>& mono, int sample_rate) {
  WavFileWriter writer(path, sample_rate);
  writer.write(mono);
  writer.close();
}

}  // namespace voxrt
