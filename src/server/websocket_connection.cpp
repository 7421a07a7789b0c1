#include "server/websocket_connection.h"

#include <boost/asio/async_result.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/bind_handler.hpp>
#include <boost/beast/core/buffers_to_string.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/websocket.hpp>

#include <deque>
#include <optional>
#include <sstream>

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

namespace {

// A dropped close frame gets this long to get out before the socket goes: a client that reads
// nothing does not read it either.
constexpr auto kStuckCloseGrace = std::chrono::milliseconds(500);

}  // namespace

// The WebSocket's transport: the upgraded connection, whose reads first return the bytes the HTTP
// side read past the upgrade request (a client's first frames, sent before the 101 came).
class HandoverStream {
 public:
  using executor_type = beast::tcp_stream::executor_type;

  HandoverStream(beast::tcp_stream stream, beast::flat_buffer early)
      : stream_(std::move(stream)), early_(std::move(early)) {}

  executor_type get_executor() noexcept { return stream_.get_executor(); }
  beast::tcp_stream& next_layer() noexcept { return stream_; }
  const beast::tcp_stream& next_layer() const noexcept { return stream_; }

  template <class MutableBufferSequence, class ReadToken>
  auto async_read_some(const MutableBufferSequence& buffers, ReadToken&& token) {
    return net::async_initiate<ReadToken, void(beast::error_code, size_t)>(
        [this](auto handler, const MutableBufferSequence& into) {
          if (early_.size() == 0) {
            stream_.async_read_some(into, std::move(handler));
            return;
          }
          const size_t n = net::buffer_copy(into, early_.data());
          early_.consume(n);
          net::post(stream_.get_executor(), beast::bind_front_handler(std::move(handler), beast::error_code{}, n));
        },
        token, buffers);
  }

  template <class ConstBufferSequence, class WriteToken>
  auto async_write_some(const ConstBufferSequence& buffers, WriteToken&& token) {
    return stream_.async_write_some(buffers, std::forward<WriteToken>(token));
  }

 private:
  beast::tcp_stream stream_;
  beast::flat_buffer early_;
};

// The closing handshake's end (Beast finds it by argument-dependent lookup): the TCP stream's.
template <class TeardownHandler>
void async_teardown(beast::role_type role, HandoverStream& stream, TeardownHandler&& handler) {
  beast::async_teardown(role, stream.next_layer(), std::forward<TeardownHandler>(handler));
}

class WebSocketConnection : public std::enable_shared_from_this<WebSocketConnection> {
 public:
  WebSocketConnection(Upgrade upgrade, std::shared_ptr<WebSocketHandler> handler, const WebSocketLimits& limits)
      : request_(std::move(upgrade.request)),
        ws_(std::move(upgrade.stream), std::move(upgrade.buffered)),
        handler_(std::move(handler)),
        max_queued_(limits.max_send_queue_bytes),
        close_grace_(limits.close_grace),
        log_handshake_(std::move(upgrade.log_handshake)),
        slot_(std::move(upgrade.slot)),
        close_timer_(ws_.get_executor()),
        pause_timer_(ws_.get_executor()) {
    ws_.read_message_max(limits.max_message_bytes);
    // A handshake must finish in 30 s; an idle peer is pinged halfway through idle_timeout and
    // dropped if nothing (not even the pong) arrives by its end.
    websocket::stream_base::timeout timeout = websocket::stream_base::timeout::suggested(beast::role_type::server);
    timeout.idle_timeout = limits.idle_timeout;
    timeout.keep_alive_pings = true;
    ws_.set_option(timeout);
  }

