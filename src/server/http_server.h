// HTTP/1.1 on Boost.Beast: one listening socket, connections read and written asynchronously by a
// few I/O threads (no thread per connection), each request handed to a Handler with a Reply to
// answer it through, now or later and from any thread (the model work runs elsewhere), in one piece
// or as a chunked stream (Server-Sent Events).
//
// Limits that protect the server whatever a client sends (HttpLimits): at most max_connections
// descriptors (past it: an immediate 503); the header must arrive within header_timeout and be at
// most 16 KB; the handler's on_headers check (authentication, the route) comes first, then a
// Content-Length over max_body_bytes is refused (413) before the body is read, and a chunked body
// is cut at that size; a body that goes silent for io_timeout is answered 408; framing that could
// smuggle a second request (a Transfer-Encoding other than chunked, no Host) is refused and the
// connection closed; bodies past 1 MiB go to a temporary file (SpooledBody); a client that reads
// no more of a streamed reply is dropped once max_send_queue_bytes wait. "Expect: 100-continue" is
// answered once on_headers has passed, so a refused upload is never sent. An error answer that
// closes the connection is followed by a lingering close (the client's late bytes read and
// dropped for a while), so that the client reads the answer instead of a reset.
#pragma once

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "server/spooled_body.h"

namespace voxrt::server {

// A request's body: in memory up to 1 MiB, else in a temporary file (body().view() reads it).
using Request = boost::beast::http::request<SpooledBody>;
using Response = boost::beast::http::response<boost::beast::http::string_body>;

class Connection;

// How a request is answered: once, with send(); or as a stream: start_stream(), any number of
// write(), then end(). Safe to use from any thread and to keep after the connection is gone
// (closed() says so, and what is sent then is dropped).
class Reply {
 public:
  explicit Reply(std::shared_ptr<Connection> c) : connection_(std::move(c)) {}
  void send(Response response) const;
  void start_stream(int status, const std::string& content_type) const;
  void write(std::string data) const;  // one chunk of the stream (empty: nothing sent)
  void end() const;
  // The client went away (it closed or reset its connection, noticed even while the handler works
  // and nothing is written), or let a stream's events pile up unread: the work can stop.
  bool closed() const;

