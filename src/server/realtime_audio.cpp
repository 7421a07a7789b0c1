#include "server/realtime_audio.h"

namespace voxrt::server {

RealtimeAudio::RealtimeAudio(SampleType type, int sample_rate) : type_(type), rate_(sample_rate) { finish(); }

std::vector<float> RealtimeAudio::decode(std::string_view bytes) {
  decoded_.clear();
  decoder_->decode(std::span(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()), decoded_);
  if (!resampler_) return decoded_;
  std::vector<float> out;
  resampler_->process(decoded_, out);
  return out;
}

std::vector<float> RealtimeAudio::finish() {
  std::vector<float> tail;
  if (resampler_) resampler_->finish(tail);
  decoder_ = std::make_unique<PcmDecoder>(PcmFormat{type_, rate_, 1});
  resampler_ = rate_ == kModelRate ? nullptr : std::make_unique<StreamResampler>(rate_, kModelRate);
  return tail;
}

}  // namespace voxrt::server
