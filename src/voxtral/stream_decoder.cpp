#include "voxtral/stream_decoder.h"

#include "common/error.h"
#include "voxtral/stream_stepper.h"

namespace voxrt {

StreamDecoder::StreamDecoder(VoxtralModel& model, const LogMel& logmel, const Options& opts)
    : front_(logmel, opts.protocol),
      enc_cache_(&model.backend(), StreamState::encoder_cache_shape(model, opts.max_batch_positions, 1)),
      dec_cache_(&model.backend(), StreamState::decoder_cache_shape(model, opts.protocol, 1)),
      state_(model, opts, {enc_cache_, 0}, {dec_cache_, 0}),
      encoder_(model, unique_step_key("encoder")),
      decoder_(model, unique_step_key("decoder")) {}

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
    // One stream: one pass either way.
    step_streams(streams, {encoder_, enc_cache_, decoder_, dec_cache_, /*one_pass=*/true});
    for (const StreamState::Step& s : state_.take_steps()) on_step(s.token, s.seconds);
  }
  // A stream that failed in a pass (a put refused) has no more work: that is an error, not an end.
  if (!state_.failure().empty()) throw Error(state_.failure());
}

}  // namespace voxrt
