#include "scheduler/engine_counters.h"

#include <algorithm>
#include <array>

namespace voxrt {
namespace {

// A round takes about 4 ms alone on the H200 and tens of ms with hundreds of streams (a position's
// audio is 80 ms); the tiny model on a CPU takes well under a millisecond.
constexpr std::array<double, 14> kRoundBoundsMs = {0.5, 1, 2, 4, 8, 12, 16, 25, 40, 60, 80, 120, 250, 1000};
// A live hand-over waits a round or two; past 80 ms the session falls behind real time.
constexpr std::array<double, 13> kWaitBoundsMs = {1, 2, 5, 10, 20, 40, 60, 80, 120, 160, 250, 500, 1000};

}  // namespace

EngineCounters::EngineCounters() : round_ms_(kRoundBoundsMs), live_wait_ms_(kWaitBoundsMs) {}

void EngineCounters::opened() {
  std::lock_guard<std::mutex> lock(mu_);
  ++opened_;
}

void EngineCounters::refused(Refusal why) {
  std::lock_guard<std::mutex> lock(mu_);
  ++(why == Refusal::Full ? refused_full_ : why == Refusal::Overloaded ? refused_overloaded_ : refused_too_long_);
}

void EngineCounters::round(double seconds, int decoder_rows) {
  std::lock_guard<std::mutex> lock(mu_);
  ++rounds_;
  decoder_rows_ += static_cast<uint64_t>(std::max(0, decoder_rows));
  round_ms_.add(seconds * 1e3);
}

void EngineCounters::live_wait(double ms) {
  std::lock_guard<std::mutex> lock(mu_);
  live_wait_ms_.add(ms);
}

void EngineCounters::audio(double seconds) {
  std::lock_guard<std::mutex> lock(mu_);
  audio_seconds_ += seconds;
}

void EngineCounters::fill(EngineStats& out) const {
  std::lock_guard<std::mutex> lock(mu_);
  out.sessions_opened = opened_;
  out.refused_full = refused_full_;
  out.refused_overloaded = refused_overloaded_;
  out.refused_too_long = refused_too_long_;
  out.rounds = out.steps = rounds_;
  out.decoder_rows = decoder_rows_;
  out.audio_seconds = audio_seconds_;
  out.round_ms = out.step_ms = round_ms_.histogram();
  out.live_wait_ms = live_wait_ms_.histogram();
}

}  // namespace voxrt
