// The voice-activity detector (src/audio/voice_activity.h) and its turn rules (turn_tracker.h): the
// rules on decisions written by hand, the detector's streaming behaviour on synthetic speech-like
// sound, and its errors on the labelled turn set (tests/data/turns) kept within what
// bench/results/2026-12-06-turn-detector.txt records.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <map>
#include <numbers>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "audio/noise_floor.h"
#include "audio/turn_tracker.h"
#include "audio/voice_activity.h"
#include "common/error.h"
#include "test_paths.h"
#include "turns/turn_scoring.h"
#include "turns/turn_set.h"

using voxrt::TurnEvent;
using voxrt::TurnRules;
using voxrt::TurnTracker;
using voxrt::VoiceActivityDetector;
using voxrt::VoiceActivityOptions;
using Kind = voxrt::TurnEvent::Kind;

namespace {

constexpr int kRate = 16000;

size_t samples_of(int64_t ms) { return static_cast<size_t>(ms * kRate / 1000); }

// ---- the turn rules on hand-written decisions (10 ms frames) ----

// Feeds `frames` decisions, all `speech`, and returns the events they complete.
std::vector<TurnEvent> feed(TurnTracker& t, int frames, bool speech) {
  std::vector<TurnEvent> events;
  for (int i = 0; i < frames; ++i) t.frame(speech, events);
  return events;
}

TEST(VoiceActivityTurnTracker, MinSpeechStartsATurnAtItsOnsetAndSilenceEndsIt) {
  TurnTracker t(TurnRules{});  // 10 ms frames, padding 300, silence 500, min speech 100
  EXPECT_TRUE(feed(t, 100, false).empty());
  EXPECT_TRUE(feed(t, 9, true).empty());  // 90 ms: not yet a turn
  const auto started = feed(t, 6, true);   // the 10th speech frame decides
  ASSERT_EQ(started.size(), 1u);
  EXPECT_EQ(started[0], (TurnEvent{Kind::SpeechStarted, 700, 1000, 1100}));
  EXPECT_TRUE(t.in_turn());
  EXPECT_TRUE(feed(t, 49, false).empty());  // speech ended at 1150; 490 ms of silence
  const auto stopped = feed(t, 1, false);
  ASSERT_EQ(stopped.size(), 1u);
  EXPECT_EQ(stopped[0], (TurnEvent{Kind::SpeechStopped, 1150, 1150, 1650}));
  EXPECT_FALSE(t.in_turn());
}

TEST(VoiceActivityTurnTracker, BurstsCountTowardsAStartAcrossShortGapsOnly) {
  TurnTracker t(TurnRules{});
  // 50 ms, a gap of 100 ms (allowed), 50 ms: a turn from the first burst.
  feed(t, 20, false);
  EXPECT_TRUE(feed(t, 5, true).empty());
  EXPECT_TRUE(feed(t, 10, false).empty());
  const auto started = feed(t, 5, true);
  ASSERT_EQ(started.size(), 1u);
  EXPECT_EQ(started[0].speech_ms, 200);

  TurnTracker u(TurnRules{});
  // 50 ms, a gap of 110 ms (too long: the first burst is forgotten), 50 ms: nothing yet.
  feed(u, 20, false);
  feed(u, 5, true);
  feed(u, 11, false);
  EXPECT_TRUE(feed(u, 5, true).empty());
  const auto started_late = feed(u, 5, true);
  ASSERT_EQ(started_late.size(), 1u);
  EXPECT_EQ(started_late[0].speech_ms, 360);
}

TEST(VoiceActivityTurnTracker, LoneSpeechFramesInsideASilenceDoNotHoldTheTurn) {
  TurnTracker t(TurnRules{});
  feed(t, 20, true);  // a turn, speech until 200 ms
  std::vector<TurnEvent> events;
  // Single speech frames every 40 ms (noise): shorter than resume_speech_ms, they do not count.
  for (int i = 0; i < 60 && events.empty(); ++i) t.frame(i % 4 == 3, events);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].kind, Kind::SpeechStopped);
  EXPECT_EQ(events[0].speech_ms, 200);
  EXPECT_EQ(events[0].detected_at_ms, 700);

  TurnTracker u(TurnRules{});
  feed(u, 20, true);
  EXPECT_TRUE(feed(u, 40, false).empty());
  EXPECT_TRUE(feed(u, 2, true).empty());  // 20 ms of speech: the turn's speech now ends at 620 ms
  EXPECT_TRUE(feed(u, 49, false).empty());
  const auto stopped = feed(u, 1, false);
  ASSERT_EQ(stopped.size(), 1u);
  EXPECT_EQ(stopped[0].speech_ms, 620);
}

