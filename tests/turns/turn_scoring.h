// How well detected turns match true ones (the labelled set, turns/turn_set.h): what the
// voice-activity test bounds and voxrt_turn_eval reports.
//
// A detected turn runs from its speech onset (TurnEvent::speech_ms of its start: the raw onset,
// before prefix padding) to its stop. Detected and true turns match when they overlap. Then:
//   false turn: a detected turn overlapping no true turn
//   missed:     a true turn overlapping no detected turn
//   split:      a true turn overlapping more than one detected turn (counted once per extra piece)
//   merged:     a detected turn overlapping more than one true turn (counted once per extra turn)
//   boundary error: for each true turn matched one to one, detected minus true onset (start) and
//               stop (end), in ms; negative is early. Turns in a split or merge have none.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "audio/voice_activity.h"
#include "turns/turn_set.h"

namespace voxrt::turnset {

struct DetectedTurn {
  int64_t start_ms = 0, end_ms = 0;
  int64_t start_known_ms = 0, end_known_ms = 0;  // the events' detected_at_ms: when each was decided
};

// Runs a detector over the samples fed `chunk` samples at a time, then finish(); pairs its events.
std::vector<DetectedTurn> detect_turns(std::span<const float> samples, const VoiceActivityOptions& options, size_t chunk = 1280);

struct ErrorStats {
  int count = 0;
  double sum_abs = 0, sum = 0, worst_abs = 0;
  void add(double e);
  void add(const ErrorStats& o);
  double mean_abs() const { return count ? sum_abs / count : 0.0; }
  double mean() const { return count ? sum / count : 0.0; }
};

struct TurnScore {
  int true_turns = 0, detected = 0, false_turns = 0, missed = 0, split = 0, merged = 0;
  ErrorStats start, end;
  void add(const TurnScore& o);
};

TurnScore score_turns(const std::vector<TrueTurn>& truth, const std::vector<DetectedTurn>& detected);

// One line of the report: the score's counts and its boundary errors (mean |e|, mean e, worst |e|),
// under score_header()'s columns.
std::string format_score(const std::string& name, const TurnScore& s);
std::string score_header();

}  // namespace voxrt::turnset
