// LoadMonitor (src/scheduler/load_monitor.h): the 90th percentile of live hand-overs' waits over a
// sliding window decides whether new live sessions are refused.
#include "scheduler/load_monitor.h"

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

TEST(LoadMonitor, HandOversUnderWayCountSoAStalledEngineReadsOverloaded) {
  LoadMonitor m(80.0, 2000ms, 10);
  const Clock::time_point t0 = Clock::now();
  // Ten sessions handed their audio over and none has had its steps: no wait has finished, yet
  // each has waited longer than a step's audio.
  std::vector<LoadMonitor::Ticket> under_way;
  for (int i = 0; i < 10; ++i) under_way.push_back(m.begin(t0 + i * 1ms));
  EXPECT_FALSE(m.overloaded(t0 + 40ms)) << "waits of 31-40 ms so far are within the budget";
  EXPECT_TRUE(m.overloaded(t0 + 200ms)) << "a stalled loop must not read as idle";
  EXPECT_NEAR(m.p90_ms(t0 + 200ms), 200.0, 1e-6);  // waits so far of 191-200 ms
  // Had the loop served each of them 20 ms after it began, the window would hold ten waits of 20 ms.
  for (int i = 0; i < 10; ++i) m.finish(under_way[i], t0 + 20ms + i * 1ms);
  EXPECT_FALSE(m.overloaded(t0 + 300ms)) << "finished waits of 20 ms, none under way";
  EXPECT_NEAR(m.p90_ms(t0 + 300ms), 20.0, 1e-6);
}

// Through the engine: sessions fed at real time on an engine that keeps up are never refused.
TEST(LoadMonitor, PacedSessionsOnAnEngineThatKeepsUpAreAdmitted) {
  auto engine = Engine::load(test_data() / "tiny" / "mistral",
                             {.device = Device::Cpu, .threads = 1, .refuse_when_overloaded = true});
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
