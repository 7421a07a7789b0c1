// What a realtime connection may cost the server, whatever its client sends (RealtimeLimits): each
// text message is parsed within bounds (depth, values, size), answered in the dialect's own error
// shape, and the connection goes on; the audio a connection holds is bounded, a client that floods
// audio is slowed to the model's pace and loses none of it; a client's values echoed back are
// short; delays are taken only when they are the model's, without wrapping; and a connection that
// closes stops costing model work at once.
#include <gtest/gtest.h>

#include <boost/asio/thread_pool.hpp>

#include <atomic>
#include <chrono>
#include <functional>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/base64.h"
#include "server/event_json.h"
#include "server/mistral_realtime.h"
#include "server/openai_realtime.h"
#include "server/vllm_realtime.h"
#include "server/websocket_connection.h"
#include "server_test_support.h"

namespace voxrt::test {
namespace {

using nlohmann::json;
namespace http = boost::beast::http;
using Clock = std::chrono::steady_clock;

constexpr const char* kMistralPath = "/v1/audio/transcriptions/realtime?model=voxtral-mini-transcribe-realtime-2602";
constexpr const char* kOpenAiPath = "/v1/realtime?intent=transcription";

double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

// Events until one of `type` (returned); an error event on the way fails the test.
json until_type(RealtimeClient& c, const std::string& type) {
  for (;;) {
    json e = c.receive();
    if (e["type"] == type) return e;
    if (e["type"] == "error") {
      ADD_FAILURE() << "unexpected error " << e.dump();
      return e;
    }
  }
}

// ---- bounded JSON ----

std::optional<server::EventJsonError::Kind> refusal(const std::string& text) {
  try {
    server::parse_event(text, "audio.append", server::EventJsonLimits{});
    return std::nullopt;
  } catch (const server::EventJsonError& e) {
    return e.kind();
  }
}

// An event whose "v" holds arrays nested so that the event has `levels` levels, the object one.
std::string nested(size_t levels) {
  return R"({"type":"x","v":)" + std::string(levels - 1, '[') + std::string(levels - 1, ']') + "}";
}
// An event of `count` values: the object, its type, the array "v" and zeros in it.
std::string wide(size_t count) {
  std::string s = R"({"type":"x","v":[0)";
  for (size_t i = 4; i < count; ++i) s += ",0";
  return s + "]}";
}

TEST(RealtimeLimitsJson, DepthValuesAndSizeAreBoundedAndHugeMessagesRefusedAtOnce) {
  using Kind = server::EventJsonError::Kind;
  EXPECT_EQ(refusal(nested(32)), std::nullopt);
  EXPECT_EQ(refusal(nested(33)), Kind::TooNested);
  EXPECT_EQ(refusal(wide(4096)), std::nullopt);
  EXPECT_EQ(refusal(wide(4097)), Kind::TooNested);
  for (const char* text : {"", "{", "[1]", "\"an event\"", "7", "{\"type\":\"x\"} {}"})
    EXPECT_EQ(refusal(text), Kind::NotJson) << text;
  // 64 KiB for any event but the audio one, which only the WebSocket's message limit bounds.
  const auto event = [](const std::string& type, size_t bytes) {
    const std::string head = R"({"type":")" + type + R"(","audio":")";
    return head + std::string(bytes - head.size() - 2, 'A') + "\"}";
  };
  EXPECT_EQ(refusal(event("session.update", 65536)), std::nullopt);
  EXPECT_EQ(refusal(event("session.update", 65537)), Kind::TooLarge);
  EXPECT_EQ(refusal(event("audio.append", 1 << 20)), std::nullopt);
  EXPECT_EQ(refusal(R"({"audio":")" + std::string(70000, 'A') + "\"}"), Kind::TooLarge);  // no type
  try {
    server::parse_event(event("session.update", 65537), "audio.append", {});
  } catch (const server::EventJsonError& e) {
    EXPECT_STREQ(e.what(), "event too large: 65537 bytes, where an event other than audio.append is at most 65536");
  }
  // The largest messages taken (16 MB) of '[' and of zeros: refused at the first level or value
  // too many, in microseconds (a whole parse took 6 s and 1.3 GB).
  std::string zeros = "[0";
  while (zeros.size() < (16u << 20) - 2) zeros += ",0";
  for (const std::string& huge : {std::string(16 << 20, '['), zeros + "]"}) {
    const Clock::time_point t = Clock::now();
    EXPECT_EQ(refusal(huge), Kind::TooNested);
    EXPECT_LT(ms_since(t), 50);
  }
}

