#include "audio/log_mel.h"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <string>

#include "common/cpu_dispatch.h"
#include "common/error.h"

namespace voxrt {
namespace {

// Slaney mel scale, written as transformers.audio_utils.hertz_to_mel / mel_to_hertz write it (linear
// below 1 kHz, logarithmic above) so that the filter bank matches theirs to the last float bit.
constexpr double kMinLogHertz = 1000.0;
constexpr double kMinLogMel = 15.0;

double hertz_to_mel_slaney(double hz) {
  if (hz >= kMinLogHertz) return kMinLogMel + std::log(hz / kMinLogHertz) * (27.0 / std::log(6.4));
  return 3.0 * hz / 200.0;
}

double mel_to_hertz_slaney(double mel) {
  if (mel >= kMinLogMel) return kMinLogHertz * std::exp(std::log(6.4) / 27.0 * (mel - kMinLogMel));
  return 200.0 * mel / 3.0;
}

// numpy.linspace(start, stop, num) with endpoint=True: start + i * step, last value exactly stop.
std::vector<double> linspace(double start, double stop, int num) {
  std::vector<double> v(static_cast<size_t>(num));
  if (num == 1) {
    v[0] = start;
    return v;
  }
  const double step = (stop - start) / (num - 1);
  for (int i = 0; i < num; ++i) v[static_cast<size_t>(i)] = i * step + start;
  v.back() = stop;
  return v;
}

// transformers.audio_utils.mel_filter_bank(num_frequency_bins, num_mel_filters, min_frequency=0,
// max_frequency=8000, sampling_rate, norm="slaney", mel_scale="slaney"): triangular filters in Hz
// between consecutive mel points, each scaled to unit area. Computed in double, stored as float,
// laid out [n_bins][n_mels].
std::vector<float> slaney_mel_filters(int n_bins, int n_mels, int sample_rate) {
  // VoxtralRealtimeFeatureExtractor fixes the top of the mel range at 8 kHz whatever the rate.
  const double max_hz = 8000.0;
  const std::vector<double> mel_points =
      linspace(hertz_to_mel_slaney(0.0), hertz_to_mel_slaney(max_hz), n_mels + 2);
  std::vector<double> filter_freqs(mel_points.size());
  for (size_t i = 0; i < mel_points.size(); ++i) filter_freqs[i] = mel_to_hertz_slaney(mel_points[i]);
  // transformers uses sampling_rate // 2 (integer division) as the top FFT frequency.
  const std::vector<double> fft_freqs = linspace(0.0, static_cast<double>(sample_rate / 2), n_bins);

  std::vector<float> fb(static_cast<size_t>(n_bins) * static_cast<size_t>(n_mels));
  for (int m = 0; m < n_mels; ++m) {
    const double lo = filter_freqs[static_cast<size_t>(m)];
    const double centre = filter_freqs[static_cast<size_t>(m) + 1];
    const double hi = filter_freqs[static_cast<size_t>(m) + 2];
    const double enorm = 2.0 / (hi - lo);
    for (int f = 0; f < n_bins; ++f) {
      const double fq = fft_freqs[static_cast<size_t>(f)];
      // _create_triangular_filter_bank: slopes = filter_freqs - fft_freq;
      // down = -slopes[m] / (centre - lo), up = slopes[m + 2] / (hi - centre).
      const double down = -(lo - fq) / (centre - lo);
      const double up = (hi - fq) / (hi - centre);
      const double tri = std::max(0.0, std::min(down, up));
      fb[static_cast<size_t>(f) * static_cast<size_t>(n_mels) + static_cast<size_t>(m)] =
          static_cast<float>(tri * enorm);
    }
  }
  return fb;
}

// Each triangle covers a few bins only: [begin, end) of its nonzero weights, so frame() skips the
// zeros (which would add nothing to the sums anyway).
void filter_support(const std::vector<float>& fb, int n_bins, int n_mels, std::vector<int>& begin,
                    std::vector<int>& end) {
  begin.assign(static_cast<size_t>(n_mels), 0);
  end.assign(static_cast<size_t>(n_mels), 0);
  for (int m = 0; m < n_mels; ++m) {
    int first = n_bins, last = 0;
    for (int f = 0; f < n_bins; ++f) {
      if (fb[static_cast<size_t>(f) * static_cast<size_t>(n_mels) + static_cast<size_t>(m)] != 0.0f) {
        first = std::min(first, f);
        last = f + 1;
      }
    }
    begin[static_cast<size_t>(m)] = std::min(first, last);
    end[static_cast<size_t>(m)] = last;
  }
}

// acc[f] += sum over the rows r of coef[r] * table[r][f], rows taken four at a time. Each acc[f]
// still sums its terms in row order (no reassociation: deterministic and identical for every
// caller), while the inner loop is a vectorisable sweep over contiguous bins. Most of the front end's
// time is here, hence the clones for wider vectors.
VOXRT_CPU_DISPATCH void accumulate_rows(const double* coef, const double* table, size_t rows, size_t width, double* acc) {
  size_t r = 0;
  for (; r + 4 <= rows; r += 4) {
    const double k0 = coef[r], k1 = coef[r + 1], k2 = coef[r + 2], k3 = coef[r + 3];
    const double* t0 = table + r * width;
    const double* t1 = t0 + width;
    const double* t2 = t1 + width;
    const double* t3 = t2 + width;
    for (size_t f = 0; f < width; ++f) {
      double a = acc[f];
      a += k0 * t0[f];
      a += k1 * t1[f];
      a += k2 * t2[f];
      a += k3 * t3[f];
      acc[f] = a;
    }
  }
  for (; r < rows; ++r) {
    const double k = coef[r];
    const double* t = table + r * width;
    for (size_t f = 0; f < width; ++f) acc[f] += k * t[f];
  }
}

void validate(const LogMelParams& p) {
  check(p.sample_rate > 0, "LogMel", "invalid sample_rate " + std::to_string(p.sample_rate));
  check(p.n_fft >= 2 && p.n_fft % 2 == 0, "LogMel", "n_fft must be even and >= 2, got " + std::to_string(p.n_fft));
  check(p.hop > 0, "LogMel", "invalid hop " + std::to_string(p.hop));
  check(p.n_mels > 0, "LogMel", "invalid n_mels " + std::to_string(p.n_mels));
}

}  // namespace

LogMel::LogMel(const LogMelParams& params) : p_(params) {
  validate(p_);
  const int n = p_.n_fft;
  const int n_bins = n / 2 + 1;
  filters_ = slaney_mel_filters(n_bins, p_.n_mels, p_.sample_rate);
  filter_support(filters_, n_bins, p_.n_mels, support_begin_, support_end_);

  // Periodic Hann (torch.hann_window(n, periodic=True)).
  window_.resize(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) window_[static_cast<size_t>(i)] = 0.5 - 0.5 * std::cos(2.0 * std::numbers::pi * i / n);

  // Twiddles for the folded real DFT (see frame()): rows i = 0..n/2, laid out [i][f] so that frame()
  // sweeps all bins of one row with contiguous, vectorisable loads. Angles use (f * i) mod n so
  // every one is reduced exactly.
  const size_t rows = static_cast<size_t>(n / 2 + 1);
  cos_.resize(rows * static_cast<size_t>(n_bins));
  sin_.resize(cos_.size());
  for (size_t i = 0; i < rows; ++i) {
    for (int f = 0; f < n_bins; ++f) {
      const double angle = 2.0 * std::numbers::pi * static_cast<double>((static_cast<long>(f) * static_cast<long>(i)) % n) / n;
      cos_[i * static_cast<size_t>(n_bins) + static_cast<size_t>(f)] = std::cos(angle);
      sin_[i * static_cast<size_t>(n_bins) + static_cast<size_t>(f)] = std::sin(angle);
    }
  }
}

void LogMel::frame(const float* window_samples, float* out) const {
  const size_t n = static_cast<size_t>(p_.n_fft);
  const size_t n_bins = n / 2 + 1;
  const size_t n_mels = static_cast<size_t>(p_.n_mels);

  // Real input: samples i and n - i meet the same cosine and opposite sines, so fold the windowed
  // frame in half and run the direct DFT (in double) over n/2 + 1 rows instead of n.
  const size_t half = n / 2;
  std::vector<double> even(half + 1), odd(half + 1);
  even[0] = static_cast<double>(window_samples[0]) * window_[0];
  odd[0] = 0.0;
  for (size_t i = 1; i < half; ++i) {
    const double lo = static_cast<double>(window_samples[i]) * window_[i];
    const double hi = static_cast<double>(window_samples[n - i]) * window_[n - i];
    even[i] = lo + hi;
    odd[i] = lo - hi;
  }
  even[half] = static_cast<double>(window_samples[half]) * window_[half];
  odd[half] = 0.0;  // sin(pi f) = 0: keep the rounding error of the table out

  std::vector<double> re(n_bins, 0.0), im(n_bins, 0.0);
  accumulate_rows(even.data(), cos_.data(), half + 1, n_bins, re.data());
  accumulate_rows(odd.data(), sin_.data(), half + 1, n_bins, im.data());

  std::vector<float> power(n_bins);
  // The reference holds |X|^2 in float32 before the mel projection.
  for (size_t f = 0; f < n_bins; ++f) power[f] = static_cast<float>(re[f] * re[f] + im[f] * im[f]);

  // mel = filters.T @ power (over each filter's support, in bin order), then log10 with the clamp,
  // the fixed floor and the affine map of the reference.
  const float floor = static_cast<float>(p_.global_log_mel_max - 8.0);
  for (size_t m = 0; m < n_mels; ++m) {
    double mel = 0.0;
    for (int f = support_begin_[m]; f < support_end_[m]; ++f)
      mel += static_cast<double>(filters_[static_cast<size_t>(f) * n_mels + m]) * power[static_cast<size_t>(f)];
    const float v = std::max(static_cast<float>(mel), 1e-10f);
    const float lg = std::max(std::log10(v), floor);
    out[m] = (lg + 4.0f) / 4.0f;
  }
}

std::vector<float> LogMel::compute(const float* samples, size_t n) const {
  const size_t pad = static_cast<size_t>(p_.n_fft / 2);
  // torch's reflect padding needs more samples than the pad width.
  check(n > pad, "LogMel::compute",
        "need at least " + std::to_string(pad + 1) + " samples for reflect padding, got " + std::to_string(n));

  // Centre the STFT: reflect-pad by n_fft/2 on both sides, mirroring without repeating the edge.
  std::vector<float> padded(n + 2 * pad);
  for (size_t i = 0; i < padded.size(); ++i) {
    const ptrdiff_t j = static_cast<ptrdiff_t>(i) - static_cast<ptrdiff_t>(pad);
    size_t src;
    if (j < 0) {
      src = static_cast<size_t>(-j);
    } else if (static_cast<size_t>(j) >= n) {
      src = 2 * (n - 1) - static_cast<size_t>(j);
    } else {
      src = static_cast<size_t>(j);
    }
    padded[i] = samples[src];
  }

  // The STFT has 1 + n / hop frames; the reference drops the last one.
  const size_t hop = static_cast<size_t>(p_.hop);
  const size_t frames = n / hop;
  const size_t n_mels = static_cast<size_t>(p_.n_mels);
  std::vector<float> out(frames * n_mels);
  for (size_t k = 0; k < frames; ++k) frame(padded.data() + k * hop, out.data() + k * n_mels);
  return out;
}

}  // namespace voxrt
