#include "hub/progress.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <utility>

namespace voxrt::hub {

namespace {

constexpr auto kRedrawInterval = std::chrono::milliseconds(100);
constexpr double kMinRateWindow = 0.5;  // seconds
constexpr double kMB = 1e6;  // decimal megabytes, as the hub web pages show sizes

}  // namespace

std::string format_duration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "?";
  auto s = static_cast<long long>(seconds + 0.5);
  char buf[32];
  if (s >= 3600) {
    std::snprintf(buf, sizeof buf, "%lldh%02lldm", s / 3600, (s % 3600) / 60);
  } else if (s >= 60) {
    std::snprintf(buf, sizeof buf, "%lldm%02llds", s / 60, s % 60);
  } else {
    std::snprintf(buf, sizeof buf, "%llds", s);
  }
  return buf;
}

ProgressBar::ProgressBar(std::ostream& out, std::string name, uint64_t total, uint64_t done)
    : out_(out),
      name_(std::move(name)),
      total_(total),
      start_done_(done),
      done_(done),
      start_(Clock::now()),
      last_draw_(start_) {}

void ProgressBar::update(uint64_t done) {
  done_ = done;
  auto now = Clock::now();
  if (!drawn_ || now - last_draw_ >= kRedrawInterval) {
    last_draw_ = now;
    draw();
  }
}

void ProgressBar::restart() {
  start_done_ = 0;
  done_ = 0;
  start_ = Clock::now();
}

void ProgressBar::finish() { end(State::Finished); }
void ProgressBar::abandon() { end(State::Abandoned); }

void ProgressBar::end(State state) {
  if (state_ != State::Running) return;
  state_ = state;
  if (state == State::Abandoned && !drawn_) return;  // nothing on screen to close
  draw();
  out_ << '\n' << std::flush;
}

void ProgressBar::draw() {
  double elapsed = std::chrono::duration<double>(Clock::now() - start_).count();
  double moved = static_cast<double>(done_ - std::min(done_, start_done_));
  double pct = total_ ? 100.0 * static_cast<double>(done_) / static_cast<double>(total_) : 100.0;
  // The first moments are dominated by connection setup; a rate from them would be noise.
  bool rate_known = elapsed >= kMinRateWindow || state_ != State::Running;
  double rate = rate_known && elapsed > 0 ? moved / elapsed : 0;  // bytes per second
  char speed[32] = "-- MB/s";
  if (rate_known) std::snprintf(speed, sizeof speed, "%.1f MB/s", rate / kMB);
  std::string tail = "ETA " + (rate > 0 && total_ > done_ ? format_duration((total_ - done_) / rate) : "--");
  if (state_ == State::Finished) tail = "in " + format_duration(elapsed);  // how long it took
  if (state_ == State::Abandoned) tail = "stopped";

  char buf[256];
  int n = std::snprintf(buf, sizeof buf, "%s  %5.1f%%  %.1f/%.1f MB  %s  %s", name_.c_str(), pct,
                        done_ / kMB, total_ / kMB, speed, tail.c_str());
  std::string line(buf, n < 0 ? 0 : std::min<size_t>(n, sizeof buf - 1));
  // Pad over the tail of a longer previous line; '\r' alone does not clear it.
  size_t width = line.size();
  if (width < last_width_) line.append(last_width_ - width, ' ');
  last_width_ = width;
  out_ << '\r' << line << std::flush;
  drawn_ = true;
}

}  // namespace voxrt::hub