TEST(VoiceActivityTurnTracker, PrefixPaddingStopsAtZeroAndAtThePreviousTurn) {
  TurnRules rules;
  rules.prefix_padding_ms = 1000;
  TurnTracker t(rules);
  const auto first = feed(t, 30, true);  // onset at 0: padded start clamped at 0
  ASSERT_EQ(first.size(), 1u);
  EXPECT_EQ(first[0].audio_ms, 0);
  const auto stop = feed(t, 60, false);
  ASSERT_EQ(stop.size(), 1u);
  EXPECT_EQ(stop[0].audio_ms, 300);
  const auto second = feed(t, 10, true);  // onset at 900: 1000 ms before it is inside the first turn
  ASSERT_EQ(second.size(), 1u);
  EXPECT_EQ(second[0].speech_ms, 900);
  EXPECT_EQ(second[0].audio_ms, 300);
}

TEST(VoiceActivityTurnTracker, FinishClosesAnOpenTurnAndDropsAStartTooShort) {
  TurnTracker t(TurnRules{});
  feed(t, 10, false);
  feed(t, 30, true);
  feed(t, 3, false);
  std::vector<TurnEvent> events;
  t.finish(events);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0], (TurnEvent{Kind::SpeechStopped, 400, 400, 430}));

  TurnTracker u(TurnRules{});
  feed(u, 5, true);  // 50 ms: not a turn, and finish does not make it one
  events.clear();
  u.finish(events);
  EXPECT_TRUE(events.empty());
}

TEST(VoiceActivityTurnTracker, SilenceOfZeroEndsATurnAtTheFirstSilentFrame) {
  TurnRules rules;
  rules.silence_duration_ms = 0;
  TurnTracker t(rules);
  feed(t, 10, true);
  const auto stopped = feed(t, 1, false);
  ASSERT_EQ(stopped.size(), 1u);
  EXPECT_EQ(stopped[0].speech_ms, 100);
}

TEST(VoiceActivityTurnTracker, RulesOutOfRangeThrow) {
  for (auto bad : {&TurnRules::frame_ms, &TurnRules::prefix_padding_ms, &TurnRules::silence_duration_ms,
                   &TurnRules::min_speech_ms, &TurnRules::max_onset_gap_ms, &TurnRules::resume_speech_ms}) {
    TurnRules rules;
    rules.*bad = -1;
    EXPECT_THROW(TurnTracker{rules}, voxrt::Error);
  }
  TurnRules rules;
  rules.frame_ms = 0;
  EXPECT_THROW(TurnTracker{rules}, voxrt::Error);
}

// ---- the detector on synthetic sound ----

double rms_of_dbfs(double dbfs) { return std::pow(10.0, dbfs / 20.0); }

// Gaussian noise of the given RMS level.
std::vector<float> white_noise(int64_t ms, double dbfs, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, static_cast<float>(rms_of_dbfs(dbfs)));
  std::vector<float> v(samples_of(ms));
  for (float& x : v) x = d(rng);
  return v;
}

// Adds a speech-like sound from begin_ms to end_ms: a vowel-ish harmonic series (140 Hz and its
// harmonics to 5 kHz, falling 6 dB an octave), with 5 ms ramps, at `dbfs` RMS. It lifts every band
// the detector listens to, as voiced speech does.
void add_voiced(std::vector<float>& audio, int64_t begin_ms, int64_t end_ms, double dbfs = -20.0) {
  const size_t begin = samples_of(begin_ms), end = std::min(samples_of(end_ms), audio.size());
  constexpr double f0 = 140.0;
  double norm = 0.0;
  for (int k = 1; k * f0 < 5000.0; ++k) norm += 0.5 / (k * k);
  const double gain = rms_of_dbfs(dbfs) / std::sqrt(norm);
  const size_t ramp = samples_of(5);
  for (size_t i = begin; i < end; ++i) {
    const double t = static_cast<double>(i) / kRate;
    double v = 0.0;
    for (int k = 1; k * f0 < 5000.0; ++k) v += std::sin(2.0 * std::numbers::pi * k * f0 * t) / k;
    const size_t from_edge = std::min(i - begin, end - 1 - i);
    const double envelope = from_edge < ramp ? 0.5 - 0.5 * std::cos(std::numbers::pi * static_cast<double>(from_edge) / ramp) : 1.0;
    audio[i] += static_cast<float>(gain * envelope * v);
  }
}

