// The labelled turn set (tests/data/turns, made by tools/turns/make_turn_set.py): each recording is
// a clean espeak-ng conversation plus one of sox's noises scaled to an SNR, summed here as the set
// is read (the set stores each part once: noisy mixes do not compress). Read by the
// voice-activity test (tests/unit/test_voice_activity.cpp) and by voxrt_turn_eval, which measured
// bench/results/2026-12-06-turn-detector.txt.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace voxrt::turnset {

struct TrueTurn {
  double start_ms = 0, end_ms = 0;  // the first and last speech sample of the turn
};

struct Recording {
  std::string name;              // "meeting pink 10 dB", "meeting clean"
  std::string conversation;      // "meeting"
  std::string noise;             // "none", "white", "pink", "brown"
  std::optional<double> snr_db;  // unset when clean
  std::vector<float> samples;    // 16 kHz mono
  std::vector<TrueTurn> turns;

  // "pink 10 dB", "clean": the name without the conversation.
  std::string condition() const { return name.substr(conversation.size() + 1); }
};

// Every recording set.json lists, mixed. Throws std::runtime_error (or voxrt::Error from the audio
// decoder) for a missing or malformed part.
std::vector<Recording> load_turn_set(const std::filesystem::path& dir);

// A 16 kHz mono file's samples; throws std::runtime_error for any other rate or layout.
std::vector<float> read_mono_16k(const std::filesystem::path& path);

double mean_power(const float* x, size_t n);

}  // namespace voxrt::turnset
