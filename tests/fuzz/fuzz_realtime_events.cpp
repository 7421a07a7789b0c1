// libFuzzer target: the three realtime dialects' event handling (vLLM's, Mistral's, OpenAI's) on
// any sequence of WebSocket messages (scripts/fuzz.sh). The input's first byte picks the dialect;
// the rest is split into messages at 0x1E bytes, a message starting with 'B' being a binary frame
// (its other bytes the payload). Each message goes through the dialect's on_message as the
// connection would hand it over (then its pause_reading, as the connection asks it), then the
// connection closes. The dialects run with limits small enough for inputs of a few kilobytes to
// pass them (depth, values, event size, audio kept before a commit, the queue's marks). Every
// input must be answered with events or errors: an exception escaping a handler, a crash, a read
// out of bounds (ASan) or undefined behaviour (UBSan) is a bug.
//
// The model is out of scope here (the engine's own tests cover it): the dialects run on an Engine
// whose sessions count the samples they are fed and say one word per 80 ms of them, so that the
// event paths that follow model output (deltas, segments, done) run too.
#include <boost/asio/thread_pool.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "server/mistral_realtime.h"
#include "server/openai_realtime.h"
#include "server/vllm_realtime.h"
#include "voxrt/session.h"

namespace {

using namespace voxrt;

class CountingSession final : public Session {
 public:
  explicit CountingSession(const SessionOptions& o) : options_(o) {}
  void feed(std::span<const float> samples) override {
    // Decoded samples are in [-1, 1]; resampling may overshoot a little (the filter's ringing on
    // a full-scale step), never to a value that is not finite or far out.
    for (float x : samples)
      if (!(x >= -2.0f && x <= 2.0f)) std::abort();
    fed_ += samples.size();
    while (fed_ >= 1280 * (stats_.steps + 1)) say(" w" + std::to_string(stats_.steps));
  }
  void flush() override { say(" end"); }
  Transcript transcript() const override {
    Transcript t;
    t.text = text_;
    t.duration = static_cast<double>(fed_) / 16000;
    return t;
  }
  const SessionStats& stats() const override { return stats_; }

 private:
  void say(const std::string& word) {
    ++stats_.steps;
    text_ += word;
    if (!options_.on_event) return;
    StreamEvent e;
    e.text = word;
    options_.on_event(e);
    e.kind = StreamEvent::Kind::Word;
    options_.on_event(e);
    e.kind = StreamEvent::Kind::SegmentEnd;
    options_.on_event(e);
  }
  SessionOptions options_;
  SessionStats stats_;
  size_t fed_ = 0;
  std::string text_;
};

class CountingEngine final : public Engine {
 public:
  CountingEngine() { info_.delays = model_delays(); }
  Transcript transcribe(std::span<const float>, const TranscribeOptions&) override { return {}; }
  Transcript transcribe_file(const std::filesystem::path&, const TranscribeOptions&) override { return {}; }
  void transcribe_each(std::span<const std::filesystem::path>, const TranscribeOptions&,
                       const std::function<void(BatchItem&)>&, int) override {}
  std::unique_ptr<Session> open_session(const SessionOptions& o) override {
    if (o.delay_ms % 80 != 0 && o.delay_ms != 2400) std::abort();  // a dialect let a bad delay through
    return std::make_unique<CountingSession>(o);
  }
  const ModelInfo& info() const override { return info_; }
  EngineStats stats() const override { return {}; }

 private:
  ModelInfo info_;
};

server::RealtimeLimits small_limits() {
  server::RealtimeLimits l;
  l.max_waiting_seconds = 0.05;  // 800 samples
  l.pause_queued_seconds = 0.1;
  l.resume_queued_seconds = 0.05;
  l.pause_queued_tasks = 8;
  l.resume_queued_tasks = 4;
  l.json.max_depth = 8;
  l.json.max_values = 64;
  l.json.max_event_bytes = 1024;
  return l;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  static CountingEngine engine;
  boost::asio::thread_pool workers(1);
  std::shared_ptr<server::LiveTranscription> dialect;
  static const server::RealtimeLimits limits = small_limits();
  switch (data[0] % 3) {
    case 0: dialect = std::make_shared<server::VllmRealtime>(engine, workers, limits); break;
    case 1: dialect = std::make_shared<server::MistralRealtime>(engine, workers, "m", limits); break;
    default: dialect = std::make_shared<server::OpenAiRealtime>(engine, workers, limits); break;
  }
  dialect->on_open(server::WebSocketSender(std::weak_ptr<server::WebSocketConnection>()));
  const std::string_view input(reinterpret_cast<const char*>(data + 1), size - 1);
  for (size_t at = 0; at <= input.size();) {
    const size_t end = std::min(input.find('\x1e', at), input.size());
    const std::string_view m = input.substr(at, end - at);
    const bool binary = !m.empty() && m[0] == 'B';
    dialect->on_message(std::string(binary ? m.substr(1) : m), binary);
    dialect->pause_reading();  // no connection to pause here: the worker's resume goes nowhere
    at = end + 1;
  }
  workers.join();  // the model work the messages queued, in order
  dialect->on_close();
  return 0;
}