// Each dialect's error for a message past the bounds, and the connection goes on.
TEST(RealtimeLimitsJson, EachDialectAnswersInItsOwnShapeAndGoesOn) {
  RunningServer s;
  const std::string too_large = R"({"type":"session.update","pad":")" + std::string(70000, 'x') + "\"}";
  const std::vector<std::string> messages = {nested(100), wide(5000), too_large};
  {
    RealtimeClient c(s.port());
    c.receive();
    for (const std::string& m : messages) {
      c.send_text(m);
      const json e = c.receive();
      EXPECT_EQ(e["type"], "error") << e.dump();
      EXPECT_EQ(e["code"], &m == &messages.back() ? "event_too_large" : "invalid_json") << e.dump();
      EXPECT_TRUE(e["error"].is_string()) << e.dump();
    }
    c.send({{"type", "no.such.event"}});
    EXPECT_EQ(c.receive()["code"], "unknown_event");
  }
  {
    RealtimeClient c(s.port(), kMistralPath);
    c.receive();
    for (const std::string& m : messages) {
      c.send_text(m);
      const json e = c.receive();
      EXPECT_EQ(e["type"], "error") << e.dump();
      EXPECT_EQ(e["error"]["code"], &m == &messages.back() ? 413 : 400) << e.dump();
      EXPECT_TRUE(e["error"]["message"].is_string()) << e.dump();
    }
    c.send({{"type", "session.update"}, {"session", json::object()}});
    EXPECT_EQ(c.receive()["type"], "session.updated");
  }
  {
    RealtimeClient c(s.port(), kOpenAiPath);
    c.receive();
    for (const std::string& m : messages) {
      c.send_text(m);
      const json e = c.receive();
      EXPECT_EQ(e["type"], "error") << e.dump();
      EXPECT_EQ(e["error"]["type"], "invalid_request_error") << e.dump();
      EXPECT_EQ(e["error"]["code"], &m == &messages.back() ? "event_too_large" : "invalid_json") << e.dump();
      EXPECT_TRUE(e["error"].contains("event_id") && e["error"]["event_id"].is_null()) << e.dump();
    }
    c.send({{"type", "input_audio_buffer.commit"}});
    EXPECT_EQ(c.receive()["error"]["code"], "input_audio_buffer_commit_empty");
  }
}

// 16 MB of '[' on each dialect's connection at once (more than the server's two I/O threads): each
// answered, and /health on another connection answered meanwhile, as fast as in a round of 16 MB
// messages of flat JSON (a string). The flat round is what any message of the largest size costs
// this build (reading and unmasking it; several times more under the sanitizers than in a release
// build); the nested one, parsed whole, took 6.3 s and 1.3 GB (release) and held /health 7.3 s.
struct FloodRound {
  std::vector<double> answer_ms = std::vector<double>(3, -1);
  double slowest_health_ms = 0;
  int healths = 0;
};

