// An audio file opened for reading: its rate, channel count and announced length, and its frames
// read in blocks. Shared by the whole-file reader (read_audio_file) and the incremental one
// (AudioFileReader), so both fail with the same messages. open_audio_source() picks the decoder:
// MPEG audio (MP3) through libmpg123 (Mpg123Source), every other format through libsndfile
// (SndfileSource).
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>

namespace voxrt {

class AudioSource {
 public:
  // The sample rates read. A header may state any rate from 1 to 2^31 - 1 Hz, and resampling from
  // the extremes costs out of all proportion to the file: below 1 kHz (no speech fits under its
  // 500 Hz Nyquist frequency) a frame becomes up to 16000 samples at 16 kHz, which the filter holds
  // back and releases at the end (a 4 KB WAV at 1 Hz: 33 minutes, 100 MB at once); far above 1 MHz
  // (the PCM stream input's limit too; audio hardware and formats stop at 768 kHz) soxr slows down
  // by orders of magnitude (5 s for a 200 KB WAV at 2^31 - 1 Hz).
  static constexpr int kMinSampleRate = 1000;
  static constexpr int kMaxSampleRate = 1'000'000;

  virtual ~AudioSource() = default;
  AudioSource(const AudioSource&) = delete;
  AudioSource& operator=(const AudioSource&) = delete;

  const std::filesystem::path& path() const { return path_; }
  int sample_rate() const { return sample_rate_; }
  int channels() const { return channels_; }
  // The frame count the file announces: for WAV what the file holds (libsndfile corrects a header
  // that promises more), for FLAC its header's count, for MP3 its Xing/Info header's or a scan of
  // its frames; nullopt where it is unknown (a FLAC stream written without seeking back).
  std::optional<int64_t> announced_frames() const { return announced_frames_; }

  // Reads up to `frames` interleaved frames into dst. Returns 0 at the end of the audio, which for a
  // truncated or damaged file is where decoding stops: whatever decoded is kept.
  size_t read(float* dst, size_t frames);
  int64_t frames_read() const { return frames_read_; }
  // Called at the end: throws voxrt::Error naming the file when not one frame decoded although the
  // header announced some (a header whose data was cut off). A file announcing 0 frames is empty
  // audio, not an error.
  void check_not_truncated_to_nothing() const;

 protected:
  explicit AudioSource(std::filesystem::path path) : path_(std::move(path)) {}
  // Called once by the decoder's constructor; throws voxrt::Error naming the file for a rate outside
  // [kMinSampleRate, kMaxSampleRate] or no channels.
  void set_format(int64_t sample_rate, int channels, std::optional<int64_t> announced_frames);
  // Up to `frames` frames into dst; 0 at the end of the audio or at a decoding error.
  virtual size_t decode(float* dst, size_t frames) = 0;

 private:
  std::filesystem::path path_;
  int sample_rate_ = 0;
  int channels_ = 0;
  std::optional<int64_t> announced_frames_;
  int64_t frames_read_ = 0;
};

// Opens an audio file of any format voxrt reads. Throws voxrt::Error("<path>: no such file" / "is a
// directory, not an audio file" / "cannot decode audio: ..." / "sample rate ... is outside ...").
std::unique_ptr<AudioSource> open_audio_source(const std::filesystem::path& path);

}  // namespace voxrt
