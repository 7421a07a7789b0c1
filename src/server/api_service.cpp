#include "server/api_service.h"

#include <boost/asio/post.hpp>
#include <boost/beast/http/field.hpp>
#include <boost/beast/http/verb.hpp>
#include <boost/beast/websocket/rfc6455.hpp>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <thread>
#include <nlohmann/json.hpp>

#include "audio/audio_file.h"
#include "common/error.h"
#include "server/multipart_form.h"
#include "server/openai_transcriptions.h"
#include "server/request_error.h"
#include "server/vllm_realtime.h"
#include "server/websocket_connection.h"
#include "voxrt/session.h"

namespace voxrt::server {
namespace {

namespace http = boost::beast::http;
using nlohmann::json;

constexpr int kSampleRate = 16000;

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

// The upload's samples at 16 kHz mono; a file that does not decode is the client's fault (400),
// named as the client named it.
std::vector<float> decode_upload(const TranscriptionRequest& r) {
  if (r.audio.empty()) throw RequestError(400, r.filename + ": the file is empty", "file");
  UploadFile file(r.audio);
  try {
    return load_audio_mono(file.path(), kSampleRate);
  } catch (const Error& e) {
    std::string why = e.what();
    const std::string tmp = file.path().string();
    for (size_t at; (at = why.find(tmp)) != std::string::npos;) why.replace(at, tmp.size(), r.filename);
    throw RequestError(400, why, "file");
  }
}

const json& route_table() {
  static const json routes = {
      {"/health", "GET"}, {"/v1/models", "GET"}, {"/v1/audio/transcriptions", "POST"}, {"/v1/realtime", "GET"}};
  return routes;
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

ApiService::ApiService(ServiceOptions options) : options_(std::move(options)), workers_(options_.workers) {}

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

void ApiService::finish_live_sessions() {
  std::lock_guard<std::mutex> lock(live_mu_);
  for (const auto& w : live_)
    if (const auto s = w.lock()) s->finish_and_close();
}

bool ApiService::wait_live_sessions_closed(std::chrono::milliseconds timeout) {
  const auto until = std::chrono::steady_clock::now() + timeout;
  while (live_sessions() > 0) {
    if (std::chrono::steady_clock::now() >= until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

void ApiService::set_engine(std::unique_ptr<Engine> engine) {
  engine_ = std::move(engine);
  engine_ready_ = engine_ != nullptr;
}

Handler ApiService::handler() {
  Handler h;
  h.on_headers = [this](const Request& header) { check_headers(header); };
  h.on_request = [this](Request r, Reply reply) { answer(std::move(r), reply); };
  // Only /v1/realtime gets here (check_headers refuses other upgrades).
  h.on_upgrade = [this](Request r, boost::beast::tcp_stream stream) {
    auto session = std::make_shared<VllmRealtime>(*engine(), workers_);
    {
      std::lock_guard<std::mutex> lock(live_mu_);
      std::erase_if(live_, [](const std::weak_ptr<VllmRealtime>& w) { return w.expired(); });
      live_.push_back(session);
    }
    start_websocket(std::move(stream), std::move(r), std::move(session), {});
  };
  return h;
}

// Before the body is read: the route, the method, the key, and whether a model route can be served.
void ApiService::check_headers(const Request& h) const {
  const std::string path = path_of(h);
  const json& routes = route_table();
  if (!routes.contains(path)) throw RequestError(404, "no route " + path.substr(0, 200));
  const std::string method = routes[path];
  if (h.method_string() != method)
    throw RequestError(405, std::string(h.method_string()) + " " + path + ": this route takes " + method);
  const bool realtime = path == "/v1/realtime", upgrade = boost::beast::websocket::is_upgrade(h);
  if (realtime && !upgrade) throw RequestError(426, path + " is a WebSocket: connect with an Upgrade request");
  if (upgrade && !realtime) throw RequestError(400, "no WebSocket at " + path + " (the realtime one is /v1/realtime)");
  if (path == "/health") return;
  if (!options_.api_key.empty()) {
    const std::string_view auth = h[http::field::authorization];
    const std::string_view scheme = "Bearer ";
    if (auth.substr(0, scheme.size()) != scheme || !same_secret(auth.substr(scheme.size()), options_.api_key))
      throw RequestError(401, "a valid API key is needed: Authorization: Bearer <key>");
  }
  if (path != "/v1/models" && !engine()) throw RequestError(503, "the model is still loading");
}

void ApiService::answer(Request request, Reply reply) {
  const std::string path = path_of(request);
  if (path == "/health") {
    Engine* e = engine();
    json j = {{"status", e ? "ok" : "loading"}, {"requests_in_progress", in_progress_.load()}};
    if (e) j["model"] = {{"id", options_.model_id}, {"backend", e->info().backend}, {"layout", e->info().layout}};
    return reply.send(make_response(request, e ? 200 : 503, j.dump(), "application/json"));
  }
  if (path == "/v1/models") {
    const json model = {{"id", options_.model_id}, {"object", "model"}, {"created", 0}, {"owned_by", "mistralai"}};
    return reply.send(make_response(request, 200, json{{"object", "list"}, {"data", {model}}}.dump(), "application/json"));
  }
  // POST /v1/audio/transcriptions: model work, on a worker.
  ++in_progress_;
  boost::asio::post(workers_, [this, request = std::move(request), reply]() mutable {
    transcribe(request, reply);
    --in_progress_;
  });
}

void ApiService::transcribe(const Request& request, const Reply& reply) {
  bool streaming = false;
  try {
    const std::vector<FormPart> form = parse_form(request[http::field::content_type], request.body());
    const TranscriptionRequest r = parse_transcription_request(form);
    const std::vector<float> samples = decode_upload(r);
    Engine& engine = *engine_;
    if (!r.stream) {
      TranscribeOptions to;
      to.delay_ms = r.delay_ms;
      const Transcript t = engine.transcribe(samples, to);
      const RenderedTranscription out = render_transcription(t, r);
      return reply.send(make_response(request, 200, out.body, out.content_type));
    }
    // stream=true: the text as the model decides it, through a live session fed the whole file.
    SessionOptions so;
    so.delay_ms = r.delay_ms;
    so.wait_for_room = true;
    so.max_seconds = static_cast<double>(samples.size()) / kSampleRate + 1;
    so.on_event = [&](const StreamEvent& e) {
      if (e.kind == StreamEvent::Kind::Text && !e.text.empty()) reply.write(text_delta_event(e.text));
    };
    std::unique_ptr<Session> session = engine.open_session(so);
    reply.start_stream(200, "text/event-stream");
    streaming = true;
    const size_t chunk = kSampleRate;  // a second at a time, so that a client that left stops the work soon
    for (size_t at = 0; at < samples.size() && !reply.closed(); at += chunk)
      session->feed(std::span<const float>(samples).subspan(at, std::min(chunk, samples.size() - at)));
    if (reply.closed()) return;
    session->flush();
    reply.write(text_done_event(session->transcript()));
    reply.end();
  } catch (const RequestError& e) {
    if (!streaming) return reply.send(make_response(request, e.status(), error_json(e.status(), e.what(), e.param()),
                                                    "application/json"));
    reply.write(error_event(e.status(), e.what()));
    reply.end();
  } catch (const std::exception& e) {
    const std::string why = std::string("transcription failed: ") + e.what();
    if (!streaming) return reply.send(make_response(request, 500, error_json(500, why), "application/json"));
    reply.write(error_event(500, why));
    reply.end();
  }
}

}  // namespace voxrt::server
