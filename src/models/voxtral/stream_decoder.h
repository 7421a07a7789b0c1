// One live stream stepped alone, synchronously: the stream pipeline (stream_pipeline.h) over model
// work of its own, a StreamState with caches of its own stepped by execute_round alone: exactly
// what the batching scheduler runs for each of its streams (docs/scheduler.md). Its token ids equal
// the offline result for the same audio whatever the chunk sizes (docs/model.md §10). Used by the
// benchmark and the tests that drive one stream directly; the engine's sessions go through the
// scheduler.
#pragma once

#include <cstdint>
#include <functional>
#include <span>

#include "audio/log_mel.h"
#include "models/voxtral/decoder_pass.h"
#include "models/voxtral/encoder_pass.h"
#include "models/voxtral/model.h"
#include "models/voxtral/stream_pipeline.h"
#include "models/voxtral/stream_state.h"

namespace voxrt {

class StreamDecoder {
 public:
  using Options = StreamState::Options;
  // Called once per decoded position with its output id and the compute time attributed to it
  // (PositionOutput).
  using OutputCallback = std::function<void(int32_t token, double seconds)>;

  StreamDecoder(VoxtralModel& model, const LogMel& logmel, const Options& opts);

  static int max_draft_rows(const Protocol& p) { return StreamState::max_draft_rows(p); }

  void feed(std::span<const float> samples, const OutputCallback& on_step);
  // End of input: the offline right pad, then every position to the end.
  void flush(const OutputCallback& on_step);

  bool flushed() const { return pipeline_.flushed(); }
  bool stopped() const { return pipeline_.stopped(); }  // stop_at_eos and EOS seen
  int64_t rebases() const { return work_.state.rebases(); }
  int64_t decoder_passes() const { return work_.state.decoder_passes(); }  // the prompt's included
  double encoder_seconds() const { return work_.state.encoder_seconds(); }
  // For benchmarks (StreamState::set_fill_drafts): between feeds, its passes keep every drafted row.
  void set_fill_drafts(bool on) { work_.state.set_fill_drafts(on); }
  size_t buffered_samples() const { return pipeline_.buffered_samples(); }
  int64_t audio_samples() const { return pipeline_.audio_samples(); }  // real audio fed (no padding)

 private:
  // A stream's model work alone: its caches, state and passes, stepped until it has caught up.
  struct AloneWork final : StreamWork {
    AloneWork(VoxtralModel& model, const Options& opts);
    std::vector<PositionOutput> run(std::vector<float> frames, int64_t final_positions) override;
    bool stopped() const override { return state.stopped(); }

    KvCache enc_cache, dec_cache;
    StreamState state;
    EncoderPass encoder;
    DecoderPass decoder;
  };

  AloneWork work_;
  StreamPipeline pipeline_;  // over work_
};

}  // namespace voxrt
