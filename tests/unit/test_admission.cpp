// An engine loaded for a number of sessions (EngineOptions::max_sessions; issue 13, item 2): the
// caches of that many are allocated at load, one live session more is refused at once with a clear
// error (or waits, when it asked to), a transcription waits for room, and a session that closes
// makes room. Nothing that was running is disturbed.
#include <gtest/gtest.h>

#include <chrono>
#include <future>

#include "../test_paths.h"
#include "audio/audio_file.h"
#include "voxrt/session.h"
#include "voxrt/voxrt.h"

namespace voxrt::test {
namespace {

using namespace std::chrono_literals;

TEST(Admission, ASessionBeyondMaxSessionsIsRefusedOrWaitsForRoom) {
  auto engine = Engine::load(test_data() / "tiny" / "mistral", {.device = "cpu", .threads = 1, .max_sessions = 2});
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

TEST(Admission, NegativeMaxSessionsIsAnError) {
  EXPECT_THROW(Engine::load(test_data() / "tiny" / "mistral", {.device = "cpu", .max_sessions = -1}), Error);
}

}  // namespace
}  // namespace voxrt::test
