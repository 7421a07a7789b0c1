// What the server's tests share: the tiny model's reference engine, the server running in process on
// a loopback port, and a blocking WebSocket client for the realtime dialects.
#pragma once

#include <sys/socket.h>
#include <sys/time.h>

#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/buffers_to_string.hpp>
#include <boost/beast/websocket.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "../test_paths.h"
#include "audio/audio_file.h"
#include "http_test_client.h"
#include "server/api_service.h"
#include "server/http_server.h"
#include "voxrt/voxrt.h"

namespace voxrt::test {

inline Engine& reference() {
  static std::unique_ptr<Engine> e = Engine::load(test_data() / "tiny" / "mistral", {.device = Device::Cpu, .threads = 1});
  return *e;
}

inline Transcript reference_transcript(const std::filesystem::path& file, int delay_ms = 0) {
  TranscribeOptions o;
  o.delay_ms = delay_ms;
  return reference().transcribe_file(file, o);
}

// The server on 127.0.0.1 at a free port, its I/O on two threads, stopped on destruction.
class RunningServer {
 public:
  explicit RunningServer(server::ServiceOptions options = {}, bool load = true, server::HttpLimits limits = {},
                         EngineOptions engine = {.device = Device::Cpu, .threads = 1})
      : service_(with_workers(std::move(options))), http_("127.0.0.1", 0, limits) {
    http_.set_handler(service_.handler());
    if (load) service_.set_engine(Engine::load(test_data() / "tiny" / "mistral", engine));
    io_ = std::thread([this] { http_.run(2); });
  }
  ~RunningServer() {
    http_.stop();
    io_.join();
    service_.join_workers();
  }
  testutil::HttpTestClient client() const { return testutil::HttpTestClient(http_.port()); }
  uint16_t port() const { return http_.port(); }
  server::ApiService& service() { return service_; }