std::vector<TurnEvent> detect(std::span<const float> audio, const VoiceActivityOptions& options = {}, size_t chunk = 1280,
                              bool finish = true) {
  VoiceActivityDetector vad(options);
  std::vector<TurnEvent> events;
  for (size_t i = 0; i < audio.size(); i += chunk) vad.push(audio.subspan(i, std::min(chunk, audio.size() - i)), events);
  if (finish) vad.finish(events);
  return events;
}

std::string describe(const std::vector<TurnEvent>& events) {
  std::string s;
  for (const TurnEvent& e : events) {
    s += (e.kind == Kind::SpeechStarted ? " start " : " stop ") + std::to_string(e.audio_ms) + "/" + std::to_string(e.speech_ms) +
         "@" + std::to_string(e.detected_at_ms);
  }
  return s.empty() ? " (none)" : s;
}

// 6 s of quiet noise (-60 dBFS) with speech-like sound from 2.0 to 3.0 s.
std::vector<float> one_second_of_voice() {
  std::vector<float> audio = white_noise(6000, -60.0, 1);
  add_voiced(audio, 2000, 3000);
  return audio;
}

TEST(VoiceActivity, PrefixPaddingAndSilenceDurationWorkAsSpecified) {
  const std::vector<float> audio = one_second_of_voice();
  const auto events = detect(audio);
  ASSERT_EQ(events.size(), 2u) << describe(events);
  const TurnEvent& start = events[0];
  const TurnEvent& stop = events[1];
  EXPECT_EQ(start.kind, Kind::SpeechStarted);
  EXPECT_NEAR(static_cast<double>(start.speech_ms), 2000.0, 10.0);
  EXPECT_EQ(start.audio_ms, start.speech_ms - 300);
  EXPECT_EQ(start.detected_at_ms, start.speech_ms + 100);  // min_speech_ms of continuous speech
  EXPECT_EQ(stop.kind, Kind::SpeechStopped);
  EXPECT_NEAR(static_cast<double>(stop.speech_ms), 3000.0, 20.0);
  EXPECT_EQ(stop.audio_ms, stop.speech_ms);
  EXPECT_EQ(stop.detected_at_ms, stop.speech_ms + 500);

  const auto unpadded = detect(audio, {.prefix_padding_ms = 0});
  ASSERT_EQ(unpadded.size(), 2u);
  EXPECT_EQ(unpadded[0].audio_ms, start.speech_ms);
  const auto clamped = detect(audio, {.prefix_padding_ms = 5000});
  ASSERT_EQ(clamped.size(), 2u);
  EXPECT_EQ(clamped[0].audio_ms, 0);
  const auto slow = detect(audio, {.silence_duration_ms = 1200});
  ASSERT_EQ(slow.size(), 2u);
  EXPECT_EQ(slow[1].speech_ms, stop.speech_ms);
  EXPECT_EQ(slow[1].detected_at_ms, stop.speech_ms + 1200);
}

TEST(VoiceActivity, APauseShorterThanTheSilenceDurationKeepsTheTurn) {
  std::vector<float> audio = white_noise(8000, -60.0, 2);
  add_voiced(audio, 2000, 3000);
  add_voiced(audio, 3400, 4400);  // a 400 ms pause
  const auto one_turn = detect(audio);
  ASSERT_EQ(one_turn.size(), 2u) << describe(one_turn);
  EXPECT_NEAR(static_cast<double>(one_turn[1].speech_ms), 4400.0, 20.0);

  const auto two_turns = detect(audio, {.prefix_padding_ms = 1000, .silence_duration_ms = 300});
  ASSERT_EQ(two_turns.size(), 4u) << describe(two_turns);
  EXPECT_NEAR(static_cast<double>(two_turns[1].speech_ms), 3000.0, 20.0);
  EXPECT_NEAR(static_cast<double>(two_turns[2].speech_ms), 3400.0, 10.0);
  EXPECT_EQ(two_turns[2].audio_ms, two_turns[1].audio_ms);  // padding stops at the previous turn
}

