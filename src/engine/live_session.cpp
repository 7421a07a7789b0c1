#include "engine/live_session.h"

namespace voxrt {
namespace {
// Per-position times kept for --stats percentiles: an hour of audio, then the oldest are dropped.
constexpr size_t kPositionHistory = 45000;
}  // namespace

LiveSession::LiveSession(const LogMel& logmel, const Tokenizer& tok, Scheduler& scheduler,
                         const StreamOptions& stream_options, const Protocol& protocol, const SessionOptions& options,
                         int delay_ms, double sample_rate)
    : tok_(tok),
      options_(options),
      delay_ms_(delay_ms),
      sample_rate_(sample_rate),
      input_(options.sample_rate != 0 ? options.sample_rate : static_cast<int>(sample_rate), options.channels,
             static_cast<int>(sample_rate)),
      stream_(scheduler.open(stream_options, options.wait_for_room ? Scheduler::kWaitForever : 0, options.max_seconds > 0 ? options.max_seconds : -1,
                             /*live=*/true)),
      pipeline_(logmel, protocol, *stream_),
      assembler_(tok, protocol.samples_per_position / sample_rate_) {}

void LiveSession::take(const std::vector<PositionOutput>& outputs) {
  // The most recent kPositionHistory times, dropping a tenth at once when full.
  const auto keep = [](std::vector<double>& history, double ms) {
    if (history.size() == kPositionHistory) history.erase(history.begin(), history.begin() + kPositionHistory / 10);
    history.push_back(ms);
  };
  for (const PositionOutput& s : outputs) {
    if (s.token == tok_.eos_id()) eos_ = true;
    assembler_.push(s.token, pending_);
    stats_.steps = ++stats_.positions;  // steps: the deprecated name, kept for one release
    stats_.compute_seconds += s.seconds;
    keep(stats_.position_ms, s.seconds * 1000.0);
    keep(stats_.step_ms, s.seconds * 1000.0);
  }
}

void LiveSession::deliver() {
  stats_.audio_seconds = seconds_fed();
  std::vector<StreamEvent> events;
  events.swap(pending_);
  if (options_.on_event)
    for (const StreamEvent& e : events) options_.on_event(e);
}

void LiveSession::feed(std::span<const float> samples) {
  // Refused before anything is converted or counted: audio after the end is not the engine's.
  pipeline_.refuse_if_flushed();
  if (input_.passthrough()) return feed_model(samples);
  converted_.clear();
  input_.convert(samples, converted_);
  feed_model(converted_);
}

void LiveSession::feed_model(std::span<const float> samples) {
  stream_->count_audio(static_cast<double>(samples.size()) / sample_rate_);
  take(pipeline_.feed(samples));
  deliver();
}

void LiveSession::flush() {
  if (pipeline_.flushed()) return;
  if (!input_.passthrough()) {
    converted_.clear();
    input_.finish(converted_);
    if (!converted_.empty()) feed_model(converted_);
  }
  // The right pad's steps map past the end of the audio: their events must already be clamped to it.
  assembler_.limit_times(seconds_fed());
  take(pipeline_.flush());
  assembler_.finish(seconds_fed(), pending_);
  deliver();
}

double LiveSession::seconds_fed() const { return static_cast<double>(pipeline_.audio_samples()) / sample_rate_; }

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
