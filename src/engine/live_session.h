// The Session behind the public API: the stream pipeline (its front end run on the caller's thread)
// over a stream of the engine's scheduler for the model work (its steps batched with every other
// session's), a
// TranscriptAssembler for text, segments and events, and per-step timing.
#pragma once

#include <memory>

#include "scheduler/scheduler.h"
#include "engine/session_input.h"
#include "tokenizer/tekken.h"
#include "voxrt/session.h"
#include "models/voxtral/stream_pipeline.h"
#include "models/voxtral/transcript_assembler.h"

namespace voxrt {

class LiveSession final : public Session {
 public:
  // `protocol`: the one the scheduler's model makes of `stream_options`, for the front end.
  LiveSession(const LogMel& logmel, const Tokenizer& tok, Scheduler& scheduler, const StreamOptions& stream_options,
              const Protocol& protocol, const SessionOptions& options, int delay_ms, double sample_rate);

  void feed(std::span<const float> samples) override;
  void flush() override;
  Transcript transcript() const override;
  const SessionStats& stats() const override { return stats_; }

 private:
  void take(const std::vector<PositionOutput>& outputs);
  void deliver();
  void feed_model(std::span<const float> samples);  // 16 kHz mono
  double seconds_fed() const;  // real audio fed so far (no padding)

  const Tokenizer& tok_;
  SessionOptions options_;
  int delay_ms_;
  double sample_rate_;  // the model's
  SessionInput input_;
  std::vector<float> converted_;  // a feed's samples made the model's (when they are not already)
  std::unique_ptr<Scheduler::Stream> stream_;
  StreamPipeline pipeline_;  // over stream_
  TranscriptAssembler assembler_;
  std::vector<StreamEvent> pending_;
  SessionStats stats_;
  bool eos_ = false;
};

}  // namespace voxrt