TEST(VoiceActivity, SameEventsWhateverTheChunkSizes) {
  std::vector<float> synthetic = white_noise(7000, -45.0, 3);
  add_voiced(synthetic, 500, 1800, -25.0);
  add_voiced(synthetic, 2100, 2600, -30.0);
  add_voiced(synthetic, 4000, 6990, -22.0);  // to the end: finish closes it
  std::vector<float> noisy;
  for (const auto& r : voxrt::turnset::load_turn_set(voxrt::test::test_data() / "turns")) {
    if (r.name == "meeting pink 5 dB") noisy = r.samples;
  }
  ASSERT_FALSE(noisy.empty());
  for (std::span<const float> audio : {std::span<const float>(synthetic), std::span<const float>(noisy)}) {
    const auto whole = detect(audio, {}, audio.size());
    ASSERT_GE(whole.size(), 4u) << describe(whole);
    for (size_t chunk : {1, 7, 160, 161, 333, 1280, 4097}) {
      EXPECT_EQ(detect(audio, {}, chunk), whole) << "chunks of " << chunk << ":" << describe(detect(audio, {}, chunk)) << "\nwhole:"
                                                 << describe(whole);
    }
  }
}

TEST(VoiceActivity, SilenceAndStationaryNoiseGiveNoEvents) {
  const std::vector<float> zeros(samples_of(10000), 0.0f);
  EXPECT_TRUE(detect(zeros).empty());
  const std::filesystem::path dir = voxrt::test::test_data() / "turns";
  for (const char* kind : {"white", "pink", "brown"}) {
    const std::vector<float> noise = voxrt::turnset::read_mono_16k(dir / (std::string("noise_") + kind + ".flac"));
    const double rms = std::sqrt(voxrt::turnset::mean_power(noise.data(), noise.size()));
    for (double dbfs : {-70.0, -45.0, -20.0, -6.0}) {
      std::vector<float> scaled(noise);
      for (float& x : scaled) x = static_cast<float>(x * rms_of_dbfs(dbfs) / rms);
      const auto events = detect(scaled);
      EXPECT_TRUE(events.empty()) << kind << " noise at " << dbfs << " dBFS:" << describe(events);
    }
  }
}

TEST(VoiceActivity, ABurstShorterThanMinSpeechStartsNoTurn) {
  std::vector<float> audio = white_noise(5000, -60.0, 4);
  add_voiced(audio, 2000, 2060);  // 60 ms: a click, not speech
  EXPECT_TRUE(detect(audio).empty()) << describe(detect(audio));
  const auto shorter_minimum = detect(audio, {.min_speech_ms = 40});
  EXPECT_EQ(shorter_minimum.size(), 2u) << describe(shorter_minimum);
  add_voiced(audio, 3000, 3300);  // 300 ms: speech
  const auto events = detect(audio);
  ASSERT_EQ(events.size(), 2u) << describe(events);
  EXPECT_NEAR(static_cast<double>(events[0].speech_ms), 3000.0, 10.0);
}

TEST(VoiceActivity, FinishClosesATurnCutMidSpeech) {
  std::vector<float> audio = white_noise(3005, -60.0, 5);  // ends in a partial frame
  add_voiced(audio, 1000, 3005);
  VoiceActivityDetector vad;
  std::vector<TurnEvent> events;
  vad.push(audio, events);
  ASSERT_EQ(events.size(), 1u) << describe(events);
  EXPECT_EQ(events[0].kind, Kind::SpeechStarted);
  EXPECT_TRUE(vad.in_turn());
  EXPECT_EQ(vad.samples_judged(), samples_of(3000));
  vad.finish(events);
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[1], (TurnEvent{Kind::SpeechStopped, 3000, 3000, 3000}));
  EXPECT_FALSE(vad.in_turn());
  vad.finish(events);  // twice: nothing more
  EXPECT_EQ(events.size(), 2u);
  EXPECT_THROW(vad.push(audio, events), voxrt::Error);
}

