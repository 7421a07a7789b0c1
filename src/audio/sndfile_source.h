// An audio file opened for reading with libsndfile, frames read in blocks. Shared by the whole-file
// reader (read_audio_file) and the incremental one (AudioFileReader), so both fail with the same
// messages.
#pragma once

#include <sndfile.h>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>

namespace voxrt {

class SndfileSource {
 public:
  // The sample rates read. A header may state any rate from 1 to 2^31 - 1 Hz, and resampling from
  // the extremes costs out of all proportion to the file: below 1 kHz (no speech fits under its
  // 500 Hz Nyquist frequency) a frame becomes up to 16000 samples at 16 kHz, which the filter holds
  // back and releases at the end (a 4 KB WAV at 1 Hz: 33 minutes, 100 MB at once); far above 1 MHz
  // (the PCM stream input's limit too; audio hardware and formats stop at 768 kHz) soxr slows down
  // by orders of magnitude (5 s for a 200 KB WAV at 2^31 - 1 Hz).
  static constexpr int kMinSampleRate = 1000;
  static constexpr int kMaxSampleRate = 1'000'000;

  // Throws voxrt::Error("<path>: no such file" / "is a directory, ..." / "cannot decode audio: ..." /
  // "sample rate ... is outside ...").
  explicit SndfileSource(const std::filesystem::path& path);

  const std::filesystem::path& path() const { return path_; }
  int sample_rate() const { return info_.samplerate; }
  int channels() const { return info_.channels; }
  // The frame count the file announces: for WAV what the file holds (libsndfile corrects a header
  // that promises more), for FLAC its header's count, an estimate for some compressed formats (MP3);
  // nullopt where it is unknown (a FLAC stream written without seeking back, a pipe).
  std::optional<int64_t> announced_frames() const;

  // Reads up to `frames` interleaved frames into dst. Returns 0 at the end of the audio, which for a
  // truncated file is where decoding stops: whatever decoded is kept.
  size_t read(float* dst, size_t frames);
  int64_t frames_read() const { return frames_read_; }
  // Called at the end: throws voxrt::Error naming the file when not one frame decoded although the
  // header announced some (a header whose data was cut off). A file announcing 0 frames is empty
  // audio, not an error.
  void check_not_truncated_to_nothing() const;

 private:
  std::filesystem::path path_;
  SF_INFO info_{};
  struct Closer {
    void operator()(SNDFILE* f) const { sf_close(f); }
  };
  std::unique_ptr<SNDFILE, Closer> file_;
  int64_t frames_read_ = 0;
};

}  // namespace voxrt
