// voxrt serve's HTTP side (issue 14; docs/serve.md), in process on a loopback port with the tiny
// model: every OpenAI response format equals what the engine gives for the same file, streamed
// deltas add up to the text, bad and hostile requests each get a clear status and error while the
// server goes on serving, the API key is enforced, and concurrent requests each get their solo
// result. The multipart parser and the request fields are tested on their own first.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <boost/beast/core/buffers_to_string.hpp>
#include <boost/beast/websocket.hpp>
#include <cmath>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "../test_paths.h"
#include "cli_run.h"
#include "formats/output_formats.h"
#include "http_test_client.h"
#include "server_test_support.h"
#include "serve_process.h"
#include "audio/audio_file.h"
#include "server/api_service.h"
#include "common/base64.h"
#include "server/http_server.h"
#include "server/multipart_form.h"
#include "server/openai_transcriptions.h"
#include "server/request_error.h"
#include "server/websocket_connection.h"
#include "voxrt/voxrt.h"

namespace voxrt::test {
namespace {

namespace fs = std::filesystem;
namespace http = boost::beast::http;
using nlohmann::json;
using namespace std::string_literals;
using server::RequestError;
using testutil::form_body;
using testutil::form_type;
using testutil::FormField;
using testutil::HttpTestClient;

std::string read_bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

testutil::HttpAnswer post_form(const HttpTestClient& c, const std::vector<FormField>& fields,
                               std::vector<std::pair<std::string, std::string>> headers = {}) {
  headers.emplace_back("Content-Type", form_type());
  return c.request(http::verb::post, "/v1/audio/transcriptions", form_body(fields), headers);
}

void expect_error(const testutil::HttpAnswer& a, int status, const std::string& says, const std::string& param = {}) {
  EXPECT_EQ(a.status, status) << a.body;
  const json j = json::parse(a.body, nullptr, false);
  ASSERT_TRUE(j.is_object() && j.contains("error")) << a.body;
  EXPECT_NE(j["error"]["message"].get<std::string>().find(says), std::string::npos) << a.body;
  if (!param.empty()) EXPECT_EQ(j["error"]["param"], param) << a.body;
  // OpenAI's error object: code a string or null, never the status as an integer (clients switch on it).
  EXPECT_TRUE(j["error"]["type"].is_string()) << a.body;
  EXPECT_TRUE(j["error"].contains("code") && (j["error"]["code"].is_string() || j["error"]["code"].is_null())) << a.body;
  EXPECT_TRUE(j["error"].contains("param")) << a.body;
}

// The status line and header of a raw answer, and what follows them.
struct RawAnswer {
  std::string head, body;
};
RawAnswer split_answer(const std::string& answer) {
  const size_t end = answer.find("\r\n\r\n");
  if (end == std::string::npos) return {answer, ""};
  return {answer.substr(0, end + 2), answer.substr(end + 4)};
}

// ---- the multipart parser ----

TEST(MultipartForm, PartsComeWithTheirNamesFileNamesAndBytes) {
  const std::string body = "preamble to skip\r\n--b\r\nContent-Disposition: form-data; name=\"model\"\r\n\r\nwhisper-1\r\n"
                           "--b\r\ncontent-disposition: form-data; name=file; filename=\"a \\\"b\\\".wav\"\r\n"
                           "Content-Type: audio/wav\r\n\r\nRIFF\r\n\0bytes\r\n--b--\r\nepilogue"s;  // a NUL inside
  const std::string full = body;
  const auto parts = server::parse_form("multipart/form-data; boundary=\"b\"", full);
  ASSERT_EQ(parts.size(), 2u);
  EXPECT_EQ(parts[0].name, "model");
  EXPECT_EQ(parts[0].data, "whisper-1");
  EXPECT_EQ(parts[1].name, "file");
  EXPECT_EQ(parts[1].filename, "a \"b\".wav");
  EXPECT_EQ(parts[1].content_type, "audio/wav");
  EXPECT_EQ(parts[1].data, std::string_view("RIFF\r\n\0bytes", 12));
}

TEST(MultipartForm, MalformedBodiesAreRefusedSayingWhatIsWrong) {
  const auto refused = [](const std::string& type, const std::string& body, const std::string& says) {
    try {
      server::parse_form(type, body);
      ADD_FAILURE() << "accepted: " << body;
    } catch (const RequestError& e) {
      EXPECT_EQ(e.status(), 400);
      EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
    }
  };
  const std::string ok_type = "multipart/form-data; boundary=b";
  refused("application/json", "{}", "expected a multipart/form-data body");
  refused("multipart/form-data", "--b--", "without a boundary");
  refused("multipart/form-data; boundary=" + std::string(71, 'x'), "", "1 to 70");
  refused(ok_type, "no delimiter at all", "never appears");
  refused(ok_type, "--b\r\nContent-Disposition: form-data; name=\"f\"\r\n\r\nbytes cut o", "is cut off");
  refused(ok_type, "--b\r\nContent-Disposition: form-data; name=\"f\"\r\n", "never end");
  refused(ok_type, "--b\r\nContent-Type: text/plain\r\n\r\nx\r\n--b--", "no Content-Disposition");
  refused(ok_type, "--b\r\nContent-Disposition: form-data\r\n\r\nx\r\n--b--", "no field name");
  refused(ok_type, "--b\r\nContent-Disposition: attachment; name=x\r\n\r\nx\r\n--b--", "not form-data");
  refused(ok_type, "--b\r\nContent-Disposition: form-data; name=\"x\r\n\r\nx\r\n--b--", "unterminated");
  refused(ok_type, "--bX", "no line break after the boundary");
  std::string many;
  for (int i = 0; i < 129; ++i) many += "--b\r\nContent-Disposition: form-data; name=x\r\n\r\nv\r\n";
  refused(ok_type, many + "--b--", "more than 128 parts");
}

// ---- the request's fields and the answers' bodies ----

TEST(OpenAiTranscriptions, FieldsAreCheckedAndNamedWhenWrong) {
  const auto form = [](std::vector<std::pair<std::string, std::string>> fields) {
    std::vector<server::FormPart> parts;
    static std::vector<std::string> keep;  // the parts' views point into these
    keep.clear();
    keep.reserve(fields.size());
    for (auto& [name, value] : fields) {
      keep.push_back(value);
      parts.push_back({name, name == "file" ? "a.wav" : "", "", keep.back()});
    }
    return parts;
  };
  const server::TranscriptionRequest r = server::parse_transcription_request(
      form({{"file", "RIFF"}, {"model", "whisper-1"}, {"response_format", "verbose_json"}, {"temperature", "0"},
            {"timestamp_granularities[]", "word"}, {"delay_ms", "960"}, {"language", "en"}, {"prompt", "hi"}}),
      model_delays());
  EXPECT_EQ(r.filename, "a.wav");
  EXPECT_EQ(r.format, server::ResponseFormat::VerboseJson);
  EXPECT_TRUE(r.words);
  EXPECT_FALSE(r.segments);
  EXPECT_EQ(r.delay_ms, 960);
  EXPECT_EQ(r.language, "en");
  const auto refused = [&](std::vector<std::pair<std::string, std::string>> fields, const std::string& param) {
    try {
      server::parse_transcription_request(form(std::move(fields)), model_delays());
      ADD_FAILURE() << "accepted, param " << param;
    } catch (const RequestError& e) {
      EXPECT_EQ(e.status(), 400);
      EXPECT_EQ(e.param(), param) << e.what();
    }
  };
  refused({{"model", "x"}}, "file");
  refused({{"file", "a"}, {"file", "b"}}, "file");
  refused({{"file", "a"}, {"response_format", "xml"}}, "response_format");
  refused({{"file", "a"}, {"temperature", "0.2"}}, "temperature");
  refused({{"file", "a"}, {"temperature", "warm"}}, "temperature");
  refused({{"file", "a"}, {"stream", "maybe"}}, "stream");
  refused({{"file", "a"}, {"stream", "true"}, {"response_format", "srt"}}, "stream");
  refused({{"file", "a"}, {"timestamp_granularities[]", "phoneme"}}, "timestamp_granularities[]");
  refused({{"file", "a"}, {"delay_ms", "100"}}, "delay_ms");
  refused({{"file", "a"}, {"delay_ms", "480ms"}}, "delay_ms");
}

// ---- the server ----

TEST(Server, HealthModelsAndRoutes) {
  RunningServer s;
  const HttpTestClient c = s.client();
  const auto health = c.request(http::verb::get, "/health");
  EXPECT_EQ(health.status, 200);
  EXPECT_EQ(json::parse(health.body)["status"], "ok");
  const auto models = c.request(http::verb::get, "/v1/models");
  EXPECT_EQ(models.status, 200);
  EXPECT_EQ(json::parse(models.body)["data"][0]["id"], "voxtral-mini-4b-realtime");
  const auto page = c.request(http::verb::get, "/");  // the live-caption page, without a key
  EXPECT_EQ(page.status, 200);
  EXPECT_EQ(page.content_type, "text/html; charset=utf-8");
  EXPECT_NE(page.body.find("<title>voxrt live captions</title>"), std::string::npos);
  EXPECT_NE(page.body.find("/v1/audio/transcriptions/realtime"), std::string::npos);
  EXPECT_EQ(page.body.substr(page.body.size() - 8), "</html>\n");  // whole, compiled in from src/server/web
  expect_error(c.request(http::verb::get, "/v2/nothing"), 404, "no route /v2/nothing");
  expect_error(c.request(http::verb::get, "/v1/audio/transcriptions"), 405, "takes POST");
  expect_error(c.request(http::verb::post, "/health", "x"), 405, "takes GET");
}

// RFC 9110: a 405 lists the methods the route takes (Allow), and a GET route answers HEAD as the GET
// without its body.
TEST(Server, A405SaysWhatIsAllowedAndHeadIsAGetWithoutItsBody) {
  RunningServer s;
  const HttpTestClient c = s.client();
  const auto ask = [&](const std::string& method, const std::string& path) {
    return split_answer(c.raw(method + " " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"));
  };
  const RawAnswer get_only = ask("POST", "/health");
  EXPECT_EQ(get_only.head.rfind("HTTP/1.1 405", 0), 0u) << get_only.head;
  EXPECT_NE(get_only.head.find("\r\nAllow: GET, HEAD\r\n"), std::string::npos) << get_only.head;
  const RawAnswer post_only = ask("DELETE", "/v1/audio/transcriptions");
  EXPECT_EQ(post_only.head.rfind("HTTP/1.1 405", 0), 0u) << post_only.head;
  EXPECT_NE(post_only.head.find("\r\nAllow: POST\r\n"), std::string::npos) << post_only.head;
  for (const std::string path : {"/health", "/", "/metrics", "/v1/models"}) {
    SCOPED_TRACE(path);
    const RawAnswer head = ask("HEAD", path), get = ask("GET", path);
    EXPECT_EQ(head.head.rfind("HTTP/1.1 200", 0), 0u) << head.head;
    EXPECT_EQ(head.body, "");  // nothing after the header
    ASSERT_FALSE(get.body.empty());
    if (path != "/health" && path != "/metrics")  // the same length as the GET's body (those two change)
      EXPECT_NE(head.head.find("Content-Length: " + std::to_string(get.body.size()) + "\r\n"), std::string::npos)
          << head.head;
  }
  const RawAnswer missing = ask("HEAD", "/nowhere");  // an error answered to a HEAD has no body either
  EXPECT_EQ(missing.head.rfind("HTTP/1.1 404", 0), 0u) << missing.head;
  EXPECT_EQ(missing.body, "");
}

// --host takes a name (localhost) as well as an address, and the URL it prints brackets IPv6.
TEST(Server, ListensOnAHostNameAndPrintsIpv6Bracketed) {
  server::HttpServer http("localhost", 0, {});
  std::thread io([&] { http.run(1); });
  EXPECT_EQ(HttpTestClient(http.port()).raw("GET / HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n").rfind("HTTP/1.1 ", 0), 0u);
  http.stop();
  io.join();
  EXPECT_EQ(server::http_url("::1", 8000), "http://[::1]:8000");
  EXPECT_EQ(server::http_url("127.0.0.1", 80), "http://127.0.0.1:80");
  EXPECT_EQ(server::http_url("localhost", 8000), "http://localhost:8000");
}

TEST(Server, AnswersHealthWith503UntilTheModelIsLoaded) {
  RunningServer s({}, /*load=*/false);
  const HttpTestClient c = s.client();
  const auto health = c.request(http::verb::get, "/health");
  EXPECT_EQ(health.status, 503);
  EXPECT_EQ(json::parse(health.body)["status"], "loading");
  expect_error(post_form(c, {{"file", "a.wav", "RIFF"}}), 503, "still loading");
}

TEST(Server, EveryResponseFormatIsTheEnginesTranscript) {
  RunningServer s;
  const HttpTestClient c = s.client();
  const fs::path file = test_data() / "audio" / "jfk.wav";
  const std::string audio = read_bytes(file);
  for (int delay : {0, 960}) {
    SCOPED_TRACE("delay " + std::to_string(delay));
    const Transcript t = reference_transcript(file, delay);
    ASSERT_FALSE(t.text.empty());
    std::vector<FormField> base{{"file", "jfk.wav", audio}, {"model", "whisper-1"}};
    if (delay) base.push_back({"delay_ms", "", std::to_string(delay)});
    const auto with = [&](std::vector<FormField> extra) {
      std::vector<FormField> f = base;
      f.insert(f.end(), extra.begin(), extra.end());
      return post_form(c, f);
    };
    const auto j = with({});
    ASSERT_EQ(j.status, 200) << j.body;
    EXPECT_EQ(j.content_type, "application/json");
    EXPECT_EQ(json::parse(j.body)["text"], t.text);
    EXPECT_EQ(json::parse(j.body)["usage"]["seconds"], formats::json_seconds(t.duration));
    const auto text = with({{"response_format", "", "text"}});
    EXPECT_EQ(text.body, t.text + "\n");
    EXPECT_EQ(with({{"response_format", "", "srt"}}).body, formats::render(t, formats::Format::Srt, "jfk.wav"));
    EXPECT_EQ(with({{"response_format", "", "vtt"}}).body, formats::render(t, formats::Format::Vtt, "jfk.wav"));
    const auto verbose = with({{"response_format", "", "verbose_json"},
                               {"timestamp_granularities[]", "", "word"},
                               {"timestamp_granularities[]", "", "segment"}});
    const json v = json::parse(verbose.body);
    EXPECT_EQ(v["text"], t.text);
    EXPECT_EQ(v["duration"], formats::json_seconds(t.duration));
    ASSERT_EQ(v["segments"].size(), t.segments.size());
    for (size_t i = 0; i < t.segments.size(); ++i) {
      EXPECT_EQ(v["segments"][i]["text"], t.segments[i].text);
      EXPECT_EQ(v["segments"][i]["start"], formats::json_seconds(t.segments[i].start));
      EXPECT_EQ(v["segments"][i]["end"], formats::json_seconds(t.segments[i].end));
    }
    ASSERT_EQ(v["words"].size(), t.words.size());
    for (size_t i = 0; i < t.words.size(); ++i) {
      EXPECT_EQ(v["words"][i]["word"], t.words[i].text);
      EXPECT_EQ(v["words"][i]["start"], formats::json_seconds(t.words[i].start));
      EXPECT_EQ(v["words"][i]["end"], formats::json_seconds(t.words[i].end));
    }
  }
}

// stream=true: Server-Sent Events whose deltas add up to the text, then the whole text.
TEST(Server, StreamedDeltasAddUpToTheText) {
  RunningServer s;
  const fs::path file = test_data() / "audio" / "speech_short.wav";
  const Transcript t = reference_transcript(file);
  const auto a = post_form(s.client(), {{"file", "speech_short.wav", read_bytes(file)}, {"stream", "", "true"}});
  ASSERT_EQ(a.status, 200) << a.body;
  EXPECT_EQ(a.content_type, "text/event-stream");
  std::string deltas;
  json done;
  int events = 0;
  std::istringstream lines(a.body);
  for (std::string line; std::getline(lines, line);) {
    if (line.empty()) continue;
    ASSERT_EQ(line.rfind("data: ", 0), 0u) << line;
    const json e = json::parse(line.substr(6));
    ++events;
    if (e["type"] == "transcript.text.delta") deltas += e["delta"].get<std::string>();
    if (e["type"] == "transcript.text.done") done = e;
  }
  EXPECT_GT(events, 2);
  ASSERT_TRUE(done.is_object()) << a.body;
  EXPECT_EQ(done["text"], t.text);
  EXPECT_EQ(deltas, t.text);  // exactly: no leading space on the first delta
}

TEST(Server, BadRequestsGetClearErrorsAndTheServerGoesOn) {
  server::HttpLimits limits;
  limits.max_body_bytes = size_t{4} << 20;
  limits.header_timeout = std::chrono::milliseconds(500);
  RunningServer s({}, true, limits);
  const HttpTestClient c = s.client();
  expect_error(post_form(c, {{"model", "", "whisper-1"}}), 400, "no file", "file");
  expect_error(post_form(c, {{"file", "a.wav", "x"}, {"temperature", "", "0.5"}}), 400, "temperature must be 0", "temperature");
  expect_error(post_form(c, {{"file", "broken.wav", "RIFF, but then nothing a WAV has"}}), 400, "broken.wav", "file");
  const auto broken = post_form(c, {{"file", "broken.wav", "RIFF, but then nothing a WAV has"}});
  EXPECT_EQ(broken.body.find("voxrt-upload"), std::string::npos) << "the server's temporary path leaks: " << broken.body;
  expect_error(post_form(c, {{"file", "empty.wav", ""}}), 400, "empty", "file");
  expect_error(c.request(http::verb::post, "/v1/audio/transcriptions", "{}", {{"Content-Type", "application/json"}}), 400,
               "expected a multipart/form-data body");
  std::string cut = form_body({{"file", "jfk.wav", "RIFF...."}});
  cut.resize(cut.size() - 20);
  expect_error(c.request(http::verb::post, "/v1/audio/transcriptions", cut, {{"Content-Type", form_type()}}), 400,
               "is cut off");
  // Raw requests: a 2 GB Content-Length is refused from the header, before any body is sent.
  const std::string huge = c.raw(
      "POST /v1/audio/transcriptions HTTP/1.1\r\nHost: x\r\nContent-Type: " + form_type() +
      "\r\nContent-Length: 2147483648\r\n\r\n");
  EXPECT_EQ(huge.rfind("HTTP/1.1 413", 0), 0u) << huge;
  EXPECT_NE(huge.find("larger than the server takes"), std::string::npos) << huge;
  EXPECT_EQ(c.raw("NOT HTTP AT ALL\r\n\r\n").rfind("HTTP/1.1 400", 0), 0u);
  EXPECT_EQ(c.raw("GET /health HTTP/1.1\r\nX: " + std::string(20000, 'a') + "\r\n\r\n").rfind("HTTP/1.1 431", 0), 0u);
  EXPECT_EQ(c.raw("GET /health HTTP/1.1\r\nHost: x\r\n\0\r\n\r\n"s).rfind("HTTP/1.1 400", 0), 0u);
  // A header that never ends is dropped after the header timeout; one cut by the client just closes.
  EXPECT_EQ(c.raw("GET /health HTTP/1.1\r\nHost: x\r\n"), "");
  EXPECT_EQ(c.raw("POST /v1/audio/transcriptions HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\nabc", true), "");
  // Expect: 100-continue gets its go-ahead before the body.
  const std::string go = c.raw("GET /health HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(go.rfind("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200", 0), 0u) << go;
  EXPECT_EQ(c.request(http::verb::get, "/health").status, 200);
  const auto after = post_form(c, {{"file", "jfk.wav", read_bytes(test_data() / "audio" / "jfk.wav")}});
  EXPECT_EQ(after.status, 200) << after.body;
}

// Every answer makes one access record: what was asked, the status, what was sent.
TEST(Server, EveryAnswerIsRecordedForTheAccessLog) {
  std::mutex mu;
  std::vector<server::AccessRecord> records;
  server::ApiService service({});
  service.set_engine(Engine::load(test_data() / "tiny" / "mistral", {.device = Device::Cpu, .threads = 1}));
  server::Handler h = service.handler();
  h.on_access = [&](const server::AccessRecord& r) {
    std::lock_guard<std::mutex> lock(mu);
    records.push_back(r);
  };
  server::HttpServer http("127.0.0.1", 0, {}, h);
  std::thread io([&] { http.run(1); });
  const HttpTestClient c(http.port());
  EXPECT_EQ(c.request(http::verb::get, "/health").status, 200);
  EXPECT_EQ(c.request(http::verb::get, "/nowhere?x=1").status, 404);
  EXPECT_EQ(c.raw("garbage\r\n\r\n").rfind("HTTP/1.1 400", 0), 0u);
  http.stop();
  io.join();
  service.join_workers();
  std::lock_guard<std::mutex> lock(mu);
  ASSERT_EQ(records.size(), 3u);
  EXPECT_EQ(records[0].method, "GET");
  EXPECT_EQ(records[0].target, "/health");
  EXPECT_EQ(records[0].status, 200);
  EXPECT_EQ(records[0].remote, "127.0.0.1");
  EXPECT_GT(records[0].bytes, 50u);
  EXPECT_TRUE(records[0].completed);
  EXPECT_EQ(records[1].target, "/nowhere?x=1");
  EXPECT_EQ(records[1].status, 404);
  EXPECT_EQ(records[2].method, "-");
  EXPECT_EQ(records[2].status, 400);
}

TEST(Server, AnApiKeyIsRequiredWhenOneIsSet) {
  server::ServiceOptions o;
  o.api_key = "sk-test-0123456789";
  RunningServer s(o);
  const HttpTestClient c = s.client();
  EXPECT_EQ(c.request(http::verb::get, "/health").status, 200);  // probes need no key
  const auto refused = c.request(http::verb::get, "/v1/models");
  expect_error(refused, 401, "API key");
  EXPECT_EQ(json::parse(refused.body)["error"]["code"], "invalid_api_key");  // OpenAI's code for it
  expect_error(c.request(http::verb::get, "/v1/models", {}, {{"Authorization", "Bearer sk-test-012345678"}}), 401, "API key");
  expect_error(c.request(http::verb::get, "/v1/models", {}, {{"Authorization", "sk-test-0123456789"}}), 401, "API key");
  EXPECT_EQ(c.request(http::verb::get, "/v1/models", {}, {{"Authorization", "Bearer sk-test-0123456789"}}).status, 200);
  // A refused upload is refused from its header.
  expect_error(post_form(c, {{"file", "a.wav", "RIFF"}}), 401, "API key");
}

TEST(Server, RealtimeConnectionsTakeTheKeyAsAHeaderOrABrowserSubprotocol) {
  server::ServiceOptions o;
  o.api_key = "sk-test-0123456789";
  RunningServer s(o);
  // /health tells a page whether to ask for a key.
  EXPECT_TRUE(json::parse(s.client().request(http::verb::get, "/health").body)["api_key_required"].get<bool>());
  auto refused = [&](const std::vector<std::pair<std::string, std::string>>& headers) {
    try {
      RealtimeClient c(s.port(), "/v1/audio/transcriptions/realtime", headers);
      return false;
    } catch (const boost::system::system_error&) {
      return true;  // the upgrade was answered 401
    }
  };
  EXPECT_TRUE(refused({}));
  EXPECT_TRUE(refused({{"Sec-WebSocket-Protocol", "realtime, openai-insecure-api-key.sk-test-012345678"}}));
  EXPECT_TRUE(refused({{"Sec-WebSocket-Protocol", "realtime"}}));
  // OpenAI's browser convention: the key as a subprotocol beside "realtime", which the handshake
  // selects (a browser fails a handshake that selects none of what it offered), never the key.
  RealtimeClient browser(s.port(), "/v1/audio/transcriptions/realtime",
                         {{"Sec-WebSocket-Protocol", "openai-insecure-api-key.sk-test-0123456789, realtime"}});
  EXPECT_EQ(browser.handshake_response()[http::field::sec_websocket_protocol], "realtime");
  EXPECT_EQ(browser.receive()["type"], "session.created");
  RealtimeClient header(s.port(), "/v1/realtime", {{"Authorization", "Bearer sk-test-0123456789"}});
  EXPECT_EQ(header.handshake_response()[http::field::sec_websocket_protocol], "");
  EXPECT_EQ(header.receive()["type"], "session.created");
}

TEST(WebSocketSubprotocols, TheKeyAndTheAnswerAreFoundInTheOfferedList) {
  EXPECT_EQ(server::offered_subprotocols(" a ,b,, c\t"), (std::vector<std::string_view>{"a", "b", "c"}));
  EXPECT_EQ(server::subprotocol_api_key("realtime, openai-insecure-api-key.k1"), "k1");
  EXPECT_FALSE(server::subprotocol_api_key("realtime").has_value());
  EXPECT_EQ(server::chosen_subprotocol("openai-insecure-api-key.k1, realtime"), "realtime");
  EXPECT_EQ(server::chosen_subprotocol("openai-insecure-api-key.k1, x, y"), "x");
  EXPECT_FALSE(server::chosen_subprotocol("openai-insecure-api-key.k1").has_value());
  EXPECT_FALSE(server::chosen_subprotocol("").has_value());
}

TEST(Server, ConcurrentRequestsEachGetTheirSoloResult) {
  RunningServer s;
  const std::vector<std::string> names{"jfk.wav", "speech_short.wav", "odd_length.wav", "stereo_44k.wav"};
  std::vector<std::string> expected;
  for (const std::string& n : names) expected.push_back(reference_transcript(test_data() / "audio" / n).text);
  std::vector<std::thread> threads;
  std::atomic<int> ok{0};
  std::vector<std::string> failures(8);
  for (int i = 0; i < 8; ++i) {
    threads.emplace_back([&, i] {
      const std::string& name = names[i % names.size()];
      const bool stream = i % 3 == 2;
      std::vector<FormField> f{{"file", name, read_bytes(test_data() / "audio" / name)}, {"response_format", "", "text"}};
      if (stream) f.push_back({"stream", "", "true"});
      testutil::HttpAnswer a;
      try {
        a = post_form(s.client(), f);
      } catch (const std::exception& e) {
        failures[i] = e.what();
        return;
      }
      const std::string want = stream ? "transcript.text.done" : expected[i % names.size()] + "\n";
      if (a.status == 200 && a.body.find(want) != std::string::npos &&
          (!stream || a.body.find(json(expected[i % names.size()]).dump()) != std::string::npos))
        ++ok;
      else
        failures[i] = std::to_string(a.status) + " " + a.body.substr(0, 300);
    });
  }
  for (std::thread& t : threads) t.join();
  for (const std::string& f : failures) EXPECT_EQ(f, "");
  EXPECT_EQ(ok.load(), 8);
}

// A client that leaves in the middle of a streamed transcription frees its worker; others are served.
TEST(Server, AClientThatLeavesMidStreamLeavesTheOthersAlone) {
  RunningServer s;
  const HttpTestClient c = s.client();
  const std::string body = form_body({{"file", "speech_long.wav", read_bytes(test_data() / "audio" / "speech_long.wav")},
                                      {"stream", "", "true"}});
  {
    boost::asio::io_context io;
    auto socket = c.connect(io);
    const std::string head = "POST /v1/audio/transcriptions HTTP/1.1\r\nHost: x\r\nContent-Type: " + form_type() +
                             "\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n";
    boost::asio::write(socket, boost::asio::buffer(head + body));
    char first[64];
    socket.read_some(boost::asio::buffer(first));  // the stream has started
  }  // and the client is gone
  const auto a = post_form(c, {{"file", "jfk.wav", read_bytes(test_data() / "audio" / "jfk.wav")}});
  EXPECT_EQ(a.status, 200) << a.body;
  EXPECT_EQ(json::parse(a.body)["text"], reference_transcript(test_data() / "audio" / "jfk.wav").text);
}

TEST(Base64, DecodesStrictlyAndRoundTrips) {
  for (const std::string s : {"", "a", "ab", "abc", "abcd", "\xff\x00\x10 binary"}) {
    const auto back = base64_decode(base64_encode(s));
    ASSERT_TRUE(back.has_value()) << s;
    EXPECT_EQ(*back, s);
  }
  EXPECT_EQ(base64_decode("YWJj"), std::optional<std::string>("abc"));
  EXPECT_EQ(base64_decode("YWI"), std::optional<std::string>("ab"));  // padding optional
  for (const char* bad : {"Y", "YW=J", "YW*j", "YWJj====", "YW Jj", "=", "YWJj\n"})
    EXPECT_FALSE(base64_decode(bad).has_value()) << bad;
}

TEST(Server, VllmRealtimeUtterancesEqualTheEnginesTranscripts) {
  RunningServer s;
  const Pcm16Audio audio = pcm16_of(test_data() / "audio" / "jfk.wav");
  RealtimeClient c(s.port());
  const json created = c.receive();
  EXPECT_EQ(created["type"], "session.created");
  EXPECT_EQ(created["id"].get<std::string>().rfind("sess-", 0), 0u);
  c.send({{"type", "session.update"}, {"model", "mistralai/Voxtral-Mini-4B-Realtime-2602"}});
  for (int delay : {0, 960}) {
    SCOPED_TRACE("delay " + std::to_string(delay));
    if (delay) c.send({{"type", "session.update"}, {"model", "x"}, {"delay_ms", delay}});
    TranscribeOptions o;
    o.delay_ms = delay;
    const Transcript want = reference().transcribe(audio.heard, o);
    // Audio before the commit is kept for the utterance; one piece comes as a binary frame.
    const size_t piece = 3200;  // 100 ms
    c.send({{"type", "input_audio_buffer.append"}, {"audio", base64_encode(audio.bytes.substr(0, piece))}});
    c.send({{"type", "input_audio_buffer.commit"}});
    c.send_binary(audio.bytes.substr(piece, piece));
    for (size_t at = 2 * piece; at < audio.bytes.size(); at += piece)
      c.send({{"type", "input_audio_buffer.append"}, {"audio", base64_encode(audio.bytes.substr(at, piece))}});
    c.send({{"type", "input_audio_buffer.commit"}, {"final", true}});
    std::string deltas;
    json delta_words = json::array();
    const json done = c.until_done(deltas, &delta_words);
    EXPECT_EQ(done["text"], want.text) << done.dump();
    EXPECT_EQ(deltas, want.text);  // exactly: a client that joins the deltas shows the done text
    EXPECT_EQ(done["usage"]["completion_tokens"], static_cast<int64_t>(want.tokens.size()));
    // voxrt's extensions: the done event's segments and words, and the words on the deltas.
    expect_segments(done["segments"], want.segments);
    expect_words(done["words"], want.words);
    expect_delta_words(delta_words, want.words);
    EXPECT_GT(want.words.size(), 3u);
  }
}

TEST(Server, VllmRealtimeAnswersBadEventsWithErrorsAndGoesOn) {
  RunningServer s;
  RealtimeClient c(s.port());
  EXPECT_EQ(c.receive()["type"], "session.created");
  const auto expect_error = [&](const json& event, const std::string& code) {
    c.send(event);
    const json e = c.receive();
    EXPECT_EQ(e["type"], "error") << e.dump();
    EXPECT_EQ(e["code"], code) << e.dump();
  };
  expect_error({{"type", "input_audio_buffer.commit"}}, "model_not_validated");
  expect_error({{"type", "no.such.event"}}, "unknown_event");
  expect_error({{"type", 7}}, "invalid_event");  // found by the fuzz target: it used to escape as an exception
  expect_error({{"no type", true}}, "invalid_event");
  expect_error({{"type", "input_audio_buffer.append"}, {"audio", "not base64!"}}, "invalid_audio");
  expect_error({{"type", "input_audio_buffer.append"}, {"audio", "AA=="}}, "invalid_audio");  // one byte: half a sample
  expect_error({{"type", "input_audio_buffer.append"}}, "invalid_audio");
  expect_error({{"type", "session.update"}, {"delay_ms", 100}}, "invalid_delay");
  expect_error({{"type", "input_audio_buffer.commit"}, {"final", true}}, "model_not_validated");
  c.send(json("a JSON string, not an event"));
  EXPECT_EQ(c.receive()["code"], "invalid_json");
  // And the connection still transcribes.
  const Pcm16Audio audio = pcm16_of(test_data() / "audio" / "speech_short.wav");
  c.send({{"type", "session.update"}, {"model", "x"}});
  c.send({{"type", "input_audio_buffer.commit"}});
  c.send({{"type", "input_audio_buffer.append"}, {"audio", base64_encode(audio.bytes)}});
  c.send({{"type", "input_audio_buffer.commit"}, {"final", true}});
  std::string deltas;
  EXPECT_EQ(c.until_done(deltas)["text"], reference().transcribe(audio.heard).text);
}

// A stopping server ends each live utterance as a final commit would, then closes the connection.
TEST(Server, AStoppingServerFinishesLiveSessionsWithTheirLastWords) {
  server::ApiService service({});
  service.set_engine(Engine::load(test_data() / "tiny" / "mistral", {.device = Device::Cpu, .threads = 1}));
  server::HttpServer http("127.0.0.1", 0, {}, service.handler());
  std::thread io([&] { http.run(1); });
  {
    const Pcm16Audio audio = pcm16_of(test_data() / "audio" / "speech_short.wav");
    RealtimeClient c(http.port());
    EXPECT_EQ(c.receive()["type"], "session.created");
    c.send({{"type", "session.update"}, {"model", "x"}});
    c.send({{"type", "input_audio_buffer.commit"}});
    c.send({{"type", "input_audio_buffer.append"}, {"audio", base64_encode(audio.bytes)}});
    // Messages are handled in order: once this one's error is back, the append has been taken.
    c.send({{"type", "ping.of.sorts"}});
    std::string deltas;  // text may come before that error
    for (json e = c.receive();; e = c.receive()) {
      if (e["type"] == "transcription.delta") {
        deltas += e["delta"].get<std::string>();
        continue;
      }
      EXPECT_EQ(e["code"], "unknown_event") << e.dump();
      break;
    }
    EXPECT_EQ(service.live_sessions(), 1);
    service.begin_shutdown();
    EXPECT_EQ(c.until_done(deltas)["text"], reference().transcribe(audio.heard).text);
    EXPECT_THROW(c.receive(), boost::system::system_error);  // then the close frame
    EXPECT_TRUE(service.wait_live_sessions_closed(std::chrono::seconds(10)));
  }
  http.stop();
  io.join();
  service.join_workers();
}

// The command: it says where it listens (--port 0: a free port), serves, and on SIGTERM stops
// accepting, lets the request in progress finish and exits 0.
TEST(ServeCommand, ServesAndStopsCleanlyOnSigterm) {
  ServeProcess serve({"--workers", "2"});
  ASSERT_NE(serve.port(), 0) << serve.said();
  const HttpTestClient c(serve.port());
  EXPECT_EQ(c.request(http::verb::get, "/health").status, 200);
  // A transcription in progress when SIGTERM comes is answered in full.
  std::thread in_progress([&] {
    try {
      const auto a = post_form(c, {{"file", "speech_long.wav", read_bytes(test_data() / "audio" / "speech_long.wav")},
                                   {"response_format", "", "text"}});
      EXPECT_EQ(a.status, 200) << a.body;
      EXPECT_EQ(a.body, reference_transcript(test_data() / "audio" / "speech_long.wav").text + "\n");
    } catch (const std::exception& e) {
      ADD_FAILURE() << "the request in progress at SIGTERM was not answered: " << e.what();
    }
  });
  while (json::parse(c.request(http::verb::get, "/health").body)["requests_in_progress"] == 0)
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  serve.signal(SIGTERM);
  in_progress.join();
  EXPECT_EQ(serve.wait_exit(std::chrono::seconds(30)), 0) << serve.said();
  EXPECT_NE(serve.said().find("voxrt: stopping"), std::string::npos) << serve.said();
}

}  // namespace
}  // namespace voxrt::test
