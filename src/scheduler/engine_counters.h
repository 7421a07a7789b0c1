// The counters behind Engine::stats (voxrt.h's EngineStats): bumped by the scheduler as sessions
// open and rounds run, read by monitoring from any thread. Each update is a few additions under a
// mutex of its own, never the scheduler's.
#pragma once

#include <cstdint>
#include <mutex>

#include "common/histogram_counter.h"
#include "voxrt/voxrt.h"

namespace voxrt {

class EngineCounters {
 public:
  enum class Refusal { Full, Overloaded, TooLong };

  EngineCounters();
  void opened();
  void refused(Refusal why);
  void round(double seconds, int decoder_rows);
  void live_wait(double ms);
  void audio(double seconds);
  // The counters into `out` (the fields the scheduler does not know are left as they are).
  void fill(EngineStats& out) const;

 private:
  mutable std::mutex mu_;
  uint64_t opened_ = 0, refused_full_ = 0, refused_overloaded_ = 0, refused_too_long_ = 0;
  uint64_t rounds_ = 0, decoder_rows_ = 0;
  double audio_seconds_ = 0;
  HistogramCounter round_ms_, live_wait_ms_;
};

}  // namespace voxrt
