#include "server/http_server.h"

#include <sys/resource.h>
#include <sys/socket.h>

#include <cerrno>

#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/string.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/write.hpp>
#include <boost/beast/websocket/rfc6455.hpp>

#include <algorithm>
#include <deque>
#include <iostream>
#include <limits>
#include <list>
#include <mutex>
#include <optional>
#include <sstream>
#include <thread>
#include <vector>

#include "common/error.h"
#include "server/request_error.h"

namespace voxrt::server {

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
namespace websocket = beast::websocket;
using tcp = net::ip::tcp;
using Clock = std::chrono::steady_clock;

class Connection;

struct HttpServer::State {
  explicit State(const HttpLimits& l) : limits(l) {}
  const HttpLimits limits;
  std::atomic<int> open{0}, in_flight{0};
  std::atomic<bool> shutting_down{false};
  std::mutex mu;
  std::list<std::weak_ptr<Connection>> connections;  // the HTTP ones, under mu (begin_shutdown)
};

namespace {

using State = HttpServer::State;

constexpr size_t kMaxHeaderBytes = 16 * 1024;
// A body is read this much at a time (Beast reads what the buffer holds: 512 bytes, unless it is
// given room).
constexpr size_t kBodyReadBytes = 64 * 1024;
// A lingering close reads and drops what the client still sends for this long, or this much.
constexpr auto kLingerTime = std::chrono::seconds(2);
constexpr size_t kLingerBytes = size_t{64} << 20;
constexpr int kBusyRetryAfterSeconds = 1;      // over max_connections
constexpr int kShutdownRetryAfterSeconds = 5;  // shutting down: another instance, or this one restarted
constexpr auto kFirstAcceptDelay = std::chrono::milliseconds(50);
constexpr auto kLastAcceptDelay = std::chrono::milliseconds(1000);

std::string serialize(const Response& r) {
  std::ostringstream os;
  os << r;
  return os.str();
}

std::string status_line(int status) {
  return "HTTP/1.1 " + std::to_string(status) + " " +
         std::string(http::obsolete_reason(http::int_to_status(static_cast<unsigned>(status)))) + "\r\n";
}

// An error answer in OpenAI's shape, with the headers its status calls for.
Response error_response(const RequestError& e, bool keep_alive, int retry_after_seconds = 0) {
  Response r{http::int_to_status(static_cast<unsigned>(e.status())), 11};
  r.set(http::field::server, "voxrt");
  r.set(http::field::content_type, "application/json");
  if (e.status() == 401) r.set(http::field::www_authenticate, "Bearer");
  if (!e.allow().empty()) r.set(http::field::allow, e.allow());
  if (retry_after_seconds > 0) r.set(http::field::retry_after, std::to_string(retry_after_seconds));
  r.keep_alive(keep_alive);
  r.body() = error_json(e.status(), e.what(), e.param());
  r.prepare_payload();
  return r;
}

struct Refusal {
  int status;
  std::string message;
};

// RFC 9112's framing rules that Beast leaves to the server: a body whose end the server cannot
// know (a Transfer-Encoding whose final coding is not chunked) would be read as empty and its
// bytes parsed as a next request (request smuggling); codings other than chunked are not decoded
// here (501); an HTTP/1.1 request names its Host exactly once.
std::optional<Refusal> framing_error(const Request& h) {
  const size_t hosts = h.count(http::field::host);
  if (h.version() >= 11 && hosts == 0) return Refusal{400, "an HTTP/1.1 request needs a Host header"};
  if (hosts > 1) return Refusal{400, "more than one Host header"};
  if (h.count(http::field::transfer_encoding) == 0) return std::nullopt;
  std::string codings;  // every Transfer-Encoding line, as one list
  const auto lines = h.equal_range(http::field::transfer_encoding);
  for (auto line = lines.first; line != lines.second; ++line) codings += std::string(line->value()) + ",";
  if (h.version() < 11) return Refusal{400, "Transfer-Encoding in an HTTP/1.0 request"};
  std::vector<std::string> list;
  for (std::string_view rest = codings; !rest.empty();) {
    const size_t comma = rest.find(',');
    std::string_view item = rest.substr(0, comma);
    rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
    while (!item.empty() && (item.front() == ' ' || item.front() == '\t')) item.remove_prefix(1);
    while (!item.empty() && (item.back() == ' ' || item.back() == '\t')) item.remove_suffix(1);
    if (!item.empty()) list.emplace_back(item);
  }
  const std::string named = codings.substr(0, std::min<size_t>(codings.size() - 1, 100));
  const auto chunked = [](const std::string& c) { return beast::iequals(c, "chunked"); };
  if (list.empty() || !chunked(list.back()))
    return Refusal{400, "Transfer-Encoding: " + named + ": chunked must be the final coding (the body's end is unknown)"};
  if (std::count_if(list.begin(), list.end(), chunked) > 1)
    return Refusal{400, "Transfer-Encoding: " + named + ": chunked applied twice"};
  if (list.size() > 1) return Refusal{501, "Transfer-Encoding: " + named + ": the server decodes no coding but chunked"};
  return std::nullopt;
}

// A connection past max_connections: a short 503 written without blocking (the socket's buffer is
// empty, it fits), then closed, so that descriptors stay bounded whatever the clients do. Returns
// the answer's size, or 0 when it could not be written whole.
size_t refuse_over_capacity(tcp::socket& socket, int max_connections) {
  const std::string answer = serialize(error_response(
      RequestError(503, "the server has too many connections open (" + std::to_string(max_connections) + "); retry shortly"),
      false, kBusyRetryAfterSeconds));
  beast::error_code ec;
  socket.non_blocking(true, ec);
  const size_t written = ec ? 0 : socket.write_some(net::buffer(answer), ec);
  socket.shutdown(tcp::socket::shutdown_send, ec);
  // What the client sent already is read away: closing with unread bytes sends a reset, which can
  // cost the client the answer.
  char sink[4096];
  for (int i = 0; i < 16 && !ec; ++i) socket.read_some(net::buffer(sink), ec);
  socket.close(ec);
  return written == answer.size() ? written : 0;
}

}  // namespace

Response make_response(const Request& request, int status, std::string body, const std::string& content_type) {
  Response r{http::int_to_status(static_cast<unsigned>(status)), request.version()};
  r.set(http::field::server, "voxrt");
  r.set(http::field::content_type, content_type);
  r.keep_alive(request.keep_alive());
  r.body() = std::move(body);
  r.prepare_payload();
  return r;
}

// A descriptor counted among HttpLimits::max_connections while this lives.
class OpenSlot {
 public:
  explicit OpenSlot(std::shared_ptr<State> state) : state_(std::move(state)) { ++state_->open; }
  ~OpenSlot() { --state_->open; }
  OpenSlot(const OpenSlot&) = delete;
  OpenSlot& operator=(const OpenSlot&) = delete;

