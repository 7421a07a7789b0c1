#include "turns/turn_scoring.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace voxrt::turnset {

std::vector<DetectedTurn> detect_turns(std::span<const float> samples, const VoiceActivityOptions& options, size_t chunk) {
  VoiceActivityDetector vad(options);
  std::vector<TurnEvent> events;
  for (size_t i = 0; i < samples.size(); i += chunk) vad.push(samples.subspan(i, std::min(chunk, samples.size() - i)), events);
  vad.finish(events);
  std::vector<DetectedTurn> turns;
  for (const TurnEvent& e : events) {
    if (e.kind == TurnEvent::Kind::SpeechStarted) {
      turns.push_back({e.speech_ms, -1, e.detected_at_ms, -1});
    } else {
      turns.back().end_ms = e.speech_ms;
      turns.back().end_known_ms = e.detected_at_ms;
    }
  }
  return turns;
}

void ErrorStats::add(double e) {
  ++count;
  sum += e;
  sum_abs += std::abs(e);
  worst_abs = std::max(worst_abs, std::abs(e));
}

void ErrorStats::add(const ErrorStats& o) {
  count += o.count;
  sum += o.sum;
  sum_abs += o.sum_abs;
  worst_abs = std::max(worst_abs, o.worst_abs);
}

void TurnScore::add(const TurnScore& o) {
  true_turns += o.true_turns;
  detected += o.detected;
  false_turns += o.false_turns;
  missed += o.missed;
  split += o.split;
  merged += o.merged;
  start.add(o.start);
  end.add(o.end);
}

namespace {

bool overlap(const TrueTurn& t, const DetectedTurn& d) {
  return static_cast<double>(d.start_ms) < t.end_ms && t.start_ms < static_cast<double>(d.end_ms);
}

}  // namespace

TurnScore score_turns(const std::vector<TrueTurn>& truth, const std::vector<DetectedTurn>& detected) {
  TurnScore s;
  s.true_turns = static_cast<int>(truth.size());
  s.detected = static_cast<int>(detected.size());
  std::vector<int> hits_of_true(truth.size(), 0), hits_of_detected(detected.size(), 0);
  for (size_t i = 0; i < truth.size(); ++i) {
    for (size_t j = 0; j < detected.size(); ++j) {
      if (overlap(truth[i], detected[j])) ++hits_of_true[i], ++hits_of_detected[j];
    }
  }
  for (size_t j = 0; j < detected.size(); ++j) {
    if (hits_of_detected[j] == 0) ++s.false_turns;
    if (hits_of_detected[j] > 1) s.merged += hits_of_detected[j] - 1;
  }
  for (size_t i = 0; i < truth.size(); ++i) {
    if (hits_of_true[i] == 0) ++s.missed;
    if (hits_of_true[i] > 1) s.split += hits_of_true[i] - 1;
    if (hits_of_true[i] != 1) continue;
    for (size_t j = 0; j < detected.size(); ++j) {
      if (!overlap(truth[i], detected[j]) || hits_of_detected[j] != 1) continue;
      s.start.add(static_cast<double>(detected[j].start_ms) - truth[i].start_ms);
      s.end.add(static_cast<double>(detected[j].end_ms) - truth[i].end_ms);
    }
  }
  return s;
}

std::string format_score(const std::string& name, const TurnScore& s) {
  char line[256];
  std::snprintf(line, sizeof line, "%-26s %4d %4d %5d %6d %5d %6d   %9.0f %4.0f %5.0f   %7.0f %4.0f %5.0f", name.c_str(),
                s.true_turns, s.detected, s.false_turns, s.missed, s.split, s.merged, s.start.mean_abs(), s.start.mean(),
                s.start.worst_abs, s.end.mean_abs(), s.end.mean(), s.end.worst_abs);
  return line;
}

std::string score_header() {
  return "recording                  true  det false missed split merged   start |e| mean worst   end |e| mean worst";
}

}  // namespace voxrt::turnset
