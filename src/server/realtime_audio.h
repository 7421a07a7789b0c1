// A realtime connection's audio as the model takes it: the client's encoding (PCM16 at 24 kHz for
// OpenAI's clients, any of Mistral's encodings and rates, G.711 at 8 kHz) decoded and resampled,
// piece by piece, to 16 kHz mono floats. Pieces may split a sample anywhere; the resampler's tail
// is drained at the end of each utterance so that its last milliseconds are heard.
#pragma once

#include <memory>
#include <string_view>
#include <vector>

#include "audio/pcm_stream.h"
#include "audio/stream_resampler.h"

namespace voxrt::server {

class RealtimeAudio {
 public:
  static constexpr int kModelRate = 16000;
  explicit RealtimeAudio(SampleType type = SampleType::S16, int sample_rate = kModelRate);
  // The samples these bytes complete, at 16 kHz.
  std::vector<float> decode(std::string_view bytes);
  // The end of an utterance: what the resampler still holds (and a partial sample is dropped);
  // the next bytes start afresh.
  std::vector<float> finish();
  SampleType type() const { return type_; }
  int sample_rate() const { return rate_; }

 private:
  SampleType type_;
  int rate_;
  std::unique_ptr<PcmDecoder> decoder_;
  std::unique_ptr<StreamResampler> resampler_;  // null at 16 kHz
  std::vector<float> decoded_;
};

}  // namespace voxrt::server
