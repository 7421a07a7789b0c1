#include "engine/turn_session.h"

#include <algorithm>
#include <string>
#include <utility>

#include "voxrt/error.h"

namespace voxrt {
namespace {

// Audio kept outside a turn beyond the prefix padding: a start is decided once min_speech_ms of
// speech has been heard, its bursts up to TurnRules::max_onset_gap_ms apart, so the onset can lie
// well over min_speech_ms back; three seconds covers every onset the tracker accepts.
constexpr int kOnsetReachMs = 3000;
constexpr size_t kPositionHistory = 45000;  // as LiveSession's: an hour of per-position times

VoiceActivityOptions detector_options(const TurnDetection& t) {
  VoiceActivityOptions o;
  o.threshold = t.threshold;
  o.prefix_padding_ms = t.prefix_padding_ms;
  o.silence_duration_ms = t.silence_duration_ms;
  return o;
}

const TurnDetection& checked(const SessionOptions& o) {
  if (!o.turns) throw Error("TurnSession: SessionOptions::turns is not set");
  check_turn_detection(*o.turns);
  return *o.turns;
}

bool has_text(const std::string& s) { return s.find_first_not_of(" \t\r\n") != std::string::npos; }

void keep_history(std::vector<double>& history, const std::vector<double>& more) {
  history.insert(history.end(), more.begin(), more.end());
  if (history.size() > kPositionHistory)
    history.erase(history.begin(), history.end() - static_cast<std::ptrdiff_t>(kPositionHistory));
}

// `turn` appended to `all`, its times moved by `offset` seconds.
void append_transcript(Transcript& all, const Transcript& turn, double offset) {
  if (has_text(turn.text)) all.text += (all.text.empty() ? "" : " ") + turn.text;
  all.tokens.insert(all.tokens.end(), turn.tokens.begin(), turn.tokens.end());
  for (Segment s : turn.segments) {
    s.start += offset;
    s.end += offset;
    for (Word& w : s.words) w.start += offset, w.end += offset;
    all.segments.push_back(std::move(s));
  }
  for (Word w : turn.words) {
    w.start += offset;
    w.end += offset;
    all.words.push_back(std::move(w));
  }
  all.eos = all.eos || turn.eos;
}

}  // namespace

TurnSession::TurnSession(const SessionOptions& options, int model_rate, int position_ms, int delay_ms,
                         OpenUtterance open_utterance)
    : options_(options),
      turns_options_(checked(options)),
      model_rate_(model_rate),
      position_ms_(position_ms),
      delay_ms_(delay_ms),
      end_timeout_ms_(turns_options_.end_timeout_ms > 0 ? turns_options_.end_timeout_ms
                                                        : turns_options_.silence_duration_ms + 1000),
      open_utterance_(std::move(open_utterance)),
      input_(options.sample_rate != 0 ? options.sample_rate : model_rate, options.channels, model_rate),
      detector_(detector_options(turns_options_)) {
  if (model_rate_ != VoiceActivityDetector::kSampleRate)
    throw Error("turn detection: the detector hears 16 kHz audio; this model's rate is " + std::to_string(model_rate_));
  open_next();
}

TurnSession::~TurnSession() = default;

void TurnSession::open_next() {
  SessionOptions o = options_;
  o.turns.reset();
  o.sample_rate = model_rate_;
  o.channels = 1;
  o.on_event = [this](const StreamEvent& e) { forward(e); };
  utterance_ = open_utterance_(o);
}

void TurnSession::feed(std::span<const float> samples) {
  if (flushed_) throw Error("session: feed() after flush()");
  if (input_.passthrough()) return take(samples);
  converted_.clear();
  input_.convert(samples, converted_);
  take(converted_);
}

void TurnSession::take(std::span<const float> samples) {
  detector_events_.clear();
  detector_.push(samples, detector_events_);
  kept_.insert(kept_.end(), samples.begin(), samples.end());
  received_ += static_cast<int64_t>(samples.size());
  // Each event at the sample where it was decided: what came before it goes where the state
  // before the event says.
  for (const TurnEvent& e : detector_events_) {
    advance_to(samples_of_ms(e.detected_at_ms));
    on_detector(e);
  }
  advance_to(received_);
}

void TurnSession::advance_to(int64_t sample) {
  const int64_t grid = samples_of_ms(position_ms_);
  for (;;) {
    switch (state_) {
      case State::Idle: {
        // Keep what a start may reach back to; drop the rest unheard.
        const int64_t keep_from = sample - samples_of_ms(turns_options_.prefix_padding_ms + kOnsetReachMs);
        if (keep_from > kept_begin_) {
          kept_.erase(kept_.begin(), kept_.begin() + (keep_from - kept_begin_));
          kept_begin_ = keep_from;
        }
        return;
      }
      case State::Speaking: feed_turn(sample); return;
      case State::Held: {
        // Fed up to each 80 ms mark of the stream and checked there, so that the decision does not
        // depend on how the audio was chunked.
        if (fed_ >= sample) return;
        feed_turn(std::min(sample, (fed_ / grid + 1) * grid));
        if (fed_ % grid == 0) check_held();
        break;
      }
    }
  }
}

void TurnSession::on_detector(const TurnEvent& e) {
  if (e.kind == TurnEvent::Kind::SpeechStarted) {
    if (state_ == State::Idle) start_turn(samples_of_ms(e.audio_ms));
    else state_ = State::Speaking;  // speech again while held for the model: the same turn goes on
    return;
  }
  if (state_ != State::Speaking) return;
  detector_stop_ms_ = stop_ms_ = e.audio_ms;
  if (last_text_end_ms_ > detector_stop_ms_ + kModelSpeechSlackMs) state_ = State::Held;
  else end_turn();
}

void TurnSession::start_turn(int64_t begin) {
  begin = std::max({begin, previous_end_, kept_begin_});
  kept_.erase(kept_.begin(), kept_.begin() + (begin - kept_begin_));
  kept_begin_ = turn_begin_ = fed_ = begin;
  last_text_end_ms_ = -1;
  state_ = State::Speaking;
  if (!utterance_) open_next();
  emit(StreamEvent::Kind::SpeechStarted, seconds(begin), seconds(begin));
}

void TurnSession::feed_turn(int64_t until) {
  if (until <= fed_) return;
  const auto from = kept_.begin() + (fed_ - kept_begin_);
  const auto to = kept_.begin() + (until - kept_begin_);
  utterance_->feed(std::span<const float>(&*from, static_cast<size_t>(to - from)));
  kept_.erase(kept_.begin(), to);
  kept_begin_ = fed_ = until;
}

void TurnSession::check_held() {
  const int64_t heard_ms = std::max(detector_stop_ms_, last_text_end_ms_);
  const int64_t decided_ms = turn_begin_ * 1000 / model_rate_ + utterance_->stats().positions * position_ms_;
  const int64_t fed_ms = fed_ * 1000 / model_rate_;
  if (decided_ms >= heard_ms + turns_options_.silence_duration_ms || fed_ms >= detector_stop_ms_ + end_timeout_ms_) {
    stop_ms_ = heard_ms;
    end_turn();
  }
}

void TurnSession::end_turn() {
  const double begin = seconds(turn_begin_);
  const double stop = std::clamp(stop_ms_ / 1000.0, begin, seconds(fed_));
  emit(StreamEvent::Kind::SpeechStopped, begin, stop);
  utterance_->flush();  // the held-back words, through forward()
  Turn turn{turn_begin_, fed_, utterance_->transcript()};
  emit(StreamEvent::Kind::TurnEnd, begin, stop, turn.transcript.text);
  const SessionStats& s = utterance_->stats();
  finished_stats_.positions += s.positions;
  finished_stats_.compute_seconds += s.compute_seconds;
  keep_history(finished_stats_.position_ms, s.position_ms);
  positions_before_ += s.positions;
  turns_.push_back(std::move(turn));
  utterance_.reset();
  previous_end_ = fed_;
  state_ = State::Idle;
  if (!flushed_) open_next();
}

void TurnSession::flush() {
  if (flushed_) return;
  if (!input_.passthrough()) {
    converted_.clear();
    input_.finish(converted_);
    if (!converted_.empty()) take(converted_);
  }
  flushed_ = true;  // no next utterance is opened from here on
  detector_events_.clear();
  detector_.finish(detector_events_);
  for (const TurnEvent& e : detector_events_) on_detector(e);
  if (state_ == State::Held) {  // the input ended while the turn was held for the model
    stop_ms_ = std::max(detector_stop_ms_, last_text_end_ms_);
    end_turn();
  }
  utterance_.reset();                     // the next turn's, never fed
}

void TurnSession::forward(StreamEvent e) {
  const double offset = seconds(turn_begin_);
  e.start += offset;
  e.end += offset;
  e.position += positions_before_;
  e.step = e.position;
  if (e.kind == StreamEvent::Kind::Text && has_text(e.text))
    last_text_end_ms_ = std::max(last_text_end_ms_, static_cast<int64_t>(e.end * 1000.0 + 0.5));
  if (options_.on_event) options_.on_event(e);
}

void TurnSession::emit(StreamEvent::Kind kind, double start, double end, std::string text) {
  if (!options_.on_event) return;
  StreamEvent e;
  e.kind = kind;
  e.start = start;
  e.end = end;
  e.text = std::move(text);
  e.position = e.step = positions_before_ + (state_ != State::Idle && utterance_ ? utterance_->stats().positions : 0);
  options_.on_event(e);
}

Transcript TurnSession::transcript() const {
  Transcript all;
  for (const Turn& t : turns_) append_transcript(all, t.transcript, seconds(t.audio_begin));
  if (state_ != State::Idle) append_transcript(all, utterance_->transcript(), seconds(turn_begin_));
  all.delay_ms = delay_ms_;
  all.duration = seconds(received_);
  return all;
}

const SessionStats& TurnSession::stats() const {
  stats_ = finished_stats_;
  if (state_ != State::Idle) {
    const SessionStats& s = utterance_->stats();
    stats_.positions += s.positions;
    stats_.compute_seconds += s.compute_seconds;
    keep_history(stats_.position_ms, s.position_ms);
  }
  stats_.steps = stats_.positions;
  stats_.step_ms = stats_.position_ms;
  stats_.audio_seconds = seconds(received_);
  return stats_;
}

}  // namespace voxrt
