// Several devices in one engine (EngineOptions::gpus; issue 15), with CPU copies of the tiny model as
// the devices: sessions and files are placed on the device with the fewest sessions (then the most free cache), each result is
// the one a single device gives, the counters add up with each device's share, and a device whose
// model work failed gets nothing new while the others serve. `voxrt transcribe --gpus` spreads
// files the same way and names a bad --gpus value.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <cstdio>
#include <sstream>
#include <thread>

#include "../test_paths.h"
#include "audio/audio_file.h"
#include "cli_run.h"
#include "engine/multi_device_engine.h"
#include "server_test_support.h"
#include "voxrt/session.h"
#include "voxrt/voxrt.h"
#include "models/voxtral/protocol.h"

namespace voxrt::test {
namespace {

std::filesystem::path tiny() { return test_data() / "tiny" / "mistral"; }

Transcript live(Engine& engine, std::span<const float> audio) {
  auto s = engine.open_session({});
  s->feed(audio);
  s->flush();
  return s->transcript();
}

TEST(MultiDevice, SessionsAndFilesAreSpreadAndEachResultIsOneDevicesResult) {
  auto one = Engine::load(tiny(), {.device = Device::Cpu, .threads = 1, .max_sessions = 2});
  auto two = Engine::load(tiny(), {.device = Device::Cpu, .gpus = {0, 1}, .threads = 1, .max_sessions = 2});
  const std::vector<float> audio = load_audio_mono(test_data() / "audio" / "speech_short.wav");

  EngineStats s = two->stats();
  ASSERT_EQ(s.devices.size(), 2u);
  EXPECT_EQ(s.devices[0].device, "cpu:0");
  EXPECT_EQ(s.devices[1].device, "cpu:1");
  EXPECT_FALSE(s.devices[0].failed || s.devices[1].failed);
  EXPECT_GT(s.devices[0].cache_bytes_total, 0u);
  EXPECT_EQ(s.cache_bytes_total, s.devices[0].cache_bytes_total + s.devices[1].cache_bytes_total);

  // Two sessions: the second goes to the device without one.
  auto a = two->open_session({});
  auto b = two->open_session({});
  s = two->stats();
  EXPECT_EQ(s.devices[0].sessions_open, 1);
  EXPECT_EQ(s.devices[1].sessions_open, 1);
  EXPECT_EQ(s.sessions_open, 2);
  const Transcript expected = live(*one, audio);
  for (auto* session : {a.get(), b.get()}) {
    session->feed(audio);
    session->flush();
    EXPECT_EQ(session->transcript().tokens, expected.tokens);
  }

  // Two sessions a device: a fifth is refused, naming the limit, and the four go on.
  auto c = two->open_session({});
  auto d = two->open_session({});
  try {
    two->open_session({});
    FAIL() << "a fifth session opened on two devices of two sessions each";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("max_sessions"), std::string::npos) << e.what();
  }
  c->feed(audio);
  c->flush();
  EXPECT_EQ(c->transcript().tokens, expected.tokens);
  a.reset(), b.reset(), c.reset(), d.reset();

  // Files side by side over both devices: each as on one device, in input order.
  const std::vector<std::filesystem::path> files = {test_data() / "audio" / "speech_short.wav",
                                                    test_data() / "audio" / "odd_length.wav",
                                                    test_data() / "audio" / "speech_short.wav"};
  const std::vector<BatchItem> want = one->transcribe_batch(files);
  const std::vector<BatchItem> got = two->transcribe_batch(files, {}, 3);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_TRUE(got[i].ok()) << got[i].error;
    EXPECT_EQ(got[i].index, i);
    EXPECT_EQ(got[i].transcript.tokens, want[i].transcript.tokens) << files[i];
  }
  s = two->stats();
  EXPECT_EQ(s.sessions_opened, s.devices[0].sessions_opened + s.devices[1].sessions_opened);
  EXPECT_GT(s.devices[0].sessions_opened, 0u);
  EXPECT_GT(s.devices[1].sessions_opened, 0u);
  EXPECT_EQ(s.rounds, s.devices[0].rounds + s.devices[1].rounds);
  EXPECT_EQ(s.round_ms.count, s.rounds);
}

