// The Session behind the public API: a StreamDecoder for the model work, a TranscriptAssembler for
// text, segments and events, and per-step timing. Model work runs under the engine's mutex, so
// sessions on different threads take turns on the shared model.
#pragma once

#include <memory>
#include <mutex>

#include "tokenizer/tekken.h"
#include "voxrt/session.h"
#include "voxtral/stream_decoder.h"
#include "voxtral/transcript_assembler.h"

namespace voxrt {

class LiveSession final : public Session {
 public:
  LiveSession(VoxtralModel& model, const LogMel& logmel, const Tokenizer& tok, std::mutex& model_mutex,
              const StreamDecoder::Options& decoder_options, const SessionOptions& options, int delay_ms);

  ~LiveSession() override;

  void feed(std::span<const float> samples) override;
  void flush() override;
  Transcript transcript() const override;
  const SessionStats& stats() const override { return stats_; }

 private:
  void on_step(int32_t token, double seconds);
  void deliver();
  double seconds_fed() const;  // real audio fed so far (no padding)

  std::mutex& model_mutex_;
  const Tokenizer& tok_;
  SessionOptions options_;
  int delay_ms_;
  double sample_rate_;
  std::unique_ptr<StreamDecoder> decoder_;  // freed under the model mutex (its caches live on the backend)
  TranscriptAssembler assembler_;
  std::vector<StreamEvent> pending_;
  SessionStats stats_;
  bool eos_ = false;
};

}  // namespace voxrt
