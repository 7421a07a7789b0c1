// Where speech starts and stops in a stream of audio: the voice-activity detector behind turn
// detection, with the parameters OpenAI's realtime API gives its server VAD (threshold,
// prefix_padding_ms, silence_duration_ms; Mistral's API calls the last min_silence_ms).
//
// Input is 16 kHz mono float samples in chunks of any size. voxrt resamples every input to 16 kHz
// before the model (audio/stream_resampler.h), and the detector runs on those resampled samples, so
// it serves every input rate voxrt accepts without a rate of its own.
//
// How it decides, each 10 ms frame: the power of 7 bands from 250 Hz to 6 kHz over the last 16 ms
// (audio/band_power.h), each band's noise floor followed by minimum statistics
// (audio/noise_floor.h), and the frame's speech score the mean of the bands' SNRs in dB (negative
// ones counted as 0), mapped to a probability; speech where it passes `threshold` (or, inside a
// turn, a little less: hysteresis keeps the quiet ends of words). Band SNRs against an adaptive
// floor make stationary noise of any colour look alike: white, pink or brown, loud or quiet, it
// scores near 0. The frames' decisions become turns in audio/turn_tracker.h: min_speech_ms of
// speech starts one, silence_duration_ms of non-speech ends it.
//
// Deterministic (the same samples give the same events, however they are split into chunks),
// streaming with no look-ahead: a frame is decided from samples up to its end, so the decision
// lags the audio by at most one frame (10 ms); a start is known min_speech_ms after its onset, a
// stop silence_duration_ms after its end (TurnEvent::detected_at_ms). It costs a 256-point FFT a
// frame: about 0.2 ms of one CPU core per second of audio (bench/results/2026-12-06-turn-detector.txt),
// against the milliseconds a model step takes for each 80 ms.
//
// The noise floor is learned from the audio itself: a stream that starts with speech sets it from
// its first syllables until the first pause, and a noise that grows louder looks like speech until
// the floor's window (3 s) has passed over it.
//
// Why not WebRTC's VAD: Debian bookworm's libwebrtc-audio-processing-dev (0.3, a snapshot of 2016)
// installs one public header, audio_processing.h, where the VAD is the VoiceDetection part of the
// whole AudioProcessing module (echo cancellation, gain control, ...; WebRtcVad_* itself is not
// installed). It gives a bare voiced/unvoiced flag a 10-30 ms frame, with four likelihood settings
// instead of a threshold and no notion of turns, so the turn logic and the tuning against the
// labelled set (tests/data/turns) would be needed all the same; this detector is a few hundred
// lines with no dependency.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include "audio/band_power.h"
#include "audio/noise_floor.h"
#include "audio/turn_tracker.h"

namespace voxrt {

struct VoiceActivityOptions {
  // 0..1: how sure of speech a frame must be to start a turn; higher needs louder speech against
  // the noise (OpenAI's threshold, default 0.5).
  float threshold = 0.5f;
  int prefix_padding_ms = 300;    // a start is reported this much before the onset (clamped at 0)
  int silence_duration_ms = 500;  // non-speech that ends a turn
  int min_speech_ms = 100;        // speech that starts one: shorter bursts (clicks) never do
};

class VoiceActivityDetector {
 public:
  static constexpr int kSampleRate = 16000;
  static constexpr int kFrameSamples = 160;  // 10 ms
  static constexpr int kFrameMs = 10;

  // Throws voxrt::Error for an option out of range (threshold outside [0, 1], a negative time).
  explicit VoiceActivityDetector(const VoiceActivityOptions& options = {});
  // Appends the events the samples complete, in order.
  void push(std::span<const float> samples, std::vector<TurnEvent>& events);
  // End of the stream: closes a turn still open (its stop is where speech was last heard). The
  // samples of an incomplete last frame (under 10 ms) are not judged. Further pushes throw.
  void finish(std::vector<TurnEvent>& events);

  bool in_turn() const { return turns_.in_turn(); }
  // The last frame's probability of speech, 0..1 (0 before the first frame).
  float speech_probability() const { return probability_; }
  // Samples judged so far (whole frames).
  int64_t samples_judged() const { return turns_.frames() * kFrameSamples; }

 private:
  void judge_frame(std::vector<TurnEvent>& events);

  BandPowerAnalyzer bands_;
  NoiseFloorTracker noise_;
  TurnTracker turns_;
  // The last BandPowerAnalyzer::kWindow samples: the frame being filled at the end, after
  // kWindow - kFrameSamples samples of the frames before it (zeros before the stream).
  std::array<float, BandPowerAnalyzer::kWindow> window_{};
  int filled_ = 0;  // samples of the current frame received
  float start_score_, stay_score_;  // the frame scores that are speech outside and inside a turn
  float probability_ = 0.0f;
  bool finished_ = false;
};

}  // namespace voxrt
