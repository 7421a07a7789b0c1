#include "common/histogram_counter.h"

#include <algorithm>

namespace voxrt {

HistogramCounter::HistogramCounter(std::span<const double> upper_bounds) {
  h_.upper_bounds.assign(upper_bounds.begin(), upper_bounds.end());
  h_.counts.assign(upper_bounds.size() + 1, 0);
}

void HistogramCounter::add(double value) {
  const auto at = std::lower_bound(h_.upper_bounds.begin(), h_.upper_bounds.end(), value);
  ++h_.counts[static_cast<size_t>(at - h_.upper_bounds.begin())];
  h_.sum += value;
  ++h_.count;
}

}  // namespace voxrt
