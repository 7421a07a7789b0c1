// The level of the background noise in each band, followed while speech comes and goes: minimum
// statistics (R. Martin, 2001). Over a sliding window of a few seconds the quietest moments of a
// band are its noise, because speech in any band has gaps (between words, in stop consonants) far
// shorter than the window. Unlike a level learned only in frames judged silent, this needs no
// decision, so it cannot lock up after noise grows louder than what was called speech: the floor
// follows a drop at once and a rise within the window.
#pragma once

#include <array>
#include <vector>

#include "audio/band_power.h"

namespace voxrt {

class NoiseFloorTracker {
 public:
  using Bands = std::array<float, BandPowerAnalyzer::kBands>;
  // The window is `blocks` blocks of `block_frames` frames: the minimum is kept per block, so an
  // update costs a comparison per band and a frame, plus a pass over the blocks once a block.
  NoiseFloorTracker(int block_frames, int blocks);

  // Takes a frame's band powers; returns the floor of each band after it: the minimum of the
  // lightly smoothed powers over the window, times the ratio between a noise's mean power and that
  // minimum, so that the floor is the noise's mean level, not the bottom of its fluctuations.
  const Bands& update(const Bands& power);

 private:
  int block_frames_;
  int window_frames_;
  int frames_in_min_ = 0;  // frames the minimum has seen, up to window_frames_
  int frames_in_block_ = 0;
  size_t oldest_block_ = 0;
  int settling_ = 0;  // frames taken while the smoothing settles
  Bands smoothed_{};
  Bands block_min_{};                // the block being filled
  std::vector<Bands> finished_mins_;  // the last `blocks - 1` finished blocks, a ring
  Bands finished_min_{};              // their minimum
  Bands mean_over_minimum_{};  // the ratio for the frames the minimum has seen
  Bands floor_{};
};

}  // namespace voxrt
