#include "scheduler/load_monitor.h"

#include <algorithm>
#include <vector>

namespace voxrt {

namespace {
constexpr size_t kMaxSamples = 1 << 16;  // a bound on memory however many sessions feed
}  // namespace

LoadMonitor::LoadMonitor(double budget_ms, std::chrono::milliseconds window, size_t min_samples)
    : budget_ms_(budget_ms), window_(window), min_samples_(min_samples) {}

void LoadMonitor::record(double wait_ms, Clock::time_point at) {
  samples_.push_back({at, wait_ms});
  if (samples_.size() > kMaxSamples) samples_.pop_front();
  drop_old(at);
}

LoadMonitor::Ticket LoadMonitor::begin(Clock::time_point at) { return pending_.insert(pending_.end(), at); }

void LoadMonitor::finish(Ticket ticket, Clock::time_point at) {
  const double wait_ms = std::chrono::duration<double, std::milli>(at - *ticket).count();
  pending_.erase(ticket);
  record(wait_ms, at);
}

void LoadMonitor::drop_old(Clock::time_point now) const {
  while (!samples_.empty() && now - samples_.front().at > window_) samples_.pop_front();
}

double LoadMonitor::p90_ms(Clock::time_point now) const {
  drop_old(now);
  std::vector<double> waits;
  waits.reserve(samples_.size() + pending_.size());
  for (const Sample& s : samples_) waits.push_back(s.wait_ms);
  for (const Clock::time_point& began : pending_) waits.push_back(std::chrono::duration<double, std::milli>(now - began).count());
  if (waits.size() < min_samples_ || waits.empty()) return 0.0;
  const size_t k = std::min(waits.size() - 1, waits.size() * 9 / 10);
  std::nth_element(waits.begin(), waits.begin() + static_cast<std::ptrdiff_t>(k), waits.end());
  return waits[k];
}

}  // namespace voxrt