TEST(VoiceActivity, OptionsOutOfRangeThrow) {
  EXPECT_THROW(VoiceActivityDetector({.threshold = -0.01f}), voxrt::Error);
  EXPECT_THROW(VoiceActivityDetector({.threshold = 1.01f}), voxrt::Error);
  EXPECT_THROW(VoiceActivityDetector({.threshold = std::numeric_limits<float>::quiet_NaN()}), voxrt::Error);
  EXPECT_THROW(VoiceActivityDetector({.prefix_padding_ms = -1}), voxrt::Error);
  EXPECT_THROW(VoiceActivityDetector({.silence_duration_ms = -1}), voxrt::Error);
  EXPECT_THROW(VoiceActivityDetector({.min_speech_ms = -1}), voxrt::Error);
}

TEST(VoiceActivity, ThresholdTradesMissedSpeechForNoise) {
  std::vector<float> audio = white_noise(8000, -40.0, 6);
  add_voiced(audio, 1000, 2000, -30.0);
  add_voiced(audio, 3000, 4000, -38.0);  // 2 dB over the noise
  add_voiced(audio, 5000, 6000, -48.0);  // 8 dB under it
  auto speech_ms = [&](float threshold) {
    int64_t total = 0;
    const auto events = detect(audio, {.threshold = threshold});
    for (size_t i = 0; i + 1 < events.size(); i += 2) total += events[i + 1].speech_ms - events[i].speech_ms;
    return total;
  };
  int64_t previous = std::numeric_limits<int64_t>::max();
  for (float threshold : {0.3f, 0.5f, 0.7f, 0.9f, 0.99f}) {
    const int64_t ms = speech_ms(threshold);
    EXPECT_LE(ms, previous) << "threshold " << threshold;
    previous = ms;
  }
  EXPECT_GE(speech_ms(0.5f), 1900);   // the two louder bursts
  EXPECT_LT(speech_ms(0.99f), 1900);  // the quieter one lost
  EXPECT_TRUE(detect(audio, {.threshold = 1.0f}).empty());
  const auto everything = detect(audio, {.threshold = 0.0f});  // every frame is speech
  ASSERT_EQ(everything.size(), 2u) << describe(everything);
  EXPECT_EQ(everything[0].speech_ms, 0);
  EXPECT_EQ(everything[1].speech_ms, 8000);
}

TEST(VoiceActivity, SpeechProbabilityIsHighInSpeechAndLowInNoise) {
  const std::vector<float> audio = one_second_of_voice();
  VoiceActivityDetector vad;
  std::vector<TurnEvent> events;
  EXPECT_EQ(vad.speech_probability(), 0.0f);
  double speech_sum = 0.0, noise_sum = 0.0, noise_worst = 0.0;
  int speech_frames = 0, noise_frames = 0;
  for (size_t i = 0; i + 160 <= audio.size(); i += 160) {
    vad.push(std::span<const float>(audio).subspan(i, 160), events);
    const int64_t ms = static_cast<int64_t>(i / 16);
    const double p = vad.speech_probability();
    if (ms >= 2050 && ms < 2950) speech_sum += p, ++speech_frames;
    if (ms >= 1000 && ms < 1950) noise_sum += p, noise_worst = std::max(noise_worst, p), ++noise_frames;
  }
  EXPECT_GT(speech_sum / speech_frames, 0.99);
  EXPECT_LT(noise_sum / noise_frames, 0.1);
  EXPECT_LT(noise_worst, 0.5);  // no frame of noise passes the default threshold
}

// The floor is the noise's mean power (not the bottom of its fluctuations) for every noise of the
// set: what makes a band's SNR 0 dB in noise (noise_floor.cpp's kMeanOverMinimum).
TEST(VoiceActivity, NoiseFloorIsTheMeanPowerOfStationaryNoise) {
  const std::filesystem::path dir = voxrt::test::test_data() / "turns";
  for (const char* kind : {"white", "pink", "brown"}) {
    const std::vector<float> noise = voxrt::turnset::read_mono_16k(dir / (std::string("noise_") + kind + ".flac"));
    voxrt::BandPowerAnalyzer bands;
    voxrt::NoiseFloorTracker floor(30, 10);
    std::array<double, voxrt::BandPowerAnalyzer::kBands> power_sum{}, log_floor_sum{};
    int frames = 0;
    for (size_t i = 0; i + voxrt::BandPowerAnalyzer::kWindow <= noise.size(); i += 160) {
      const auto power = bands.analyze(noise.data() + i);
      const auto& f = floor.update(power);
      if (i < samples_of(4000)) continue;  // the window has filled
      for (size_t b = 0; b < power.size(); ++b) power_sum[b] += power[b], log_floor_sum[b] += std::log10(f[b]);
      ++frames;
    }
    for (size_t b = 0; b < power_sum.size(); ++b) {
      const double ratio_db = 10.0 * std::log10(power_sum[b] / frames) - 10.0 * log_floor_sum[b] / frames;
      EXPECT_NEAR(ratio_db, 0.0, 0.5) << kind << " noise, band " << b;
    }
  }
}

