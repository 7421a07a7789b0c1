// Whether the live sessions of an engine keep real time (issue 13, fairness under load): how long
// their hand-overs wait (a position's audio handed to the scheduler's loop -> its output done),
// over a sliding window. While the window's 90th percentile passes the budget (the 80 ms of audio a
// position brings), the loop cannot serve more live sessions without the ones it has falling behind, so new live
// sessions are refused (Scheduler::open) and the existing ones keep their pace.
//
// Only hand-overs of at most a couple of positions' audio count: a caller that hands over a burst
// (a file read ahead) waits for all of it by design, which says nothing about the load.
#pragma once

#include <chrono>
#include <cstddef>
#include <deque>
#include <list>

namespace voxrt {

class LoadMonitor {
 public:
  using Clock = std::chrono::steady_clock;

  // budget_ms: the wait a live hand-over may take; window: how far back samples count;
  // min_samples: fewer than this in the window never makes it overloaded.
  explicit LoadMonitor(double budget_ms = 80.0, std::chrono::milliseconds window = std::chrono::milliseconds(2000),
                       size_t min_samples = 20);

  void record(double wait_ms, Clock::time_point at);
  // A hand-over under way: its wait so far counts as a sample until it ends, so that an engine
  // whose steps stall (no hand-over finishing, none recorded) reads as overloaded, not idle.
  using Ticket = std::list<Clock::time_point>::iterator;
  Ticket begin(Clock::time_point at);
  // It ended: its wait is recorded.
  void finish(Ticket ticket, Clock::time_point at);
  // The 90th percentile of the window's waits and of the hand-overs under way (0 with fewer than
  // min_samples of both) and whether it passes the budget.
  double p90_ms(Clock::time_point now) const;
  bool overloaded(Clock::time_point now) const { return p90_ms(now) > budget_ms_; }
  double budget_ms() const { return budget_ms_; }

 private:
  struct Sample {
    Clock::time_point at;
    double wait_ms;
  };
  void drop_old(Clock::time_point now) const;

  double budget_ms_;
  std::chrono::milliseconds window_;
  size_t min_samples_;
  mutable std::deque<Sample> samples_;  // oldest first
  std::list<Clock::time_point> pending_;  // when each hand-over under way began
};

}  // namespace voxrt
