#include "engine/session_input.h"

#include <string>

#include "audio/audio_file.h"
#include "audio/audio_source.h"
#include "voxrt/error.h"

namespace voxrt {

SessionInput::SessionInput(int sample_rate, int channels, int model_rate) : channels_(channels) {
  if (sample_rate < AudioSource::kMinSampleRate || sample_rate > AudioSource::kMaxSampleRate)
    throw InputError("SessionOptions::sample_rate " + std::to_string(sample_rate) + ": expected " +
                     std::to_string(AudioSource::kMinSampleRate) + " to " +
                     std::to_string(AudioSource::kMaxSampleRate) + " Hz (0: the model's " +
                     std::to_string(model_rate) + ")");
  if (channels < 1 || channels > kMaxChannels)
    throw InputError("SessionOptions::channels " + std::to_string(channels) + ": expected 1 to " +
                     std::to_string(kMaxChannels));
  if (sample_rate != model_rate) resampler_ = std::make_unique<StreamResampler>(sample_rate, model_rate);
}

void SessionInput::take_mono(std::span<const float> mono, std::vector<float>& out) {
  if (resampler_) {
    resampler_->process(mono, out);
  } else {
    out.insert(out.end(), mono.begin(), mono.end());
  }
}

void SessionInput::convert(std::span<const float> in, std::vector<float>& out) {
  if (channels_ == 1) return take_mono(in, out);
  // Complete the frame the last feed began, then whole frames, then keep the rest.
  if (!partial_.empty()) {
    const size_t need = static_cast<size_t>(channels_) - partial_.size();
    const size_t n = std::min(need, in.size());
    partial_.insert(partial_.end(), in.begin(), in.begin() + static_cast<long>(n));
    in = in.subspan(n);
    if (partial_.size() < static_cast<size_t>(channels_)) return;
    mono_.resize(1);
    downmix_frames(partial_.data(), 1, channels_, mono_.data());
    take_mono(mono_, out);
    partial_.clear();
  }
  const size_t frames = in.size() / static_cast<size_t>(channels_);
  mono_.resize(frames);
  downmix_frames(in.data(), frames, channels_, mono_.data());
  take_mono(mono_, out);
  partial_.assign(in.begin() + static_cast<long>(frames * channels_), in.end());
}

void SessionInput::finish(std::vector<float>& out) {
  partial_.clear();
  if (resampler_) resampler_->finish(out);
}

}  // namespace voxrt
