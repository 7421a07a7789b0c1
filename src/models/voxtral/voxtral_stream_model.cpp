#include "models/voxtral/voxtral_stream_model.h"

#include <algorithm>

#include "models/voxtral/stream_round.h"

namespace voxrt {

VoxtralStreamModel::VoxtralStreamModel(VoxtralModel& model, const Setup& setup)
    : model_(model),
      setup_(setup),
      encoder_(model, unique_recording_key("encoder pass")),
      decoder_(model, unique_recording_key("decoder pass")) {}

Protocol VoxtralStreamModel::protocol(int delay_ms) const {
  Protocol p;
  p.n_delay = delay_tokens_from_ms(delay_ms);
  p.n_left_pad_tokens = setup_.left_pad_tokens;
  p.samples_per_position = model_.config().samples_per_position();
  return p;
}

StreamState::Options VoxtralStreamModel::stream_options(const Protocol& protocol, bool stop_at_eos,
                                                        int draft_rows) const {
  StreamState::Options o;
  o.protocol = protocol;
  o.ids = setup_.ids;
  o.stop_at_eos = stop_at_eos;
  o.max_batch_positions = setup_.max_batch_positions;
  // With the official 32 left-pad tokens the protocol allows at least 35 rows.
  o.draft_rows = std::min(draft_rows, StreamState::max_draft_rows(protocol));
  return o;
}

KvCacheShape VoxtralStreamModel::encoder_cache_shape(int slots) const {
  return StreamState::encoder_cache_shape(model_, setup_.max_batch_positions, slots, /*paged=*/true);
}

// Any delay: the decoder's ring depends on the left pad only (StreamState::decoder_cache_shape).
KvCacheShape VoxtralStreamModel::decoder_cache_shape(int slots) const {
  return StreamState::decoder_cache_shape(model_, protocol(StreamOptions{}.delay_ms), slots, /*paged=*/true);
}

int64_t VoxtralStreamModel::encoder_frames_for(const StreamOptions& options, double seconds) const {
  return StreamState::encoder_frames_for(model_, protocol(options.delay_ms), seconds);
}

int64_t VoxtralStreamModel::decoder_positions_for(const StreamOptions& options, double seconds) const {
  return StreamState::decoder_positions_for(model_, protocol(options.delay_ms), seconds);
}

StreamModel::Frames VoxtralStreamModel::frames() const {
  const ModelConfig& c = model_.config();
  return {static_cast<double>(c.audio.sampling_rate) / c.audio.hop_length, static_cast<size_t>(c.encoder.num_mel_bins),
          static_cast<size_t>(c.mel_frames_per_position())};
}

std::unique_ptr<ModelStream> VoxtralStreamModel::open_stream(const StreamOptions& options, CacheSlot encoder,
                                                             CacheSlot decoder) {
  StreamState::Options o = stream_options(protocol(options.delay_ms), options.stop_at_eos, options.draft_rows);
  o.context_bias = options.context_bias;
  return std::make_unique<StreamState>(model_, o, encoder, decoder);
}

RoundStats VoxtralStreamModel::run_round(std::span<ModelStream* const> streams, const RoundCaches& caches,
                                         const RoundBudget& budget, size_t first_served) {
  // Every stream the scheduler hands this model came from open_stream: a StreamState.
  round_streams_.clear();
  for (ModelStream* s : streams) round_streams_.push_back(static_cast<StreamState*>(s));
  return execute_round(round_streams_, {encoder_, caches.encoder_cache, decoder_, caches.decoder_cache, budget.shared,
                                       budget.max_encoder_positions, budget.max_decoder_rows, first_served});
}

}  // namespace voxrt