// A device whose model work failed. A GPU's fault (a sticky CUDA error, memory lost) cannot be
// caused on the CI machine, so this stands for one: a real engine that reports its device failed,
// as the scheduler does after a round whose model work threw (Scheduler::failure).
class FailedDevice final : public Engine {
 public:
  explicit FailedDevice(std::unique_ptr<Engine> inner) : inner_(std::move(inner)) {}
  Transcript transcribe(std::span<const float> a, const TranscribeOptions& o) override { return inner_->transcribe(a, o); }
  Transcript transcribe_file(const std::filesystem::path& f, const TranscribeOptions& o) override {
    return inner_->transcribe_file(f, o);
  }
  void transcribe_each(std::span<const std::filesystem::path> f, const TranscribeOptions& o,
                       const std::function<void(BatchItem&)>& r, int n) override {
    inner_->transcribe_each(f, o, r, n);
  }
  std::unique_ptr<Session> open_session(const SessionOptions& o) override { return inner_->open_session(o); }
  const ModelInfo& info() const override { return inner_->info(); }
  EngineStats stats() const override {
    EngineStats s = inner_->stats();
    s.devices.at(0).failed = true;
    s.devices.at(0).failure = "cuda: an illegal memory access was encountered";
    return s;
  }

 private:
  std::unique_ptr<Engine> inner_;
};

TEST(MultiDevice, AFailedDeviceTakesNothingNewWhileTheOthersServe) {
  const EngineOptions o{.device = Device::Cpu, .threads = 1, .max_sessions = 2};
  std::vector<std::unique_ptr<Engine>> devices;
  devices.push_back(std::make_unique<FailedDevice>(Engine::load(tiny(), o)));
  devices.push_back(Engine::load(tiny(), o));
  MultiDeviceEngine engine(std::move(devices));
  const std::vector<float> audio = load_audio_mono(test_data() / "audio" / "speech_short.wav");

  EXPECT_EQ(engine.placement_order(), std::vector<size_t>{1});
  EXPECT_EQ(engine.transcribe(audio, {}).tokens, Engine::load(tiny(), o)->transcribe(audio).tokens);
  EXPECT_EQ(engine.stats().devices[1].sessions_opened, 1u);
  auto a = engine.open_session({});
  auto b = engine.open_session({});
  EngineStats s = engine.stats();
  EXPECT_TRUE(s.devices[0].failed);
  EXPECT_EQ(s.devices[0].sessions_opened, 0u);
  EXPECT_EQ(s.devices[1].sessions_open, 2);
  // The healthy device is full: a third session is refused by it, not placed on the failed one.
  EXPECT_THROW(engine.open_session({}), Error);
  EXPECT_EQ(engine.stats().devices[0].sessions_opened, 0u);

  std::vector<std::unique_ptr<Engine>> broken;
  broken.push_back(std::make_unique<FailedDevice>(Engine::load(tiny(), o)));
  MultiDeviceEngine dead(std::move(broken));
  try {
    dead.open_session({});
    FAIL() << "a session opened on an engine whose every device failed";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("every device has failed"), std::string::npos) << what;
    EXPECT_NE(what.find("illegal memory access"), std::string::npos) << what;
  }
}

TEST(MultiDevice, CombinedStatsAddTheDevicesHistogramsBucketByBucket) {
  EngineStats x, y;
  x.round_ms = x.step_ms = {{1, 10}, {1, 2, 3}, 20, 6};
  y.round_ms = y.step_ms = {{1, 10}, {0, 1, 1}, 30, 2};
  x.live_wait_p90_ms = 12, y.live_wait_p90_ms = 40;
  x.devices = {{.device = "cuda:0"}}, y.devices = {{.device = "cuda:1", .failed = true}};
  const EngineStats s = combine_device_stats({x, y});
  EXPECT_EQ(s.round_ms.counts, (std::vector<uint64_t>{1, 3, 4}));
  EXPECT_EQ(s.round_ms.count, 8u);
  EXPECT_DOUBLE_EQ(s.round_ms.sum, 50);
  // The deprecated name, added alike.
  EXPECT_EQ(s.step_ms.counts, s.round_ms.counts);
  EXPECT_EQ(s.step_ms.count, s.round_ms.count);
  EXPECT_DOUBLE_EQ(s.step_ms.sum, s.round_ms.sum);
  EXPECT_DOUBLE_EQ(s.live_wait_p90_ms, 40);
  ASSERT_EQ(s.devices.size(), 2u);
  EXPECT_TRUE(s.devices[1].failed);
}