 private:
  std::shared_ptr<State> state_;
};

// One client connection: reads a request, hands it over, writes what the Reply queues, and reads
// the next request once the reply has ended (keep-alive) or closes the connection.
class Connection : public std::enable_shared_from_this<Connection> {
 public:
  Connection(tcp::socket socket, std::shared_ptr<State> state, std::shared_ptr<const Handler> handler)
      : stream_(std::move(socket)),
        state_(std::move(state)),
        limits_(state_->limits),
        handler_(std::move(handler)),
        slot_(std::make_shared<OpenSlot>(state_)),
        body_timer_(stream_.get_executor()) {
    beast::error_code ec;
    const tcp::endpoint peer = stream_.socket().remote_endpoint(ec);
    remote_ = ec ? "-" : peer.address().to_string();
  }
  ~Connection() {
    in_flight(false);
    unlist();
  }

  void start() {
    {
      std::lock_guard<std::mutex> lock(state_->mu);
      listed_ = state_->connections.insert(state_->connections.end(), weak_from_this());
    }
    net::dispatch(stream_.get_executor(), [self = shared_from_this()] { self->read_header(); });
    // A shutdown that began as this connection was accepted did not see it in the list.
    if (state_->shutting_down) post_shutdown();
  }

  // From any thread (Reply): each runs on the connection's strand.
  void post_send(Response r) {
    net::post(stream_.get_executor(), [self = shared_from_this(), r = std::move(r)]() mutable {
      if (self->state_->shutting_down) {
        self->keep_alive_ = false;
        r.keep_alive(false);
      }
      self->access_.status = static_cast<int>(r.result_int());
      self->queue(self->serialize_answer(std::move(r)), true);
    });
  }
  void post_start_stream(int status, std::string content_type) {
    net::post(stream_.get_executor(), [self = shared_from_this(), status, content_type = std::move(content_type)] {
      if (self->state_->shutting_down) self->keep_alive_ = false;
      std::string head = status_line(status) + "Server: voxrt\r\nContent-Type: " + content_type +
                         "\r\nCache-Control: no-cache\r\nTransfer-Encoding: chunked\r\n";
      if (!self->keep_alive_) head += "Connection: close\r\n";
      self->access_.status = status;
      self->queue(head + "\r\n", false);
    });
  }
  void post_chunk(std::string data) {
    if (data.empty()) return;
    net::post(stream_.get_executor(), [self = shared_from_this(), data = std::move(data)] {
      std::ostringstream size;
      size << std::hex << data.size();
      self->queue(size.str() + "\r\n" + data + "\r\n", false);
    });
  }
  void post_end_stream() {
    net::post(stream_.get_executor(), [self = shared_from_this()] { self->queue("0\r\n\r\n", true); });
  }
  bool closed() const { return closed_.load(); }

