// The scheduler's rounds as the public stats and /metrics count and time them: EngineStats::rounds
// and DeviceStats::rounds, with `steps` (their old name, deprecated) the same value,
// EngineStats::round_ms with `step_ms` (likewise) the same histogram, and the metrics
// voxrt_rounds_total / voxrt_device_rounds_total / voxrt_round_seconds beside their old names.
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "../test_paths.h"
#include "server_test_support.h"

namespace voxrt::test {
namespace {

namespace http = boost::beast::http;

TEST(RoundCounters, RoundsAndTheirOldNameAgreeForTheEngineAndEachDevice) {
  auto two = Engine::load(test_data() / "tiny" / "mistral", {.device = Device::Cpu, .gpus = {0, 1}, .threads = 1});
  two->transcribe_file(test_data() / "audio" / "speech_short.wav");
  const EngineStats s = two->stats();
  EXPECT_GT(s.rounds, 0u);
  EXPECT_EQ(s.steps, s.rounds);
  ASSERT_EQ(s.devices.size(), 2u);
  EXPECT_EQ(s.rounds, s.devices[0].rounds + s.devices[1].rounds);
  for (const DeviceStats& d : s.devices) EXPECT_EQ(d.steps, d.rounds) << d.device;
}

void expect_same_histogram(const Histogram& a, const Histogram& b) {
  EXPECT_EQ(a.upper_bounds, b.upper_bounds);
  EXPECT_EQ(a.counts, b.counts);
  EXPECT_EQ(a.count, b.count);
  EXPECT_DOUBLE_EQ(a.sum, b.sum);
}

TEST(RoundCounters, RoundTimesAndTheirOldNameAgreeForOneDeviceAndTheSumOfTwo) {
  for (const std::vector<int>& gpus : {std::vector<int>{}, std::vector<int>{0, 1}}) {
    auto engine = Engine::load(test_data() / "tiny" / "mistral", {.device = Device::Cpu, .gpus = gpus, .threads = 1});
    engine->transcribe_file(test_data() / "audio" / "speech_short.wav");
    const EngineStats s = engine->stats();
    EXPECT_EQ(s.round_ms.count, s.rounds) << gpus.size() << " devices";
    EXPECT_GT(s.round_ms.sum, 0) << gpus.size() << " devices";
    expect_same_histogram(s.step_ms, s.round_ms);
  }
}

// An engine that has run a known count of rounds.
class CountedEngine final : public Engine {
 public:
  Transcript transcribe(std::span<const float>, const TranscribeOptions&) override { return {}; }
  Transcript transcribe_file(const std::filesystem::path&, const TranscribeOptions&) override { return {}; }
  void transcribe_each(std::span<const std::filesystem::path>, const TranscribeOptions&,
                       const std::function<void(BatchItem&)>&, int) override {}
  std::unique_ptr<Session> open_session(const SessionOptions&) override { throw Error("no sessions"); }
  const ModelInfo& info() const override { return info_; }
  EngineStats stats() const override {
    EngineStats s;
    s.rounds = s.steps = 7;
    s.round_ms = s.step_ms = {{1, 10}, {2, 4, 1}, 35, 7};
    s.devices = {DeviceStats{.device = "cpu:0", .rounds = 7, .steps = 7}};
    return s;
  }

 private:
  ModelInfo info_;
};

TEST(RoundCounters, MetricsSayRoundsUnderTheirNameAndTheOldOne) {
  RunningServer server({}, /*load=*/false);
  server.service().set_engine(std::make_unique<CountedEngine>());
  const std::string text = server.client().request(http::verb::get, "/metrics").body;
  EXPECT_EQ(metric(text, "voxrt_rounds_total"), 7) << text;
  EXPECT_EQ(metric(text, "voxrt_steps_total"), 7) << text;
  EXPECT_EQ(metric(text, "voxrt_device_rounds_total{device=\"cpu:0\"}"), 7) << text;
  EXPECT_EQ(metric(text, "voxrt_device_steps_total{device=\"cpu:0\"}"), 7) << text;
  for (const std::string name : {"voxrt_round_seconds", "voxrt_step_seconds"}) {
    EXPECT_EQ(metric(text, name + "_count"), 7) << name << "\n" << text;
    EXPECT_NEAR(metric(text, name + "_sum"), 0.035, 1e-9) << name;
    EXPECT_EQ(metric(text, name + "_bucket{le=\"0.001\"}"), 2) << name;
    EXPECT_EQ(metric(text, name + "_bucket{le=\"+Inf\"}"), 7) << name;
  }
}

}  // namespace
}  // namespace voxrt::test
