// An engine loaded for a number of sessions (EngineOptions::max_sessions; issue 13, item 2): the
// caches of that many are allocated at load, one live session more is refused at once with a clear
// error (or waits, when it asked to), a transcription waits for room, and a session that closes
// makes room. Nothing that was running is disturbed. The same by memory (EngineOptions::max_memory,
// paged caches): a session reserves the pages of its length, one that does not fit is refused
// naming the budget, and one that runs past its length goes on while pages are spare, then fails
// alone.
#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <span>
#include <thread>

#include "../test_paths.h"
#include "audio/audio_file.h"
#include "voxrt/session.h"
#include "voxrt/voxrt.h"

namespace voxrt::test {
namespace {

using namespace std::chrono_literals;

TEST(Admission, ASessionBeyondMaxSessionsIsRefusedOrWaitsForRoom) {
  auto engine = Engine::load(test_data() / "tiny" / "mistral", {.device = Device::Cpu, .threads = 1, .max_sessions = 2});
  const std::vector<float> audio = load_audio_mono(test_data() / "audio" / "speech_short.wav");
  const Transcript alone = engine->transcribe(audio);
  Transcript alone_live;
  {
    auto s = engine->open_session({});
    s->feed(audio);
    s->flush();
    alone_live = s->transcript();
  }

  auto first = engine->open_session({});
  auto second = engine->open_session({});
  first->feed(audio);
  try {
    engine->open_session({});
    FAIL() << "a third session opened on an engine loaded for two";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("max_sessions"), std::string::npos) << e.what();
  }

  // A transcription waits for room; so does a session that asks to.
  auto transcription = std::async(std::launch::async, [&] { return engine->transcribe(audio); });
  SessionOptions patient;
  patient.wait_for_room = true;
  auto waiting = std::async(std::launch::async, [&] { return engine->open_session(patient); });
  EXPECT_EQ(transcription.wait_for(300ms), std::future_status::timeout) << "it did not wait for room";
  EXPECT_EQ(waiting.wait_for(10ms), std::future_status::timeout) << "it did not wait for room";

  // The open sessions go on meanwhile, undisturbed.
  first->flush();
  EXPECT_EQ(first->transcript().tokens, alone_live.tokens);
  first.reset();  // room for one of the two waiting
  second.reset();  // and for the other
  const Transcript t = transcription.get();
  EXPECT_EQ(t.tokens, alone.tokens);
  auto third = waiting.get();
  third->feed(audio);
  third->flush();
  EXPECT_EQ(third->transcript().tokens, alone_live.tokens);
}

// The cache memory one session of `seconds` needs on the tiny model: the smallest max_memory an
// engine loads with (a budget that holds no session is refused at load).
size_t bytes_of_one_session(double seconds) {
  size_t lo = 1, hi = size_t{1} << 26;  // lo fails, hi loads
  while (hi - lo > 1) {
    const size_t mid = lo + (hi - lo) / 2;
    try {
      Engine::load(test_data() / "tiny" / "mistral",
                   {.device = Device::Cpu, .threads = 1, .max_memory = mid, .max_session_seconds = seconds});
      hi = mid;
    } catch (const Error&) {
      lo = mid;
    }
  }
  return hi;
}

TEST(Admission, AMemoryBudgetAdmitsWhatFitsAndASessionPastItsLengthFailsAlone) {
  constexpr double kSeconds = 1.0;
  const size_t one = bytes_of_one_session(kSeconds);
  auto engine = Engine::load(test_data() / "tiny" / "mistral",
                             {.device = Device::Cpu, .threads = 1, .max_memory = 2 * one, .max_session_seconds = kSeconds});
  const std::vector<float> audio = load_audio_mono(test_data() / "audio" / "speech_short.wav");
  ASSERT_GT(audio.size(), 2 * 16000u) << "the test needs more than its sessions' length";
  const std::vector<float> short_audio(audio.begin(), audio.begin() + 8000);
  Transcript alone;
  {
    auto s = engine->open_session({});
    s->feed(short_audio);
    s->flush();
    alone = s->transcript();
  }

  auto a = engine->open_session({});
  auto b = engine->open_session({});
  try {
    engine->open_session({});
    FAIL() << "a third session opened in memory for two";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("max_memory"), std::string::npos) << e.what();
  }
  // Shorter sessions need fewer pages, but none is left.
  EXPECT_THROW(engine->open_session({.max_seconds = 0.25}), Error);