static FloodRound flood_every_dialect(RunningServer& s, const std::string& message) {
  FloodRound r;
  std::atomic<int> answered{0};
  std::vector<std::thread> clients;
  for (int d = 0; d < 3; ++d)
    clients.emplace_back([&, d] {
      try {
        RealtimeClient c(s.port(), d == 0 ? "/v1/realtime" : d == 1 ? kMistralPath : kOpenAiPath);
        c.receive();
        const Clock::time_point t = Clock::now();
        c.send_text(message);
        const json e = c.receive();
        r.answer_ms[static_cast<size_t>(d)] = ms_since(t);
        EXPECT_EQ(e["type"], "error") << e.dump();
      } catch (const std::exception& e) {
        ADD_FAILURE() << "dialect " << d << ": " << e.what();
      }
      ++answered;
    });
  const testutil::HttpTestClient http_client = s.client();
  while (answered < 3) {
    const Clock::time_point t = Clock::now();
    EXPECT_EQ(http_client.request(http::verb::get, "/health").status, 200);
    r.slowest_health_ms = std::max(r.slowest_health_ms, ms_since(t));
    ++r.healths;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  for (std::thread& t : clients) t.join();
  return r;
}

TEST(RealtimeLimitsJson, SixteenMegabytesOfBracketsAreAnsweredAtOnceAndHealthStaysFast) {
  RunningServer s;
  const size_t size = 16 << 20;  // --max-message-mb's default
  const FloodRound flat = flood_every_dialect(s, '"' + std::string(size - 2, 'a') + '"');
  const FloodRound deep = flood_every_dialect(s, std::string(size, '['));
  for (size_t d = 0; d < 3; ++d)
    EXPECT_LT(deep.answer_ms[d], 2 * flat.answer_ms[d] + 500) << "dialect " << d << ": flat " << flat.answer_ms[d];
  EXPECT_LT(deep.slowest_health_ms, 2 * flat.slowest_health_ms + 300)
      << "flat " << flat.slowest_health_ms << " ms; " << deep.healths << " requests";
}

// ---- echoes ----

TEST(RealtimeLimitsEcho, OpenAiEchoesOnlyShortStringEventIds) {
  RunningServer s;
  RealtimeClient c(s.port(), kOpenAiPath);
  c.receive();
  const auto echoed = [&](const json& id) {
    c.send({{"type", "response.create"}, {"event_id", id}});
    const json e = c.receive();
    EXPECT_EQ(e["error"]["code"], "invalid_event") << e.dump();
    return e["error"]["event_id"];
  };
  const std::string longest(128, 'e');
  EXPECT_EQ(echoed(longest), longest);
  EXPECT_EQ(echoed("evt_1"), "evt_1");
  // Longer: null, not cut (a cut id could be another of the client's).
  EXPECT_EQ(echoed(longest + "e"), nullptr);
  EXPECT_EQ(echoed(std::string(60000, 'e')), nullptr);
  EXPECT_EQ(echoed(7), nullptr);
  EXPECT_EQ(echoed({{"id", "evt_1"}}), nullptr);
}

TEST(RealtimeLimitsEcho, OpenAiTranscriptionModelLanguageAndPromptAreShortStrings) {
  RunningServer s;
  RealtimeClient c(s.port(), kOpenAiPath);
  c.receive();
  const auto update = [&](const json& transcription) {
    c.send({{"type", "session.update"},
            {"session", {{"type", "transcription"}, {"audio", {{"input", {{"transcription", transcription}}}}}}}});
    return c.receive();
  };
  const auto expect_refused = [&](const json& transcription, const std::string& code, const std::string& param) {
    const json e = update(transcription);
    EXPECT_EQ(e["error"]["code"], code) << e.dump();
    EXPECT_EQ(e["error"]["param"], "session.audio.input.transcription." + param) << e.dump();
  };
  expect_refused({{"model", std::string(129, 'm')}}, "string_above_max_length", "model");
  expect_refused({{"language", std::string(129, 'l')}}, "string_above_max_length", "language");
  expect_refused({{"prompt", std::string(4097, 'p')}}, "string_above_max_length", "prompt");
  expect_refused({{"language", {{"code", "en"}}}}, "invalid_type", "language");
  expect_refused({{"model", json::array({"a", "b"})}}, "invalid_type", "model");
  expect_refused({{"prompt", 7}}, "invalid_type", "prompt");
  // The prompt's phrases are a context-bias list (docs/serve.md): one of over 100 bytes is refused.
  expect_refused({{"prompt", std::string(101, 'p')}}, "invalid_value", "prompt");
  // 4096 bytes are echoed: here one phrase of 40 bytes and separators.
  const json taken = {{"model", std::string(128, 'm')}, {"language", nullptr},
                      {"prompt", std::string(40, 'p') + std::string(4056, ',')}};
  const json e = update(taken);
  ASSERT_EQ(e["type"], "session.updated") << e.dump();
  for (const char* key : {"model", "language", "prompt"})
    EXPECT_EQ(e["session"]["audio"]["input"]["transcription"][key], taken[key]) << key;
}

TEST(RealtimeLimitsEcho, MistralRefusesAModelNameTooLongToEcho) {
  RunningServer s;
  {
    RealtimeClient c(s.port(), "/v1/audio/transcriptions/realtime?model=" + std::string(128, 'm'));
    EXPECT_EQ(c.receive()["session"]["model"], std::string(128, 'm'));
  }
  RealtimeClient c(s.port(), "/v1/audio/transcriptions/realtime?model=" + std::string(129, 'm'));
  const json e = c.receive();
  EXPECT_EQ(e["type"], "error") << e.dump();
  EXPECT_EQ(e["error"]["code"], 400) << e.dump();
  EXPECT_NE(e["error"]["message"].get<std::string>().find("at most 128 bytes"), std::string::npos) << e.dump();
  EXPECT_THROW(c.receive(), boost::system::system_error);  // then the close frame
}

// ---- delays ----

TEST(RealtimeLimitsDelay, ADelayIsAJsonIntegerOfTheModelsWhateverItsSize) {
  EXPECT_EQ(server::model_delay_ms(json(480), model_delays()), 480);
  EXPECT_EQ(server::model_delay_ms(json(2400), model_delays()), 2400);
  EXPECT_EQ(server::model_delay_ms(json(80u), model_delays()), 80);
  EXPECT_EQ(server::model_delay_ms(json(-480), model_delays()), std::nullopt);
  for (const char* text : {"4294967776", "-4294966816", "2147484128", "-1", "0", "100", "9223372036854775808",
                           "18446744073709551615", "18446744073709552096", "480.0", "4.8e2", "\"480\"", "true", "null"})
    EXPECT_EQ(server::model_delay_ms(json::parse(text), model_delays()), std::nullopt) << text;
}

// What a delay conversion that wraps takes for 480 (2^32 + 480, 480 - 2^32, 2^31 + 480 as an int
// is negative), what is no integer, and what is out of any int's range.
const std::vector<std::string> kBadDelays = {"4294967776", "-4294966816", "2147484128", "-1", "9223372036854775808",
                                             "18446744073709551615", "18446744073709552096", "480.0", "\"480\"", "true"};

TEST(RealtimeLimitsDelay, EveryDialectRefusesDelaysItCannotTakeWithoutWrapping) {
  RunningServer s;
  {
    RealtimeClient c(s.port());
    c.receive();
    for (const std::string& d : kBadDelays) {
      c.send_text(R"({"type":"session.update","model":"x","delay_ms":)" + d + "}");
      EXPECT_EQ(c.receive()["code"], "invalid_delay") << d;
    }
    c.send_text(R"({"type":"session.update","model":"x","delay_ms":960})");
    c.send({{"type", "no.such.event"}});  // answered next: the update before it was taken silently
    EXPECT_EQ(c.receive()["code"], "unknown_event");
  }
  {
    RealtimeClient c(s.port(), kMistralPath);
    c.receive();
    for (const std::string& d : kBadDelays) {
      c.send_text(R"({"type":"session.update","session":{"target_streaming_delay_ms":)" + d + "}}");
      const json e = c.receive();
      EXPECT_EQ(e["error"]["code"], 400) << d << " " << e.dump();
    }
    c.send_text(R"({"type":"session.update","session":{"target_streaming_delay_ms":960}})");
    EXPECT_EQ(c.receive()["session"]["target_streaming_delay_ms"], 960);
  }
  {
    RealtimeClient c(s.port(), kOpenAiPath);
    c.receive();
    const auto update = [&](const std::string& d) {
      c.send_text(R"({"type":"session.update","session":{"type":"transcription","audio":{"input":{"transcription":{"delay_ms":)" +
                  d + "}}}}}");
      return c.receive();
    };
    for (const std::string& d : kBadDelays) {
      const json e = update(d);
      EXPECT_EQ(e["error"]["param"], "session.audio.input.transcription.delay_ms") << d << " " << e.dump();
    }
    EXPECT_EQ(update("960")["session"]["audio"]["input"]["transcription"]["delay_ms"], 960);
  }
}

// ---- audio ----

// vLLM's audio before the commit that opens an utterance: kept up to the limit, the client told
// once that the rest is dropped; the utterance hears what was kept.
TEST(RealtimeLimitsAudio, VllmKeepsAtMostTheWaitingLimitBeforeACommit) {
  server::ServiceOptions options;
  options.realtime.max_waiting_seconds = 1;
  RunningServer s(options);
  const Pcm16Audio audio = pcm16_of(test_data() / "audio" / "jfk.wav");
  RealtimeClient c(s.port());
  c.receive();
  c.send({{"type", "session.update"}, {"model", "x"}});
  const size_t piece = 3200;  // 100 ms
  for (size_t at = 0; at < 96000; at += piece) c.send_binary(audio.bytes.substr(at, piece));  // 3 s
  const json full = c.receive();
  EXPECT_EQ(full["code"], "audio_buffer_full") << full.dump();
  EXPECT_NE(full["error"].get<std::string>().find("1 s of audio"), std::string::npos) << full.dump();
  c.send({{"type", "no.such.event"}});
  EXPECT_EQ(c.receive()["code"], "unknown_event");  // said once
  c.send({{"type", "input_audio_buffer.commit"}});
  c.send({{"type", "input_audio_buffer.commit"}, {"final", true}});
  std::string deltas;
  const std::vector<float> kept(audio.heard.begin(), audio.heard.begin() + 16000);
  EXPECT_EQ(c.until_done(deltas)["text"], reference().transcribe(kept).text);
  // The next utterance has the whole limit again.
  for (size_t at = 96000; at < 96000 + 28800; at += piece) c.send_binary(audio.bytes.substr(at, piece));  // 0.9 s
  c.send({{"type", "input_audio_buffer.commit"}});
  c.send({{"type", "input_audio_buffer.commit"}, {"final", true}});
  deltas.clear();
  const std::vector<float> next(audio.heard.begin() + 48000, audio.heard.begin() + 48000 + 14400);
  EXPECT_EQ(c.until_done(deltas)["text"], reference().transcribe(next).text);
}

// One dialect on a loopback port as `voxrt serve` runs it, with the test's limits, its connections
// kept for the test to look at their queues.
class DialectServer {
 public:
  using Make = std::function<std::shared_ptr<server::LiveTranscription>(Engine&, boost::asio::thread_pool&)>;
  explicit DialectServer(Make make)
      : engine_(Engine::load(test_data() / "tiny" / "mistral", {.device = Device::Cpu, .threads = 1})),
        http_("127.0.0.1", 0, {}) {
    server::Handler h;
    h.on_request = [](server::Request r, server::Reply reply) {
      reply.send(server::make_response(r, 404, "only WebSockets here\n", "text/plain"));
    };
    h.on_upgrade = [this, make = std::move(make)](server::Upgrade upgrade) {
      std::shared_ptr<server::LiveTranscription> d = make(*engine_, workers_);
      {
        const std::lock_guard<std::mutex> lock(mu_);
        connections_.push_back(d);
      }
      server::start_websocket(std::move(upgrade), std::move(d), {});
    };
    http_.set_handler(std::move(h));
    io_ = std::thread([this] { http_.run(2); });
  }
  ~DialectServer() {
    http_.stop();
    io_.join();
    workers_.join();
  }
  uint16_t port() const { return http_.port(); }
  std::shared_ptr<server::LiveTranscription> connection(size_t i) {
    const std::lock_guard<std::mutex> lock(mu_);
    return connections_.at(i);
  }

 private:
  std::unique_ptr<Engine> engine_;  // first: outlives the connections' sessions
  boost::asio::thread_pool workers_{4};
  std::mutex mu_;
  std::vector<std::shared_ptr<server::LiveTranscription>> connections_;
  server::HttpServer http_;
  std::thread io_;
};

// Small marks, so that a flood of a minute is many times over them.
constexpr double kPauseSeconds = 1, kResumeSeconds = 0.5;
server::RealtimeLimits flood_limits() {
  server::RealtimeLimits l;
  l.pause_queued_seconds = kPauseSeconds;
  l.resume_queued_seconds = kResumeSeconds;
  return l;
}

constexpr double kFloodSeconds = 44;  // jfk.wav four times: 44 times the pause mark
const Pcm16Audio& flood_audio(int rate) {
  if (rate == 16000) {
    static const Pcm16Audio at16k = pcm16_looped(test_data() / "audio" / "jfk.wav", kFloodSeconds);
    return at16k;
  }
  static const Pcm16Audio at24k = pcm16_looped(test_data() / "audio" / "jfk.wav", kFloodSeconds, 24000);
  return at24k;
}
// The engine's transcript of what the model hears of flood_audio (vLLM's and Mistral's floods share it).
const std::string& flood_transcript(int rate) {
  if (rate == 16000) {
    static const std::string at16k = reference().transcribe(flood_audio(16000).heard).text;
    return at16k;
  }
  static const std::string at24k = reference().transcribe(flood_audio(24000).heard).text;
  return at24k;
}

// The connection's queue while its client sent as fast as it could: past the pause mark (the
// reads paused), never more than that and one message, empty at the end.
void expect_paced(const server::LiveTranscription& connection, size_t message_samples) {
  EXPECT_GT(connection.most_queued_samples(), server::model_samples(kPauseSeconds)) << "the flood never reached the mark";
  EXPECT_LE(connection.most_queued_samples(), server::model_samples(kPauseSeconds) + message_samples);
  EXPECT_EQ(connection.queued_samples(), 0u);
}

TEST(RealtimeLimitsAudio, AVllmFloodIsPacedToTheModelAndLosesNothing) {
  DialectServer s([](Engine& e, boost::asio::thread_pool& w) { return std::make_shared<server::VllmRealtime>(e, w, flood_limits()); });
  const Pcm16Audio& audio = flood_audio(16000);
  RealtimeClient c(s.port());
  c.set_send_timeout(30);
  c.receive();
  c.send({{"type", "session.update"}, {"model", "x"}});
  c.send({{"type", "input_audio_buffer.commit"}});
  const size_t piece = 3200;  // 100 ms
  for (size_t at = 0; at < audio.bytes.size(); at += piece) c.send_binary(audio.bytes.substr(at, piece));
  c.send({{"type", "input_audio_buffer.commit"}, {"final", true}});
  std::string deltas;
  EXPECT_EQ(c.until_done(deltas)["text"], flood_transcript(16000));
  expect_paced(*s.connection(0), piece / 2);
}

TEST(RealtimeLimitsAudio, AMistralFloodIsPacedToTheModelAndLosesNothing) {
  DialectServer s([](Engine& e, boost::asio::thread_pool& w) {
    return std::make_shared<server::MistralRealtime>(e, w, "m", flood_limits());
  });
  const Pcm16Audio& audio = flood_audio(16000);
  RealtimeClient c(s.port(), kMistralPath);
  c.set_send_timeout(30);
  c.receive();
  const size_t piece = 3200;
  for (size_t at = 0; at < audio.bytes.size(); at += piece)
    c.send({{"type", "input_audio.append"}, {"audio", base64_encode(audio.bytes.substr(at, piece))}});
  c.send({{"type", "input_audio.end"}});
  EXPECT_EQ(until_type(c, "transcription.done")["text"], flood_transcript(16000));
  expect_paced(*s.connection(0), piece / 2);
}

TEST(RealtimeLimitsAudio, AnOpenAiFloodIsPacedToTheModelAndLosesNothing) {
  DialectServer s([](Engine& e, boost::asio::thread_pool& w) { return std::make_shared<server::OpenAiRealtime>(e, w, flood_limits()); });
  const Pcm16Audio& audio = flood_audio(24000);
  RealtimeClient c(s.port(), kOpenAiPath);
  c.set_send_timeout(30);
  c.receive();
  const size_t piece = 4800;  // 100 ms at 24 kHz: 1600 samples at 16 kHz, give or take the resampler's
  for (size_t at = 0; at < audio.bytes.size(); at += piece)
    c.send({{"type", "input_audio_buffer.append"}, {"audio", base64_encode(audio.bytes.substr(at, piece))}});
  c.send({{"type", "input_audio_buffer.commit"}});
  const json done = until_type(c, "conversation.item.input_audio_transcription.completed");
  EXPECT_EQ(done["transcript"], flood_transcript(24000));
  expect_paced(*s.connection(0), 2 * piece / 3 + 64);
}

// Utterances of 10 ms, each one a session to open and flush: work without audio, bounded too.
TEST(RealtimeLimitsAudio, AFloodOfTinyUtterancesIsPacedToo) {
  server::RealtimeLimits limits;
  limits.pause_queued_tasks = 8;
  limits.resume_queued_tasks = 4;
  DialectServer s([&](Engine& e, boost::asio::thread_pool& w) { return std::make_shared<server::OpenAiRealtime>(e, w, limits); });
  const Pcm16Audio audio = pcm16_of(test_data() / "audio" / "speech_short.wav", 24000);
  RealtimeClient c(s.port(), kOpenAiPath);
  c.set_send_timeout(30);
  c.receive();
  const int items = 40;
  for (int i = 0; i < items; ++i) {
    c.send({{"type", "input_audio_buffer.append"}, {"audio", base64_encode(audio.bytes.substr(480 * static_cast<size_t>(i), 480))}});
    c.send({{"type", "input_audio_buffer.commit"}});
  }
  for (int i = 0; i < items; ++i) until_type(c, "conversation.item.input_audio_transcription.completed");
  const auto connection = s.connection(0);
  EXPECT_GT(connection->most_queued_tasks(), limits.pause_queued_tasks) << "the flood never reached the mark";
  // An item's first append queues three tasks (open, name, feed), its commit two (feed, finish).
  EXPECT_LE(connection->most_queued_tasks(), limits.pause_queued_tasks + 3);
  // The last task leaves the queue just after its completed event went out.
  for (int i = 0; i < 500 && connection->queued_tasks() != 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_EQ(connection->queued_tasks(), 0u);
}

// A client gone mid-utterance with minutes of audio queued: the model stops at once (within a
// piece of its audio), and the session is freed.
TEST(RealtimeLimitsAudio, AClosedConnectionsQueuedAudioIsSkipped) {
  RunningServer s;
  const Pcm16Audio audio = pcm16_looped(test_data() / "audio" / "jfk.wav", 240);  // one 7.7 MB message: 3000 steps
  RealtimeClient c(s.port());
  c.receive();
  c.send({{"type", "session.update"}, {"model", "x"}});
  c.send({{"type", "input_audio_buffer.commit"}});
  c.send_binary(audio.bytes);
  for (json e = c.receive(); e["type"] != "transcription.delta"; e = c.receive()) {
  }
  c.drop();  // once the model is at it
  const testutil::HttpTestClient http_client = s.client();
  std::string metrics = http_client.request(http::verb::get, "/metrics").body;
  for (int i = 0; i < 2000 && metric(metrics, "voxrt_sessions_active") != 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    metrics = http_client.request(http::verb::get, "/metrics").body;
  }
  EXPECT_EQ(metric(metrics, "voxrt_sessions_active"), 0) << "the session was not freed";
  EXPECT_LT(metric(metrics, "voxrt_rounds_total"), 3000 / 4) << "the model went on for a closed connection";
}

// A stopping server ends an utterance whose client it has paused (flooding) with its done event.
TEST(RealtimeLimitsAudio, AStoppingServerFinishesAPausedUtterance) {
  server::ServiceOptions options;
  options.realtime = flood_limits();
  RunningServer s(options);
  const Pcm16Audio audio = pcm16_looped(test_data() / "audio" / "jfk.wav", 300);  // more than the test lets it send
  RealtimeClient c(s.port());
  c.set_send_timeout(30);
  c.receive();
  c.send({{"type", "session.update"}, {"model", "x"}});
  c.send({{"type", "input_audio_buffer.commit"}});
  std::atomic<bool> stop{false};
  std::thread writer([&] {
    try {
      for (size_t at = 0; at < audio.bytes.size() && !stop; at += 3200) c.send_binary(audio.bytes.substr(at, 3200));
    } catch (const std::exception&) {  // the server closed the connection
    }
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  s.service().begin_shutdown();
  stop = true;
  writer.join();
  std::string deltas;
  const json done = c.until_done(deltas);
  EXPECT_EQ(done["type"], "transcription.done") << done.dump();
  EXPECT_FALSE(done["text"].get<std::string>().empty());
  EXPECT_THROW(c.receive(), boost::system::system_error);  // then the close frame
  EXPECT_TRUE(s.service().wait_live_sessions_closed(std::chrono::seconds(10)));
}

}  // namespace
}  // namespace voxrt::test
