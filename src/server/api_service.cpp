#include "server/api_service.h"

#include <boost/asio/post.hpp>
#include <boost/beast/core/string.hpp>
#include <boost/beast/http/field.hpp>
#include <boost/beast/http/verb.hpp>
#include <boost/beast/websocket/rfc6455.hpp>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <thread>
#include <nlohmann/json.hpp>

#include "audio/audio_reader.h"
#include "common/error.h"
#include "server/caption_page.h"
#include "server/multipart_form.h"
#include "server/openai_transcriptions.h"
#include "server/prometheus_text.h"
#include "server/request_error.h"
#include "server/text_deltas.h"
#include "server/mistral_realtime.h"
#include "server/openai_realtime.h"
#include "server/vllm_realtime.h"
#include "server/websocket_connection.h"
#include "voxrt/session.h"

namespace voxrt::server {
namespace {

namespace http = boost::beast::http;
using nlohmann::json;

constexpr int kSampleRate = 16000;
constexpr const char* kMistralRealtime = "/v1/audio/transcriptions/realtime";

// Equal-time comparison (key not empty), so that a wrong key's timing says nothing about the right one.
bool same_secret(std::string_view given, std::string_view key) {
  size_t diff = given.size() ^ key.size();
  for (size_t i = 0; i < given.size(); ++i)
    diff |= static_cast<unsigned char>(given[i]) ^ static_cast<unsigned char>(key[i % key.size()]);
  return diff == 0;
}

// An upload on disk for as long as it is decoded (libsndfile reads files; every format the CLI
// reads is read the same way).
class UploadFile {
 public:
  explicit UploadFile(std::string_view bytes) {
    std::string pattern = (std::filesystem::temp_directory_path() / "voxrt-upload-XXXXXX").string();
    const int fd = mkstemp(pattern.data());
    if (fd < 0) throw Error("serve: cannot create a temporary file for an upload in " + pattern);
    path_ = pattern;
    size_t done = 0;
    while (done < bytes.size()) {
      const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
      if (n <= 0) {
        ::close(fd);
        std::filesystem::remove(path_);
        throw Error("serve: cannot write an upload to " + path_.string() + " (disk full?)");
      }
      done += static_cast<size_t>(n);
    }
    ::close(fd);
  }
  ~UploadFile() {
    std::error_code ignored;
    std::filesystem::remove(path_, ignored);
  }
  UploadFile(const UploadFile&) = delete;
  UploadFile& operator=(const UploadFile&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

// An engine error's message as the client can read it: the upload's temporary path replaced by the
// name the client gave the file.
std::string as_client_named(std::string why, const std::filesystem::path& tmp, const std::string& filename) {
  const std::string path = tmp.string();
  for (size_t at; (at = why.find(path)) != std::string::npos;) why.replace(at, path.size(), filename);
  return why;
}

// The token of "Authorization: Bearer <token>": the scheme in any case (RFC 9110 §11.1), then
// spaces.
std::optional<std::string_view> bearer_token(std::string_view authorization) {
  constexpr std::string_view scheme = "bearer";
  if (authorization.size() <= scheme.size() || !boost::beast::iequals(authorization.substr(0, scheme.size()), scheme) ||
      authorization[scheme.size()] != ' ')
    return std::nullopt;
  authorization.remove_prefix(scheme.size());
  while (!authorization.empty() && authorization.front() == ' ') authorization.remove_prefix(1);
  while (!authorization.empty() && authorization.back() == ' ') authorization.remove_suffix(1);
  if (authorization.empty()) return std::nullopt;
  return authorization;
}

// Whether a browser's Origin ("scheme://host[:port]") is the server it talks to (the request's
// Host): a page the server served itself.
bool origin_is_host(std::string_view origin, std::string_view host) {
  const size_t scheme_end = origin.find("://");
  if (scheme_end == std::string_view::npos || host.empty()) return false;
  const std::string_view scheme = origin.substr(0, scheme_end), authority = origin.substr(scheme_end + 3);
  if (boost::beast::iequals(authority, host)) return true;
  // A default port may be written in one and left out of the other.
  const std::string_view port = boost::beast::iequals(scheme, "https") ? ":443" : ":80";
  const auto without = [&](std::string_view a) {
    return a.size() > port.size() && a.substr(a.size() - port.size()) == port ? a.substr(0, a.size() - port.size()) : a;
  };
  return boost::beast::iequals(without(authority), without(host));
}

// The audio's length by the file's header (nullopt: unknown, or the file does not open; the
// transcription then says why).
std::optional<double> announced_seconds(const std::filesystem::path& file) {
  try {
    const AudioFileReader reader(file, kSampleRate);
    const std::optional<int64_t> frames = reader.source_frames();
    if (!frames || reader.source_rate() <= 0) return std::nullopt;
    return static_cast<double>(*frames) / reader.source_rate();
  } catch (const Error&) {
    return std::nullopt;
  }
}

// A refusal the client may retry: 503 with Retry-After.
Response busy_response(const Request& request, const std::string& message) {
  Response r = make_response(request, 503, error_json(503, message), "application/json");
  r.set(http::field::retry_after, "5");
  return r;
}

// Whole seconds, for messages.
std::string whole_seconds(double s) { return std::to_string(static_cast<long long>(std::lround(s))) + " s"; }

// Each route and the method it takes. A GET route takes HEAD too (RFC 9110 §9.3.2: answered as the
// GET, without the body), for probes and `curl -I`.
const std::map<std::string, http::verb, std::less<>>& route_table() {
  static const std::map<std::string, http::verb, std::less<>> routes = {
      {"/", http::verb::get},          {"/health", http::verb::get},         {"/metrics", http::verb::get},
      {"/v1/models", http::verb::get}, {"/v1/audio/transcriptions", http::verb::post},
      {"/v1/realtime", http::verb::get}, {kMistralRealtime, http::verb::get}};
  return routes;
}

bool route_takes(http::verb route, http::verb method) {
  return method == route || (route == http::verb::get && method == http::verb::head);
}

// The Allow header of a route's 405 (RFC 9110 §15.5.6: every method the route takes).
std::string allowed_methods(http::verb route) { return route == http::verb::get ? "GET, HEAD" : std::string(http::to_string(route)); }

bool is_websocket_route(const std::string& path) { return path == "/v1/realtime" || path == kMistralRealtime; }

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// A query parameter's value, percent-decoded ('+' is a space, as forms and URLSearchParams write it).
std::optional<std::string> query_value(std::string_view target, std::string_view key) {
  const size_t q = target.find('?');
  if (q == std::string_view::npos) return std::nullopt;
  std::string_view rest = target.substr(q + 1);
  while (!rest.empty()) {
    const size_t amp = rest.find('&');
    const std::string_view pair = rest.substr(0, amp);
    rest = amp == std::string_view::npos ? std::string_view() : rest.substr(amp + 1);
    const size_t eq = pair.find('=');
    if (pair.substr(0, eq) != key) continue;
    const std::string_view raw = eq == std::string_view::npos ? std::string_view() : pair.substr(eq + 1);
    std::string value;
    for (size_t i = 0; i < raw.size(); ++i) {
      if (raw[i] == '+') value += ' ';
      else if (raw[i] == '%' && i + 2 < raw.size() && hex_digit(raw[i + 1]) >= 0 && hex_digit(raw[i + 2]) >= 0) {
        value += static_cast<char>(hex_digit(raw[i + 1]) * 16 + hex_digit(raw[i + 2]));
        i += 2;
      } else value += raw[i];
    }
    return value;
  }
  return std::nullopt;
}

// An error after a stream's header went out: an event of its own, then the stream ends.
std::string error_event(int status, const std::string& message) {
  return "data: " + json{{"type", "error"}, {"error", error_object(status, message)}}.dump(-1, ' ', false, json::error_handler_t::replace) + "\n\n";
}

std::string path_of(const Request& r) {
  const std::string_view target = r.target();
  return std::string(target.substr(0, target.find('?')));
}

}  // namespace

ApiService::ApiService(ServiceOptions options)
    : options_(std::move(options)), transcriptions_(options_.transcriptions), workers_(options_.workers) {}

ApiService::~ApiService() { workers_.join(); }

int ApiService::live_sessions() const {
  std::lock_guard<std::mutex> lock(live_mu_);
  int n = 0;
  for (const auto& w : live_) {
    const auto s = w.lock();
    n += s && !s->closed();
  }
  return n;
}

void ApiService::begin_shutdown() {
  stopping_ = true;
  std::lock_guard<std::mutex> lock(live_mu_);
  for (const auto& w : live_)
    if (const auto s = w.lock()) s->finish_and_close();
}

void ApiService::cancel_remaining() {
  stopping_ = true;
  cancelling_ = true;
  std::lock_guard<std::mutex> lock(live_mu_);
  for (const auto& w : live_)
    if (const auto s = w.lock()) s->close_now(1001, "the server is shutting down");
}

bool ApiService::wait_live_sessions_closed(std::chrono::milliseconds timeout) {
  const auto until = std::chrono::steady_clock::now() + timeout;
  while (live_sessions() > 0) {
    if (std::chrono::steady_clock::now() >= until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

void ApiService::count_answer(int status) {
  std::lock_guard<std::mutex> lock(answers_mu_);
  ++answers_[status];
}

std::string ApiService::metrics() const {
  PrometheusText m;
  Engine* e = engine();
  m.gauge("voxrt_ready", "1 once the model is loaded and serving, 0 while it loads", e ? 1 : 0);
  m.gauge("voxrt_uptime_seconds", "Seconds since the server started",
          std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count());
  {
    std::lock_guard<std::mutex> lock(answers_mu_);
    m.family("voxrt_http_responses_total", "counter", "HTTP answers sent, by status code");
    for (const auto& [status, n] : answers_) m.sample("voxrt_http_responses_total", static_cast<double>(n), {{"code", std::to_string(status)}});
  }
  m.gauge("voxrt_transcription_requests_in_progress", "File transcriptions doing model work now", transcriptions_.running());
  m.gauge("voxrt_transcription_requests_waiting", "File transcriptions waiting for a thread (--max-queued-transcriptions)",
          transcriptions_.waiting());
  uint64_t realtime_opened = 0;
  {
    std::lock_guard<std::mutex> lock(live_mu_);
    realtime_opened = realtime_opened_;
  }
  m.gauge("voxrt_realtime_connections", "Realtime WebSocket connections open now", live_sessions());
  m.counter("voxrt_realtime_connections_total", "Realtime WebSocket connections accepted", static_cast<double>(realtime_opened));
  m.histogram("voxrt_live_lag_seconds",
              "A realtime connection's audio message, from its arrival to the model work it made possible done and "
              "its events sent (the wait for a worker included)",
              live_lag_->histogram_ms(), 1e-3);
  if (!e) return m.str();
  const EngineStats s = e->stats();
  m.gauge("voxrt_sessions_active", "Engine sessions (live streams and file transcriptions) holding caches now", s.sessions_open);
  m.counter("voxrt_sessions_total", "Engine sessions opened", static_cast<double>(s.sessions_opened));
  m.family("voxrt_sessions_rejected_total", "counter", "Engine sessions refused when opened, by reason");
  m.sample("voxrt_sessions_rejected_total", static_cast<double>(s.refused_full), {{"reason", "full"}});
  m.sample("voxrt_sessions_rejected_total", static_cast<double>(s.refused_overloaded), {{"reason", "overloaded"}});
  m.sample("voxrt_sessions_rejected_total", static_cast<double>(s.refused_too_long), {{"reason", "too_long"}});
  m.counter("voxrt_rounds_total", "Rounds of the scheduler's loop (each one batched pass over every session with work)",
            static_cast<double>(s.rounds));
  // The same count under its old name, which dashboards read: deprecated, kept for one release.
  m.counter("voxrt_steps_total", "Deprecated: voxrt_rounds_total under its old name", static_cast<double>(s.rounds));
  m.counter("voxrt_decoder_rows_total", "Decoder rows run (a session's position is a row)", static_cast<double>(s.decoder_rows));
  m.histogram("voxrt_round_seconds", "Wall time of a round of the scheduler's loop", s.round_ms, 1e-3);
  // Likewise the rounds' wall time.
  m.histogram("voxrt_step_seconds", "Deprecated: voxrt_round_seconds under its old name", s.round_ms, 1e-3);
  m.histogram("voxrt_live_wait_seconds",
              "A live session's wait inside the engine, from 80 ms of audio handed to the scheduler to its steps done",
              s.live_wait_ms, 1e-3);
  m.gauge("voxrt_realtime_margin_seconds",
          "80 ms less the live sessions' 90th-percentile wait over the last 2 s: below 0, they fall behind real time",
          0.080 - s.live_wait_p90_ms * 1e-3);
  m.counter("voxrt_audio_seconds_total", "Seconds of input audio received by sessions and transcriptions", s.audio_seconds);
  m.gauge("voxrt_cache_bytes_in_use", "Key/value cache bytes holding or kept for open sessions", static_cast<double>(s.cache_bytes_in_use));
  m.gauge("voxrt_cache_bytes_total", "Key/value cache bytes allocated (0: the caches grow on demand)", static_cast<double>(s.cache_bytes_total));
  m.gauge("voxrt_cache_pages_in_use", "Key/value cache pages mapped (encoder and decoder)", s.cache_pages_in_use);
  m.gauge("voxrt_memory_in_use_bytes", "The backend's memory in use (GPU: device memory; CPU: peak resident memory)",
          static_cast<double>(s.memory_in_use));
  m.gauge("voxrt_memory_available_bytes", "The backend's memory free (GPU: device; CPU: the host's available)",
          static_cast<double>(s.memory_available));
  // Each device's share (--gpus): the sums above split by device.
  auto per_device = [&](std::string_view name, std::string_view type, std::string_view help, auto value) {
    m.family(name, type, help);
    for (const DeviceStats& d : s.devices) m.sample(name, static_cast<double>(value(d)), {{"device", d.device}});
  };
  per_device("voxrt_device_up", "gauge", "1 while a device takes new sessions, 0 once its model work failed",
             [](const DeviceStats& d) { return d.failed ? 0 : 1; });
  per_device("voxrt_device_sessions_active", "gauge", "Engine sessions holding caches on a device now",
             [](const DeviceStats& d) { return d.sessions_open; });
  per_device("voxrt_device_sessions_total", "counter", "Engine sessions opened on a device",
             [](const DeviceStats& d) { return d.sessions_opened; });
  per_device("voxrt_device_rounds_total", "counter", "Rounds of a device's scheduler loop",
             [](const DeviceStats& d) { return d.rounds; });
  per_device("voxrt_device_steps_total", "counter", "Deprecated: voxrt_device_rounds_total under its old name",
             [](const DeviceStats& d) { return d.rounds; });
  per_device("voxrt_device_cache_bytes_in_use", "gauge", "Key/value cache bytes holding or kept for a device's sessions",
             [](const DeviceStats& d) { return d.cache_bytes_in_use; });
  per_device("voxrt_device_cache_bytes_total", "gauge", "Key/value cache bytes allocated on a device (0: grown on demand)",
             [](const DeviceStats& d) { return d.cache_bytes_total; });
  per_device("voxrt_device_memory_available_bytes", "gauge", "A device's memory free",
             [](const DeviceStats& d) { return d.memory_available; });
  return m.str();
}

void ApiService::set_engine(std::unique_ptr<Engine> engine) {
  engine_ = std::move(engine);
  engine_ready_ = engine_ != nullptr;
}

Handler ApiService::handler() {
  Handler h;
  h.on_headers = [this](const Request& header) { check_headers(header); };
  h.on_request = [this](Request r, Reply reply) { answer(std::move(r), reply); };
  h.on_access = [this](const AccessRecord& r) { count_answer(r.status); };
  // Only the realtime routes get here (check_headers refuses other upgrades).
  h.on_upgrade = [this](Upgrade upgrade) {
    const Request& r = upgrade.request;
    std::shared_ptr<LiveTranscription> session;
    if (path_of(r) == kMistralRealtime)
      session = std::make_shared<MistralRealtime>(*engine(), workers_,
                                                  query_value(r.target(), "model").value_or(options_.model_id),
                                                  options_.realtime);
    else if (query_value(r.target(), "intent") == "transcription")
      session = std::make_shared<OpenAiRealtime>(*engine(), workers_, options_.realtime);
    else
      session = std::make_shared<VllmRealtime>(*engine(), workers_, options_.realtime);
    session->count_lag_in(live_lag_);
    {
      std::lock_guard<std::mutex> lock(live_mu_);
      std::erase_if(live_, [](const std::weak_ptr<LiveTranscription>& w) { return w.expired(); });
      live_.push_back(session);
      ++realtime_opened_;
    }
    start_websocket(std::move(upgrade), std::move(session), options_.websocket);
  };
  return h;
}

// Before the body is read: the route, the method, the key, and whether a model route can be served.
void ApiService::check_headers(const Request& h) const {
  const std::string path = path_of(h);
  const auto route = route_table().find(path);
  if (route == route_table().end()) throw RequestError(404, "no route " + path.substr(0, 200));
  const http::verb method = route->second;
  if (!route_takes(method, h.method()))
    throw RequestError(405, std::string(h.method_string().substr(0, 32)) + " " + path + ": this route takes " +
                                allowed_methods(method))
        .allowing(allowed_methods(method));
  const bool realtime = is_websocket_route(path), upgrade = boost::beast::websocket::is_upgrade(h);
  if (realtime && !upgrade) throw RequestError(426, path + " is a WebSocket: connect with an Upgrade request");
  if (upgrade && !realtime)
    throw RequestError(400, "no WebSocket at " + path + " (the realtime ones are /v1/realtime and " + kMistralRealtime + ")");
  // For probes, scrapers and browsers: no key, nothing private (the page's WebSocket needs one if set).
  if (path == "/" || path == "/health" || path == "/metrics") return;
  check_origin(h);
  if (!options_.api_key.empty()) {
    const std::optional<std::string_view> token = bearer_token(h[http::field::authorization]);
    const bool bearer = token && same_secret(*token, options_.api_key);
    // A browser's WebSocket (the caption page, OpenAI's browser clients) carries it as a subprotocol.
    const std::optional<std::string_view> offered = upgrade ? subprotocol_api_key(h[http::field::sec_websocket_protocol])
                                                             : std::nullopt;
    if (!bearer && !(offered && same_secret(*offered, options_.api_key)))
      throw RequestError(401, upgrade ? "a valid API key is needed: Authorization: Bearer <key>, or the subprotocol "
                                        "openai-insecure-api-key.<key>"
                                      : "a valid API key is needed: Authorization: Bearer <key>");
  }
  if (path != "/v1/models" && !engine()) throw RequestError(503, "the model is still loading");
}

// A page may call the API from the server's own origin (its Host), or from one allowed by
// --allowed-origin; requests without an Origin (programs, not browsers) are not concerned.
void ApiService::check_origin(const Request& h) const {
  const std::string_view origin = h[http::field::origin];
  if (origin.empty()) return;
  if (origin_is_host(origin, h[http::field::host])) return;
  for (const std::string& allowed : options_.allowed_origins)
    if (allowed == "*" || boost::beast::iequals(allowed, origin)) return;
  throw RequestError(403, "Origin " + std::string(origin.substr(0, 200)) +
                              " may not use this server: only its own pages may, and the origins given with "
                              "--allowed-origin");
}

// GET /health: whether this server takes new work now (200), and why not (503): loading, stopping,
// every device failed, the model work stalled, or saturated (the engine or the transcription queue
// full: Retry-After says when to ask again). ?live asks only whether it needs a restart (503 for a
// stall or failed devices), for a liveness probe that must not restart a server for being busy.
void ApiService::health(const Request& request, const Reply& reply) const {
  Engine* e = engine();
  const bool live_only = query_value(request.target(), "live").has_value();
  json j = {{"status", e ? "ok" : "loading"},
            {"requests_in_progress", transcriptions_.running()},
            {"requests_waiting", transcriptions_.waiting()},
            {"live_sessions", live_sessions()},
            {"api_key_required", !options_.api_key.empty()}};  // the caption page asks for one then
  int status = e ? 200 : 503;
  if (e) {
    const EngineStats stats = e->stats();
    j["model"] = {{"id", options_.model_id}, {"backend", e->info().backend}, {"layout", e->info().layout}};
    // Each device, and "degraded" while some failed (the others serve) or 503 once all have.
    json devices = json::array();
    int failed = 0;
    for (const DeviceStats& d : stats.devices) {
      json one = {{"device", d.device}, {"status", d.failed ? "failed" : "ok"}, {"sessions", d.sessions_open}};
      if (d.failed) one["error"] = d.failure, ++failed;
      devices.push_back(std::move(one));
    }
    j["devices"] = devices;
    j["engine"] = {{"has_room", stats.has_room}, {"stalled_seconds", std::round(stats.stalled_seconds * 10) / 10}};
    const auto unwell = [&](const char* why) { j["status"] = why, status = 503; };
    if (failed > 0 && failed == static_cast<int>(devices.size())) unwell("failed");
    else if (stats.stalled_seconds > options_.stall_seconds) unwell("stalled");
    else if (live_only) {
    } else if (stopping_) unwell("stopping");
    else if (!stats.has_room || transcriptions_.full()) unwell("saturated");
    else if (failed > 0) j["status"] = "degraded";
  }
  Response r = make_response(request, status, j.dump(), "application/json");
  if (j["status"] == "saturated") r.set(http::field::retry_after, "5");
  reply.send(std::move(r));
}

void ApiService::answer(Request request, Reply reply) {
  const std::string path = path_of(request);
  if (path == "/health") return health(request, reply);
  if (path == "/") return reply.send(make_response(request, 200, std::string(caption_page()), "text/html; charset=utf-8"));
  if (path == "/metrics")
    return reply.send(make_response(request, 200, metrics(), "text/plain; version=0.0.4; charset=utf-8"));
  if (path == "/v1/models") {
    const json model = {{"id", options_.model_id}, {"object", "model"}, {"created", 0}, {"owned_by", "mistralai"}};
    return reply.send(make_response(request, 200, json{{"object", "list"}, {"data", {model}}}.dump(), "application/json"));
  }
  // POST /v1/audio/transcriptions: model work, on a transcription thread, or refused at once.
  if (stopping_) return reply.send(busy_response(request, "the server is shutting down"));
  const TranscriptionQueue::Limits& l = transcriptions_.limits();
  Response refusal = busy_response(request, "busy: " + std::to_string(l.running) + " transcriptions are running and " +
                                                std::to_string(l.waiting) +
                                                " waiting (--max-transcriptions, --max-queued-transcriptions); try again later");
  if (!transcriptions_.try_post([this, request = std::move(request), reply](TranscriptionQueue::Clock::duration waited) mutable {
        transcribe(std::move(request), reply, waited);
      }))
    reply.send(std::move(refusal));
}

void ApiService::transcribe(Request request, const Reply& reply, TranscriptionQueue::Clock::duration waited) {
  bool streaming = false;
  std::string filename = "file";
  std::optional<UploadFile> file;
  // Answers with an error: a status and a message before the stream began, an event after.
  const auto fail = [&](int status, const std::string& message, const std::string& param = {}) {
    if (!streaming) {
      Response r = status == 503 ? busy_response(request, message)
                                 : make_response(request, status, error_json(status, message, param), "application/json");
      return reply.send(std::move(r));
    }
    reply.write(error_event(status, message));
    reply.end();
  };
  const auto client_named = [&](const std::string& why) { return file ? as_client_named(why, file->path(), filename) : why; };
  try {
    const double waited_s = std::chrono::duration<double>(waited).count();
    const double timeout_s = std::chrono::duration<double>(options_.queue_timeout).count();
    if (waited_s > timeout_s)
      return fail(503, "busy: the transcription waited " + whole_seconds(waited_s) + " for a thread (--queue-timeout-seconds " +
                           whole_seconds(timeout_s) + "); try again later");
    if (reply.closed()) return;  // the client left while it waited
    TranscriptionRequest r;
    {
      const std::vector<FormPart> form = parse_form(request[http::field::content_type], request.body().view());
      r = parse_transcription_request(form, engine_->info().delays);
      filename = r.filename;
      if (r.audio.empty()) throw RequestError(400, r.filename + ": the file is empty", "file");
      file.emplace(r.audio);  // libsndfile reads files; decoded as it is transcribed, a block at a time
    }
    r.audio = {};
    request.body() = {};  // the upload's bytes are in the file now: not held twice while it runs
    if (const std::optional<double> seconds = announced_seconds(file->path()); seconds && *seconds > options_.max_audio_seconds)
      return fail(413, r.filename + ": " + whole_seconds(*seconds) + " of audio by its header, more than the " +
                           whole_seconds(options_.max_audio_seconds) + " a request may hold (--max-audio-minutes)", "file");
    TranscribeOptions to;
    to.delay_ms = r.delay_ms;
    to.context_bias = r.bias.phrases;
    to.context_bias_strength = r.bias.strength;
    to.max_audio_seconds = options_.max_audio_seconds;
    to.wait_for_room_seconds = std::max(0.0, timeout_s - waited_s);
    to.cancelled = [&] { return cancelling_.load() || reply.closed(); };
    TextDeltas deltas;  // they add up to the done event's text
    if (r.stream)  // the text as the model decides it; the stream starts with the first of it
      to.on_event = [&](const StreamEvent& e) {
        if (e.kind != StreamEvent::Kind::Text) return;
        const std::string delta = deltas.next(e.text);
        if (delta.empty()) return;
        if (!streaming) reply.start_stream(200, "text/event-stream"), streaming = true;
        reply.write(text_delta_event(delta));
      };
    const Transcript t = engine_->transcribe_file(file->path(), to);
    if (!r.stream) {
      const RenderedTranscription out = render_transcription(t, r);
      return reply.send(make_response(request, 200, out.body, out.content_type));
    }
    if (!streaming) reply.start_stream(200, "text/event-stream"), streaming = true;
    reply.write(text_done_event(t));
    reply.end();
  } catch (const RequestError& e) {
    fail(e.status(), e.what(), e.param());
  } catch (const BusyError& e) {
    fail(503, client_named(e.what()) + "; try again later");
  } catch (const InputError& e) {
    fail(400, client_named(e.what()), "file");
  } catch (const CancelledError&) {
    if (!reply.closed()) fail(503, "the server is shutting down: the transcription was stopped");
  } catch (const std::exception& e) {
    fail(500, "transcription failed: " + client_named(e.what()));
  }
}

}  // namespace voxrt::server
