// voxrt serve under more work than it can take (issue 32): file transcriptions wait on threads of
// their own, so that a live session whose engine slot uploads are waiting for still finishes and
// frees it (this deadlocked: the uploads held every worker, the live session's own tasks queued
// behind them); the queue of uploads is bounded and its wait too (503 with Retry-After); /health
// says when the server is saturated; an upload longer than allowed by its header is refused before
// it is decoded; a web page of another origin is refused; the Bearer scheme is read in any case.
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <future>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>
#include <vector>

#include <sndfile.h>

#include "../test_paths.h"
#include "common/base64.h"
#include "http_test_client.h"
#include "server_test_support.h"
#include "serve_process.h"
#include "temp_dir.h"

namespace voxrt::test {
namespace {

namespace fs = std::filesystem;
namespace http = boost::beast::http;
using nlohmann::json;
using testutil::form_body;
using testutil::form_type;
using testutil::HttpAnswer;
using Clock = std::chrono::steady_clock;

std::string bytes_of(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

HttpAnswer upload(uint16_t port, const fs::path& file, std::vector<std::pair<std::string, std::string>> headers = {}) {
  headers.emplace_back("Content-Type", form_type());
  return testutil::HttpTestClient(port).request(
      http::verb::post, "/v1/audio/transcriptions",
      form_body({{"file", file.filename().string(), bytes_of(file)}, {"response_format", "", "text"}}), headers);
}

// The raw answer to an upload (status line and headers included), for the headers HttpAnswer leaves out.
std::string raw_upload(uint16_t port, const fs::path& file) {
  std::string body = form_body({{"file", file.filename().string(), bytes_of(file)}});
  return testutil::HttpTestClient(port).raw("POST /v1/audio/transcriptions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: " +
                                            form_type() + "\r\nContent-Length: " + std::to_string(body.size()) +
                                            "\r\nConnection: close\r\n\r\n" + body);
}

// A live utterance in vLLM's dialect holding an engine session (the one an engine of max_sessions 1 has).
struct LiveUtterance {
  RealtimeClient client;
  explicit LiveUtterance(uint16_t port) : client(port) {
    EXPECT_EQ(client.receive()["type"], "session.created");
    client.send({{"type", "session.update"}, {"model", "m"}});
    client.send({{"type", "input_audio_buffer.commit"}});
  }
  void send_audio(const std::string& pcm16) {
    client.send({{"type", "input_audio_buffer.append"}, {"audio", base64_encode(pcm16)}});
  }
};

json health(uint16_t port, int* status = nullptr, const std::string& target = "/health") {
  const HttpAnswer a = testutil::HttpTestClient(port).request(http::verb::get, target);
  if (status) *status = a.status;
  return json::parse(a.body);
}

// Waits until the engine has no room (the live utterance's session is open).
void wait_until_full(uint16_t port) {
  const auto until = Clock::now() + std::chrono::seconds(10);
  while (health(port)["engine"]["has_room"] == true && Clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
}

TEST(ServeAdmission, ALiveSessionFinishesWhileUploadsWaitForItsSlot) {
  server::ServiceOptions options;
  options.workers = 4;  // fewer than the uploads: the live session's work must not queue behind them
  options.transcriptions = {.running = 2, .waiting = 2};
  options.queue_timeout = std::chrono::seconds(60);
  RunningServer server(options, true, {}, {.device = Device::Cpu, .threads = 1, .max_sessions = 1});
  const fs::path file = test_data() / "audio" / "speech_short.wav";
  const Pcm16Audio audio = pcm16_of(file);

  LiveUtterance live(server.port());
  live.send_audio(audio.bytes);
  wait_until_full(server.port());
  // Five uploads: two take the transcription threads and wait there for the engine, two wait for
  // a thread, the fifth is refused at once.
  std::vector<std::future<HttpAnswer>> uploads;
  for (int i = 0; i < 5; ++i)
    uploads.push_back(std::async(std::launch::async, [&] { return upload(server.port(), file); }));
  int refused = -1;
  for (const auto until = Clock::now() + std::chrono::seconds(10); refused < 0 && Clock::now() < until;) {
    for (int i = 0; i < 5 && refused < 0; ++i)
      if (uploads[i].wait_for(std::chrono::seconds(0)) == std::future_status::ready) refused = i;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_GE(refused, 0) << "no upload was refused with two running and two waiting";
  const HttpAnswer refusal = uploads[refused].get();
  EXPECT_EQ(refusal.status, 503) << refusal.body;
  EXPECT_NE(refusal.body.find("--max-queued-transcriptions"), std::string::npos) << refusal.body;
  int status = 0;
  EXPECT_EQ(health(server.port(), &status)["status"], "saturated");
  EXPECT_EQ(status, 503);
  EXPECT_EQ(health(server.port(), &status, "/health?live")["status"], "ok") << "a busy server is alive";
  EXPECT_EQ(status, 200);

  // The live utterance is answered in full, its slot freed, and the waiting uploads run.
  live.client.send({{"type", "input_audio_buffer.commit"}, {"final", true}});
  std::string deltas;
  EXPECT_EQ(live.client.until_done(deltas)["text"], reference().transcribe(audio.heard).text);
  const std::string want = reference_transcript(file).text + "\n";
  for (int i = 0; i < 5; ++i) {
    if (i == refused) continue;
    ASSERT_EQ(uploads[i].wait_for(std::chrono::seconds(60)), std::future_status::ready) << "upload " << i << " never answered";
    const HttpAnswer a = uploads[i].get();
    EXPECT_EQ(a.status, 200) << a.body;
    EXPECT_EQ(a.body, want);
  }
  EXPECT_EQ(health(server.port(), &status)["status"], "ok");
}

// An engine whose model work has not moved for a minute (what EngineStats::stalled_seconds says;
// the scheduler's own measure of it is tested in test_transcribe_limits.cpp).
class StalledEngine final : public Engine {
 public:
  Transcript transcribe(std::span<const float>, const TranscribeOptions&) override { return {}; }
  Transcript transcribe_file(const std::filesystem::path&, const TranscribeOptions&) override { return {}; }
  void transcribe_each(std::span<const std::filesystem::path>, const TranscribeOptions&,
                       const std::function<void(BatchItem&)>&, int) override {}
  std::unique_ptr<Session> open_session(const SessionOptions&) override { throw Error("stalled"); }
  const ModelInfo& info() const override { return info_; }
  EngineStats stats() const override {
    EngineStats s;
    s.stalled_seconds = 60;
    s.devices = {DeviceStats{.device = "cpu:0"}};
    return s;
  }

 private:
  ModelInfo info_;
};

TEST(ServeAdmission, HealthSaysStalledWhenTheModelWorkDoesNotMove) {
  server::ServiceOptions options;
  options.stall_seconds = 30;
  RunningServer server(options, /*load=*/false);
  server.service().set_engine(std::make_unique<StalledEngine>());
  int status = 0;
  EXPECT_EQ(health(server.port(), &status)["status"], "stalled");
  EXPECT_EQ(status, 503);
  EXPECT_EQ(health(server.port(), &status, "/health?live")["status"], "stalled") << "a stalled server needs a restart";
  EXPECT_EQ(status, 503);
}

TEST(ServeAdmission, AnUploadThatWaitsTooLongForRoomIsRefusedWithRetryAfter) {
  server::ServiceOptions options;
  options.queue_timeout = std::chrono::milliseconds(500);
  RunningServer server(options, true, {}, {.device = Device::Cpu, .threads = 1, .max_sessions = 1});
  LiveUtterance live(server.port());
  live.send_audio(pcm16_of(test_data() / "audio" / "speech_short.wav").bytes);
  wait_until_full(server.port());
  const auto t0 = Clock::now();
  const std::string answer = raw_upload(server.port(), test_data() / "audio" / "speech_short.wav");
  EXPECT_EQ(answer.rfind("HTTP/1.1 503", 0), 0u) << answer;
  EXPECT_NE(answer.find("Retry-After: 5\r\n"), std::string::npos) << answer;
  EXPECT_NE(answer.find("max_sessions"), std::string::npos) << answer;
  EXPECT_LT(std::chrono::duration<double>(Clock::now() - t0).count(), 10.0);
}

// A FLAC that is mostly silence holds far more audio than its size says: its header is read
// before anything is decoded.
TEST(ServeAdmission, AnUploadLongerThanAllowedByItsHeaderIsRefusedBeforeDecoding) {
  testutil::TempDir dir;
  const fs::path flac = dir / "silence.flac";
  {
    SF_INFO info{};
    info.samplerate = 8000;
    info.channels = 1;
    info.format = SF_FORMAT_FLAC | SF_FORMAT_PCM_16;
    SNDFILE* f = sf_open(flac.c_str(), SFM_WRITE, &info);
    ASSERT_NE(f, nullptr) << sf_strerror(nullptr);
    const std::vector<short> second(8000, 0);
    for (int i = 0; i < 600; ++i) sf_write_short(f, second.data(), 8000);  // ten minutes
    sf_close(f);
  }
  EXPECT_LT(fs::file_size(flac), 200'000u) << "not a compressed bomb";
  server::ServiceOptions options;
  options.max_audio_seconds = 60;
  RunningServer server(options);
  const auto t0 = Clock::now();
  const HttpAnswer a = upload(server.port(), flac);
  EXPECT_EQ(a.status, 413) << a.body;
  EXPECT_NE(a.body.find("silence.flac: 600 s of audio by its header, more than the 60 s"), std::string::npos) << a.body;
  EXPECT_LT(std::chrono::duration<double>(Clock::now() - t0).count(), 2.0) << "it was decoded";
  EXPECT_EQ(upload(server.port(), test_data() / "audio" / "speech_short.wav").status, 200);
}

TEST(ServeAdmission, PagesOfAnotherOriginAreRefused) {
  server::ServiceOptions options;
  options.allowed_origins = {"https://captions.example"};
  RunningServer server(options);
  const std::string host = "127.0.0.1:" + std::to_string(server.port());
  const fs::path file = test_data() / "audio" / "speech_short.wav";
  const HttpAnswer evil = upload(server.port(), file, {{"Host", host}, {"Origin", "https://evil.example"}});
  EXPECT_EQ(evil.status, 403) << evil.body;
  EXPECT_NE(evil.body.find("Origin https://evil.example"), std::string::npos) << evil.body;
  EXPECT_EQ(upload(server.port(), file, {{"Host", host}, {"Origin", "http://" + host}}).status, 200) << "its own page";
  EXPECT_EQ(upload(server.port(), file, {{"Host", host}, {"Origin", "https://captions.example"}}).status, 200);
  EXPECT_EQ(upload(server.port(), file).status, 200) << "a program sends no Origin";
  // A WebSocket from another origin's page is refused at the upgrade.
  EXPECT_THROW(RealtimeClient(server.port(), "/v1/realtime", {{"Origin", "https://evil.example"}}), boost::system::system_error);
  RealtimeClient own(server.port(), "/v1/realtime", {{"Origin", "http://" + host}, {"Host", host}});
  EXPECT_EQ(own.receive()["type"], "session.created");
}

TEST(ServeAdmission, TheBearerSchemeIsReadInAnyCase) {
  server::ServiceOptions options;
  options.api_key = "k3y";
  RunningServer server(options);
  const testutil::HttpTestClient c(server.port());
  EXPECT_EQ(c.request(http::verb::get, "/v1/models", {}, {{"Authorization", "bearer k3y"}}).status, 200);
  EXPECT_EQ(c.request(http::verb::get, "/v1/models", {}, {{"Authorization", "BEARER   k3y"}}).status, 200);
  EXPECT_EQ(c.request(http::verb::get, "/v1/models", {}, {{"Authorization", "Bearer k3y2"}}).status, 401);
  EXPECT_EQ(c.request(http::verb::get, "/v1/models", {}, {{"Authorization", "Bearerk3y"}}).status, 401);
  EXPECT_EQ(c.request(http::verb::get, "/v1/models", {}, {{"Authorization", "Basic k3y"}}).status, 401);
}

// Ten minutes of speech (jfk.wav over and over) as a 16 kHz PCM16 WAV: a transcription the tiny
// model takes seconds over.
fs::path long_speech(const testutil::TempDir& dir) {
  const fs::path out = dir / "long.wav";
  const std::vector<float> one = load_audio_mono(test_data() / "audio" / "jfk.wav");
  SF_INFO info{};
  info.samplerate = 16000;
  info.channels = 1;
  info.format = SF_FORMAT_WAV | SF_FORMAT_PCM_16;
  SNDFILE* f = sf_open(out.c_str(), SFM_WRITE, &info);
  if (f == nullptr) throw std::runtime_error(sf_strerror(nullptr));
  for (int i = 0; i < 55; ++i) sf_write_float(f, one.data(), static_cast<sf_count_t>(one.size()));
  sf_close(f);
  return out;
}

std::string stream_request(const fs::path& file) {
  const std::string body = form_body({{"file", file.filename().string(), bytes_of(file)}, {"stream", "", "true"}});
  return "POST /v1/audio/transcriptions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: " + form_type() +
         "\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
}

void wait_in_progress(uint16_t port) {
  const auto until = Clock::now() + std::chrono::seconds(20);
  while (health(port)["requests_in_progress"] == 0 && Clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
}

// SIGTERM with a transcription that outlasts the drain: the drain ends it (a streamed one with an
// error event, not a stream cut short without a word) and the process exits soon after.
TEST(ServeShutdown, WorkThatOutlastsTheDrainIsCancelledAndTheProcessExits) {
  testutil::TempDir dir;
  const fs::path file = long_speech(dir);
  ServeProcess serve({"--drain-seconds", "1"});
  ASSERT_NE(serve.port(), 0) << serve.said();
  std::string answer;
  std::thread client([&] { answer = testutil::HttpTestClient(serve.port()).raw(stream_request(file)); });
  wait_in_progress(serve.port());
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // under way
  const auto t0 = Clock::now();
  serve.signal(SIGTERM);
  EXPECT_EQ(serve.wait_exit(std::chrono::seconds(8)), 0) << serve.said();
  EXPECT_LT(std::chrono::duration<double>(Clock::now() - t0).count(), 1 + 3.0) << "the drain overran";
  client.join();
  EXPECT_NE(answer.find("transcript.text.delta"), std::string::npos) << answer.substr(0, 2000);
  EXPECT_EQ(answer.find("transcript.text.done"), std::string::npos) << "it ran to the end within the drain";
  const size_t error = answer.rfind("data: {\"error\"");
  ASSERT_NE(error, std::string::npos) << answer.substr(answer.size() > 2000 ? answer.size() - 2000 : 0);
  EXPECT_NE(answer.find("shutting down", error), std::string::npos) << answer.substr(error);
  EXPECT_NE(serve.said().find("cancelling what still runs"), std::string::npos) << serve.said();
}

// A client that leaves while its upload is transcribed stops the work (the old server ran it to the
// end: 14 s of CPU for a client gone after 0.5 s).
TEST(ServeAdmission, AnUploadWhoseClientLeftIsCancelled) {
  testutil::TempDir dir;
  const fs::path file = long_speech(dir);
  RunningServer server;
  boost::asio::io_context io;
  boost::asio::ip::tcp::socket socket(io);
  socket.connect({boost::asio::ip::make_address("127.0.0.1"), server.port()});
  boost::asio::write(socket, boost::asio::buffer(stream_request(file)));
  wait_in_progress(server.port());
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // under way
  socket.close();
  const auto t0 = Clock::now();
  while (health(server.port())["requests_in_progress"] != 0 && Clock::now() - t0 < std::chrono::seconds(20))
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_LT(std::chrono::duration<double>(Clock::now() - t0).count(), 2.0) << "the work went on without its client";
  EXPECT_EQ(server.service().requests_in_progress(), 0);
}

// A stop is never ignored: a second signal ends the process at once, whatever still runs.
TEST(ServeShutdown, ASecondSignalEndsTheProcessAtOnce) {
  testutil::TempDir dir;
  const fs::path file = long_speech(dir);
  ServeProcess serve({"--drain-seconds", "60"});
  ASSERT_NE(serve.port(), 0) << serve.said();
  std::thread client([&] { testutil::HttpTestClient(serve.port()).raw(stream_request(file)); });
  wait_in_progress(serve.port());
  serve.signal(SIGTERM);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_EQ(serve.wait_exit(std::chrono::milliseconds(0)), -1) << "it did not drain";
  const auto t0 = Clock::now();
  serve.signal(SIGINT);
  EXPECT_EQ(serve.wait_exit(std::chrono::seconds(3)), 1) << serve.said();
  EXPECT_LT(std::chrono::duration<double>(Clock::now() - t0).count(), 1.0);
  EXPECT_NE(serve.said().find("exiting at once: a second stop signal"), std::string::npos) << serve.said();
  client.join();
}

}  // namespace
}  // namespace voxrt::test
