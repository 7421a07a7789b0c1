#include "voxtral/stream_decoder.h"

#include "voxtral/stream_stepper.h"

namespace voxrt {

StreamDecoder::StreamDecoder(VoxtralModel& model, const LogMel& logmel, const Options& opts)
    : front_(logmel, opts.protocol),
      dec_cache_(&model.backend(), StreamState::decoder_cache_shape(model, opts.protocol, 1)),
      state_(model, opts, dec_cache_, 0),
      pass_(model, unique_step_key("decoder")) {}

void StreamDecoder::feed(std::span<const float> samples, const StepCallback& on_step) {
  front_.feed(samples);
  pump(on_step);
}

void StreamDecoder::flush(const StepCallback& on_step) {
  if (front_.flushed()) return;
  front_.flush();
  pump(on_step);
}

void StreamDecoder::pump(const StepCallback& on_step) {
  if (state_.stopped()) {
    front_.take_frames();  // after EOS nothing more is decoded
    return;
  }
  state_.add_frames(front_.take_frames());
  if (front_.flushed()) state_.set_final_positions(front_.final_positions());
  StreamState* const streams[] = {&state_};
  while (state_.has_work()) {
    step_streams(streams, pass_, dec_cache_, /*one_pass=*/true);  // one stream: one pass either way
    for (const StreamState::Step& s : state_.take_steps()) on_step(s.token, s.seconds);
  }
}

}  // namespace voxrt