  // begin_shutdown: a connection idle between requests is closed; one with a request arriving
  // answers it 503, one with a reply in progress closes after it.
  void post_shutdown() {
    net::post(stream_.get_executor(), [self = shared_from_this()] {
      if (self->closed_ || !self->awaiting_header_ || self->buffer_.size() > 0) return;
      beast::error_code ec;
      if (self->stream_.socket().available(ec) > 0) return;
      self->close();
    });
  }

 private:
  struct Out {
    std::string bytes;
    bool ends_reply;
  };

  void read_header() {
    awaiting_header_ = true;
    parser_.emplace();
    parser_->header_limit(kMaxHeaderBytes);
    // No body limit yet: a Content-Length over it is refused after on_headers (401 before 413).
    // (Not boost::none: Beast 1.74 compares the Content-Length with it, and any number is more.)
    parser_->body_limit(std::numeric_limits<std::uint64_t>::max());
    stream_.expires_after(limits_.header_timeout);
    http::async_read_header(stream_, buffer_, *parser_,
                            [self = shared_from_this()](beast::error_code ec, size_t) { self->on_header(ec); });
  }

  void on_header(beast::error_code ec) {
    awaiting_header_ = false;
    if (closed_) return;  // closed while it waited (begin_shutdown)
    if (ec == http::error::end_of_stream || ec == net::error::connection_reset || ec == beast::error::timeout ||
        ec == net::error::operation_aborted)
      return close();  // the client left, or sent no complete header in time: nothing to answer
    access_ = {};
    access_start_ = Clock::now();
    head_ = !ec && parser_->get().method() == http::verb::head;
    if (!ec) {
      access_.method = std::string(parser_->get().method_string());
      access_.target = std::string(parser_->get().target().substr(0, 200));
    } else {
      access_.method = access_.target = "-";
    }
    in_flight(true);  // whatever comes now is answered
    if (ec == http::error::header_limit) return refuse(431, "the request header is larger than 16 KB");
    if (ec) return refuse(400, "malformed HTTP request: " + ec.message());
    const Request& header = parser_->get();
    keep_alive_ = header.keep_alive();
    if (const std::optional<Refusal> bad = framing_error(header)) return refuse(bad->status, bad->message);
    if (state_->shutting_down) return refuse(RequestError(503, "the server is shutting down"), false, kShutdownRetryAfterSeconds);
    try {
      if (handler_->on_headers) handler_->on_headers(header);
    } catch (const RequestError& e) {
      return refuse(e);
    }
    if (const auto length = parser_->content_length(); length && *length > limits_.max_body_bytes) return refuse_size();
    parser_->body_limit(limits_.max_body_bytes);  // a chunked body stops there as it is read
    if (beast::iequals(header[http::field::expect], "100-continue")) {
      stream_.expires_after(limits_.io_timeout);
      auto bytes = std::make_shared<std::string>("HTTP/1.1 100 Continue\r\n\r\n");
      net::async_write(stream_, net::buffer(*bytes), [self = shared_from_this(), bytes](beast::error_code ec, size_t) {
        if (ec) return self->close();
        self->read_body();
      });
      return;
    }
    read_body();
  }

