// A histogram of fixed buckets (voxrt.h's Histogram), Prometheus-style, filled one value at a time:
// the engine's step and wait times (scheduler/engine_counters.h) and the server's live lag
// (server/live_transcription.h) render through /metrics alike.
#pragma once

#include <span>

#include "voxrt/voxrt.h"

namespace voxrt {

// A value lands in the first bucket whose upper bound is >= it (the last bucket: +Inf).
class HistogramCounter {
 public:
  explicit HistogramCounter(std::span<const double> upper_bounds);
  void add(double value);  // not thread-safe: the owner guards it
  const Histogram& histogram() const { return h_; }

 private:
  Histogram h_;
};

}  // namespace voxrt
