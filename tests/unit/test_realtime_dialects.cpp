// The realtime dialects of voxrt serve beside vLLM's (tests/unit/test_server.cpp has that one):
// Mistral's (/v1/audio/transcriptions/realtime) and OpenAI's transcription sessions
// (/v1/realtime?intent=transcription), in process on a loopback port with the tiny model. Each
// utterance's text, segments and words equal the engine's transcript of the audio the model hears
// (after the dialect's decoding and resampling), at two delays; bad events get the dialect's error
// and the connection goes on. Then /metrics: Prometheus text with the engine's counters.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <map>
#include <regex>
#include <sstream>
#include <string>

#include "audio/pcm_stream.h"
#include "checkpoint_test_util.h"
#include "common/base64.h"
#include "server/prometheus_text.h"
#include "server_test_support.h"

namespace voxrt::test {
namespace {

using nlohmann::json;
namespace http = boost::beast::http;

constexpr const char* kMistralPath = "/v1/audio/transcriptions/realtime?model=voxtral-mini-transcribe-realtime-2602";
constexpr const char* kOpenAiPath = "/v1/realtime?intent=transcription";

Transcript transcribe_heard(const std::vector<float>& heard, int delay_ms) {
  TranscribeOptions o;
  o.delay_ms = delay_ms;
  return reference().transcribe(heard, o);
}

// ---- Mistral ----

// What a Mistral client sees of one stream: the deltas' text, the segment events, and the done event.
struct MistralResult {
  std::string deltas;
  json delta_words = json::array();
  json segments = json::array();
  json done;
};

MistralResult mistral_until_done(RealtimeClient& c) {
  MistralResult r;
  for (;;) {
    const json e = c.receive();
    if (e["type"] == "transcription.text.delta") {
      r.deltas += e["text"].get<std::string>();
      collect_words(e, r.delta_words);
    } else if (e["type"] == "transcription.segment") {
      r.segments.push_back(e);
    }
    else if (e["type"] == "transcription.done") {
      r.done = e;
      return r;
    } else {
      ADD_FAILURE() << "unexpected event " << e.dump();
      return r;
    }
  }
}

TEST(MistralRealtime, StreamsEqualTheEnginesTranscriptsAtTwoDelaysAndRates) {
  RunningServer s;
  for (const auto& [delay, rate] : {std::pair{0, 16000}, std::pair{960, 24000}}) {
    SCOPED_TRACE("delay " + std::to_string(delay) + ", " + std::to_string(rate) + " Hz");
    const Pcm16Audio audio = pcm16_of(test_data() / "audio" / "jfk.wav", rate);
    const Transcript want = transcribe_heard(audio.heard, delay);
    RealtimeClient c(s.port(), kMistralPath);
    const json created = c.receive();
    ASSERT_EQ(created["type"], "session.created") << created.dump();
    EXPECT_EQ(created["session"]["model"], "voxtral-mini-transcribe-realtime-2602");
    EXPECT_EQ(created["session"]["audio_format"], json({{"encoding", "pcm_s16le"}, {"sample_rate", 16000}}));
    EXPECT_EQ(created["session"]["target_streaming_delay_ms"], reference().info().default_delay_ms);
    EXPECT_FALSE(created["session"]["request_id"].get<std::string>().empty());
    json session = {{"audio_format", {{"encoding", "pcm_s16le"}, {"sample_rate", rate}}}};
    if (delay) session["target_streaming_delay_ms"] = delay;
    c.send({{"type", "session.update"}, {"session", session}});
    const json updated = c.receive();
    ASSERT_EQ(updated["type"], "session.updated") << updated.dump();
    EXPECT_EQ(updated["session"]["audio_format"]["sample_rate"], rate);
    // Pieces that split samples (odd byte counts), one as a binary frame, as the SDK's chunks come.
    const size_t piece = 4097;
    for (size_t at = 0, n = 0; at < audio.bytes.size(); at += piece, ++n) {
      if (n == 2) c.send_binary(audio.bytes.substr(at, piece));
      else c.send({{"type", "input_audio.append"}, {"audio", base64_encode(audio.bytes.substr(at, piece))}});
    }
    c.send({{"type", "input_audio.flush"}});
    c.send({{"type", "input_audio.end"}});
    const MistralResult r = mistral_until_done(c);
    EXPECT_EQ(r.done["text"], want.text) << r.done.dump();
    EXPECT_EQ(r.deltas, want.text);  // exactly: the joined deltas are the done text
    EXPECT_EQ(r.done["model"], "voxtral-mini-transcribe-realtime-2602");
    EXPECT_TRUE(r.done.contains("language") && r.done["language"].is_null());
    EXPECT_TRUE(r.done["usage"]["prompt_audio_seconds"].is_number_integer()) << r.done.dump();
    EXPECT_EQ(r.done["usage"]["completion_tokens"], static_cast<int64_t>(want.tokens.size()));
    expect_segments(r.done["segments"], want.segments);
    for (const json& seg : r.done["segments"]) EXPECT_EQ(seg["type"], "transcription_segment");
    expect_segments(r.segments, want.segments);  // the segment events, as each word group ended
    expect_delta_words(r.delta_words, want.words);
    c.close();
  }
}

TEST(MistralRealtime, EndWithoutAudioStillSaysDone) {
  RunningServer s;
  RealtimeClient c(s.port(), "/v1/audio/transcriptions/realtime");  // no model: the served one
  EXPECT_EQ(c.receive()["session"]["model"], "voxtral-mini-4b-realtime");
  c.send({{"type", "input_audio.end"}});
  const MistralResult r = mistral_until_done(c);
  EXPECT_EQ(r.done["text"], "");
}

TEST(MistralRealtime, BadEventsGetErrorsAndTheStreamGoesOn) {
  RunningServer s;
  RealtimeClient c(s.port(), kMistralPath);
  EXPECT_EQ(c.receive()["type"], "session.created");
  const auto expect_error = [&](const std::string& text, const std::string& says) {
    c.send_text(text);
    const json e = c.receive();
    ASSERT_EQ(e["type"], "error") << e.dump();
    EXPECT_TRUE(e["error"]["code"].is_number_integer()) << e.dump();
    EXPECT_NE(e["error"]["message"].get<std::string>().find(says), std::string::npos) << e.dump();
  };
  expect_error("{not json", "invalid JSON");
  expect_error("[1,2]", "invalid JSON");
  expect_error(R"({"type": 7})", "string \"type\"");
  expect_error(R"({"type": "input_audio.commit"})", "unknown event type \"input_audio.commit\"");
  expect_error(R"({"type": "input_audio.append", "audio": "@@@@"})", "not base64");
  expect_error(R"({"type": "input_audio.append"})", "needs an \"audio\" string");
  expect_error(R"({"type": "session.update"})", "needs a \"session\" object");
  expect_error(R"({"type": "session.update", "session": {"audio_format": {"encoding": "mp3"}}})", "pcm_s16le");
  expect_error(R"({"type": "session.update", "session": {"audio_format": {"sample_rate": 16000.5}}})", "sample_rate");
  expect_error(R"({"type": "session.update", "session": {"audio_format": {"sample_rate": 4000}}})", "sample_rate");
  expect_error(R"({"type": "session.update", "session": {"target_streaming_delay_ms": 100}})", "80 to 1200");
  // Then a stream goes through; a format change once the audio started is refused.
  const Pcm16Audio audio = pcm16_of(test_data() / "audio" / "speech_short.wav");
  c.send({{"type", "input_audio.append"}, {"audio", base64_encode(audio.bytes)}});
  expect_error(R"({"type": "session.update", "session": {"target_streaming_delay_ms": 960}})", "before sending audio");
  c.send({{"type", "input_audio.end"}});
  const MistralResult r = mistral_until_done(c);
  EXPECT_EQ(r.done["text"], reference().transcribe(audio.heard).text);
  expect_error(R"({"type": "input_audio.append", "audio": "AAAA"})", "after input_audio.end");
}

// ---- OpenAI ----

// OpenAI's events for one committed item.
struct OpenAiItem {
  std::string item_id, deltas;
  json delta_words = json::array();
  json completed;
};

OpenAiItem openai_until_completed(RealtimeClient& c) {
  OpenAiItem r;
  for (;;) {
    const json e = c.receive();
    EXPECT_TRUE(e.contains("event_id") && e["event_id"].is_string()) << e.dump();
    const std::string type = e["type"];
    if (type == "input_audio_buffer.committed") {
      r.item_id = e["item_id"];
    } else if (type == "conversation.item.added" || type == "conversation.item.done") {
      EXPECT_EQ(e["item"]["role"], "user");
    } else if (type == "conversation.item.input_audio_transcription.delta") {
      r.deltas += e["delta"].get<std::string>();
      collect_words(e, r.delta_words);
    } else if (type == "conversation.item.input_audio_transcription.completed") {
      r.completed = e;
      return r;
    } else {
      ADD_FAILURE() << "unexpected event " << e.dump();
      return r;
    }
  }
}

// G.711 mu-law bytes for these 8 kHz samples (the nearest code), and what the model hears of them.
Pcm16Audio mulaw_of(const std::filesystem::path& file) {
  std::vector<float> table;
  std::vector<uint8_t> codes(256);
  for (int i = 0; i < 256; ++i) codes[static_cast<size_t>(i)] = static_cast<uint8_t>(i);
  PcmDecoder({SampleType::MuLaw, 8000, 1}).decode(codes, table);
  Pcm16Audio a;
  std::vector<float> sent;
  for (float x : load_audio_mono(file, 8000)) {
    size_t best = 0;
    for (size_t c = 1; c < 256; ++c)
      if (std::fabs(table[c] - x) < std::fabs(table[best] - x)) best = c;
    a.bytes.push_back(static_cast<char>(best));
    sent.push_back(table[best]);
  }
  a.heard = resample(sent, 8000, 16000);
  return a;
}

TEST(OpenAiRealtime, ItemsEqualTheEnginesTranscriptsInPcm24kAndMuLaw) {
  RunningServer s;
  RealtimeClient c(s.port(), kOpenAiPath);
  const json created = c.receive();
  ASSERT_EQ(created["type"], "session.created") << created.dump();
  EXPECT_EQ(created["session"]["type"], "transcription");
  EXPECT_EQ(created["session"]["audio"]["input"]["format"], json({{"type", "audio/pcm"}, {"rate", 24000}}));
  std::string previous;
  struct Case {
    std::string format, delay;
    int delay_ms;
    Pcm16Audio audio;
  };
  const std::vector<Case> cases = {
      {"audio/pcm", "medium", 480, pcm16_of(test_data() / "audio" / "jfk.wav", 24000)},
      {"audio/pcmu", "high", 960, mulaw_of(test_data() / "audio" / "speech_short.wav")},
  };
  for (const Case& k : cases) {
    SCOPED_TRACE(k.format + ", delay " + k.delay);
    c.send({{"type", "session.update"},
            {"session",
             {{"type", "transcription"},
              {"audio",
               {{"input",
                 {{"format", {{"type", k.format}}},
                  {"transcription", {{"model", "gpt-4o-transcribe"}, {"language", "en"}, {"delay", k.delay}}},
                  {"turn_detection", nullptr}}}}}}}});
    const json updated = c.receive();
    ASSERT_EQ(updated["type"], "session.updated") << updated.dump();
    EXPECT_EQ(updated["session"]["audio"]["input"]["transcription"]["delay_ms"], k.delay_ms);
    EXPECT_EQ(updated["session"]["audio"]["input"]["transcription"]["model"], "gpt-4o-transcribe");
    const Transcript want = transcribe_heard(k.audio.heard, k.delay_ms);
    const size_t piece = 4800;  // 100 ms of PCM16 at 24 kHz
    for (size_t at = 0; at < k.audio.bytes.size(); at += piece)
      c.send({{"type", "input_audio_buffer.append"}, {"audio", base64_encode(k.audio.bytes.substr(at, piece))}});
    c.send({{"type", "input_audio_buffer.commit"}});
    const OpenAiItem item = openai_until_completed(c);
    EXPECT_FALSE(item.item_id.empty());
    EXPECT_NE(item.item_id, previous);
    previous = item.item_id;
    EXPECT_EQ(item.completed["item_id"], item.item_id);
    EXPECT_EQ(item.completed["transcript"], want.text) << item.completed.dump();
    EXPECT_EQ(item.deltas, want.text);  // exactly: the joined deltas are the transcript
    EXPECT_EQ(item.completed["usage"]["type"], "duration");
    EXPECT_DOUBLE_EQ(item.completed["usage"]["seconds"].get<double>(), want.duration);
    expect_segments(item.completed["segments"], want.segments);
    expect_words(item.completed["words"], want.words);
    expect_delta_words(item.delta_words, want.words);
  }
}

TEST(OpenAiRealtime, BadEventsGetErrorsWithTheirEventIdsAndClearDropsTheItem) {
  RunningServer s;
  RealtimeClient c(s.port(), kOpenAiPath);
  EXPECT_EQ(c.receive()["type"], "session.created");
  const auto expect_error = [&](json event, const std::string& code, const std::string& param = "") {
    event["event_id"] = "evt_client_7";
    c.send(event);
    const json e = c.receive();
    ASSERT_EQ(e["type"], "error") << e.dump();
    EXPECT_EQ(e["error"]["code"], code) << e.dump();
    EXPECT_EQ(e["error"]["event_id"], "evt_client_7") << e.dump();
    if (!param.empty()) EXPECT_EQ(e["error"]["param"], param) << e.dump();
  };
  expect_error({{"type", "input_audio_buffer.commit"}}, "input_audio_buffer_commit_empty");
  expect_error({{"type", "response.create"}}, "invalid_event", "type");
  expect_error({{"type", "session.update"}, {"session", {{"type", "realtime"}}}}, "invalid_value", "session.type");
  expect_error({{"type", "session.update"},
                {"session", {{"type", "transcription"}, {"audio", {{"input", {{"format", {{"type", "audio/pcm"}, {"rate", 16000}}}}}}}}}},
               "invalid_value", "session.audio.input.format.rate");
  expect_error({{"type", "session.update"},
                {"session", {{"type", "transcription"}, {"audio", {{"input", {{"transcription", {{"delay", "instant"}}}}}}}}}},
               "invalid_value", "session.audio.input.transcription.delay");
  expect_error({{"type", "input_audio_buffer.append"}, {"audio", "%%%"}}, "invalid_value", "audio");
  expect_error({{"type", "input_audio_buffer.append"}}, "missing_required_parameter", "audio");
  c.send_text("{\"type\":");
  EXPECT_EQ(c.receive()["error"]["code"], "invalid_json");
  // Audio then clear: the item is dropped (no completed event), and the next one is transcribed.
  const Pcm16Audio audio = pcm16_of(test_data() / "audio" / "speech_short.wav", 24000);
  c.send({{"type", "input_audio_buffer.append"}, {"audio", base64_encode(audio.bytes.substr(0, 24000))}});
  c.send({{"type", "input_audio_buffer.clear"}});
  for (json e = c.receive();; e = c.receive()) {
    if (e["type"] == "conversation.item.input_audio_transcription.delta") continue;  // said before the clear
    EXPECT_EQ(e["type"], "input_audio_buffer.cleared") << e.dump();
    break;
  }
  c.send({{"type", "input_audio_buffer.append"}, {"audio", base64_encode(audio.bytes)}});
  c.send({{"type", "input_audio_buffer.commit"}});
  EXPECT_EQ(openai_until_completed(c).completed["transcript"], transcribe_heard(audio.heard, 0).text);
}

// ---- connections ----

// A client that stops answering (here: connected, never reading, so never answering the server's
// pings) is dropped after the idle timeout and its session freed; one that answers stays however
// long it is silent, and its session goes on when the audio resumes.
TEST(RealtimeConnections, AStalledClientIsDroppedAndASilentOneKeepsItsSession) {
  server::ServiceOptions options;
  options.websocket.idle_timeout = std::chrono::milliseconds(600);
  RunningServer s(options);
  const Pcm16Audio audio = pcm16_of(test_data() / "audio" / "speech_short.wav");
  RealtimeClient stalled(s.port(), kMistralPath);
  EXPECT_EQ(stalled.receive()["type"], "session.created");
  stalled.send({{"type", "input_audio.append"}, {"audio", base64_encode(audio.bytes.substr(0, 6400))}});
  // The silent one: a reader thread keeps a read pending (answering pings) while it sends nothing.
  RealtimeClient silent(s.port(), kMistralPath);
  EXPECT_EQ(silent.receive()["type"], "session.created");
  silent.send({{"type", "input_audio.append"}, {"audio", base64_encode(audio.bytes.substr(0, audio.bytes.size() / 2))}});
  std::string deltas;
  std::thread reader([&] {
    for (json e = silent.receive(); e["type"] != "transcription.done"; e = silent.receive())
      if (e["type"] == "transcription.text.delta") deltas += e["text"].get<std::string>();
      else EXPECT_EQ(e["type"], "transcription.segment") << e.dump();
  });
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (s.service().live_sessions() != 1 && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(s.service().live_sessions(), 1) << "the stalled client was not dropped";
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));  // silence, 2.5 idle timeouts
  EXPECT_EQ(s.service().live_sessions(), 1) << "the silent client was dropped";
  silent.send({{"type", "input_audio.append"}, {"audio", base64_encode(audio.bytes.substr(audio.bytes.size() / 2))}});
  silent.send({{"type", "input_audio.end"}});
  reader.join();
  EXPECT_EQ(deltas, reference().transcribe(audio.heard).text);
}

// 32 sessions at once, each dialect, several files and delays, each equal to its solo transcript;
// meanwhile one client vanishes mid-stream, one half-closes its socket and one sends garbage, and
// none of that touches the others.
TEST(RealtimeConnections, ThirtyTwoSessionsAtOnceEachEqualToItsSoloRun) {
  RunningServer s;
  const std::vector<std::string> files = {"jfk.wav", "speech_short.wav", "speech_to_end.wav", "stereo_44k.wav"};
  const std::vector<int> delays = {480, 960, 80, 2400};
  struct Want {
    Pcm16Audio audio;
    Transcript transcript;
  };
  std::map<std::pair<size_t, int>, Want> wants;  // (file, delay)
  for (size_t f = 0; f < files.size(); ++f)
    for (int d : delays) {
      Want w{pcm16_of(test_data() / "audio" / files[f]), {}};
      w.transcript = transcribe_heard(w.audio.heard, d);
      wants[{f, d}] = std::move(w);
    }
  std::vector<std::string> got(32);
  std::vector<std::thread> clients;
  for (int i = 0; i < 32; ++i)
    clients.emplace_back([&, i] {
      const Want& w = wants.at({static_cast<size_t>(i) % files.size(), delays[static_cast<size_t>(i / 4) % delays.size()]});
      const int delay = delays[static_cast<size_t>(i / 4) % delays.size()];
      const size_t piece = 3200;
      try {
        if (i % 2 == 0) {  // Mistral's dialect
          RealtimeClient c(s.port(), kMistralPath);
          c.receive();
          c.send({{"type", "session.update"}, {"session", {{"target_streaming_delay_ms", delay}}}});
          c.receive();
          for (size_t at = 0; at < w.audio.bytes.size(); at += piece)
            c.send({{"type", "input_audio.append"}, {"audio", base64_encode(w.audio.bytes.substr(at, piece))}});
          c.send({{"type", "input_audio.end"}});
          got[static_cast<size_t>(i)] = mistral_until_done(c).done["text"];
        } else {  // vLLM's
          RealtimeClient c(s.port());
          c.receive();
          c.send({{"type", "session.update"}, {"model", "x"}, {"delay_ms", delay}});
          c.send({{"type", "input_audio_buffer.commit"}});
          for (size_t at = 0; at < w.audio.bytes.size(); at += piece) c.send_binary(w.audio.bytes.substr(at, piece));
          c.send({{"type", "input_audio_buffer.commit"}, {"final", true}});
          std::string deltas;
          got[static_cast<size_t>(i)] = c.until_done(deltas)["text"];
        }
      } catch (const std::exception& e) {
        got[static_cast<size_t>(i)] = std::string("client failed: ") + e.what();
      }
    });
  const Pcm16Audio noise = pcm16_of(test_data() / "audio" / "speech_long.wav");
  try {
  {  // vanishes mid-stream: the socket closed without a close frame
    RealtimeClient c(s.port(), kMistralPath);
    c.receive();
    c.send({{"type", "input_audio.append"}, {"audio", base64_encode(noise.bytes.substr(0, 64000))}});
    c.drop();
  }
  {  // half-closes: sends part of a stream, then shuts its sending side
    RealtimeClient c(s.port(), kOpenAiPath);
    c.receive();
    c.send({{"type", "input_audio_buffer.append"}, {"audio", base64_encode(noise.bytes.substr(0, 48000))}});
    c.shutdown_send();
  }
  {  // garbage: text that is no event, an odd-sized audio frame, an enormous event, then a text
     // frame that is not UTF-8, which the WebSocket protocol answers by closing (1007)
    RealtimeClient c(s.port());
    c.receive();
    c.send_text("}{\"type\"");
    EXPECT_EQ(c.receive()["code"], "invalid_json");
    c.send_binary("abc");
    EXPECT_EQ(c.receive()["code"], "invalid_audio");
    c.send({{"type", std::string(1 << 20, 'x')}});  // a 1 MB event: only audio may be that large
    EXPECT_EQ(c.receive()["code"], "event_too_large");
    c.send_binary("");  // a zero-length frame
    EXPECT_EQ(c.receive()["code"], "invalid_audio");
    c.send_text("");
    EXPECT_EQ(c.receive()["code"], "invalid_json");
    c.send_text(std::string("\xff\xfe{}", 4));
    EXPECT_THROW(c.receive(), boost::system::system_error);
  }
  } catch (const std::exception& e) {
    ADD_FAILURE() << "a hostile client's exchange failed: " << e.what();
  }
  for (std::thread& t : clients) t.join();
  for (int i = 0; i < 32; ++i) {
    const Want& w = wants.at({static_cast<size_t>(i) % files.size(), delays[static_cast<size_t>(i / 4) % delays.size()]});
    EXPECT_EQ(got[static_cast<size_t>(i)], w.transcript.text) << "client " << i;
  }
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (s.service().live_sessions() > 0 && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(s.service().live_sessions(), 0) << "a vanished or half-closed client still holds its session";
}

// ---- /metrics ----

TEST(PrometheusText, FamiliesSamplesEscapesAndCumulativeBuckets) {
  server::PrometheusText m;
  m.gauge("a_gauge", "line one\nand a \\ backslash", 2.5);
  m.family("b_total", "counter", "by code");
  m.sample("b_total", 3, {{"code", "4\"0\\0\n"}});
  Histogram h;
  h.upper_bounds = {1, 10};
  h.counts = {2, 0, 1};
  h.sum = 500;
  h.count = 3;
  m.histogram("c_seconds", "ms as s", h, 1e-3);
  EXPECT_EQ(m.str(),
            "# HELP a_gauge line one\\nand a \\\\ backslash\n# TYPE a_gauge gauge\na_gauge 2.5\n"
            "# HELP b_total by code\n# TYPE b_total counter\nb_total{code=\"4\\\"0\\\\0\\n\"} 3\n"
            "# HELP c_seconds ms as s\n# TYPE c_seconds histogram\n"
            "c_seconds_bucket{le=\"0.001\"} 2\nc_seconds_bucket{le=\"0.01\"} 2\nc_seconds_bucket{le=\"+Inf\"} 3\n"
            "c_seconds_sum 0.5\nc_seconds_count 3\n");
}

TEST(Metrics, CountSessionsRoundsAudioAndAnswers) {
  RunningServer s({}, true, {}, {.device = Device::Cpu, .threads = 1, .max_sessions = 1});
  const testutil::HttpTestClient c = s.client();
  const auto before = c.request(http::verb::get, "/metrics");
  EXPECT_EQ(before.status, 200);
  EXPECT_NE(before.content_type.find("text/plain"), std::string::npos);
  EXPECT_EQ(metric(before.body, "voxrt_ready"), 1);
  EXPECT_EQ(metric(before.body, "voxrt_rounds_total"), 0);
  // A transcription through the API...
  const std::vector<uint8_t> bytes = testutil::read_bytes(test_data() / "audio" / "jfk.wav");
  const std::string wav(bytes.begin(), bytes.end());
  const auto answer = c.request(http::verb::post, "/v1/audio/transcriptions",
                                testutil::form_body({{"file", "jfk.wav", wav}, {"model", "x"}}),
                                {{"Content-Type", testutil::form_type()}});
  ASSERT_EQ(answer.status, 200) << answer.body;
  // ... and a realtime session refused while another holds the engine's only place.
  RealtimeClient holder(s.port(), kMistralPath), refused(s.port(), kMistralPath);
  EXPECT_EQ(holder.receive()["type"], "session.created");
  EXPECT_EQ(refused.receive()["type"], "session.created");
  const Pcm16Audio audio = pcm16_of(test_data() / "audio" / "speech_short.wav");
  holder.send({{"type", "input_audio.append"}, {"audio", base64_encode(audio.bytes.substr(0, 6400))}});
  // The holder's session opens on a worker: wait until the engine has it.
  for (int i = 0; i < 1000 && metric(c.request(http::verb::get, "/metrics").body, "voxrt_sessions_active") != 1; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  // Its 0.2 s of audio are decoded on the worker and its lag counted after them.
  for (int i = 0; i < 1000 && metric(c.request(http::verb::get, "/metrics").body, "voxrt_live_lag_seconds_count") < 1; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  refused.send({{"type", "input_audio.append"}, {"audio", base64_encode(audio.bytes.substr(0, 6400))}});
  const json full = refused.receive();
  EXPECT_EQ(full["type"], "error");
  EXPECT_EQ(full["error"]["code"], 503) << full.dump();
  const std::string after = c.request(http::verb::get, "/metrics").body;
  EXPECT_GT(metric(after, "voxrt_rounds_total"), 0) << after;
  EXPECT_NEAR(metric(after, "voxrt_audio_seconds_total"), 11.0 + 0.2, 1e-6) << after;  // jfk.wav's, the holder's
  EXPECT_EQ(metric(after, "voxrt_sessions_total"), 2);
  EXPECT_EQ(metric(after, "voxrt_sessions_active"), 1);
  EXPECT_EQ(metric(after, "voxrt_sessions_rejected_total{reason=\"full\"}"), 1);
  EXPECT_EQ(metric(after, "voxrt_realtime_connections"), 2);
  EXPECT_GE(metric(after, "voxrt_http_responses_total{code=\"200\"}"), 1);  // the scrapes and the upload
  EXPECT_GT(metric(after, "voxrt_cache_bytes_in_use"), 0);  // reserved by the open session
  EXPECT_GT(metric(after, "voxrt_cache_bytes_total"), 0);    // max_sessions: allocated at load
  EXPECT_EQ(metric(after, "voxrt_round_seconds_bucket{le=\"+Inf\"}"), metric(after, "voxrt_rounds_total"));
  // One audio message of one open utterance (the refused session's never reached the model).
  EXPECT_EQ(metric(after, "voxrt_live_lag_seconds_count"), 1) << after;
  EXPECT_GT(metric(after, "voxrt_live_lag_seconds_sum"), 0) << after;
  EXPECT_GT(metric(after, "voxrt_memory_in_use_bytes"), 0);
  // Every line is a comment or a sample of Prometheus's text format.
  const std::regex line(R"((# (HELP|TYPE) [a-z_]+ .*)|([a-z_]+(\{[a-z_]+="[^"]*"\})? -?[0-9.e+-]+|[a-z_]+(\{[a-z_]+="[^"]*"\})? \+Inf))");
  std::istringstream lines(after);
  for (std::string l; std::getline(lines, l);) EXPECT_TRUE(std::regex_match(l, line)) << l;
}

}  // namespace
}  // namespace voxrt::test