  void refuse_size() {
    refuse(413, "the request body is larger than the server takes (" + std::to_string(limits_.max_body_bytes >> 20) +
                    " MB)");
  }

  // The body is read a piece at a time, so that each piece re-arms the silence timer
  // (io_timeout): a slow upload goes on as long as it moves.
  void read_body() {
    buffer_.reserve(kBodyReadBytes);
    stream_.expires_never();
    reading_body_ = true;
    body_seen_ = Clock::now();
    arm_body_timer();
    read_body_piece();
  }

  void read_body_piece() {
    if (parser_->is_done()) return on_body_done();
    http::async_read_some(stream_, buffer_, *parser_,
                          [self = shared_from_this()](beast::error_code ec, size_t) { self->on_body_piece(ec); });
  }

  void arm_body_timer() {
    body_timer_.expires_at(body_seen_ + limits_.io_timeout);
    body_timer_.async_wait([self = shared_from_this()](beast::error_code ec) {
      if (ec || !self->reading_body_) return;
      if (Clock::now() < self->body_seen_ + self->limits_.io_timeout) return self->arm_body_timer();
      self->body_timed_out_ = true;
      beast::error_code ignored;
      self->stream_.socket().cancel(ignored);  // the read ends (operation_aborted), answered 408
    });
  }

  void on_body_piece(beast::error_code ec) {
    body_seen_ = Clock::now();
    if (!ec && !body_timed_out_) return read_body_piece();
    end_body();
    if (closed_) return;
    if (body_timed_out_)
      return refuse(408, "the request body stopped arriving (nothing for " +
                             std::to_string(limits_.io_timeout.count()) + " ms)");
    if (ec == http::error::body_limit) return refuse_size();
    if (ec.category() == spool_category())
      return refuse(spool_error_status(ec), "the server cannot keep the request body: no temporary file in " +
                                                spool_directory() + " takes it (" + ec.message() + ")");
    if (ec == http::error::end_of_stream || ec == http::error::partial_message || ec == net::error::connection_reset ||
        ec == net::error::operation_aborted)
      return close();  // cut off: the client is gone
    refuse(400, "malformed HTTP request body: " + ec.message());
  }

  void end_body() {
    reading_body_ = false;
    body_timer_.cancel();
    buffer_.shrink_to_fit();  // a connection between requests keeps no read room
  }

  void on_body_done() {
    end_body();
    Request request = parser_->release();
    if (handler_->on_upgrade && websocket::is_upgrade(request)) return hand_over(std::move(request));
    watch_client();
    try {
      handler_->on_request(std::move(request), Reply(shared_from_this()));
    } catch (const RequestError& e) {
      refuse(e, keep_alive_);
    } catch (const std::exception& e) {
      refuse(RequestError(500, std::string("internal error: ") + e.what()), keep_alive_);
    }
  }

  // The stream, and what was read past the request, go to the WebSocket; the access record is
  // made when its handshake has been answered.
  void hand_over(Request request) {
    in_flight(false);
    unlist();
    closed_ = true;  // the stream is the WebSocket's from here on
    handed_over_ = true;
    AccessRecord record = access_;
    record.remote = remote_;
    auto log = [handler = handler_, record, start = access_start_](int status, size_t bytes, bool completed) mutable {
      if (!handler->on_access) return;
      record.status = status;
      record.bytes = bytes;
      record.completed = completed;
      record.seconds = std::chrono::duration<double>(Clock::now() - start).count();
      handler->on_access(record);
    };
    handler_->on_upgrade(Upgrade{std::move(request), std::move(stream_), std::move(buffer_), std::move(log), slot_});
    slot_.reset();
  }

