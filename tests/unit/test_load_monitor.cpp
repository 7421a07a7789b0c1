// LoadMonitor (src/engine/load_monitor.h): the 90th percentile of live hand-overs' waits over a
// sliding window decides whether new live sessions are refused.
#include "engine/load_monitor.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "../test_paths.h"
#include "audio/audio_file.h"
#include "voxrt/session.h"
#include "voxrt/voxrt.h"

namespace voxrt {
namespace {

using test::test_data;
using namespace std::chrono_literals;
using Clock = LoadMonitor::Clock;

TEST(LoadMonitor, OverloadedOnlyWhileTheWindowsP90PassesTheBudget) {
  LoadMonitor m(80.0, 2000ms, 10);
  const Clock::time_point t0 = Clock::now();
  // Nine slow waits are too few to judge.
  for (int i = 0; i < 9; ++i) m.record(200.0, t0 + i * 10ms);
  EXPECT_FALSE(m.overloaded(t0 + 100ms));
  // With the tenth, 90 % of the window is slow.
  m.record(200.0, t0 + 100ms);
  EXPECT_TRUE(m.overloaded(t0 + 100ms));
  EXPECT_DOUBLE_EQ(m.p90_ms(t0 + 100ms), 200.0);
  // Mostly fast waits with a slow tail of under 10 %: not overloaded.
  LoadMonitor n(80.0, 2000ms, 10);
  for (int i = 0; i < 95; ++i) n.record(i % 20 == 0 ? 500.0 : 20.0, t0 + i * 10ms);
  EXPECT_FALSE(n.overloaded(t0 + 950ms));
  // Slow samples age out of the window.
  EXPECT_TRUE(m.overloaded(t0 + 2000ms));
  EXPECT_FALSE(m.overloaded(t0 + 2200ms)) << "samples older than the window are forgotten";
}

// Through the engine: sessions fed at real time on an engine that keeps up are never refused.
TEST(LoadMonitor, PacedSessionsOnAnEngineThatKeepsUpAreAdmitted) {
  auto engine = Engine::load(test_data() / "tiny" / "mistral",
                             {.device = "cpu", .threads = 1, .refuse_when_overloaded = true});
  const std::vector<float> audio = load_audio_mono(test_data() / "audio" / "speech_short.wav");
  auto a = engine->open_session({});
  for (size_t at = 0; at + 1280 <= audio.size() && at < 30 * 1280; at += 1280) {
    a->feed(std::span<const float>(audio).subspan(at, 1280));
    std::this_thread::sleep_for(80ms);
  }
  EXPECT_NO_THROW(engine->open_session({})) << "a tiny model on the CPU keeps real time";
}

}  // namespace
}  // namespace voxrt
