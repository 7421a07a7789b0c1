#include "audio/noise_floor.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "common/error.h"

namespace voxrt {
namespace {

// Smoothing of the powers before their minimum is taken (per frame: s = a s + (1 - a) p; about
// 30 ms at 10 ms frames): a lone quiet frame of speech is not mistaken for the floor, and the
// minimum of noise sits closer to its mean.
constexpr float kSmoothing = 0.7f;

// Frames the smoothing takes to settle before the powers are a minimum's candidates: the first
// power alone fluctuates more than the smoothed ones (and the stream's first frame is partly
// the zeros before it), and a minimum taken from it would put the floor too low, every noise
// looking like speech, for a whole window. Until then the floor is the smoothed power itself.
constexpr int kSettleFrames = 5;

// Mean power of stationary noise over the minimum of its smoothed power across the window, per
// band: narrow bands fluctuate more, so their minimum lies further below the mean. Measured on
// white, pink and brown noise (sox) with the window VoiceActivityDetector uses (the test
// VoiceActivity.NoiseFloorIsTheMeanPowerOfStationaryNoise keeps them right). The minimum of fewer
// frames, while a stream's first window fills, lies less far below: measured, the ratio in dB
// grows close to the logarithm of the frames, so n frames of a window of N get the ratio to the
// power log(n) / log(N).
constexpr std::array<float, BandPowerAnalyzer::kBands> kMeanOverMinimum = {2.1f, 2.0f, 1.8f, 1.6f, 1.5f, 1.4f, 1.3f};

}  // namespace

NoiseFloorTracker::NoiseFloorTracker(int block_frames, int blocks)
    : block_frames_(block_frames), window_frames_(block_frames * blocks) {
  check(block_frames > 0 && blocks > 1, "NoiseFloorTracker", "needs blocks > 1 of block_frames > 0");
  finished_mins_.assign(static_cast<size_t>(blocks - 1), {});
  for (Bands& m : finished_mins_) m.fill(std::numeric_limits<float>::infinity());
  block_min_.fill(std::numeric_limits<float>::infinity());
  finished_min_.fill(std::numeric_limits<float>::infinity());
}

const NoiseFloorTracker::Bands& NoiseFloorTracker::update(const Bands& power) {
  if (settling_ == 0) smoothed_ = power;
  for (size_t b = 0; b < power.size(); ++b) smoothed_[b] = kSmoothing * smoothed_[b] + (1.0f - kSmoothing) * power[b];
  if (settling_ < kSettleFrames) {
    ++settling_;
    floor_ = smoothed_;  // the minimum of one frame: its ratio is 1
    return floor_;
  }
  if (frames_in_min_ < window_frames_) {
    ++frames_in_min_;
    const float exponent = std::log(static_cast<float>(frames_in_min_)) / std::log(static_cast<float>(window_frames_));
    for (size_t b = 0; b < power.size(); ++b) mean_over_minimum_[b] = std::pow(kMeanOverMinimum[b], exponent);
  }
  for (size_t b = 0; b < power.size(); ++b) {
    block_min_[b] = std::min(block_min_[b], smoothed_[b]);
    floor_[b] = std::min(block_min_[b], finished_min_[b]) * mean_over_minimum_[b];
  }
  if (++frames_in_block_ == block_frames_) {
    finished_mins_[oldest_block_] = block_min_;
    oldest_block_ = (oldest_block_ + 1) % finished_mins_.size();
    finished_min_.fill(std::numeric_limits<float>::infinity());
    for (const Bands& finished : finished_mins_) {
      for (size_t b = 0; b < power.size(); ++b) finished_min_[b] = std::min(finished_min_[b], finished[b]);
    }
    block_min_.fill(std::numeric_limits<float>::infinity());
    frames_in_block_ = 0;
  }
  return floor_;
}

}  // namespace voxrt
