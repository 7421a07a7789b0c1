// What the many-session benchmarks (streams_bench.h, offline_batch_bench.h) share: percentiles, a
// start line for their threads, audio looped to any length, and the profiler's window on every
// device they watch (engine/bench_access.h's BenchDevice: its scheduler and model).
#pragma once

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <vector>

#include "engine/bench_access.h"
#include "runtime/kernel_switches.h"
#include "voxrt/session.h"
#include "voxrt/voxrt.h"
#include "models/voxtral/model.h"

namespace voxrt::bench_support {

using Clock = std::chrono::steady_clock;

inline double quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(q * static_cast<double>(v.size() - 1) + 0.5))];
}

inline nlohmann::json spread(const std::vector<double>& v) {
  return {{"p50", quantile(v, 0.5)}, {"p99", quantile(v, 0.99)}, {"max", quantile(v, 1.0)}};
}

// Every stream waits here until all are ready to be paced together. on_all runs once, in the last
// to arrive, before any is let go.
class Barrier {
 public:
  explicit Barrier(int n, std::function<void()> on_all = {}) : left_(n), on_all_(std::move(on_all)) {}
  Clock::time_point arrive_and_wait() {
    std::unique_lock<std::mutex> lock(mu_);
    if (--left_ == 0) {
      if (on_all_) on_all_();
      start_ = Clock::now();
      cv_.notify_all();
    } else {
      cv_.wait(lock, [&] { return left_ == 0; });
    }
    return start_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int left_;
  std::function<void()> on_all_;
  Clock::time_point start_;
};

// The backend's recordings since it was made: captured, replayed and run eagerly. A run that
// recaptures more than another pays for it in host time on every round (docs/cuda.md).
inline nlohmann::json recordings_json(const Backend& be) {
  const RecordingStats st = be.recording_stats();
  return {{"captured", st.captured}, {"replayed", st.replayed}, {"eager", st.eager}};
}

// Audio from `from` in the looped input, n samples.
inline std::vector<float> looped(std::span<const float> audio, size_t from, size_t n) {
  std::vector<float> out(n);
  for (size_t i = 0; i < n; ++i) out[i] = audio[(from + i) % audio.size()];
  return out;
}

// Where stream i starts in the looped audio: a different place for each, so that streams do not
// step in lockstep through the same tokens.
inline size_t start_of(int i, size_t audio_samples) { return static_cast<size_t>(i) * 7919u * 16u % audio_samples; }

// Opens or closes the profiler's window (KernelSwitches::profile_window) on every device that has one.
inline void profile_window(std::span<BenchDevice* const> devices, bool open) {
  for (BenchDevice* d : devices)
    if (KernelSwitches* switches = d->model().backend().kernel_switches()) switches->profile_window(open);
}

// A session of at most max_seconds (its cache reservation; 0: the engine's default).
inline std::unique_ptr<Session> open_session(Engine& engine, int delay_ms, double max_seconds = 0) {
  SessionOptions o;
  o.delay_ms = delay_ms;
  o.max_seconds = max_seconds;
  return engine.open_session(o);
}

}  // namespace voxrt::bench_support
