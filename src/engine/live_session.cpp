#include "engine/live_session.h"

#include <chrono>

namespace voxrt {
namespace {
// Per-step times kept for --stats percentiles: an hour of audio, then the oldest are dropped.
constexpr size_t kStepHistory = 45000;
}  // namespace

LiveSession::LiveSession(VoxtralModel& model, const LogMel& logmel, const Tokenizer& tok, std::mutex& model_mutex,
                         const StreamDecoder::Options& decoder_options, const SessionOptions& options, int delay_ms)
    : model_mutex_(model_mutex),
      tok_(tok),
      options_(options),
      delay_ms_(delay_ms),
      sample_rate_(model.config().audio.sampling_rate),
      decoder_(std::make_unique<StreamDecoder>(model, logmel, decoder_options)),
      assembler_(tok, decoder_options.protocol.samples_per_step / sample_rate_) {}

LiveSession::~LiveSession() {
  // Another session may be running model work on the shared backend right now.
  std::lock_guard<std::mutex> lock(model_mutex_);
  decoder_.reset();
}

void LiveSession::on_step(int32_t token, double seconds) {
  if (token == tok_.eos_id()) eos_ = true;
  assembler_.push(token, pending_);
  ++stats_.steps;
  stats_.compute_seconds += seconds;
  if (stats_.step_ms.size() == kStepHistory) stats_.step_ms.erase(stats_.step_ms.begin(), stats_.step_ms.begin() + kStepHistory / 10);
  stats_.step_ms.push_back(seconds * 1000.0);
}

void LiveSession::deliver() {
  stats_.audio_seconds = seconds_fed();
  std::vector<StreamEvent> events;
  events.swap(pending_);
  if (options_.on_event)
    for (const StreamEvent& e : events) options_.on_event(e);
}

void LiveSession::feed(std::span<const float> samples) {
  {
    std::lock_guard<std::mutex> lock(model_mutex_);
    decoder_->feed(samples, [this](int32_t t, double s) { on_step(t, s); });
  }
  deliver();
}

void LiveSession::flush() {
  if (decoder_->flushed()) return;
  // The right pad's steps map past the end of the audio: their events must already be clamped to it.
  assembler_.limit_times(seconds_fed());
  {
    std::lock_guard<std::mutex> lock(model_mutex_);
    decoder_->flush([this](int32_t t, double s) { on_step(t, s); });
  }
  assembler_.finish(seconds_fed(), pending_);
  deliver();
}

double LiveSession::seconds_fed() const { return static_cast<double>(decoder_->audio_samples()) / sample_rate_; }

Transcript LiveSession::transcript() const {
  Transcript t;
  t.text = assembler_.text();
  t.tokens = assembler_.tokens();
  t.segments = assembler_.segments();
  t.words = assembler_.words();
  t.duration = seconds_fed();
  t.delay_ms = delay_ms_;
  t.eos = eos_;
  return t;
}

}  // namespace voxrt