 private:
  static server::ServiceOptions with_workers(server::ServiceOptions o) {
    if (o.workers == server::ServiceOptions{}.workers) o.workers = 8;  // unless a test asks for its own
    return o;
  }
  server::ApiService service_;  // outlives the server's connections (the destructor's order)
  server::HttpServer http_;
  std::thread io_;
};

// A realtime WebSocket client, blocking, with a receive timeout: a server that never answers fails
// the test instead of hanging it. `target` picks the dialect (vLLM's by default).
class RealtimeClient {
 public:
  // `headers` go on the upgrade request (Authorization, Sec-WebSocket-Protocol); the server's
  // answer to it is kept (handshake_response()). A refused upgrade throws.
  explicit RealtimeClient(uint16_t port, const std::string& target = "/v1/realtime",
                          const std::vector<std::pair<std::string, std::string>>& headers = {})
      : ws_(io_) {
    ws_.next_layer().connect({boost::asio::ip::make_address("127.0.0.1"), port});
    timeval tv{60, 0};
    setsockopt(ws_.next_layer().native_handle(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    ws_.set_option(boost::beast::websocket::stream_base::decorator([headers](boost::beast::websocket::request_type& r) {
      for (const auto& [name, value] : headers) r.set(name, value);
    }));
    ws_.handshake(response_, "127.0.0.1", target);
  }
  const boost::beast::websocket::response_type& handshake_response() const { return response_; }
  void send(const nlohmann::json& event) { ws_.write(boost::asio::buffer(event.dump())); }
  void send_text(const std::string& text) { ws_.write(boost::asio::buffer(text)); }
  void send_binary(const std::string& bytes) {
    ws_.binary(true);
    ws_.write(boost::asio::buffer(bytes));
    ws_.text(true);
  }
  nlohmann::json receive() {
    boost::beast::flat_buffer b;
    ws_.read(b);
    return nlohmann::json::parse(boost::beast::buffers_to_string(b.data()));
  }
  // vLLM's dialect: reads events until transcription.done (returned); the deltas' text goes to
  // `deltas`, the words they carry (voxrt's extension) to `delta_words` if given.
  nlohmann::json until_done(std::string& deltas, nlohmann::json* delta_words = nullptr) {
    for (;;) {
      nlohmann::json e = receive();
      if (e["type"] == "transcription.delta" && delta_words && e.contains("words"))
        for (const nlohmann::json& w : e["words"]) delta_words->push_back(w);
      if (e["type"] == "transcription.delta") deltas += e["delta"].get<std::string>();
      else if (e["type"] == "transcription.done") return e;
      else ADD_FAILURE() << "unexpected event " << e.dump();
      if (e["type"] == "error") return e;
    }
  }
  // A send that cannot go on for this long throws (a server that stopped reading for good fails
  // the test instead of hanging it).
  void set_send_timeout(int seconds) {
    timeval tv{seconds, 0};
    setsockopt(ws_.next_layer().native_handle(), SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  }
  void close() { ws_.close(boost::beast::websocket::close_code::normal); }
  // Gone without a word: the socket closed, no close frame.
  void drop() { ws_.next_layer().close(); }
  // The sending side shut (TCP FIN), the receiving side left open.
  void shutdown_send() { ws_.next_layer().shutdown(boost::asio::ip::tcp::socket::shutdown_send); }

 private:
  boost::asio::io_context io_;
  boost::beast::websocket::stream<boost::asio::ip::tcp::socket> ws_;
  boost::beast::websocket::response_type response_;
};

// Audio as a realtime client sends it: PCM16 at some rate, and the floats the model hears from that
// (at 16 kHz: resampled as a whole where the rate differs, as the server's stream resampler does).
struct Pcm16Audio {
  std::string bytes;
  std::vector<float> heard;
};
inline Pcm16Audio pcm16_of(const std::filesystem::path& file, int rate = 16000) {
  Pcm16Audio a;
  std::vector<float> sent;
  for (float x : load_audio_mono(file, rate)) {
    const auto v = static_cast<int16_t>(std::clamp(std::lround(x * 32768.0f), -32768L, 32767L));
    a.bytes.append(reinterpret_cast<const char*>(&v), 2);
    sent.push_back(static_cast<float>(v) / 32768.0f);
  }
  a.heard = rate == 16000 ? sent : resample(sent, rate, 16000);
  return a;
}

// `file` played over and over for `seconds` (the last time cut short), as pcm16_of gives it.
inline Pcm16Audio pcm16_looped(const std::filesystem::path& file, double seconds, int rate = 16000) {
  const Pcm16Audio once = pcm16_of(file, rate);
  const size_t bytes = 2 * static_cast<size_t>(seconds * rate);
  Pcm16Audio a;
  while (a.bytes.size() < bytes) a.bytes += once.bytes.substr(0, bytes - a.bytes.size());
  std::vector<float> sent(a.bytes.size() / 2);
  for (size_t i = 0; i < sent.size(); ++i) {
    int16_t v;
    std::memcpy(&v, a.bytes.data() + 2 * i, 2);
    sent[i] = static_cast<float>(v) / 32768.0f;
  }
  a.heard = rate == 16000 ? sent : resample(sent, rate, 16000);
  return a;
}

// The value of a sample line of /metrics ("name{labels} value"), or -1 when there is none.
inline double metric(const std::string& text, const std::string& sample) {
  const size_t at = text.find("\n" + sample + " ");
  if (at == std::string::npos) return -1;
  return std::stod(text.substr(at + sample.size() + 2));
}

// The realtime dialects' words and segments against the engine's transcript.
inline void expect_words(const nlohmann::json& words, const std::vector<Word>& want) {
  ASSERT_EQ(words.size(), want.size()) << words.dump();
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(words[i]["word"], want[i].text);
    EXPECT_DOUBLE_EQ(words[i]["start"].get<double>(), want[i].start);
    EXPECT_DOUBLE_EQ(words[i]["end"].get<double>(), want[i].end);
  }
}

inline void expect_segments(const nlohmann::json& segments, const std::vector<Segment>& want) {
  ASSERT_EQ(segments.size(), want.size()) << segments.dump();
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(segments[i]["text"], want[i].text);
    EXPECT_DOUBLE_EQ(segments[i]["start"].get<double>(), want[i].start);
    EXPECT_DOUBLE_EQ(segments[i]["end"].get<double>(), want[i].end);
    expect_words(segments[i]["words"], want[i].words);
  }
}

// The words the text deltas carried (voxrt's extension): the transcript's words in order, all but at
// most the last (ended by the end of input, after the last delta; the done event has it).
inline void expect_delta_words(const nlohmann::json& words, const std::vector<Word>& want) {
  ASSERT_LE(words.size(), want.size()) << words.dump();
  EXPECT_GE(words.size() + 1, want.size()) << words.dump();
  expect_words(words, std::vector<Word>(want.begin(), want.begin() + static_cast<ptrdiff_t>(words.size())));
}
inline void collect_words(const nlohmann::json& delta, nlohmann::json& into) {
  if (delta.contains("words"))
    for (const nlohmann::json& w : delta["words"]) into.push_back(w);
}

}  // namespace voxrt::test
