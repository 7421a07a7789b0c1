// What a scheduler round costs, split into the part every round pays whatever it holds (reading
// every weight, the launches) and the part each stream adds (reading its caches, its rows' share of
// the arithmetic), fitted over the rounds of a `voxrt bench --streams` run. Rounds hold different
// numbers of streams (those whose audio has arrived), so their times against their stream counts
// give both parts. The per-stream part bounds the capacity: n streams' own work, n x per_stream,
// must fit in each 80 ms step with room left for the rounds' fixed part.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <span>

namespace voxrt {

// y = intercept + slope x by least squares over the pairs (x[i], y[i]). r2: the share of y's
// variance the line explains. ok: at least two points and x not constant (else nothing is fitted).
struct LineFit {
  double intercept = 0, slope = 0, r2 = 0;
  size_t points = 0;
  bool ok = false;
};
LineFit fit_line(std::span<const double> x, std::span<const double> y);

// The rounds' fit as the bench reports it: {"fixed_ms", "ms_per_stream", "r2", "rounds"},
// "streams_per_step_at_full": 80 ms (step_ms) over ms_per_stream, the count whose own work alone
// would fill every step, and "streams_within_a_step" (below). null when the rounds never differed
// in size.
nlohmann::json round_cost_json(std::span<const double> round_streams, std::span<const double> round_ms, double step_ms);

// The most streams that rounds run back to back keep within a step by a fit of a + b n: a chunk
// waits for the round in progress and is done by the next, so its lag is at most two rounds; with
// N streams spread over the step a round holds those that arrived during the last, T = a / (1 -
// N b / step), and T <= step / 2 while N <= (step / b)(1 - 2 a / step) (docs/scheduler.md, issue
// 38's round policy). A bound for rounds of the mean time: rounds vary (p99 ~1.5x p50), so real
// capacity is lower. 0 when b <= 0 or a alone takes half a step.
double streams_within_a_step(double fixed_ms, double ms_per_stream, double step_ms);

}  // namespace voxrt