  // a runs past the 1 s it reserved while b holds the rest: it fails alone, b is undisturbed.
  bool a_failed = false;
  try {
    for (size_t at = 0; at < audio.size(); at += 1600)
      a->feed(std::span<const float>(audio).subspan(at, std::min<size_t>(1600, audio.size() - at)));
    a->flush();
  } catch (const Error& e) {
    a_failed = true;
    EXPECT_NE(std::string(e.what()).find("max_seconds"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(a_failed) << "a session past its reservation took pages that were kept for another";
  b->feed(short_audio);
  b->flush();
  EXPECT_EQ(b->transcript().tokens, alone.tokens);

  // Closing a frees its pages: now a longer session fits, and with no one else it may run past
  // its length on the spare pages.
  a.reset();
  b.reset();
  auto c = engine->open_session({.max_seconds = 0.5});
  c->feed(audio);
  c->flush();
  EXPECT_FALSE(c->transcript().tokens.empty());
}

TEST(Admission, AnOverloadedEngineRefusesNewLiveSessionsAndKeepsTheOpenOnes) {
  // Fairness under load (EngineOptions::refuse_when_overloaded), end to end. A wait budget no step
  // meets (overload_wait_ms 0.001) makes every paced hand-over of an open session late: once there
  // are enough of them in the window, a new live session is refused naming the load, a patient one
  // waits, a transcription is still served, and the open session goes on exactly as alone. When it
  // stops feeding at real time the window empties and the patient one opens.
  const auto dir = test_data() / "tiny" / "mistral";
  const std::vector<float> audio = load_audio_mono(test_data() / "audio" / "speech_short.wav");
  const size_t chunk = 1280;  // 80 ms: one step's audio, fed at real time
  Transcript alone;
  {
    auto plain = Engine::load(dir, {.device = Device::Cpu, .threads = 1});
    auto s = plain->open_session({});
    for (size_t at = 0; at < audio.size(); at += chunk)
      s->feed(std::span<const float>(audio).subspan(at, std::min(chunk, audio.size() - at)));
    s->flush();
    alone = s->transcript();
  }
  auto engine =
      Engine::load(dir, {.device = Device::Cpu, .threads = 1, .refuse_when_overloaded = true, .overload_wait_ms = 0.001});
  auto a = engine->open_session({});
  // Fed at real time (a hand-over counts when it comes no sooner than half the last one's audio
  // after it); from the 20th on (LoadMonitor's minimum) a new live session is tried after each.
  size_t at = 0;
  bool refused = false;
  for (int k = 0; !refused && at + 4 * chunk < audio.size(); ++k, at += chunk) {
    a->feed(std::span<const float>(audio).subspan(at, chunk));
    std::this_thread::sleep_for(42ms);
    if (k < 20) continue;
    try {
      engine->open_session({});
    } catch (const Error& e) {
      refused = true;
      EXPECT_NE(std::string(e.what()).find("engine overloaded"), std::string::npos) << e.what();
    }
  }
  EXPECT_TRUE(refused) << "new live sessions opened while the open one's steps wait past the budget";
  SessionOptions patient;
  patient.wait_for_room = true;
  auto waiting = std::async(std::launch::async, [&] { return engine->open_session(patient); });
  EXPECT_EQ(waiting.wait_for(100ms), std::future_status::timeout) << "it did not wait for the load to pass";
  EXPECT_FALSE(engine->transcribe(audio).tokens.empty()) << "only live sessions are refused";

  // The rest back to back (not paced: no longer a sign of load), then nothing: the window empties.
  a->feed(std::span<const float>(audio).subspan(at));
  a->flush();
  EXPECT_EQ(a->transcript().tokens, alone.tokens);
  auto b = waiting.get();  // opens once the window (2 s) holds too few late hand-overs
  b->feed(audio);
  b->flush();
  EXPECT_EQ(b->transcript().tokens, alone.tokens);
}

TEST(Admission, NegativeMaxSessionsIsAnError) {
  EXPECT_THROW(Engine::load(test_data() / "tiny" / "mistral", {.device = Device::Cpu, .max_sessions = -1}), Error);
}

// Caches that cannot fit the device are refused at load, naming what was asked and what is free,
// before any of it is allocated (not as the allocator's failure of one piece).
TEST(Admission, CachesLargerThanTheFreeMemoryAreRefusedAtLoad) {
  try {
    Engine::load(test_data() / "tiny" / "mistral", {.device = Device::Cpu, .max_memory = size_t{1} << 50});
    FAIL() << "a petabyte of caches loaded";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("max_memory"), std::string::npos) << what;
    EXPECT_NE(what.find("free after the weights"), std::string::npos) << what;
  }
}

TEST(Admission, AnOverloadWaitOfZeroIsAnError) {
  EXPECT_THROW(Engine::load(test_data() / "tiny" / "mistral", {.device = Device::Cpu, .overload_wait_ms = 0}), Error);
}

}  // namespace
}  // namespace voxrt::test
