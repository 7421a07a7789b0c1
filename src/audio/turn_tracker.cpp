#include "audio/turn_tracker.h"

#include <algorithm>

#include "common/error.h"

namespace voxrt {

TurnTracker::TurnTracker(const TurnRules& rules) : rules_(rules) {
  check(rules.frame_ms > 0, "TurnTracker", "frame_ms must be positive");
  check(rules.prefix_padding_ms >= 0, "voice activity", "prefix_padding_ms must be >= 0");
  check(rules.silence_duration_ms >= 0, "voice activity", "silence_duration_ms must be >= 0");
  check(rules.min_speech_ms >= 0, "voice activity", "min_speech_ms must be >= 0");
  check(rules.max_onset_gap_ms >= 0 && rules.resume_speech_ms >= 0, "TurnTracker", "gaps must be >= 0");
}

void TurnTracker::frame(bool speech, std::vector<TurnEvent>& events) {
  const int64_t k = frames_++;
  if (!in_turn_) {
    if (!speech) {
      if (onset_ >= 0 && ms(++onset_gap_frames_) > rules_.max_onset_gap_ms) onset_ = -1;
      return;
    }
    if (onset_ < 0) {
      onset_ = k;
      onset_speech_frames_ = 0;
    }
    onset_gap_frames_ = 0;
    if (ms(++onset_speech_frames_) < rules_.min_speech_ms) return;
    const int64_t onset_ms = ms(onset_);
    const int64_t start_ms = std::max({onset_ms - rules_.prefix_padding_ms, previous_stop_ms_, int64_t{0}});
    events.push_back({TurnEvent::Kind::SpeechStarted, start_ms, onset_ms, ms(frames_)});
    in_turn_ = true;
    onset_ = -1;
    speech_end_ = frames_;
    pending_run_ = 0;
    return;
  }
  if (speech) {
    // Inside a turn a run of speech counts once it is resume_speech_ms long (shorter ones are taken
    // for noise): the turn's speech then reaches to its end.
    if (ms(++pending_run_) >= rules_.resume_speech_ms) speech_end_ = frames_;
    return;
  }
  pending_run_ = 0;
  if (ms(frames_ - speech_end_) >= rules_.silence_duration_ms) stop(events);
}

void TurnTracker::stop(std::vector<TurnEvent>& events) {
  previous_stop_ms_ = ms(speech_end_);
  events.push_back({TurnEvent::Kind::SpeechStopped, previous_stop_ms_, previous_stop_ms_, ms(frames_)});
  in_turn_ = false;
  onset_ = -1;
}

void TurnTracker::finish(std::vector<TurnEvent>& events) {
  if (in_turn_) stop(events);
  onset_ = -1;
}

}  // namespace voxrt
