// voxrt_turn_eval [SET_DIR] [--threshold T] [--prefix-padding-ms MS] [--silence-duration-ms MS]
//                 [--min-speech-ms MS] [--chunk SAMPLES] [--repeats N] [--probabilities] [--turns]
// Runs the voice-activity detector (src/audio/voice_activity.h) over the labelled turn set (default
// tests/data/turns) and reports, per recording, per noise condition and overall, the true and
// detected turns, false, missed, split and merged turns, and the start and end boundary errors
// (definitions: tests/turns/turn_scoring.h); then the events' latency and the detector's CPU time per
// second of audio (over --repeats passes). What bench/results/2026-12-06-turn-detector.txt records
// and the test VoiceActivityTurnSet bounds. --probabilities prints, per condition, how the frames'
// speech probability falls inside turns and far from any speech (for tuning the score's mapping);
// --turns every recording's true and detected turns.
#include <algorithm>
#include <cstdio>
#include <ctime>
#include <exception>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "turns/turn_scoring.h"

namespace {

using namespace voxrt;
using namespace voxrt::turnset;

double cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

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
  ErrorStats start_latency, stop_latency;
  for (const Recording& r : set) {
    const std::vector<DetectedTurn> detected = detect_turns(r.samples, options, chunk);
    for (const DetectedTurn& d : detected) {
      start_latency.add(static_cast<double>(d.start_known_ms - d.start_ms));
      stop_latency.add(static_cast<double>(d.end_known_ms - d.end_ms));
    }
    const TurnScore s = score_turns(r.turns, detected);
    std::printf("%s\n", format_score(r.name, s).c_str());
    if (turns) print_turns(r, detected);
    const std::string c = r.condition();
    if (!by_condition.count(c)) order.push_back(c);
    by_condition[c].add(s);
    all.add(s);
  }
  std::printf("\nper condition (all conversations)\n");
  for (const std::string& c : order) std::printf("%s\n", format_score(c, by_condition[c]).c_str());
  std::printf("%s\n", format_score("all", all).c_str());
  std::printf("\nlatency: a start is decided %.0f ms after its onset on average (at most %.0f), a stop %.0f ms after\n"
              "the speech ended (at most %.0f)\n",
              start_latency.mean(), start_latency.worst_abs, stop_latency.mean(), stop_latency.worst_abs);
}

// Frames are "speech" inside an utterance's turn and "noise" at least 300 ms from every turn.
void print_probabilities(const std::vector<Recording>& set, const VoiceActivityOptions& options) {
  std::map<std::string, std::vector<int>> speech, noise;  // histograms over 10 bins of probability
  for (const Recording& r : set) {
    VoiceActivityDetector vad(options);
    std::vector<TurnEvent> events;
    auto& sp = speech[r.condition()];
    auto& ns = noise[r.condition()];
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

// The command line, parsed by hand: a handful of numeric options (CLI11 would double the
// compile time of a tool CI builds in two presets).
struct Args {
  std::string dir = "tests/data/turns";
  VoiceActivityOptions options;
  size_t chunk = 1280;
  int repeats = 20;
  bool probabilities = false, turns = false;
};

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw std::invalid_argument(arg + " needs a value");
      return argv[++i];
    };
    if (arg == "--threshold") a.options.threshold = std::stof(value());
    else if (arg == "--prefix-padding-ms") a.options.prefix_padding_ms = std::stoi(value());
    else if (arg == "--silence-duration-ms") a.options.silence_duration_ms = std::stoi(value());
    else if (arg == "--min-speech-ms") a.options.min_speech_ms = std::stoi(value());
    else if (arg == "--chunk") a.chunk = static_cast<size_t>(std::stoul(value()));
    else if (arg == "--repeats") a.repeats = std::stoi(value());
    else if (arg == "--probabilities") a.probabilities = true;
    else if (arg == "--turns") a.turns = true;
    else if (!arg.starts_with("-")) a.dir = arg;
    else throw std::invalid_argument("unknown option " + arg);
  }
  if (a.chunk == 0 || a.repeats < 1) throw std::invalid_argument("--chunk and --repeats must be positive");
  return a;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const Args args = parse(argc, argv);
    const VoiceActivityOptions& options = args.options;
    const size_t chunk = args.chunk;
    const int repeats = args.repeats;
    const std::vector<Recording> set = load_turn_set(args.dir);
    std::printf("threshold %.2f, prefix_padding_ms %d, silence_duration_ms %d, min_speech_ms %d, chunks of %zu samples\n\n",
                options.threshold, options.prefix_padding_ms, options.silence_duration_ms, options.min_speech_ms, chunk);
    print_scores(set, options, chunk, args.turns);
    if (args.probabilities) print_probabilities(set, options);
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
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "voxrt_turn_eval: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "voxrt_turn_eval: %s\n", e.what());
    return 1;
  }
  return 0;
}
