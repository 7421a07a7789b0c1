// Reading an audio file incrementally as mono samples at the engine's rate: decoded blocks ->
// channel average (as downmix_to_mono) -> streaming soxr (StreamResampler) -> the resampler's tail
// at the end of the file. Memory is bounded by one block and one read's output whatever the length
// of the file and its rate, so hours of audio transcribe in the memory of a minute.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <vector>

#include "audio/audio_source.h"
#include "audio/stream_resampler.h"

namespace voxrt {

class AudioFileReader {
 public:
  // Frames decoded per call (0.34 s of 48 kHz audio; 1 MiB of floats for 8 channels).
  // Fewer from a file whose rate is below the target's, so that a block's output stays within
  // kBlockFrames samples: upsampling multiplies it (16 times from a 1 kHz file to 16 kHz).
  static constexpr size_t kBlockFrames = 16384;

  // Opens the file (open_audio_source: MP3 by libmpg123, any other format by libsndfile). Throws voxrt::Error("<path>: no such file" /
  // "is a directory, not an audio file" / "cannot decode audio: ..."), as load_audio_mono does.
  explicit AudioFileReader(const std::filesystem::path& path, int target_rate = 16000);
  ~AudioFileReader();
  AudioFileReader(const AudioFileReader&) = delete;
  AudioFileReader& operator=(const AudioFileReader&) = delete;

  const std::filesystem::path& path() const { return source_->path(); }
  int source_rate() const { return source_->sample_rate(); }
  int source_channels() const { return source_->channels(); }
  // What the file announces (see AudioSource::announced_frames): exact for WAV and FLAC, an
  // estimate for some formats, nullopt when unknown. The file may hold fewer (truncated) or more.
  std::optional<int64_t> source_frames() const { return source_->announced_frames(); }
  int target_rate() const { return target_rate_; }
  // The samples read() will deliver in all if the announced frame count is right:
  // round(frames * target / source). nullopt when the count is unknown. For progress, an estimate.
  std::optional<int64_t> expected_samples() const;

  // Replaces `out` with the next samples, at most max_samples (> 0) of them; returns how many. 0
  // means the end of the file (and then always 0). Throws voxrt::Error naming the file when nothing
  // decodes although the header announced frames; a truncated file otherwise ends where decoding
  // stops, with what decoded.
  size_t read(std::vector<float>& out, size_t max_samples);
  int64_t samples_read() const { return delivered_; }  // samples handed out by read() so far

  // Floats held by the reader's buffers (their capacity): bounded by one block and the largest
  // max_samples asked for, however long the file. For tests of that bound.
  size_t buffered_capacity() const;

 private:
  void decode_block();  // one decoded block into pending_; at the end, the resampler's tail

  std::unique_ptr<AudioSource> source_;
  int target_rate_;
  std::unique_ptr<StreamResampler> resampler_;  // null when the rates agree
  size_t block_frames_ = kBlockFrames;          // frames per decoder call
  std::vector<float> interleaved_, mono_;       // one block
  std::vector<float> pending_;                  // output decoded but not yet read
  bool end_of_file_ = false;
  int64_t delivered_ = 0;
};

}  // namespace voxrt