 private:
  std::shared_ptr<Connection> connection_;
};

struct HttpLimits {
  size_t max_body_bytes = size_t{100} << 20;
  // For a request's whole header, counted from when the server starts waiting for it (slowloris).
  std::chrono::milliseconds header_timeout{30'000};
  // The longest silence in the middle of a body (re-armed by every piece that arrives: a slow
  // steady upload is never cut), and the time each write of a reply may take.
  std::chrono::milliseconds io_timeout{120'000};
  // Connections open at once, WebSockets included (each holds a descriptor). Past it a new
  // connection is answered 503 at once and closed. See raise_open_file_limit.
  int max_connections = 4096;
  // Bytes of a reply queued for a client that does not read them (a stream's events pile up):
  // past it the connection is closed and Reply::closed() turns true.
  size_t max_send_queue_bytes = size_t{4} << 20;
};

// One answered request, for the access log: when it ended, who asked, what, and how it went.
struct AccessRecord {
  std::string remote;          // the client's address
  std::string method, target;  // "-" when the request did not parse that far
  int status = 0;
  size_t bytes = 0;            // sent, headers included
  double seconds = 0;          // from its header's arrival to its answer's last byte
  bool completed = true;       // false: the connection ended before the answer did
};

// A WebSocket upgrade request, handed over with its connection (Handler::on_upgrade, then
// start_websocket).
struct Upgrade {
  Request request;
  boost::beast::tcp_stream stream;
  // Bytes that came right behind the request (a client may send its first frames without waiting
  // for the 101): the WebSocket reads them first.
  boost::beast::flat_buffer buffered;
  // Records the handshake's answer as the request's access record: its status (101, or the
  // refusal's), the bytes sent, and whether it went out whole. Call once.
  std::function<void(int status, size_t bytes, bool completed)> log_handshake;
  // Counts the connection among HttpLimits::max_connections while it is held.
  std::shared_ptr<const void> slot;
};

struct Handler {
  // Called once a request's header is in, before its body is read: a RequestError answers it
  // (authentication, a method or path that takes no body) without reading the body.
  std::function<void(const Request& header)> on_headers;
  // Called with the whole request; must answer through `reply` exactly once (send or end).
  std::function<void(Request request, Reply reply)> on_request;
  // Called instead for a WebSocket upgrade request, with the connection, which it takes over
  // (start_websocket). Unset: upgrades are answered as plain requests.
  std::function<void(Upgrade upgrade)> on_upgrade;
  // Called for every answer (on an I/O thread): the access log.
  std::function<void(const AccessRecord&)> on_access;
};

class HttpServer {
 public:
  // Listens on host:port (port 0: any free port) at once; serves from run() on, with the handler
  // given here or by set_handler() before run(). The host is an IP address or a name (localhost):
  // the first of its addresses that can be bound, IPv4 ones first.
  HttpServer(const std::string& host, uint16_t port, HttpLimits limits, Handler handler = {});
  void set_handler(Handler handler);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  uint16_t port() const;
  // Runs the I/O on `threads` threads until stop(); returns when they are done.
  void run(int threads);
  // Calls on_signal, on an I/O thread, when the process gets SIGINT or SIGTERM (whichever thread
  // the signal lands on).
  void on_stop_signal(std::function<void()> on_signal);
  // Closes the listening socket; the connections open go on (a graceful stop's first half).
  void stop_accepting();
  // Shutdown mode (any thread; once is enough): stops accepting; closes the HTTP connections idle
  // between requests; a request that still arrives, an upgrade too, is answered 503 (Retry-After)
  // and its connection closed; a reply in progress goes on, its connection closed after it.
  void begin_shutdown();
  bool shutting_down() const;
  // Stops accepting and ends every connection; run() returns. Safe from any thread, a signal
  // handler's excepted.
  void stop();
  // Descriptors of connections: HTTP ones, WebSockets, and those lingering after their last answer.
  int open_connections() const;
  // Requests whose header has arrived and whose reply has not been written whole yet.
  int requests_in_flight() const;
  // Waits until no request is in flight (a graceful stop's second half), at most `timeout`; true
  // when none is.
  bool wait_requests_done(std::chrono::milliseconds timeout) const;

  struct State;  // what the connections share with the server

 private:
  // Where --host says to listen: an IP address (IPv4 or IPv6), or a name's addresses.
  std::vector<boost::asio::ip::tcp::endpoint> listen_endpoints(const std::string& host, uint16_t port);
  void accept();
  void back_off(const boost::system::error_code& error);

  boost::asio::io_context io_;
  boost::asio::ip::tcp::acceptor acceptor_;  // on a strand of its own, with accept_timer_
  // After a failed accept (out of descriptors, say): the next one waits, 50 ms doubling to 1 s.
  boost::asio::steady_timer accept_timer_;
  std::chrono::milliseconds accept_delay_{0};  // 0: the last accept succeeded
  boost::asio::signal_set signals_{io_};
  // Keeps run() going while no operation is pending (a request being answered by a worker, after
  // stop_accepting), so that its reply still gets written; released by stop().
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work_{io_.get_executor()};
  std::shared_ptr<const Handler> handler_;
  std::shared_ptr<State> state_;
  uint16_t port_ = 0;  // kept: the acceptor may be closed
  std::atomic<bool> stopping_{false};
};

// Raises this process's soft limit on open files to its hard limit (a connection holds a
// descriptor, a spooled upload another) and returns the soft limit in force then. A server takes
// max_connections = min(4096, this - 64), the rest for files and the model.
uint64_t raise_open_file_limit();

// The server's address as a URL: http://host:port, an IPv6 address bracketed (http://[::1]:8000).
std::string http_url(const std::string& host, uint16_t port);

// A plain answer: `body` with its content type, keep-alive as the request asked.
Response make_response(const Request& request, int status, std::string body, const std::string& content_type);

}  // namespace voxrt::server
