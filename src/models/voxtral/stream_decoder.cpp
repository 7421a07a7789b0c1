#include "models/voxtral/stream_decoder.h"

#include "common/error.h"
#include "models/voxtral/stream_round.h"

namespace voxrt {

StreamDecoder::AloneWork::AloneWork(VoxtralModel& model, const Options& opts)
    : enc_cache(&model.backend(), StreamState::encoder_cache_shape(model, opts.max_batch_positions, 1)),
      dec_cache(&model.backend(), StreamState::decoder_cache_shape(model, opts.protocol, 1)),
      state(model, opts, {enc_cache, 0}, {dec_cache, 0}),
      encoder(model, unique_recording_key("encoder")),
      decoder(model, unique_recording_key("decoder")) {}

std::vector<PositionOutput> StreamDecoder::AloneWork::run(std::vector<float> frames, int64_t final_positions) {
  if (state.stopped()) return {};  // after EOS nothing more is decoded
  state.add_frames(frames);
  if (final_positions >= 0) state.set_final_positions(final_positions);
  StreamState* const streams[] = {&state};
  std::vector<PositionOutput> steps;
  while (state.has_work()) {
    // One stream: one pass either way.
    execute_round(streams, {encoder, enc_cache, decoder, dec_cache, /*one_pass=*/true});
    for (const PositionOutput& s : state.take_outputs()) steps.push_back(s);
  }
  // A stream that failed in a pass (a put refused) has no more work: that is an error, not an end.
  if (!state.failure().empty()) throw Error(state.failure());
  return steps;
}

StreamDecoder::StreamDecoder(VoxtralModel& model, const LogMel& logmel, const Options& opts)
    : work_(model, opts), pipeline_(logmel, opts.protocol, work_) {}

void StreamDecoder::feed(std::span<const float> samples, const OutputCallback& on_step) {
  for (const PositionOutput& s : pipeline_.feed(samples)) on_step(s.token, s.seconds);
}

void StreamDecoder::flush(const OutputCallback& on_step) {
  for (const PositionOutput& s : pipeline_.flush()) on_step(s.token, s.seconds);
}

}  // namespace voxrt
