// voxrt serve --model DIR [--host 127.0.0.1] [--port 8000] [--api-key KEY | --api-key-file FILE]
//             [--max-upload-mb 100] [--served-model-name ID] [engine and capacity options]
// The HTTP server (src/server, docs/serve.md): listens at once, answers /health with 503 while the
// model loads, then serves every request on the one engine. SIGINT or SIGTERM: stop accepting, let
// the requests in progress finish (up to --drain-seconds), exit 0.
#include <malloc.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <ctime>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <iostream>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "cli/commands.h"
#include "cli/engine_options.h"
#include "cli/usage.h"
#include "common/error.h"
#include "server/access_log.h"
#include "server/api_service.h"
#include "server/http_server.h"

namespace voxrt::cli {
namespace {

// How often the stopper hands freed memory back (malloc_trim): after a burst of uploads glibc keeps
// what they freed (1.3 GB seen) for the next, which a server's resident size should not show for ever.
constexpr std::chrono::seconds kTrimEvery{10};
// After the drain, how long cancelled work has to answer before the I/O stops; and how long past the
// drain the process may take to exit before it is ended (a stop is never ignored).
constexpr std::chrono::milliseconds kCancelGrace{2000};
constexpr std::chrono::seconds kForcedExitAfter{10};

void release_free_memory() { malloc_trim(0); }

[[noreturn]] void force_exit(const std::string& why) {
  std::cerr << "voxrt: exiting at once: " << why << std::endl;
  std::_Exit(1);
}

struct ServeArgs {
  EngineArgs engine;
  std::string host = "127.0.0.1";
  int port = 8000;
  std::string api_key, api_key_file;
  bool api_key_given = false;  // --api-key was on the command line, even as ""

