#include "audio/audio_reader.h"

#include <algorithm>
#include <string>

#include "audio/audio_file.h"
#include "common/error.h"

namespace voxrt {

AudioFileReader::AudioFileReader(const std::filesystem::path& path, int target_rate)
    : source_(open_audio_source(path)), target_rate_(target_rate) {
  check(target_rate > 0, path.string(), "invalid target sample rate " + std::to_string(target_rate));
  if (source_->sample_rate() != target_rate)
    resampler_ = std::make_unique<StreamResampler>(source_->sample_rate(), target_rate);
  // Upsampling by target/source: so many frames make about kBlockFrames samples (see kBlockFrames).
  if (source_->sample_rate() < target_rate)
    block_frames_ = std::max<size_t>(1, kBlockFrames * static_cast<size_t>(source_->sample_rate()) /
                                            static_cast<size_t>(target_rate));
  interleaved_.resize(block_frames_ * static_cast<size_t>(source_->channels()));
  if (source_->channels() > 1) mono_.resize(block_frames_);
}

AudioFileReader::~AudioFileReader() = default;

std::optional<int64_t> AudioFileReader::expected_samples() const {
  const std::optional<int64_t> frames = source_frames();
  if (!frames) return std::nullopt;
  // round(frames * to / from) as the resampler's length contract, in integers (hours of audio).
  const auto from = static_cast<uint64_t>(source_rate()), to = static_cast<uint64_t>(target_rate_);
  return static_cast<int64_t>((static_cast<uint64_t>(*frames) * to + from / 2) / from);
}

void AudioFileReader::decode_block() {
  const size_t frames = source_->read(interleaved_.data(), block_frames_);
  if (frames == 0) {
    end_of_file_ = true;
    source_->check_not_truncated_to_nothing();
    if (resampler_) resampler_->finish(pending_);
    return;
  }
  const float* mono = interleaved_.data();
  if (source_->channels() > 1) {
    downmix_frames(interleaved_.data(), frames, source_->channels(), mono_.data());
    mono = mono_.data();
  }
  if (resampler_)
    resampler_->process(std::span<const float>(mono, frames), pending_);
  else
    pending_.insert(pending_.end(), mono, mono + frames);
}

size_t AudioFileReader::read(std::vector<float>& out, size_t max_samples) {
  check(max_samples > 0, path().string(), "read of 0 samples");
  out.clear();
  while (pending_.size() < max_samples && !end_of_file_) decode_block();
  const auto take = static_cast<std::ptrdiff_t>(std::min(max_samples, pending_.size()));
  out.assign(pending_.begin(), pending_.begin() + take);
  // What is left is less than one block's output, so pending_ never holds more than max_samples
  // plus a block.
  pending_.erase(pending_.begin(), pending_.begin() + take);
  delivered_ += static_cast<int64_t>(take);
  return static_cast<size_t>(take);
}

size_t AudioFileReader::buffered_capacity() const {
  return interleaved_.capacity() + mono_.capacity() + pending_.capacity();
}

}  // namespace voxrt
