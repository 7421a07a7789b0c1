// A live session with turn detection (SessionOptions::turns, include/voxrt/session.h): the
// voice-activity detector (audio/voice_activity.h) runs over everything fed, and each turn it finds
// is transcribed by a session of its own (an utterance: opened plain, fed the turn's audio, flushed
// at the turn's end), whose events come out shifted to the whole stream's times and positions,
// framed by SpeechStarted, SpeechStopped and TurnEnd.
//
// Where audio goes. Outside a turn the last few seconds are kept (for the prefix padding: a start is
// known min_speech_ms after the onset and reported prefix_padding_ms before it) and the rest
// dropped unheard. A turn's audio runs from its start to the point where its end was decided, and
// the next turn starts no earlier, so no sample is heard twice and the turns' ids are those of
// their audio transcribed alone.
//
// Where a turn ends (TurnDetection's comment gives the rule): at the detector's stop, unless the
// model wrote text for audio later than kModelSpeechSlackMs after it; then the turn is held and
// checked at every 80 ms of audio (so that the decision does not depend on how the audio was
// chunked) until the model has been silent for silence_duration_ms or end_timeout_ms has passed.
//
// The utterance session of the next turn is opened as soon as a turn ends (and the first when this
// one opens), so that the room it takes in the engine is held between turns as a plain session
// holds it, and an engine without room refuses the session when it opens, not in mid-conversation.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "audio/voice_activity.h"
#include "engine/session_input.h"
#include "voxrt/session.h"

namespace voxrt {

class TurnSession final : public Session {
 public:
  // Opens a plain session (no turns) fed at the model's rate, mono.
  using OpenUtterance = std::function<std::unique_ptr<Session>(const SessionOptions&)>;
  // Text the model writes later than this after the detector's stop holds the turn: the model
  // may write a word's tokens a position or two after hearing it, so text that close is the
  // last word's, not new speech.
  static constexpr int kModelSpeechSlackMs = 160;

  // `options.turns` must be set; its values are checked here (voxrt::OptionError naming the field).
  // model_rate: the model's samples a second (the detector's 16 kHz); position_ms: the audio of one
  // decoder position; delay_ms: the utterances' delay (for transcript()).
  TurnSession(const SessionOptions& options, int model_rate, int position_ms, int delay_ms, OpenUtterance open_utterance);
  ~TurnSession() override;

  void feed(std::span<const float> samples) override;
  void flush() override;
  // The finished turns and the one in progress, one after another: text joined by spaces, times in
  // the whole stream's seconds, duration all the audio fed (turns or not).
  Transcript transcript() const override;
  const SessionStats& stats() const override;

  // A finished turn: the samples (model rate, from the stream's start) its utterance heard, and
  // what it made of them (times from the turn's own start).
  struct Turn {
    int64_t audio_begin = 0, audio_end = 0;
    Transcript transcript;
  };
  const std::vector<Turn>& turns() const { return turns_; }

 private:
  enum class State { Idle, Speaking, Held };

  void take(std::span<const float> samples);  // model-rate mono
  void advance_to(int64_t sample);            // every sample before it dealt with
  void on_detector(const TurnEvent& e);
  void start_turn(int64_t begin);
  void feed_turn(int64_t until);
  void check_held();
  void end_turn();
  void open_next();
  void forward(StreamEvent e);  // an utterance's event, in the stream's times
  void emit(StreamEvent::Kind kind, double start, double end, std::string text = {});
  double seconds(int64_t samples) const { return static_cast<double>(samples) / model_rate_; }
  int64_t samples_of_ms(int64_t ms) const { return ms * model_rate_ / 1000; }

  SessionOptions options_;  // the caller's (turns set)
  TurnDetection turns_options_;
  int model_rate_;
  int position_ms_;
  int delay_ms_;
  int end_timeout_ms_;
  OpenUtterance open_utterance_;
  SessionInput input_;
  std::vector<float> converted_;
  VoiceActivityDetector detector_;
  std::vector<TurnEvent> detector_events_;

  // Samples from kept_begin_ to received_ (model rate): outside a turn the last few seconds, in a
  // turn those not yet fed to it.
  std::vector<float> kept_;
  int64_t kept_begin_ = 0, received_ = 0;

  State state_ = State::Idle;
  std::unique_ptr<Session> utterance_;  // the turn's, or the next turn's waiting
  int64_t turn_begin_ = 0;              // the turn's first sample
  int64_t fed_ = 0;                     // samples fed to the turn so far (absolute)
  int64_t previous_end_ = 0;            // where the last turn's audio ended
  int64_t detector_stop_ms_ = 0;        // the detector's stop of this turn
  int64_t stop_ms_ = 0;                 // the turn's end as reported (SpeechStopped's `end`)
  int64_t last_text_end_ms_ = -1;       // the end of the model's latest text in this turn (-1: none)
  int64_t positions_before_ = 0;        // decoder positions of the finished turns
  bool flushed_ = false;

  std::vector<Turn> turns_;
  mutable SessionStats stats_;
  SessionStats finished_stats_;  // the finished turns'
};

}  // namespace voxrt
