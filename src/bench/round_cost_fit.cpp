#include "bench/round_cost_fit.h"

#include <algorithm>

namespace voxrt {

LineFit fit_line(std::span<const double> x, std::span<const double> y) {
  LineFit f;
  f.points = std::min(x.size(), y.size());
  if (f.points < 2) return f;
  const double n = static_cast<double>(f.points);
  double mx = 0, my = 0;
  for (size_t i = 0; i < f.points; ++i) mx += x[i], my += y[i];
  mx /= n;
  my /= n;
  double sxx = 0, sxy = 0, syy = 0;  // about the means: no cancellation between large sums
  for (size_t i = 0; i < f.points; ++i) {
    const double dx = x[i] - mx, dy = y[i] - my;
    sxx += dx * dx, sxy += dx * dy, syy += dy * dy;
  }
  if (!(sxx > 0)) return f;
  f.slope = sxy / sxx;
  f.intercept = my - f.slope * mx;
  f.r2 = syy > 0 ? sxy * sxy / (sxx * syy) : 1.0;
  f.ok = true;
  return f;
}

nlohmann::json round_cost_json(std::span<const double> round_streams, std::span<const double> round_ms, double step_ms) {
  const LineFit f = fit_line(round_streams, round_ms);
  if (!f.ok) return nullptr;
  return {{"fixed_ms", f.intercept},
          {"ms_per_stream", f.slope},
          {"r2", f.r2},
          {"rounds", f.points},
          {"streams_per_step_at_full", f.slope > 0 ? step_ms / f.slope : 0.0},
          {"streams_within_a_step", streams_within_a_step(f.intercept, f.slope, step_ms)}};
}

double streams_within_a_step(double fixed_ms, double ms_per_stream, double step_ms) {
  if (!(ms_per_stream > 0) || !(2 * fixed_ms < step_ms)) return 0.0;
  return step_ms / ms_per_stream * (1 - 2 * std::max(0.0, fixed_ms) / step_ms);
}

}  // namespace voxrt
