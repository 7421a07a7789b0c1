// Turns from frame-by-frame speech decisions: where speech starts (after enough of it that a click
// or a cough does not count) and where it stops (after a silence long enough that a pause between
// words or sentences does not count). The voice-activity detector's second half
// (audio/voice_activity.h); separate so that its rules are tested on decisions written by hand.
#pragma once

#include <cstdint>
#include <vector>

namespace voxrt {

struct TurnEvent {
  enum class Kind { SpeechStarted, SpeechStopped };
  Kind kind = Kind::SpeechStarted;
  // The boundary to report, in ms of audio from the stream's start. SpeechStarted: the onset minus
  // the prefix padding, clamped at 0 and at the previous turn's stop (turns never overlap).
  // SpeechStopped: the end of the turn's last speech frame.
  int64_t audio_ms = 0;
  // Where speech itself was found to start or stop (for SpeechStopped the same as audio_ms).
  int64_t speech_ms = 0;
  // How much audio had been heard when the event was decided: detected_at_ms - speech_ms is the
  // event's latency (for a start about min_speech_ms, for a stop about silence_duration_ms).
  int64_t detected_at_ms = 0;

  bool operator==(const TurnEvent&) const = default;
};

struct TurnRules {
  int frame_ms = 10;
  int prefix_padding_ms = 300;    // reported start = onset - this
  int silence_duration_ms = 500;  // non-speech that ends a turn
  int min_speech_ms = 100;        // speech that starts one (shorter bursts are clicks and knocks)
  int max_onset_gap_ms = 100;     // non-speech allowed between the bursts of those (syllables)
  int resume_speech_ms = 20;      // speech that counts inside a turn's silence (shorter: noise)
};

class TurnTracker {
 public:
  // Throws voxrt::Error for a rule out of range (negative, or frame_ms not positive).
  explicit TurnTracker(const TurnRules& rules);
  // One frame's decision; appends the event it completes, if any.
  void frame(bool speech, std::vector<TurnEvent>& events);
  // End of the stream: a turn still open stops where its speech was last heard. A start still
  // shorter than min_speech_ms is dropped.
  void finish(std::vector<TurnEvent>& events);
  bool in_turn() const { return in_turn_; }
  int64_t frames() const { return frames_; }

 private:
  int64_t ms(int64_t frame) const { return frame * rules_.frame_ms; }
  void stop(std::vector<TurnEvent>& events);

  TurnRules rules_;
  int64_t frames_ = 0;  // frames taken so far
  bool in_turn_ = false;
  // Outside a turn: the speech that may start one.
  int64_t onset_ = -1;  // its first frame, -1 for none
  int64_t onset_speech_frames_ = 0, onset_gap_frames_ = 0;
  // Inside a turn.
  int64_t speech_end_ = 0;   // the frame after the last speech frame that counted
  int64_t pending_run_ = 0;  // speech frames in a row not yet resume_speech_ms long
  int64_t previous_stop_ms_ = 0;
};

}  // namespace voxrt
