// The power of a short stretch of 16 kHz audio in a few frequency bands of the speech range: what the
// voice-activity detector (audio/voice_activity.h) decides on, frame by frame. A Hann-windowed
// 256-point FFT (16 ms) summed over bands of bins; the bands' edges are spaced roughly evenly on a
// log scale, so that each carries a comparable share of speech, from 250 Hz (below it mains hum,
// rumble and brown noise live, and little that tells speech) to 6 kHz (fricatives: the "s" that ends
// a word is heard only above 4 kHz).
#pragma once

#include <array>
#include <cstddef>
#include <vector>

namespace voxrt {

class BandPowerAnalyzer {
 public:
  static constexpr int kWindow = 256;  // samples, 16 ms at 16 kHz; a power of two for the FFT
  static constexpr int kBands = 7;
  // Band b covers FFT bins [kBandEdges[b], kBandEdges[b + 1]) of 62.5 Hz each: 250-500-812-1250-
  // 1875-2750-4000-6000 Hz. Every band has at least 4 bins, so its power fluctuates little in noise.
  static constexpr std::array<int, kBands + 1> kBandEdges = {4, 8, 13, 20, 30, 44, 64, 96};

  BandPowerAnalyzer();
  // The power of each band over samples[0, kWindow), normalised so that white noise of variance s2
  // gives s2 per bin (a band's power is then s2 times its width in bins).
  std::array<float, kBands> analyze(const float* samples);

 private:
  std::vector<float> window_;                 // Hann, scaled for the normalisation above
  std::vector<float> twiddle_re_, twiddle_im_;  // exp(-2 pi i k / kWindow), k < kWindow / 2
  std::vector<int> bit_reversed_;               // the FFT's input order
  std::vector<float> re_, im_;                  // scratch: the transform in place
};

}  // namespace voxrt
