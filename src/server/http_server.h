// HTTP/1.1 on Boost.Beast: one listening socket, connections read and written asynchronously by a
// few I/O threads (no thread per connection), each request handed to a Handler with a Reply to
// answer it through, now or later and from any thread (the model work runs elsewhere), in one piece
// or as a chunked stream (Server-Sent Events).
//
// Limits that protect the server whatever a client sends: the header must arrive within
// header_timeout and be at most 16 KB; a body larger than max_body_bytes is refused (413) from its
// Content-Length before it is read; a body or a write that takes longer than io_timeout ends the
// connection;
// malformed requests are answered 400 and the connection closed. "Expect: 100-continue" is
// answered once the handler's on_headers check has passed, so a refused upload is never sent.
#pragma once

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string>

namespace voxrt::server {

using Request = boost::beast::http::request<boost::beast::http::string_body>;
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
  bool closed() const;  // the client went away (or the server is stopping)

 private:
  std::shared_ptr<Connection> connection_;
};

struct HttpLimits {
  size_t max_body_bytes = size_t{100} << 20;
  std::chrono::milliseconds header_timeout{30'000};
  std::chrono::milliseconds io_timeout{120'000};  // for a body to arrive, and for each write of a reply
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

struct Handler {
  // Called once a request's header is in, before its body is read: a RequestError answers it
  // (authentication, a method or path that takes no body) without reading the body.
  std::function<void(const Request& header)> on_headers;
  // Called with the whole request; must answer through `reply` exactly once (send or end).
  std::function<void(Request request, Reply reply)> on_request;
  // Called instead for a WebSocket upgrade request, with the connection's stream, which it takes
  // over (start_websocket). Unset: upgrades are answered as plain requests.
  std::function<void(Request request, boost::beast::tcp_stream stream)> on_upgrade;
  // Called for every answer (on an I/O thread): the access log.
  std::function<void(const AccessRecord&)> on_access;
};

class HttpServer {
 public:
  // Listens on host:port (port 0: any free port) at once; serves from run() on, with the handler
  // given here or by set_handler() before run().
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
  // Stops accepting and ends every connection; run() returns. Safe from any thread, a signal
  // handler's excepted.
  void stop();
  int open_connections() const { return counts_->open.load(); }
  // Requests whose header has arrived and whose reply has not been written whole yet.
  int requests_in_flight() const { return counts_->in_flight.load(); }
  // Waits until no request is in flight (a graceful stop's second half), at most `timeout`; true
  // when none is.
  bool wait_requests_done(std::chrono::milliseconds timeout) const;

  struct Counts {
    std::atomic<int> open{0}, in_flight{0};
  };

 private:
  void accept();

  boost::asio::io_context io_;
  boost::asio::ip::tcp::acceptor acceptor_;
  boost::asio::signal_set signals_{io_};
  // Keeps run() going while no operation is pending (a request being answered by a worker, after
  // stop_accepting), so that its reply still gets written; released by stop().
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work_{io_.get_executor()};
  HttpLimits limits_;
  std::shared_ptr<const Handler> handler_;
  std::shared_ptr<Counts> counts_ = std::make_shared<Counts>();
  std::atomic<bool> stopping_{false};
};

// A plain answer: `body` with its content type, keep-alive as the request asked.
Response make_response(const Request& request, int status, std::string body, const std::string& content_type);

}  // namespace voxrt::server
