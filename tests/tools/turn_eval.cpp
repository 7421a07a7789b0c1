// voxrt_turn_eval [SET_DIR] [options]: runs the voice-activity detector (src/audio/voice_activity.h)
// over the labelled turn set (default tests/data/turns) and reports, per recording, per noise
// condition and overall, the true and detected turns, false, missed, split and merged turns, and
// the start and end boundary errors (definitions: tests/unit/turn_scoring.h); then the detector's
// CPU time per second of audio. What bench/results/2026-12-06-turn-detector.txt records and the
// test VoiceActivityTurnSet bounds. --scores prints, per condition, how the frames' speech
// probability falls inside utterances and far from any speech (for tuning the score's mapping),
// --turns every recording's turns.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <exception>
#include <map>
#include <string>
#include <vector>

#include "unit/turn_scoring.h"

namespace {

using namespace voxrt;
using namespace voxrt::turnset;

double cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

std::string condition_of(const Recording& r) { return r.name.substr(r.conversation.size() + 1); }

void print_turns(const Recording& r, const std::vector<DetectedTurn>& detected) {
  std::printf("  true:");
  for (const TrueTurn& t : r.turns) std::printf(" %.0f-%.0f", t.start_ms, t.end_ms);
  std::printf("\n  detected:");
  for (const DetectedTurn& d : detected) std::printf(" %lld-%lld", static_cast<long long>(d.start_ms), static_cast<long long>(d.end_ms));
  std::printf("\n");
}

void print_scores(const std::vector<Recording>& set, const VoiceActivityOptions& options, size_t chunk, bool turns) {
  std::printf("%s\n", score_header().c_str());
  std::map<std::string, TurnScore> by_condition;
  std::vector<std::string> order;
  TurnScore all;
  for (const Recording& r : set) {
    const std::vector<DetectedTurn> detected = detect_turns(r.samples, options, chunk);
    const TurnScore s = score_turns(r.turns, detected);
    std::printf("%s\n", format_score(r.name, s).c_str());
    if (turns) print_turns(r, detected);
    const std::string c = condition_of(r);
    if (!by_condition.count(c)) order.push_back(c);
    by_condition[c].add(s);
    all.add(s);
  }
  std::printf("\nper condition (all conversations)\n");
  for (const std::string& c : order) std::printf("%s\n", format_score(c, by_condition[c]).c_str());
  std::printf("%s\n", format_score("all", all).c_str());
}

// Frames are "speech" inside an utterance's turn and "noise" at least 300 ms from every turn.
void print_probabilities(const std::vector<Recording>& set, const VoiceActivityOptions& options) {
  std::map<std::string, std::vector<int>> speech, noise;  // histograms over 10 bins of probability
  for (const Recording& r : set) {
    VoiceActivityDetector vad(options);
    std::vector<TurnEvent> events;
    auto& sp = speech[condition_of(r)];
    auto& ns = noise[condition_of(r)];
    sp.resize(10), ns.resize(10);
    for (size_t i = 0; i + 160 <= r.samples.size(); i += 160) {
      vad.push(std::span<const float>(r.samples).subspan(i, 160), events);
      const double mid = (static_cast<double>(i) + 80.0) / 16.0;
      const int bin = std::min(9, static_cast<int>(vad.speech_probability() * 10));
      bool in = false, near = false;
      for (const TrueTurn& t : r.turns) {
        in |= mid >= t.start_ms && mid < t.end_ms;
        near |= mid >= t.start_ms - 300 && mid < t.end_ms + 300;
      }
      if (in) ++sp[static_cast<size_t>(bin)];
      if (!near) ++ns[static_cast<size_t>(bin)];
    }
  }
  std::printf("\nspeech probability per frame: %% of frames in each tenth (0-0.1 ... 0.9-1)\n");
  for (const auto& [c, sp] : speech) {
    for (int which = 0; which < 2; ++which) {
      const std::vector<int>& h = which == 0 ? sp : noise[c];
      int total = 0;
      for (int v : h) total += v;
      std::printf("%-12s %-7s", c.c_str(), which == 0 ? "turns" : "noise");
      for (int v : h) std::printf(" %5.1f", 100.0 * v / std::max(1, total));
      std::printf("\n");
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Measures the voice-activity detector on the labelled turn set"};
  std::string dir = "tests/data/turns";
  VoiceActivityOptions options;
  size_t chunk = 1280;
  int repeats = 20;
  bool probabilities = false, turns = false;
  app.add_option("set", dir, "the set's directory (tests/data/turns)");
  app.add_option("--threshold", options.threshold, "0..1");
  app.add_option("--prefix-padding-ms", options.prefix_padding_ms);
  app.add_option("--silence-duration-ms", options.silence_duration_ms);
  app.add_option("--min-speech-ms", options.min_speech_ms);
  app.add_option("--chunk", chunk, "samples fed at a time")->check(CLI::PositiveNumber);
  app.add_option("--repeats", repeats, "passes over the set for the CPU time")->check(CLI::PositiveNumber);
  app.add_flag("--probabilities", probabilities, "histograms of the frames' speech probability");
  app.add_flag("--turns", turns, "each recording's true and detected turns (ms)");
  CLI11_PARSE(app, argc, argv);
  try {
    const std::vector<Recording> set = load_turn_set(dir);
    std::printf("threshold %.2f, prefix_padding_ms %d, silence_duration_ms %d, min_speech_ms %d, chunks of %zu samples\n\n",
                options.threshold, options.prefix_padding_ms, options.silence_duration_ms, options.min_speech_ms, chunk);
    print_scores(set, options, chunk, turns);
    if (probabilities) print_probabilities(set, options);
    double audio_seconds = 0.0;
    for (const Recording& r : set) audio_seconds += static_cast<double>(r.samples.size()) / 16000.0;
    size_t sink = 0;
    const double t0 = cpu_seconds();
    for (int i = 0; i < repeats; ++i) {
      for (const Recording& r : set) sink += detect_turns(r.samples, options, chunk).size();
    }
    const double cpu = cpu_seconds() - t0;
    std::printf("\nCPU: %.1f us per second of audio (%d passes over %.1f s of audio in %.3f s; %zu turns)\n",
                1e6 * cpu / (audio_seconds * repeats), repeats, audio_seconds, cpu, sink);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "voxrt_turn_eval: %s\n", e.what());
    return 1;
  }
  return 0;
}
