// check_turn_detection (include/voxrt/session.h): the ranges of SessionOptions::turns, apart from
// the session that detects turns so that the server's dialects check a client's values with no
// more than this (and the fuzzers link no audio code for it).
#include <string>

#include "voxrt/error.h"
#include "voxrt/session.h"

namespace voxrt {
namespace {
constexpr int kMaxTurnMs = 60000;  // the largest prefix, silence and timeout taken (a minute)
constexpr int kMinSilenceMs = 10;  // one frame of the detector (audio/voice_activity.h)
}  // namespace

void check_turn_detection(const TurnDetection& t) {
  const auto in_range = [](const char* field, int v, int lo) {
    if (v < lo || v > kMaxTurnMs)
      throw OptionError(std::string("turns.") + field,
                        " " + std::to_string(v) + ": expected " + std::to_string(lo) + " to " + std::to_string(kMaxTurnMs));
  };
  if (!(t.threshold >= 0.0f && t.threshold <= 1.0f))
    throw OptionError("turns.threshold", " " + std::to_string(t.threshold) + ": expected 0 to 1");
  in_range("prefix_padding_ms", t.prefix_padding_ms, 0);
  in_range("silence_duration_ms", t.silence_duration_ms, kMinSilenceMs);
  if (t.end_timeout_ms != 0) {
    in_range("end_timeout_ms", t.end_timeout_ms, 0);
    if (t.end_timeout_ms < t.silence_duration_ms)
      throw OptionError("turns.end_timeout_ms", " " + std::to_string(t.end_timeout_ms) +
                                                    ": expected 0 (automatic) or at least silence_duration_ms (" +
                                                    std::to_string(t.silence_duration_ms) + ")");
  }
}

}  // namespace voxrt