// voxrt serve's /health and /metrics: each device, its health and its share.
TEST(MultiDevice, HealthAndMetricsReportEachDevice) {
  using nlohmann::json;
  namespace http = boost::beast::http;
  const EngineOptions o{.device = Device::Cpu, .threads = 1};
  {
    RunningServer s({}, true, {}, {.device = Device::Cpu, .gpus = {0, 1}, .threads = 1});
    const testutil::HttpTestClient c = s.client();
    const auto health = c.request(http::verb::get, "/health");
    EXPECT_EQ(health.status, 200);
    const json h = json::parse(health.body);
    EXPECT_EQ(h["status"], "ok");
    ASSERT_EQ(h["devices"].size(), 2u);
    EXPECT_EQ(h["devices"][1]["device"], "cpu:1");
    EXPECT_EQ(h["devices"][1]["status"], "ok");
    const std::string metrics = c.request(http::verb::get, "/metrics").body;
    EXPECT_NE(metrics.find("voxrt_device_up{device=\"cpu:0\"} 1"), std::string::npos) << metrics;
    EXPECT_NE(metrics.find("voxrt_device_up{device=\"cpu:1\"} 1"), std::string::npos) << metrics;
    EXPECT_NE(metrics.find("voxrt_device_sessions_active{device=\"cpu:1\"} 0"), std::string::npos) << metrics;
  }
  {
    RunningServer s({}, false);
    std::vector<std::unique_ptr<Engine>> devices;
    devices.push_back(Engine::load(tiny(), o));
    devices.push_back(std::make_unique<FailedDevice>(Engine::load(tiny(), o)));
    s.service().set_engine(std::make_unique<MultiDeviceEngine>(std::move(devices)));
    const testutil::HttpTestClient c = s.client();
    const auto health = c.request(http::verb::get, "/health");
    EXPECT_EQ(health.status, 200);  // the other device serves
    const json h = json::parse(health.body);
    EXPECT_EQ(h["status"], "degraded");
    EXPECT_EQ(h["devices"][1]["status"], "failed");
    EXPECT_NE(h["devices"][1]["error"].get<std::string>().find("illegal memory access"), std::string::npos);
    const std::string metrics = c.request(http::verb::get, "/metrics").body;
    EXPECT_NE(metrics.find("voxrt_device_up{device=\"cpu:0\"} 1"), std::string::npos) << metrics;
    EXPECT_NE(metrics.find("voxrt_device_up{device=\"cpu:0\"} 0"), std::string::npos) << metrics;
  }
  {
    RunningServer s({}, false);
    std::vector<std::unique_ptr<Engine>> devices;
    devices.push_back(std::make_unique<FailedDevice>(Engine::load(tiny(), o)));
    s.service().set_engine(std::make_unique<MultiDeviceEngine>(std::move(devices)));
    const auto health = s.client().request(http::verb::get, "/health");
    EXPECT_EQ(health.status, 503);
    EXPECT_EQ(json::parse(health.body)["status"], "failed");
  }
}

// On the GPU machine: the same placement over CUDA engines, each session's ids those it gets
// alone. Two engines on one GPU stand for two GPUs where the machine has one; with two GPUs or
// more, EngineOptions::gpus spreads them for real (one checkpoint read, parallel uploads).
void expect_sessions_spread_and_alone(Engine& engine, Engine& alone) {
  const std::vector<float> audio = load_audio_mono(test_data() / "audio" / "speech_short.wav");
  const Transcript expected = live(alone, audio);
  std::vector<std::unique_ptr<Session>> sessions;
  for (int i = 0; i < 4; ++i) sessions.push_back(engine.open_session({}));
  std::vector<std::thread> feeders;
  for (auto& s : sessions)
    feeders.emplace_back([&s, &audio] {
      s->feed(audio);
      s->flush();
    });
  for (auto& t : feeders) t.join();
  for (auto& s : sessions) EXPECT_EQ(s->transcript().tokens, expected.tokens);
  const EngineStats st = engine.stats();
  ASSERT_EQ(st.devices.size(), 2u);
  EXPECT_EQ(st.devices[0].sessions_open, 2);
  EXPECT_EQ(st.devices[1].sessions_open, 2);
}