TEST(VoiceActivity, NoiseGrownLouderIsLearnedWithinTheFloorsWindow) {
  std::vector<float> audio = white_noise(5000, -60.0, 7);
  const std::vector<float> louder = white_noise(15000, -35.0, 8);
  audio.insert(audio.end(), louder.begin(), louder.end());
  const auto events = detect(audio);
  // The step looks like speech until the window (3 s, in blocks of 300 ms) has passed over it:
  // one false turn at most, over by 5 s + 3 s + a block, and nothing after.
  ASSERT_LE(events.size(), 2u) << describe(events);
  if (!events.empty()) {
    ASSERT_EQ(events.size(), 2u);
    EXPECT_LE(events[1].speech_ms, 8300) << describe(events);
  }
}

// ---- the labelled set: the errors bench/results/2026-12-06-turn-detector.txt records ----

struct Bound {
  const char* condition;
  int false_turns, missed, split, merged;
  double start_mean_abs, start_worst_abs, end_mean_abs, end_worst_abs;  // ms
};

// voxrt_turn_eval's "per condition" table at the default options (threshold 0.5, silence 500 ms,
// min speech 100 ms, chunks of 1280 samples). Counts may not grow; the errors may grow by
// kMeanMarginMs and kWorstMarginMs (a build whose float arithmetic rounds differently moves a
// boundary by a frame or two).
constexpr Bound kRecorded[] = {
    {"clean", 0, 0, 0, 0, 5, 20, 8, 14},
    {"white 20 dB", 0, 0, 0, 0, 13, 80, 18, 96},
    {"white 10 dB", 0, 0, 0, 0, 35, 160, 48, 116},
    {"white 5 dB", 0, 0, 0, 0, 47, 170, 55, 130},
    {"white 0 dB", 0, 0, 1, 0, 59, 170, 86, 185},
    {"pink 10 dB", 0, 0, 0, 0, 36, 160, 29, 105},
    {"pink 5 dB", 0, 0, 0, 0, 48, 170, 60, 126},
    {"pink 0 dB", 0, 0, 1, 0, 189, 1085, 99, 195},
    {"brown 5 dB", 0, 0, 0, 0, 5, 20, 10, 66},
    {"brown 0 dB", 0, 0, 0, 0, 15, 57, 14, 96},
};
constexpr double kMeanMarginMs = 10.0;
constexpr double kWorstMarginMs = 30.0;

TEST(VoiceActivityTurnSet, ErrorsStayWithinTheRecordedBounds) {
  using namespace voxrt::turnset;
  const std::vector<Recording> set = load_turn_set(voxrt::test::test_data() / "turns");
  std::map<std::string, TurnScore> by_condition;
  for (const Recording& r : set) {
    by_condition[r.condition()].add(score_turns(r.turns, detect_turns(r.samples, {})));
  }
  ASSERT_EQ(by_condition.size(), std::size(kRecorded));
  for (const Bound& b : kRecorded) {
    ASSERT_TRUE(by_condition.count(b.condition)) << b.condition;
    const TurnScore& s = by_condition[b.condition];
    SCOPED_TRACE(score_header() + "\n" + format_score(b.condition, s));
    EXPECT_GT(s.true_turns, 0);
    EXPECT_LE(s.false_turns, b.false_turns);
    EXPECT_LE(s.missed, b.missed);
    EXPECT_LE(s.split, b.split);
    EXPECT_LE(s.merged, b.merged);
    EXPECT_LE(s.start.mean_abs(), b.start_mean_abs + kMeanMarginMs);
    EXPECT_LE(s.start.worst_abs, b.start_worst_abs + kWorstMarginMs);
    EXPECT_LE(s.end.mean_abs(), b.end_mean_abs + kMeanMarginMs);
    EXPECT_LE(s.end.worst_abs, b.end_worst_abs + kWorstMarginMs);
  }
}

}  // namespace
