// Voxtral as the scheduler drives a family (models/stream_model.h): its streams are StreamStates,
// its rounds execute_round over its encoder and decoder passes, and the family-neutral
// StreamOptions become its own (a Protocol at the stream's delay, the tokenizer's ids).
#pragma once

#include <memory>
#include <span>
#include <vector>

#include "models/stream_model.h"
#include "models/voxtral/decoder_pass.h"
#include "models/voxtral/encoder_pass.h"
#include "models/voxtral/model.h"
#include "models/voxtral/protocol.h"
#include "models/voxtral/stream_state.h"

namespace voxrt {

class VoxtralStreamModel final : public StreamModel {
 public:
  // What the tokenizer and the engine fix for every stream: the protocol's left pad, the special
  // ids, and the positions encoded together when a large chunk arrives (the encoder cache's ring).
  struct Setup {
    int left_pad_tokens = 32;
    ProtocolIds ids;
    int max_batch_positions = StreamState::Options{}.max_batch_positions;
  };
  VoxtralStreamModel(VoxtralModel& model, const Setup& setup);

  // The protocol of a stream at delay_ms (throws voxrt::Error for a delay the model has no
  // conditioning for), and a stream's options under it.
  Protocol protocol(int delay_ms) const;
  StreamState::Options stream_options(const Protocol& protocol, bool stop_at_eos, int draft_rows) const;

  Backend& backend() const override { return model_.backend(); }
  KvCacheShape encoder_cache_shape(int slots) const override;
  KvCacheShape decoder_cache_shape(int slots) const override;
  int64_t encoder_frames_for(const StreamOptions& options, double seconds) const override;
  int64_t decoder_positions_for(const StreamOptions& options, double seconds) const override;
  Frames frames() const override;
  std::unique_ptr<ModelStream> open_stream(const StreamOptions& options, CacheSlot encoder, CacheSlot decoder) override;
  RoundStats run_round(std::span<ModelStream* const> streams, const RoundCaches& caches, const RoundBudget& budget,
                       size_t first_served) override;

 private:
  VoxtralModel& model_;
  const Setup setup_;
  EncoderPass encoder_;
  DecoderPass decoder_;
  std::vector<StreamState*> round_streams_;  // run_round's, kept so that a round allocates nothing
};

}  // namespace voxrt
