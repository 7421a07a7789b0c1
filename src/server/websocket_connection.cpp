#include "server/websocket_connection.h"

#include <boost/asio/post.hpp>
#include <boost/beast/core/buffers_to_string.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/websocket.hpp>

#include <deque>

namespace voxrt::server {

namespace beast = boost::beast;

namespace {
constexpr std::string_view kKeyProtocol = "openai-insecure-api-key.";
}

std::vector<std::string_view> offered_subprotocols(std::string_view header) {
  std::vector<std::string_view> out;
  while (!header.empty()) {
    const size_t comma = header.find(',');
    std::string_view item = header.substr(0, comma);
    header = comma == std::string_view::npos ? std::string_view{} : header.substr(comma + 1);
    while (!item.empty() && (item.front() == ' ' || item.front() == '\t')) item.remove_prefix(1);
    while (!item.empty() && (item.back() == ' ' || item.back() == '\t')) item.remove_suffix(1);
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

std::optional<std::string_view> subprotocol_api_key(std::string_view header) {
  for (const std::string_view p : offered_subprotocols(header))
    if (p.substr(0, kKeyProtocol.size()) == kKeyProtocol) return p.substr(kKeyProtocol.size());
  return std::nullopt;
}

std::optional<std::string> chosen_subprotocol(std::string_view header) {
  std::optional<std::string> first;
  for (const std::string_view p : offered_subprotocols(header)) {
    if (p == "realtime") return std::string(p);
    if (!first && p.substr(0, kKeyProtocol.size()) != kKeyProtocol) first = std::string(p);
  }
  return first;
}

namespace websocket = beast::websocket;
namespace net = boost::asio;

class WebSocketConnection : public std::enable_shared_from_this<WebSocketConnection> {
 public:
  WebSocketConnection(beast::tcp_stream stream, std::shared_ptr<WebSocketHandler> handler, const WebSocketLimits& limits)
      : ws_(std::move(stream)), handler_(std::move(handler)) {
    ws_.read_message_max(limits.max_message_bytes);
    // A handshake must finish in 30 s; an idle peer is pinged halfway through idle_timeout and
    // dropped if nothing (not even the pong) arrives by its end.
    websocket::stream_base::timeout timeout = websocket::stream_base::timeout::suggested(beast::role_type::server);
    timeout.idle_timeout = limits.idle_timeout;
    timeout.keep_alive_pings = true;
    ws_.set_option(timeout);
  }

  void start(Request request) {
    ws_.set_option(websocket::stream_base::decorator(
        [protocol = chosen_subprotocol(request[beast::http::field::sec_websocket_protocol])](websocket::response_type& r) {
          r.set(beast::http::field::server, "voxrt");
          if (protocol) r.set(beast::http::field::sec_websocket_protocol, *protocol);
        }));
    beast::get_lowest_layer(ws_).expires_never();  // the websocket's own timeouts take over
    ws_.async_accept(request, [self = shared_from_this()](beast::error_code ec) {
      if (ec) return self->finish();
      self->handler_->on_open(WebSocketSender(self->weak_from_this()));
      self->read();
    });
  }

  void post_text(std::string text) {
    net::post(ws_.get_executor(), [self = shared_from_this(), text = std::move(text)]() mutable {
      self->queue({std::move(text), false, 0});
    });
  }
  void post_resume() {
    net::post(ws_.get_executor(), [self = shared_from_this()] {
      if (!self->paused_ || self->finished_) return;
      self->paused_ = false;
      self->read();
    });
  }
  void post_close(int code, std::string reason) {
    net::post(ws_.get_executor(), [self = shared_from_this(), code, reason = std::move(reason)]() mutable {
      self->queue({std::move(reason), true, code});
    });
  }

 private:
  struct Out {
    std::string data;
    bool close;  // a close frame: data is its reason
    int code;
  };

  void read() {
    ws_.async_read(in_, [self = shared_from_this()](beast::error_code ec, size_t) {
      if (ec) {
        // A message over the limit is answered with a close frame saying so (the stream sends it).
        return self->finish();
      }
      std::string message = beast::buffers_to_string(self->in_.data());
      self->in_.consume(self->in_.size());
      try {
        self->handler_->on_message(std::move(message), !self->ws_.got_text());
      } catch (const std::exception& e) {
        // A dialect's bug must not take the I/O thread (and every other connection) down: this
        // connection ends with "internal error" instead.
        self->queue({std::string("internal error: ") + e.what(), true, 1011});
        return;
      }
      if (self->handler_->pause_reading()) {
        self->paused_ = true;  // post_resume reads on
        return;
      }
      self->read();
    });
  }

  void queue(Out out) {
    if (finished_ || closing_) return;
    out_.push_back(std::move(out));
    if (!writing_) write_next();
  }

  void write_next() {
    if (out_.empty() || finished_) {
      writing_ = false;
      return;
    }
    writing_ = true;
    Out& o = out_.front();
    if (o.close) {
      closing_ = true;
      websocket::close_reason reason(static_cast<websocket::close_code>(o.code), o.data.substr(0, 120));
      ws_.async_close(reason, [self = shared_from_this()](beast::error_code) { self->finish(); });
      return;
    }
    ws_.text(true);
    ws_.async_write(net::buffer(o.data), [self = shared_from_this()](beast::error_code ec, size_t) {
      if (ec) return self->finish();
      self->out_.pop_front();
      self->write_next();
    });
  }

  void finish() {
    if (finished_) return;
    finished_ = true;
    out_.clear();
    beast::error_code ignored;
    beast::get_lowest_layer(ws_).socket().close(ignored);
    handler_->on_close();
  }

  websocket::stream<beast::tcp_stream> ws_;
  std::shared_ptr<WebSocketHandler> handler_;
  beast::flat_buffer in_;
  std::deque<Out> out_;
  bool writing_ = false, closing_ = false, finished_ = false;
  bool paused_ = false;  // no read pending: the handler asked for a pause (pause_reading)
};

void WebSocketSender::send_text(std::string text) const {
  if (auto c = connection_.lock()) c->post_text(std::move(text));
}

void WebSocketSender::resume_reading() const {
  if (auto c = connection_.lock()) c->post_resume();
}

void WebSocketSender::close(int code, std::string reason) const {
  if (auto c = connection_.lock()) c->post_close(code, std::move(reason));
}

void start_websocket(beast::tcp_stream stream, Request request, std::shared_ptr<WebSocketHandler> handler,
                     const WebSocketLimits& limits) {
  std::make_shared<WebSocketConnection>(std::move(stream), std::move(handler), limits)->start(std::move(request));
}

}  // namespace voxrt::server
