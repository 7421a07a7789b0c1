#include "audio/band_power.h"

#include <cmath>
#include <numbers>

namespace voxrt {

static_assert((BandPowerAnalyzer::kWindow & (BandPowerAnalyzer::kWindow - 1)) == 0, "the FFT is radix 2");
static_assert(BandPowerAnalyzer::kBandEdges.back() <= BandPowerAnalyzer::kWindow / 2, "bands above Nyquist");

BandPowerAnalyzer::BandPowerAnalyzer()
    : window_(kWindow), twiddle_re_(kWindow / 2), twiddle_im_(kWindow / 2), bit_reversed_(kWindow), re_(kWindow), im_(kWindow) {
  // A Hann window scaled to unit energy: sum(w^2) = 1 makes a bin's expected power equal the
  // variance of white noise, whatever the window length.
  double energy = 0.0;
  std::vector<double> hann(kWindow);
  for (int n = 0; n < kWindow; ++n) {
    hann[static_cast<size_t>(n)] = 0.5 - 0.5 * std::cos(2.0 * std::numbers::pi * n / kWindow);
    energy += hann[static_cast<size_t>(n)] * hann[static_cast<size_t>(n)];
  }
  for (int n = 0; n < kWindow; ++n) window_[static_cast<size_t>(n)] = static_cast<float>(hann[static_cast<size_t>(n)] / std::sqrt(energy));
  for (int k = 0; k < kWindow / 2; ++k) {
    const double angle = -2.0 * std::numbers::pi * k / kWindow;
    twiddle_re_[static_cast<size_t>(k)] = static_cast<float>(std::cos(angle));
    twiddle_im_[static_cast<size_t>(k)] = static_cast<float>(std::sin(angle));
  }
  int bits = 0;
  while ((1 << bits) < kWindow) ++bits;
  for (int n = 0; n < kWindow; ++n) {
    int r = 0;
    for (int b = 0; b < bits; ++b) r |= ((n >> b) & 1) << (bits - 1 - b);
    bit_reversed_[static_cast<size_t>(n)] = r;
  }
}

std::array<float, BandPowerAnalyzer::kBands> BandPowerAnalyzer::analyze(const float* samples) {
  // An iterative radix-2 FFT on separate real and imaginary arrays (which the compiler vectorises
  // where a stage's butterflies are long enough): at 100 frames a second its ~1000 butterflies a
  // frame are noise next to a model step, so nothing cleverer is worth its code.
  float* re = re_.data();
  float* im = im_.data();
  for (int n = 0; n < kWindow; ++n) {
    const int from = bit_reversed_[static_cast<size_t>(n)];
    re[n] = samples[from] * window_[static_cast<size_t>(from)];
    im[n] = 0.0f;
  }
  for (int half = 1; half < kWindow; half *= 2) {
    const int stride = kWindow / (2 * half);
    for (int start = 0; start < kWindow; start += 2 * half) {
      for (int k = 0; k < half; ++k) {
        const float wr = twiddle_re_[static_cast<size_t>(k * stride)], wi = twiddle_im_[static_cast<size_t>(k * stride)];
        const int a = start + k, b = a + half;
        const float tr = wr * re[b] - wi * im[b], ti = wr * im[b] + wi * re[b];
        re[b] = re[a] - tr;
        im[b] = im[a] - ti;
        re[a] += tr;
        im[a] += ti;
      }
    }
  }
  std::array<float, kBands> power{};
  for (int b = 0; b < kBands; ++b) {
    float sum = 0.0f;
    for (int k = kBandEdges[static_cast<size_t>(b)]; k < kBandEdges[static_cast<size_t>(b) + 1]; ++k) sum += re[k] * re[k] + im[k] * im[k];
    power[static_cast<size_t>(b)] = sum;
  }
  return power;
}

}  // namespace voxrt
