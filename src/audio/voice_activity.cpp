#include "audio/voice_activity.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "common/error.h"

namespace voxrt {
namespace {

// The noise floor's window: 10 blocks of 300 ms, 3 s. Longer than any stretch of speech without a
// gap in some band, short enough that a noise grown louder is learned within 3 s.
constexpr int kNoiseBlockFrames = 30;
constexpr int kNoiseBlocks = 10;

// The quietest noise floor a band may have, per bin (white noise of -75 dBFS RMS): in digital
// silence every sound would otherwise be infinitely far above the noise.
constexpr float kAbsoluteFloorPerBin = 3.2e-8f;

// A band's SNR counts up to this many dB: speech lifts several bands at once, so the score grows with
// how many bands are lifted more than with how loud one of them gets (one band at its cap alone
// stays under threshold 0.5).
constexpr float kMaxBandSnrDb = 15.0f;

// The frame's score (mean band SNR, dB) -> probability of speech: a logistic centred where
// threshold 0.5 decides, its slope setting how far other thresholds move that point. Stationary
// noise scores about 0.5 dB (99 % of its frames under 1.5, none of the set's over 1.9); speech
// mostly far more. 2.2 dB is the lowest centre that kept every noise of the labelled set from
// starting or prolonging turns, and 0.5 dB a logit spreads thresholds 0.3-0.9 over the range where
// they trade missed speech for noise (bench/results/2026-12-06-turn-detector.txt); from 0.4 down
// stationary noise begins to prolong turns.
constexpr float kScoreAtHalf = 2.2f;
constexpr float kScorePerLogit = 0.5f;

// Inside a turn a frame is speech at a score this much lower (hysteresis): the quiet ends of words
// and the weak consonants between them keep the turn going without letting noise start one.
constexpr float kHysteresisDb = 0.6f;

// The score a frame must pass to be speech at this threshold: the logistic above, inverted.
float score_for(float threshold) {
  if (threshold <= 0.0f) return -std::numeric_limits<float>::infinity();
  if (threshold >= 1.0f) return std::numeric_limits<float>::infinity();
  return kScoreAtHalf + kScorePerLogit * std::log(threshold / (1.0f - threshold));
}

TurnRules turn_rules(const VoiceActivityOptions& o) {
  check(o.threshold >= 0.0f && o.threshold <= 1.0f, "voice activity", "threshold must be in [0, 1]");
  TurnRules rules;
  rules.frame_ms = VoiceActivityDetector::kFrameMs;
  rules.prefix_padding_ms = o.prefix_padding_ms;
  rules.silence_duration_ms = o.silence_duration_ms;
  rules.min_speech_ms = o.min_speech_ms;
  return rules;
}

}  // namespace

VoiceActivityDetector::VoiceActivityDetector(const VoiceActivityOptions& options)
    : noise_(kNoiseBlockFrames, kNoiseBlocks),
      turns_(turn_rules(options)),
      start_score_(score_for(options.threshold)),
      stay_score_(start_score_ - kHysteresisDb) {}

void VoiceActivityDetector::push(std::span<const float> samples, std::vector<TurnEvent>& events) {
  check(!finished_, "voice activity", "samples pushed after finish()");
  constexpr int kFrameStart = BandPowerAnalyzer::kWindow - kFrameSamples;
  while (!samples.empty()) {
    const size_t take = std::min(samples.size(), static_cast<size_t>(kFrameSamples - filled_));
    std::memcpy(window_.data() + kFrameStart + filled_, samples.data(), take * sizeof(float));
    filled_ += static_cast<int>(take);
    samples = samples.subspan(take);
    if (filled_ == kFrameSamples) {
      judge_frame(events);
      std::memmove(window_.data(), window_.data() + kFrameSamples, kFrameStart * sizeof(float));
      filled_ = 0;
    }
  }
}

void VoiceActivityDetector::judge_frame(std::vector<TurnEvent>& events) {
  const auto power = bands_.analyze(window_.data());
  const auto& floor = noise_.update(power);
  float score = 0.0f;
  for (size_t b = 0; b < power.size(); ++b) {
    const int bins = BandPowerAnalyzer::kBandEdges[b + 1] - BandPowerAnalyzer::kBandEdges[b];
    const float noise = std::max(floor[b], kAbsoluteFloorPerBin * static_cast<float>(bins));
    const float snr_db = power[b] > noise ? 10.0f * std::log10(power[b] / noise) : 0.0f;
    score += std::min(snr_db, kMaxBandSnrDb);
  }
  score /= static_cast<float>(power.size());
  probability_ = 1.0f / (1.0f + std::exp(-(score - kScoreAtHalf) / kScorePerLogit));
  turns_.frame(score > (turns_.in_turn() ? stay_score_ : start_score_), events);
}

void VoiceActivityDetector::finish(std::vector<TurnEvent>& events) {
  if (finished_) return;
  finished_ = true;
  turns_.finish(events);
}

}  // namespace voxrt
