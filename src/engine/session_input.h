// What a live session is fed, made into what the model hears: interleaved frames of any channel
// count averaged to mono (as files are, audio/audio_file.h's downmix) and any rate resampled to the
// model's (the streaming soxr filter files go through, so a session fed a file's samples in any
// chunks hears exactly what `transcribe` of that file hears). A frame split across two feeds is
// kept until its other channels come.
#pragma once

#include <memory>
#include <span>
#include <vector>

#include "audio/stream_resampler.h"

namespace voxrt {

class SessionInput {
 public:
  // Throws voxrt::InputError for a rate outside 1 kHz to 1 MHz or channels outside 1 to 256.
  SessionInput(int sample_rate, int channels, int model_rate);

  // True when the input is the model's already (mono at its rate): feeds pass through untouched.
  bool passthrough() const { return !resampler_ && channels_ == 1; }
  // Appends the model's samples this input completes.
  void convert(std::span<const float> interleaved, std::vector<float>& out);
  // End of input: the resampler's held-back tail. A frame left incomplete is dropped.
  void finish(std::vector<float>& out);

  static constexpr int kMaxChannels = 256;

 private:
  void take_mono(std::span<const float> mono, std::vector<float>& out);

  int channels_;
  std::unique_ptr<StreamResampler> resampler_;  // none at the model's rate
  std::vector<float> partial_;                  // the samples of a frame not yet complete
  std::vector<float> mono_;
};

}  // namespace voxrt
