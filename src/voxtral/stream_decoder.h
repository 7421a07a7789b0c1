// One live stream stepped alone, synchronously: a MelFrontEnd for the samples, a StreamState for
// the model work with caches of its own, and step_streams over that one stream: exactly
// what the batching scheduler runs for each of its streams (docs/scheduler.md). Its token ids equal
// the offline result for the same audio whatever the chunk sizes (docs/model.md §10). Used by the
// benchmark and the tests that drive one stream directly; the engine's sessions go through the
// scheduler.
#pragma once

#include <cstdint>
#include <functional>
#include <span>

#include "audio/log_mel.h"
#include "voxtral/decoder_step.h"
#include "voxtral/encoder_pass.h"
#include "voxtral/mel_front_end.h"
#include "voxtral/model.h"
#include "voxtral/stream_state.h"

namespace voxrt {

class StreamDecoder {
 public:
  using Options = StreamState::Options;
  // Called once per decoder step with its output id and the compute time attributed to it
  // (StreamState::Step).
  using StepCallback = std::function<void(int32_t token, double seconds)>;

  StreamDecoder(VoxtralModel& model, const LogMel& logmel, const Options& opts);

  static int max_draft_rows(const Protocol& p) { return StreamState::max_draft_rows(p); }

  void feed(std::span<const float> samples, const StepCallback& on_step);
  // End of input: the offline right pad, then every step to the end.
  void flush(const StepCallback& on_step);

  bool flushed() const { return front_.flushed(); }
  bool stopped() const { return state_.stopped(); }  // stop_at_eos and EOS seen
  int64_t rebases() const { return state_.rebases(); }
  int64_t decoder_passes() const { return state_.decoder_passes(); }  // the prompt's included
  double encoder_seconds() const { return state_.encoder_seconds(); }
  size_t buffered_samples() const { return front_.buffered_samples(); }
  int64_t audio_samples() const { return front_.audio_samples(); }  // real audio fed (no padding)

 private:
  void pump(const StepCallback& on_step);

  MelFrontEnd front_;
  KvCache enc_cache_, dec_cache_;
  StreamState state_;
  EncoderPass encoder_;
  DecoderPass decoder_;
};

}  // namespace voxrt
