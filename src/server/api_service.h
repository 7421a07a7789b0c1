// What `voxrt serve` answers (docs/serve.md): GET /health, GET /v1/models and OpenAI's
// POST /v1/audio/transcriptions, on one engine shared by every request (its scheduler steps them
// together), reached through the public API only. Model work runs on worker threads, never on the
// I/O threads: the live sessions on a pool of their own, the file transcriptions on theirs
// (TranscriptionQueue), so that neither can hold the threads the other needs. The server answers
// /health (503, "loading") before the engine exists.
#pragma once

#include <boost/asio/thread_pool.hpp>

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <vector>
#include <string>

#include "server/http_server.h"
#include "server/live_transcription.h"
#include "server/transcription_queue.h"
#include "server/websocket_connection.h"
#include "voxrt/voxrt.h"

namespace voxrt::server {

struct ServiceOptions {
  std::string model_id = "voxtral-mini-4b-realtime";  // the id GET /v1/models lists
  std::string api_key;  // empty: no authentication; else every route but /health wants "Bearer <key>"
  // The live sessions' model work at once: the realtime connections' pool (a session holds a thread
  // while its audio's steps run), apart from the file transcriptions' so neither starves the other.
  int workers = 256;
  TranscriptionQueue::Limits transcriptions;  // file transcriptions running, and waiting for a thread
  // The longest a file transcription waits, for a thread and then for room in the engine, before
  // it is refused (503 with Retry-After).
  std::chrono::milliseconds queue_timeout{60'000};
  double max_audio_seconds = 7200;  // an upload longer (by its header, or as it decodes) is refused
  // Origins (scheme://host[:port]) whose pages may use the API beside the server's own ("*": any).
  // A browser names the page's origin on every POST and WebSocket: without this, any web page could
  // drive a server on localhost that has no key.
  std::vector<std::string> allowed_origins;
  // /health says "stalled" (503) when handed model work has waited this long with no round done.
  double stall_seconds = 30;
  WebSocketLimits websocket;  // the realtime connections' message size and idle timeout
  RealtimeLimits realtime;    // what a realtime connection may hold (audio, events)
};

class ApiService {
 public:
  explicit ApiService(ServiceOptions options);
  ~ApiService();  // joins the workers (join_workers)
  // Lets every task of the workers finish and ends them. Order at the end of a server: stop the
  // HttpServer's I/O, join_workers(), destroy the HttpServer (its connections, and the realtime
  // sessions they hold, go with it), then this: declare the ApiService before the HttpServer.
  void join_workers() {
    workers_.join();
    transcriptions_.join();
  }
  ApiService(const ApiService&) = delete;
  ApiService& operator=(const ApiService&) = delete;

  // The engine, once loaded: from then on the model routes answer (503 before).
  void set_engine(std::unique_ptr<Engine> engine);
  // The routes; its on_access counts the answers for /metrics (chain a log after it).
  Handler handler();
  int requests_in_progress() const { return transcriptions_.running(); }  // doing model work
  int live_sessions() const;  // realtime connections open

  // A graceful stop, first half: new transcriptions are refused (503), and each open utterance is
  // ended as a final commit ends it (its last words decoded, its done event sent), then its
  // connection is closed (1001, going away). Returns at once; wait_live_sessions_closed waits, at
  // most `timeout`, while the transcriptions in progress finish.
  void begin_shutdown();
  bool wait_live_sessions_closed(std::chrono::milliseconds timeout);
  // Second half, once the drain is over: what still runs is cancelled, the transcriptions between
  // two pieces of their audio (answered 503, or an error event on a stream), the live connections
  // closed at once (1001). Returns at once.
  void cancel_remaining();

 private:
  void check_headers(const Request& header) const;
  void check_origin(const Request& header) const;
  void answer(Request request, Reply reply);
  void health(const Request& request, const Reply& reply) const;
  void transcribe(Request request, const Reply& reply, TranscriptionQueue::Clock::duration waited);
  std::string metrics() const;  // GET /metrics: Prometheus text
  void count_answer(int status);
  Engine* engine() const { return engine_ready_.load() ? engine_.get() : nullptr; }

  const ServiceOptions options_;
  std::unique_ptr<Engine> engine_;
  std::atomic<bool> engine_ready_{false};
  std::atomic<bool> stopping_{false};    // begin_shutdown: no new transcriptions
  std::atomic<bool> cancelling_{false};  // cancel_remaining: the running ones stop
  mutable std::mutex live_mu_;
  std::vector<std::weak_ptr<LiveTranscription>> live_;  // the realtime connections (expired: closed)
  const std::shared_ptr<LiveLag> live_lag_ = std::make_shared<LiveLag>();  // all of them, for /metrics
  uint64_t realtime_opened_ = 0;                   // under live_mu_
  mutable std::mutex answers_mu_;
  std::map<int, uint64_t> answers_;  // HTTP answers by status
  const std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
  TranscriptionQueue transcriptions_;  // the file transcriptions' own threads
  boost::asio::thread_pool workers_;  // the live sessions'; last: joined first
};

}  // namespace voxrt::server
