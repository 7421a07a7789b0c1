// Voxtral's log-mel front end (docs/model.md §2): n_fft = win = 400, hop 160, periodic Hann window,
// centred STFT with reflect padding, power spectrum, the last STFT frame dropped, 128 Slaney mel
// filters (0-8000 Hz, Slaney area norm) computed in code, log10(max(mel,1e-10)), floored at
// global_log_mel_max - 8, then (x + 4) / 4.
// Frame k covers samples [160k - 200, 160k + 200) of the signal; the offline result for n samples
// has n / 160 frames (integer division), and is laid out time-major: out[k * n_mels + m].
#pragma once

#include <cstddef>
#include <vector>

namespace voxrt {

struct LogMelParams {
  int sample_rate = 16000;
  int n_fft = 400;
  int hop = 160;
  int n_mels = 128;
  double global_log_mel_max = 1.5;
};

class LogMel {
 public:
  explicit LogMel(const LogMelParams& params = {});
  const LogMelParams& params() const { return p_; }
  // Mel filter bank, [n_fft/2 + 1][n_mels] (as transformers' mel_filter_bank returns it).
  const std::vector<float>& filters() const { return filters_; }

  // Offline: the whole signal, centred with reflect padding at both ends. Returns frames * n_mels
  // values, time-major; frames = n / hop. Reflect padding needs n > n_fft / 2 (201 samples by
  // default): shorter input throws voxrt::Error.
  std::vector<float> compute(const float* samples, size_t n) const;

  // One frame from exactly n_fft samples (the caller supplies the window already padded):
  // writes n_mels values. Used by compute() and by the streaming front end.
  void frame(const float* window_samples, float* out) const;

 private:
  LogMelParams p_;
  std::vector<float> filters_;
  std::vector<int> support_begin_, support_end_;  // per mel filter: bins [begin, end) it covers
  std::vector<double> window_;         // periodic Hann, n_fft
  std::vector<double> cos_, sin_;      // DFT twiddles, (n_fft/2+1) * (n_fft/2+1), [sample][bin]
};

}  // namespace voxrt