  // While the handler works (a transcription may take minutes), a client that closes or resets
  // its connection is noticed at once: Reply::closed() tells the work to stop. When the socket
  // turns readable, a peek says what came: the end of the stream or an error (the client is
  // gone), or bytes of a next request (pipelining), which stay in the socket for read_header and
  // end the watch. Nothing at all is a stale readiness (the reactor's edge-triggered events can
  // outlive the bytes that caused them): the watch goes on.
  void watch_client() {
    if (buffer_.size() > 0) return;  // a next request is in already
    watching_ = true;
    const uint64_t gen = ++watch_gen_;
    stream_.socket().async_wait(tcp::socket::wait_read, [self = shared_from_this(), gen](beast::error_code ec) {
      if (gen != self->watch_gen_) return;  // a watch since stopped
      self->watching_ = false;
      if (ec || self->closed_) return;
      char byte;
      const ssize_t n = ::recv(self->stream_.socket().native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
      if (n > 0) return;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return self->watch_client();
      self->close();
    });
  }

  void stop_watching() {
    if (!watching_) return;
    watching_ = false;
    ++watch_gen_;
    beast::error_code ignored;
    stream_.socket().cancel(ignored);  // the watch is the socket's only operation between a reply and the next read
  }

  // Answers with an error in OpenAI's shape; closes the connection afterwards unless keep is set
  // (a request whose body was read whole can be followed by another).
  void refuse(const RequestError& e, bool keep = false, int retry_after_seconds = 0) {
    keep_alive_ = keep_alive_ && keep && !state_->shutting_down;
    access_.status = e.status();
    queue(serialize_answer(error_response(e, keep_alive_, retry_after_seconds)), true);
  }
  void refuse(int status, const std::string& message) { refuse(RequestError(status, message)); }

  // A whole answer's bytes. A HEAD request is answered as its GET, without the body (RFC 9110
  // §9.3.2): the header says the length the body would have.
  std::string serialize_answer(Response r) const {
    if (head_) {
      const size_t length = r.body().size();
      r.body().clear();
      r.content_length(length);
    }
    return serialize(r);
  }

  void queue(std::string bytes, bool ends_reply) {
    if (closed_) return;
    // A client that does not read: what waits for it is bounded (one piece always goes, so that a
    // large answer in one send is not refused).
    if (!out_.empty() && queued_ + bytes.size() > limits_.max_send_queue_bytes) return close();
    queued_ += bytes.size();
    access_.bytes += bytes.size();
    out_.push_back({std::move(bytes), ends_reply});
    if (!writing_) write_next();
  }

  void write_next() {
    if (out_.empty() || closed_) {
      writing_ = false;
      return;
    }
    writing_ = true;
    stream_.expires_after(limits_.io_timeout);
    net::async_write(stream_, net::buffer(out_.front().bytes), [self = shared_from_this()](beast::error_code ec, size_t) {
      if (ec || self->closed_) return self->close();  // closed meanwhile (client gone): out_ is gone
      const bool ended = self->out_.front().ends_reply;
      self->queued_ -= self->out_.front().bytes.size();
      self->out_.pop_front();
      if (ended) {
        self->writing_ = false;
        self->log_access(true);
        self->in_flight(false);
        self->stop_watching();
        if (!self->keep_alive_ || self->state_->shutting_down) return self->linger();
        self->read_header();
        return;
      }
      self->write_next();
    });
  }

  // After the last answer: the sending side is shut (the client reads the answer, then the end),
  // and what the client still sends (a body not read, a refused upload) is read and dropped for a
  // while, since closing a socket with unread bytes sends a reset, which can cost the client the
  // answer it has not read yet.
  void linger() {
    closed_ = true;
    unlist();
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
    buffer_.consume(buffer_.size());
    lingered_ = 0;
    stream_.expires_after(kLingerTime);
    linger_read();
  }

  void linger_read() {
    stream_.async_read_some(buffer_.prepare(16 * 1024), [self = shared_from_this()](beast::error_code ec, size_t n) {
      self->lingered_ += n;
      if (ec || self->lingered_ >= kLingerBytes) return self->release_socket();
      self->linger_read();
    });
  }

  void log_access(bool completed) {
    if (!handler_->on_access) return;
    access_.completed = completed;
    access_.seconds = std::chrono::duration<double>(Clock::now() - access_start_).count();
    access_.remote = remote_;
    handler_->on_access(access_);
  }

  void in_flight(bool yes) {
    if (yes != in_flight_) state_->in_flight += yes ? 1 : -1;
    in_flight_ = yes;
  }

  void unlist() {
    if (!listed_) return;
    std::lock_guard<std::mutex> lock(state_->mu);
    state_->connections.erase(*listed_);
    listed_.reset();
  }

  // Ends the connection at once: the client is gone, or not worth an answer.
  void close() {
    if (!closed_.exchange(true)) {
      if (in_flight_) log_access(false);
      in_flight(false);
      unlist();
      out_.clear();
      queued_ = 0;
    }
    release_socket();
  }

  void release_socket() {
    if (handed_over_) return;
    body_timer_.cancel();
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_both, ignored);
    stream_.close();
    slot_.reset();
  }