  void start() {
    // The decorator sees every handshake answer, Beast's refusals included: what it saw is the
    // access record's status and size.
    ws_.set_option(websocket::stream_base::decorator(
        [this, protocol = chosen_subprotocol(request_[beast::http::field::sec_websocket_protocol])](
            websocket::response_type& r) {
          r.set(beast::http::field::server, "voxrt");
          if (protocol && r.result() == beast::http::status::switching_protocols)
            r.set(beast::http::field::sec_websocket_protocol, *protocol);
          std::ostringstream os;
          os << r;
          answer_status_ = static_cast<int>(r.result_int());
          answer_bytes_ = os.str().size();
        }));
    beast::get_lowest_layer(ws_).expires_never();  // the websocket's own timeouts take over
    ws_.async_accept(request_, [self = shared_from_this()](beast::error_code ec) {
      self->request_ = {};  // answered: its header's memory goes
      self->log_handshake(ec);
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
      self->pause_timer_.cancel();
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

  // A refusal Beast wrote whole ends with its own error; any other error cut the answer short.
  void log_handshake(beast::error_code ec) {
    if (!log_handshake_) return;
    const bool refused = ec && ec.category() == websocket::make_error_code(websocket::error::closed).category();
    log_handshake_(answer_status_ ? answer_status_ : 400, answer_bytes_, !ec || refused);
    log_handshake_ = nullptr;
  }

  void read() {
    ws_.async_read(in_, [self = shared_from_this()](beast::error_code ec, size_t) {
      if (ec || self->finished_) {
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
        self->hold_while_paused();
        return;
      }
      self->read();
    });
  }

  void queue(Out out) {
    if (finished_ || closing_) return;
    // One message always goes, however large; past that, a client that lets the queue grow this
    // far is not reading.
    if (!out.close && !out_.empty() && queued_ + out.data.size() > max_queued_) return give_up_on_reader();
    queued_ += out.data.size();
    const bool close = out.close;
    out_.push_back(std::move(out));
    // What is queued before the close frame has close_grace to get out with it (WebSocketLimits).
    if (close) close_by(close_grace_);
    if (!writing_) write_next();
  }

  // The socket goes at `grace` from now if the close has not ended by then (an earlier deadline
  // stands).
  void close_by(std::chrono::milliseconds grace) {
    const auto at = net::steady_timer::clock_type::now() + grace;
    if (close_deadline_ && *close_deadline_ <= at) return;
    close_deadline_ = at;
    close_timer_.expires_at(at);
    close_timer_.async_wait([self = shared_from_this()](beast::error_code ec) {
      if (!ec) self->finish();
    });
  }

  // What waits is dropped and a close frame (1008) goes next; if it cannot get out (the write
  // before it is stuck behind the client's full socket), the socket goes without it.
  void give_up_on_reader() {
    const size_t keep = writing_ ? 1 : 0;  // the message being written stays until its write ends
    while (out_.size() > keep) {
      queued_ -= out_.back().data.size();
      out_.pop_back();
    }
    out_.push_back({"the client does not read its events (more than " + std::to_string(max_queued_ >> 10) +
                        " KiB wait)",
                    true, 1008});
    closing_ = true;
    close_by(kStuckCloseGrace);
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
      if (ec || self->finished_) return self->finish();  // finished meanwhile: out_ is gone
      self->queued_ -= self->out_.front().data.size();
      self->out_.pop_front();
      self->write_next();
    });
  }

  // With no read pending nothing else keeps the connection alive (its senders hold weak
  // pointers): a wait that never ends holds it until the pause ends (cancelled) or the I/O does
  // (its handler destroyed with the io_context, so nothing leaks at exit).
  void hold_while_paused() {
    pause_timer_.expires_at(net::steady_timer::time_point::max());
    pause_timer_.async_wait([self = shared_from_this()](beast::error_code) {});
  }

  void finish() {
    if (finished_) return;
    finished_ = true;
    out_.clear();
    queued_ = 0;
    close_timer_.cancel();
    pause_timer_.cancel();
    beast::error_code ignored;
    beast::get_lowest_layer(ws_).socket().close(ignored);
    slot_.reset();  // the descriptor is closed: it no longer counts among the connections
    handler_->on_close();
  }

  Request request_;  // the upgrade request, kept until Beast has answered it
  websocket::stream<HandoverStream> ws_;
  std::shared_ptr<WebSocketHandler> handler_;
  const size_t max_queued_;
  const std::chrono::milliseconds close_grace_;
  std::function<void(int, size_t, bool)> log_handshake_;
  std::shared_ptr<const void> slot_;
  net::steady_timer close_timer_;  // for a close frame that cannot get out
  std::optional<net::steady_timer::time_point> close_deadline_;  // when close_timer_ ends it
  net::steady_timer pause_timer_;  // holds the connection while its reads are paused
  int answer_status_ = 0;          // the handshake's answer, as the decorator saw it
  size_t answer_bytes_ = 0;
  beast::flat_buffer in_;
  std::deque<Out> out_;
  size_t queued_ = 0;  // bytes in out_
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

void start_websocket(Upgrade upgrade, std::shared_ptr<WebSocketHandler> handler, const WebSocketLimits& limits) {
  std::make_shared<WebSocketConnection>(std::move(upgrade), std::move(handler), limits)->start();
}

}  // namespace voxrt::server