TEST(CudaMultiDevice, SessionsPlacedOverCudaEnginesGetTheirAloneIds) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device on this machine (or a build without CUDA): GPU test skipped";
  const EngineOptions o{.device = Device::Cuda, .max_sessions = 2};
  auto alone = Engine::load(tiny(), o);
  std::vector<std::unique_ptr<Engine>> devices;
  devices.push_back(Engine::load(tiny(), o));
  devices.push_back(Engine::load(tiny(), o));
  MultiDeviceEngine one_gpu(std::move(devices));
  expect_sessions_spread_and_alone(one_gpu, *alone);
  if (cuda_device_count() < 2) {
    std::printf("one CUDA device: EngineOptions::gpus over two GPUs not run\n");
    return;
  }
  auto two_gpus = Engine::load(tiny(), {.device = Device::Cuda, .gpus = {0, 1}, .max_sessions = 2});
  expect_sessions_spread_and_alone(*two_gpus, *alone);
  EXPECT_EQ(two_gpus->stats().devices[1].device, "cuda:1");
  // Each device's memory figures are its own (cudaMemGetInfo reads the calling thread's current
  // device): 2 GB of caches held on GPU 0 alone show on device 0 only.
  auto ballast = Engine::load(tiny(), {.device = Device::Cuda, .gpu = 0, .max_memory = size_t{2} << 30});
  const EngineStats st = two_gpus->stats();
  EXPECT_GT(st.devices[0].memory_in_use, st.devices[1].memory_in_use + (size_t{3} << 29)) << "each device's own memory expected";
}

// bench --streams over two devices: the streams are placed on both, and each device's share and
// rounds are reported beside the totals.
TEST(MultiDevice, BenchStreamsReportsEachDevicesShare) {
  nlohmann::json j;
  ASSERT_NO_FATAL_FAILURE(
      run_bench("--device cpu --gpus 2 --streams 4 --stream-seconds 2 --measure-seconds 1", "  cpu:1: 2 streams;", j));
  ASSERT_EQ(j["devices"].size(), 2u) << j.dump();
  int streams = 0, rounds = 0;
  for (const auto& d : j["devices"]) {
    EXPECT_EQ(d["streams"], 2);
    EXPECT_GT(d["rounds"]["count"].get<int>(), 0);
    streams += d["streams"].get<int>(), rounds += d["rounds"]["count"].get<int>();
  }
  EXPECT_EQ(streams, 4);
  EXPECT_EQ(rounds, j["rounds"]["count"].get<int>());
  const RunResult other = run_voxrt("bench -q --device cpu --gpus 2 --model " + model_dir() + " --figures decoder");
  EXPECT_EQ(other.status, 2) << other.err;
  EXPECT_NE(other.err.find("--gpus"), std::string::npos) << other.err;
}

// bench --offline-batch over two devices: the transcriptions are placed on both (caches for half
// of them on each), every step of each is run, and each device's share is reported.
TEST(MultiDevice, BenchOfflineBatchSpreadsTheTranscriptions) {
  nlohmann::json j;
  ASSERT_NO_FATAL_FAILURE(
      run_bench("--device cpu --gpus 2 --offline-batch 4 --offline-seconds 3", "  cpu:1: 2 transcriptions;", j));
  Protocol p;  // the tiny model's tekken.json
  EXPECT_EQ(j["steps"].get<int64_t>(), 4 * p.offline_outputs(3 * 16000));
  EXPECT_EQ(j["device_count"], 2);
  ASSERT_EQ(j["devices"].size(), 2u) << j.dump();
  int rounds = 0;
  int64_t rows = 0;
  for (const auto& d : j["devices"]) {
    EXPECT_EQ(d["transcriptions"], 2);
    EXPECT_GT(d["busy_s"].get<double>(), 0);
    EXPECT_LE(d["busy_s"].get<double>(), j["wall_s"].get<double>() + 1e-6);
    rounds += d["rounds"]["count"].get<int>(), rows += d["decoder_rows"].get<int64_t>();
  }
  EXPECT_EQ(rounds, j["rounds"]["count"].get<int>());
  EXPECT_EQ(rows, j["decoder_rows"].get<int64_t>());
}

TEST(MultiDevice, TranscribeSpreadsFilesOverGpusAndNamesABadValue) {
  const std::string files = audio("speech_short") + " " + audio("odd_length");
  const RunResult one = run_voxrt("transcribe -q -f json --device cpu --model " + model_dir() + " " + files);
  const RunResult two = run_voxrt("transcribe -q -f json --device cpu --gpus 2 --model " + model_dir() + " " + files);
  ASSERT_EQ(one.status, 0) << one.err;
  ASSERT_EQ(two.status, 0) << two.err;
  EXPECT_EQ(two.out, one.out);
  for (const char* bad : {"0", "x", "1,1", "0,,1", "99999"}) {
    const RunResult r = run_voxrt(std::string("transcribe -q --device cpu --gpus ") + bad + " --model " + model_dir() + " " +
                                  audio("speech_short"));
    EXPECT_EQ(r.status, 2) << bad << ": " << r.err;
    EXPECT_NE(r.err.find("--gpus"), std::string::npos) << r.err;
  }
}

}  // namespace
}  // namespace voxrt::test