  beast::tcp_stream stream_;
  const std::shared_ptr<State> state_;
  const HttpLimits& limits_;  // state_'s
  std::shared_ptr<const Handler> handler_;
  std::shared_ptr<OpenSlot> slot_;  // released with the descriptor
  std::string remote_;              // the client's address
  std::optional<std::list<std::weak_ptr<Connection>>::iterator> listed_;  // in state_->connections
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<SpooledBody>> parser_;
  std::deque<Out> out_;
  size_t queued_ = 0;  // bytes in out_
  bool writing_ = false;
  bool keep_alive_ = false;
  bool head_ = false;             // the request being answered is a HEAD: its answer goes without a body
  bool in_flight_ = false;        // a request is being answered (HttpServer::requests_in_flight)
  bool awaiting_header_ = false;  // idle between requests, or a header arriving
  bool reading_body_ = false;
  bool body_timed_out_ = false;
  bool handed_over_ = false;          // to a WebSocket
  net::steady_timer body_timer_;      // the silence within a body
  Clock::time_point body_seen_;       // when the body's last piece came
  bool watching_ = false;             // watch_client's wait is pending
  uint64_t watch_gen_ = 0;            // which wait is watch_client's current one; others are stale
  size_t lingered_ = 0;               // bytes dropped by the lingering close
  AccessRecord access_;               // of the request being answered
  Clock::time_point access_start_;
  std::atomic<bool> closed_{false};
};

void Reply::send(Response response) const { connection_->post_send(std::move(response)); }
void Reply::start_stream(int status, const std::string& content_type) const {
  connection_->post_start_stream(status, content_type);
}
void Reply::write(std::string data) const { connection_->post_chunk(std::move(data)); }
void Reply::end() const { connection_->post_end_stream(); }
bool Reply::closed() const { return connection_->closed(); }

HttpServer::HttpServer(const std::string& host, uint16_t port, HttpLimits limits, Handler handler)
    : acceptor_(net::make_strand(io_)),
      accept_timer_(acceptor_.get_executor()),
      handler_(std::make_shared<const Handler>(std::move(handler))),
      state_(std::make_shared<State>(limits)) {
  // The first of the host's addresses that takes the socket (a name may have several).
  beast::error_code ec;
  for (const tcp::endpoint& endpoint : listen_endpoints(host, port)) {
    beast::error_code ignored;
    acceptor_.close(ignored);
    ec = {};
    acceptor_.open(endpoint.protocol(), ec);
    if (!ec) acceptor_.set_option(net::socket_base::reuse_address(true), ec);
    if (!ec) acceptor_.bind(endpoint, ec);
    if (!ec) acceptor_.listen(net::socket_base::max_listen_connections, ec);
    if (!ec) break;
  }
  if (ec) throw Error("serve: cannot listen on " + http_url(host, port) + ": " + ec.message());
  port_ = acceptor_.local_endpoint().port();
  accept();
}

std::vector<tcp::endpoint> HttpServer::listen_endpoints(const std::string& host, uint16_t port) {
  beast::error_code ec;
  const net::ip::address address = net::ip::make_address(host, ec);
  if (!ec) return {{address, port}};
  // A name (localhost, the machine's): its addresses, IPv4 ones first, since "localhost" may
  // resolve to ::1 first while clients (and a browser's http://localhost) reach 127.0.0.1 too.
  tcp::resolver resolver(io_);
  const auto found = resolver.resolve(host, std::to_string(port), tcp::resolver::passive | tcp::resolver::numeric_service, ec);
  if (ec || found.empty())
    throw Error("serve: --host " + host + ": not an IP address, and the name does not resolve (" +
                (ec ? ec.message() : std::string("no address")) + ")");
  std::vector<tcp::endpoint> endpoints;
  for (const auto& entry : found) endpoints.push_back(entry.endpoint());
  std::stable_partition(endpoints.begin(), endpoints.end(), [](const tcp::endpoint& e) { return e.address().is_v4(); });
  return endpoints;
}

std::string http_url(const std::string& host, uint16_t port) {
  // An IPv6 address is bracketed in a URL (RFC 3986 §3.2.2): http://[::1]:8000.
  const bool ipv6 = host.find(':') != std::string::npos;
  return "http://" + (ipv6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

HttpServer::~HttpServer() { stop(); }

void HttpServer::set_handler(Handler handler) { handler_ = std::make_shared<const Handler>(std::move(handler)); }

uint16_t HttpServer::port() const { return port_; }

int HttpServer::open_connections() const { return state_->open.load(); }

int HttpServer::requests_in_flight() const { return state_->in_flight.load(); }

bool HttpServer::shutting_down() const { return state_->shutting_down.load(); }

void HttpServer::accept() {
  acceptor_.async_accept(net::make_strand(io_), [this](beast::error_code ec, tcp::socket socket) {
    if (stopping_ || state_->shutting_down || ec == net::error::operation_aborted) return;
    if (ec) return back_off(ec);
    accept_delay_ = std::chrono::milliseconds(0);
    if (state_->open.load() >= state_->limits.max_connections) {
      beast::error_code error;
      const tcp::endpoint peer = socket.remote_endpoint(error);
      const size_t bytes = refuse_over_capacity(socket, state_->limits.max_connections);
      if (handler_->on_access) {  // counted among the answers (/metrics)
        AccessRecord r;
        r.remote = error ? "-" : peer.address().to_string();
        r.method = r.target = "-";
        r.status = 503;
        r.bytes = bytes;
        r.completed = bytes > 0;
        handler_->on_access(r);
      }
    } else {
      std::make_shared<Connection>(std::move(socket), state_, handler_)->start();
    }
    accept();
  });
}

// A failed accept (out of descriptors, say) must neither end the server nor spin: the listening
// socket stays readable, so accepting again at once fails again at once. One line per episode.
void HttpServer::back_off(const boost::system::error_code& error) {
  if (accept_delay_.count() == 0)
    std::cerr << "voxrt: cannot accept connections (" << error.message() << "); retrying, 50 ms to 1 s apart"
              << std::endl;
  accept_delay_ = accept_delay_.count() == 0 ? kFirstAcceptDelay : std::min(accept_delay_ * 2, kLastAcceptDelay);
  accept_timer_.expires_after(accept_delay_);
  accept_timer_.async_wait([this](beast::error_code ec) {
    if (!ec && !stopping_ && !state_->shutting_down) accept();
  });
}

void HttpServer::run(int threads) {
  std::vector<std::thread> pool;
  for (int i = 1; i < threads; ++i) pool.emplace_back([this] { io_.run(); });
  io_.run();
  for (std::thread& t : pool) t.join();
}

void HttpServer::on_stop_signal(std::function<void()> on_signal) {
  signals_.add(SIGINT);
  signals_.add(SIGTERM);
  signals_.async_wait([on_signal = std::move(on_signal)](beast::error_code ec, int) {
    if (!ec) on_signal();
  });
}

void HttpServer::stop_accepting() {
  net::post(acceptor_.get_executor(), [this] {
    stopping_ = true;
    beast::error_code ignored;
    acceptor_.close(ignored);
    accept_timer_.cancel();
  });
}

void HttpServer::begin_shutdown() {
  if (state_->shutting_down.exchange(true)) return;
  net::post(acceptor_.get_executor(), [this] {
    beast::error_code ignored;
    acceptor_.close(ignored);
    accept_timer_.cancel();
  });
  std::vector<std::shared_ptr<Connection>> open;
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    for (const std::weak_ptr<Connection>& w : state_->connections)
      if (auto c = w.lock()) open.push_back(std::move(c));
  }
  for (const auto& c : open) c->post_shutdown();
}

bool HttpServer::wait_requests_done(std::chrono::milliseconds timeout) const {
  const auto until = Clock::now() + timeout;
  while (state_->in_flight.load() > 0) {
    if (Clock::now() >= until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

void HttpServer::stop() {
  stopping_ = true;
  work_.reset();
  io_.stop();
}

uint64_t raise_open_file_limit() {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) return 1024;  // the usual default, when it cannot be read
  if (limit.rlim_cur < limit.rlim_max) {
    rlimit raised = limit;
    raised.rlim_cur = limit.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &raised) == 0) limit = raised;
  }
  return limit.rlim_cur == RLIM_INFINITY ? UINT64_MAX : static_cast<uint64_t>(limit.rlim_cur);
}

}  // namespace voxrt::server
