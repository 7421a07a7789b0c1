// A one-line download progress bar: "name  42.1%  1234.5/8863.2 MB  45.3 MB/s  ETA 2m51s",
// redrawn in place with '\r' at most ten times a second so a fast local transfer does not flood
// the terminal (or a log file) with lines.
#pragma once

#include <chrono>
#include <cstdint>
#include <ostream>
#include <string>

namespace voxrt::hub {

class ProgressBar {
 public:
  // `done` is what is already on disk (a resumed part); the speed only counts bytes moved now.
  ProgressBar(std::ostream& out, std::string name, uint64_t total, uint64_t done);

  // Records the new byte count; redraws when the last draw is older than the redraw interval.
  void update(uint64_t done);
  // The transfer restarted from zero (the server ignored the resume request).
  void restart();
  // Draws the final state and ends the line. Safe to call more than once.
  void finish();
  // The transfer failed: draws how far it got and ends the line, so an error message that follows
  // starts on its own line. Safe to call more than once; no-op after finish().
  void abandon();

 private:
  using Clock = std::chrono::steady_clock;
  enum class State { Running, Finished, Abandoned };
  void draw();
  void end(State state);

  std::ostream& out_;
  std::string name_;
  uint64_t total_;
  uint64_t start_done_;
  uint64_t done_;
  Clock::time_point start_;
  Clock::time_point last_draw_;
  size_t last_width_ = 0;
  bool drawn_ = false;
  State state_ = State::Running;
};

// "2m51s", "1h02m", "12s": short enough for one terminal line.
std::string format_duration(double seconds);

}  // namespace voxrt::hub