  int max_upload_mb = 100;
  std::string served_model_name;
  int io_threads = 2;
  int workers = 256;
  int max_transcriptions = 16, max_queued_transcriptions = 64;
  double queue_timeout_seconds = 60;
  double max_audio_minutes = 120;
  std::vector<std::string> allowed_origins;
  double drain_seconds = 30;
  double idle_seconds = 60;
  int max_message_mb = 16;
  int max_connections = 0;  // 0: min(4096, the open-file limit - 64)
  bool no_access_log = false;
  bool log_probes = false;  // also the /health and /metrics GETs that succeed
};

// The key from --api-key, --api-key-file (its first line) or $VOXRT_API_KEY, in that order. An
// empty one is refused wherever it comes from: `--api-key "$KEY"` with $KEY unset would otherwise
// start a server open to anyone, without a word.
std::string api_key(const ServeArgs& a) {
  if (a.api_key_given) {
    if (a.api_key.empty())
      throw UsageError("--api-key: the key is empty (an unset variable?); leave the option out for a server without a key");
    return a.api_key;
  }
  if (!a.api_key_file.empty()) {
    std::ifstream in(a.api_key_file);
    std::string key;
    if (!in || !std::getline(in, key)) throw Error("--api-key-file " + a.api_key_file + ": cannot read a key from it");
    while (!key.empty() && (key.back() == '\r' || key.back() == ' ')) key.pop_back();
    if (key.empty()) throw Error("--api-key-file " + a.api_key_file + ": the first line is empty");
    return key;
  }
  const char* env = std::getenv("VOXRT_API_KEY");
  if (env && !*env)
    throw UsageError("$VOXRT_API_KEY is set but empty (an unset variable?); unset it for a server without a key");
  return env ? env : "";
}

// One JSON line per answered request on standard error; the probes that succeed only with --log-probes.
void log_access(const server::AccessRecord& r, bool log_probes) {
  if (!log_probes && server::is_routine_probe(r)) return;
  std::cerr << server::access_log_line(r, std::time(nullptr)) + "\n" << std::flush;
}

void serve(const ServeArgs& a) {
  check_engine_args(a.engine);
  if (a.port < 0 || a.port > 65535) throw UsageError("--port " + std::to_string(a.port) + ": expected 0 to 65535");
  if (a.max_upload_mb < 1) throw UsageError("--max-upload-mb must be at least 1");
  if (a.io_threads < 1 || a.workers < 1) throw UsageError("--io-threads and --workers must be at least 1");
  if (a.max_transcriptions < 1 || a.max_queued_transcriptions < 0)
    throw UsageError("--max-transcriptions must be at least 1 and --max-queued-transcriptions at least 0");
  if (!(a.queue_timeout_seconds > 0 && a.queue_timeout_seconds <= 86400))
    throw UsageError("--queue-timeout-seconds: expected more than 0, at most 86400");
  if (!(a.max_audio_minutes > 0 && a.max_audio_minutes <= 24 * 60))
    throw UsageError("--max-audio-minutes: expected more than 0, at most 1440");
  if (!(a.drain_seconds >= 0 && a.drain_seconds <= 86400)) throw UsageError("--drain-seconds: expected 0 to 86400");
  server::ServiceOptions so;
  so.api_key = api_key(a);
  so.workers = a.workers;
  so.transcriptions = {a.max_transcriptions, a.max_queued_transcriptions};
  so.queue_timeout = std::chrono::milliseconds(static_cast<long long>(a.queue_timeout_seconds * 1000));
  so.max_audio_seconds = a.max_audio_minutes * 60;
  so.allowed_origins = a.allowed_origins;
  if (!(a.idle_seconds >= 1 && a.idle_seconds <= 86400)) throw UsageError("--idle-timeout-seconds: expected 1 to 86400");
  if (a.max_message_mb < 1) throw UsageError("--max-message-mb must be at least 1");
  so.websocket.idle_timeout = std::chrono::milliseconds(static_cast<long long>(a.idle_seconds * 1000));
  so.websocket.max_message_bytes = static_cast<size_t>(a.max_message_mb) << 20;
  so.model_id = a.served_model_name.empty() ? "voxtral-mini-4b-realtime" : a.served_model_name;
  server::HttpLimits limits;
  limits.max_body_bytes = static_cast<size_t>(a.max_upload_mb) << 20;
  if (a.max_connections < 0) throw UsageError("--max-connections must be at least 1 (0: from the open-file limit)");
  const uint64_t open_files = server::raise_open_file_limit();
  limits.max_connections = a.max_connections > 0 ? a.max_connections
                                                 : static_cast<int>(std::min<uint64_t>(4096, open_files > 65 ? open_files - 64 : 1));
  server::ApiService service(so);  // before the server: outlives its connections (join_workers below)
  server::HttpServer http(a.host, static_cast<uint16_t>(a.port), limits, {});
  server::Handler handler = service.handler();
  if (!a.engine.quiet && !a.no_access_log)
    handler.on_access = [count = handler.on_access, log_probes = a.log_probes](const server::AccessRecord& r) {
      count(r);
      log_access(r, log_probes);
    };
  http.set_handler(std::move(handler));
  std::cerr << "voxrt: serving " << server::http_url(a.host, http.port()) << " (loading the model)" << std::endl;

  // SIGINT or SIGTERM (or a failed load) wakes the stopper: no new work on any connection, the live
  // utterances finished, the requests in progress given --drain-seconds, then whatever still runs
  // cancelled and the I/O ended. Meanwhile it hands the memory a burst freed back to the system.
  std::mutex mu;
  std::condition_variable wake;
  bool stop = false;
  const auto request_stop = [&] {
    std::lock_guard<std::mutex> lock(mu);
    stop = true;
    wake.notify_all();
  };
  const auto drain = std::chrono::milliseconds(static_cast<long long>(a.drain_seconds * 1000));
  http.on_stop_signal([&] {
    request_stop();
    // A stop is never ignored: a second signal, or the drain overrun by kForcedExitAfter, ends the
    // process whatever still runs.
    http.on_stop_signal([] { force_exit("a second stop signal"); });
    std::thread([drain] {
      std::this_thread::sleep_for(drain + kForcedExitAfter);
      force_exit("the drain (--drain-seconds) overran by " + std::to_string(kForcedExitAfter.count()) + " s");
    }).detach();
  });
  std::thread io([&] { http.run(a.io_threads); });
  std::thread stopper([&] {
    std::unique_lock<std::mutex> lock(mu);
    while (!wake.wait_for(lock, kTrimEvery, [&] { return stop; })) release_free_memory();
    lock.unlock();
    if (!a.engine.quiet)
      std::cerr << "voxrt: stopping: " << http.requests_in_flight() << " requests and " << service.live_sessions()
                << " live sessions to finish (at most " << a.drain_seconds << " s)" << std::endl;
    http.begin_shutdown();  // no new work on any connection: 503 and Connection: close
    service.begin_shutdown();
    const auto until = std::chrono::steady_clock::now() + drain;
    const auto left = [&] {
      return std::max(std::chrono::milliseconds(0),
                      std::chrono::duration_cast<std::chrono::milliseconds>(until - std::chrono::steady_clock::now()));
    };
    bool drained = http.wait_requests_done(left());
    drained = service.wait_live_sessions_closed(left()) && drained;
    if (!drained) {
      if (!a.engine.quiet)
        std::cerr << "voxrt: the drain is over: cancelling what still runs (" << http.requests_in_flight()
                  << " requests, " << service.live_sessions() << " live sessions)" << std::endl;
      service.cancel_remaining();
      // The cancelled work answers within a round or a piece of audio.
      http.wait_requests_done(kCancelGrace);
      service.wait_live_sessions_closed(kCancelGrace);
    }
    http.stop();
  });
  std::exception_ptr failed;
  try {
    service.set_engine(load_engine(a.engine));
    if (!a.engine.quiet) std::cerr << "voxrt: ready" << std::endl;
  } catch (...) {
    failed = std::current_exception();
    request_stop();
  }
  io.join();
  stopper.join();
  service.join_workers();
  if (failed) std::rethrow_exception(failed);
}

}  // namespace

void add_serve_command(CLI::App& app) {
  auto args = std::make_shared<ServeArgs>();
  CLI::App* cmd = app.add_subcommand("serve", "Serve OpenAI's transcription API over HTTP (docs/serve.md)");
  add_engine_options(cmd, args->engine);
  add_capacity_options(cmd, args->engine, "Requests transcribing at once (more wait their turn)");
  add_gpus_option(cmd, args->engine);
  cmd->add_option("--host", args->host, "Address to listen on")->capture_default_str();
  cmd->add_option("--port,-p", args->port, "Port to listen on (0: any free one, printed)")->capture_default_str();
  CLI::Option* key = cmd->add_option("--api-key", args->api_key, "Require 'Authorization: Bearer KEY' (WebSockets may send the subprotocol openai-insecure-api-key.KEY "
                  "instead, as browsers must; also --api-key-file, $VOXRT_API_KEY)");
  cmd->add_option("--api-key-file", args->api_key_file, "Read the API key from the first line of FILE");
  cmd->add_option("--max-upload-mb", args->max_upload_mb, "Largest request body taken (MB); larger: 413")
      ->capture_default_str();
  cmd->add_option("--served-model-name", args->served_model_name, "The model id /v1/models lists");
  cmd->add_option("--io-threads", args->io_threads, "Threads reading and writing connections")->capture_default_str();
  cmd->add_option("--workers", args->workers,
                  "Live sessions doing model work at once (the realtime connections' threads)")
      ->capture_default_str();
  cmd->add_option("--max-transcriptions", args->max_transcriptions,
                  "File transcriptions doing model work at once (their own threads)")
      ->capture_default_str();
  cmd->add_option("--max-queued-transcriptions", args->max_queued_transcriptions,
                  "File transcriptions waiting for one of those threads; more are refused at once (503)")
      ->capture_default_str();
  cmd->add_option("--queue-timeout-seconds", args->queue_timeout_seconds,
                  "The longest a file transcription waits, for a thread and for room in the engine, before a 503")
      ->capture_default_str();
  cmd->add_option("--max-audio-minutes", args->max_audio_minutes,
                  "Longest audio an upload may hold (checked from its header, and as it decodes)")
      ->capture_default_str();
  cmd->add_option("--allowed-origin", args->allowed_origins,
                  "A web origin (https://host[:port], or *) whose pages may call the API; the server's own always may")
      ->take_all();
  cmd->add_flag("--no-access-log", args->no_access_log, "No JSON line per request on standard error");
  cmd->add_flag("--log-probes", args->log_probes,
                "Log the /health and /metrics GETs that succeed too (left out by default: pollers would fill the log)");
  cmd->add_option("--drain-seconds", args->drain_seconds,
                  "On SIGTERM, how long requests and live sessions in progress may finish before they are cancelled")
      ->capture_default_str();
  cmd->add_option("--idle-timeout-seconds", args->idle_seconds,
                  "A realtime connection from which nothing arrives (not even the answer to a ping) for this long is dropped")
      ->capture_default_str();
  cmd->add_option("--max-message-mb", args->max_message_mb, "Largest realtime WebSocket message taken (MB)")
      ->capture_default_str();
  cmd->add_option("--max-connections", args->max_connections,
                  "Connections open at once, WebSockets included; past it: 503 (0: min(4096, the open-file limit - 64))")
      ->capture_default_str();
  cmd->callback([args, key] {
    args->api_key_given = key->count() > 0;
    args->engine.refuse_when_overloaded = true;
    serve(*args);
  });
}

}  // namespace voxrt::cli
