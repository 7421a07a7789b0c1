// What `voxrt serve` answers (docs/serve.md): GET /health, GET /v1/models and OpenAI's
// POST /v1/audio/transcriptions, on one engine shared by every request (its scheduler steps them
// together), reached through the public API only. Model work runs on a pool of worker threads,
// never on the I/O threads; the server answers /health (503, "loading") before the engine exists.
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
#include "server/websocket_connection.h"
#include "voxrt/voxrt.h"

namespace voxrt::server {

struct ServiceOptions {
  std::string model_id = "voxtral-mini-4b-realtime";  // the id GET /v1/models lists
  std::string api_key;  // empty: no authentication; else every route but /health wants "Bearer <key>"
  int workers = 256;     // requests doing model work at once (each waits its turn in the scheduler)
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
  void join_workers() { workers_.join(); }
  ApiService(const ApiService&) = delete;
  ApiService& operator=(const ApiService&) = delete;

  // The engine, once loaded: from then on the model routes answer (503 before).
  void set_engine(std::unique_ptr<Engine> engine);
  // The routes; its on_access counts the answers for /metrics (chain a log after it).
  Handler handler();
  int requests_in_progress() const { return in_progress_.load(); }  // doing model work
  int live_sessions() const;  // realtime connections open

  // A graceful stop's part for the live sessions: each open utterance is ended as a final commit
  // ends it (its last words decoded, its done event sent), then the connection is closed (1001,
  // going away). Returns at once; wait_live_sessions_closed waits, at most `timeout`.
  void finish_live_sessions();
  bool wait_live_sessions_closed(std::chrono::milliseconds timeout);

 private:
  void check_headers(const Request& header) const;
  void answer(Request request, Reply reply);
  void transcribe(const Request& request, const Reply& reply);
  std::string metrics() const;  // GET /metrics: Prometheus text
  void count_answer(int status);
  Engine* engine() const { return engine_ready_.load() ? engine_.get() : nullptr; }

  const ServiceOptions options_;
  std::unique_ptr<Engine> engine_;
  std::atomic<bool> engine_ready_{false};
  std::atomic<int> in_progress_{0};
  mutable std::mutex live_mu_;
  std::vector<std::weak_ptr<LiveTranscription>> live_;  // the realtime connections (expired: closed)
  const std::shared_ptr<LiveLag> live_lag_ = std::make_shared<LiveLag>();  // all of them, for /metrics
  uint64_t realtime_opened_ = 0;                   // under live_mu_
  mutable std::mutex answers_mu_;
  std::map<int, uint64_t> answers_;  // HTTP answers by status
  const std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
  boost::asio::thread_pool workers_;  // last: joined first
};

}  // namespace voxrt::server
