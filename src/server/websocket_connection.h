// One WebSocket connection (Boost.Beast), after an HTTP upgrade: reads messages one at a time and
// hands each to its handler on the connection's I/O strand; sends what it is given, in order, from
// any thread. The handler (a realtime dialect) must not block: model work goes elsewhere. What
// waits to be sent is bounded (max_send_queue_bytes): a client that does not read its events is
// disconnected rather than given the server's memory.
#pragma once

#include <boost/beast/core/tcp_stream.hpp>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "server/http_server.h"

namespace voxrt::server {

class WebSocketConnection;

// What a dialect sees of its connection: safe to keep and use from any thread after the
// connection is gone (sends are then dropped).
class WebSocketSender {
 public:
  explicit WebSocketSender(std::weak_ptr<WebSocketConnection> c) : connection_(std::move(c)) {}
  void send_text(std::string text) const;
  // Sends a close frame (after what is queued) with a status code and reason.
  void close(int code, std::string reason) const;
  // Reading resumes after the handler paused it (WebSocketHandler::pause_reading); a no-op when
  // it is not paused.
  void resume_reading() const;

 private:
  std::weak_ptr<WebSocketConnection> connection_;
};

class WebSocketHandler {
 public:
  virtual ~WebSocketHandler() = default;
  virtual void on_open(const WebSocketSender& out) = 0;
  virtual void on_message(std::string message, bool binary) = 0;
  virtual void on_close() = 0;  // the connection ended (either side); called once
  // Asked after each message: true, and the connection reads nothing more until
  // WebSocketSender::resume_reading() (backpressure: what the client sends next waits in its own
  // socket, not in the server's memory). On the I/O strand, like on_message.
  virtual bool pause_reading() { return false; }
};

struct WebSocketLimits {
  size_t max_message_bytes = size_t{16} << 20;
  // A connection from which nothing arrives for this long is dropped (its session freed). Halfway
  // through a silence the server pings: a client that is still there answers (browsers and WebSocket
  // libraries do it on their own), so a live session may stay silent for any time and resume.
  std::chrono::milliseconds idle_timeout{60'000};
  // Bytes queued for a client that does not read them: past it the connection is closed (1008),
  // or dropped if even the close frame cannot get out, and the handler's on_close runs.
  size_t max_send_queue_bytes = size_t{4} << 20;
  // Once the server closes a connection (its stop, an error), what it queued before the close
  // frame gets this long to get out with it; then the socket goes (a client that does not read
  // must not hold the close, nor a server's stop, until the idle timeout).
  std::chrono::milliseconds close_grace{5'000};
};

// The subprotocols a client offers (Sec-WebSocket-Protocol: a comma-separated list).
std::vector<std::string_view> offered_subprotocols(std::string_view header);
// Browsers cannot set headers on a WebSocket, so OpenAI's browser clients carry their key as a
// subprotocol, "openai-insecure-api-key.<key>", beside "realtime": that key, if offered.
std::optional<std::string_view> subprotocol_api_key(std::string_view header);
// The subprotocol the handshake answers with: "realtime" if offered, else the first one offered
// that carries no key; none when nothing is offered. (A browser that offered subprotocols fails a
// handshake that selects none.)
std::optional<std::string> chosen_subprotocol(std::string_view header);

// Answers the upgrade's handshake (its access record says how: 101, or Beast's refusal) and runs
// the connection until it closes; the bytes that came behind the upgrade request are its first.
void start_websocket(Upgrade upgrade, std::shared_ptr<WebSocketHandler> handler, const WebSocketLimits& limits);

}  // namespace voxrt::server
