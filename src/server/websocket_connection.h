// One WebSocket connection (Boost.Beast), after an HTTP upgrade: reads messages one at a time and
// hands each to its handler on the connection's I/O strand; sends what it is given, in order, from
// any thread. The handler (a realtime dialect) must not block: model work goes elsewhere.
#pragma once

#include <boost/beast/core/tcp_stream.hpp>

#include <chrono>
#include <memory>
#include <string>

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

 private:
  std::weak_ptr<WebSocketConnection> connection_;
};

class WebSocketHandler {
 public:
  virtual ~WebSocketHandler() = default;
  virtual void on_open(const WebSocketSender& out) = 0;
  virtual void on_message(std::string message, bool binary) = 0;
  virtual void on_close() = 0;  // the connection ended (either side); called once
};

struct WebSocketLimits {
  size_t max_message_bytes = size_t{16} << 20;
  // A connection from which nothing arrives for this long is dropped (its session freed). Halfway
  // through a silence the server pings: a client that is still there answers (browsers and WebSocket
  // libraries do it on their own), so a live session may stay silent for any time and resume.
  std::chrono::milliseconds idle_timeout{60'000};
};

// Accepts the upgrade `request` on `stream` and runs the connection until it closes.
void start_websocket(boost::beast::tcp_stream stream, Request request, std::shared_ptr<WebSocketHandler> handler,
                     const WebSocketLimits& limits);

}  // namespace voxrt::server
