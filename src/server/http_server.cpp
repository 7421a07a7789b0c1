#include "server/http_server.h"

#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/write.hpp>
#include <boost/beast/websocket/rfc6455.hpp>

#include <deque>
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

namespace {

constexpr size_t kMaxHeaderBytes = 16 * 1024;

std::string serialize(const Response& r) {
  std::ostringstream os;
  os << r;
  return os.str();
}

std::string status_line(int status) {
  return "HTTP/1.1 " + std::to_string(status) + " " +
         std::string(http::obsolete_reason(http::int_to_status(static_cast<unsigned>(status)))) + "\r\n";
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

// One client connection: reads a request, hands it over, writes what the Reply queues, and reads
// the next request once the reply has ended (keep-alive) or shuts the connection.
class Connection : public std::enable_shared_from_this<Connection> {
 public:
  Connection(tcp::socket socket, const HttpLimits& limits, std::shared_ptr<const Handler> handler,
             std::shared_ptr<HttpServer::Counts> counts)
      : stream_(std::move(socket)), limits_(limits), handler_(std::move(handler)), counts_(std::move(counts)) {
    ++counts_->open;
  }
  ~Connection() {
    in_flight(false);
    --counts_->open;
  }

  void start() {
    net::dispatch(stream_.get_executor(), [self = shared_from_this()] { self->read_header(); });
  }

  // From any thread (Reply): each runs on the connection's strand.
  void post_send(Response r) {
    net::post(stream_.get_executor(), [self = shared_from_this(), r = std::move(r)]() mutable {
      self->access_.status = static_cast<int>(r.result_int());
      self->queue(serialize(r), true);
    });
  }
  void post_start_stream(int status, std::string content_type) {
    net::post(stream_.get_executor(), [self = shared_from_this(), status, content_type = std::move(content_type)] {
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

 private:
  struct Out {
    std::string bytes;
    bool ends_reply;
  };

  void read_header() {
    parser_.emplace();
    parser_->header_limit(kMaxHeaderBytes);
    parser_->body_limit(limits_.max_body_bytes);
    stream_.expires_after(limits_.header_timeout);
    http::async_read_header(stream_, buffer_, *parser_,
                            [self = shared_from_this()](beast::error_code ec, size_t) { self->on_header(ec); });
  }

  void on_header(beast::error_code ec) {
    if (ec == http::error::end_of_stream || ec == net::error::connection_reset || ec == beast::error::timeout ||
        ec == net::error::operation_aborted)
      return close();  // the client left, or sent no complete header in time: nothing to answer
    access_ = {};
    access_start_ = std::chrono::steady_clock::now();
    if (!ec || ec == http::error::body_limit) {
      access_.method = std::string(parser_->get().method_string());
      access_.target = std::string(parser_->get().target().substr(0, 200));
    } else {
      access_.method = access_.target = "-";
    }
    if (ec == http::error::body_limit)
      return refuse(413, "the request body is larger than the server takes (" +
                             std::to_string(limits_.max_body_bytes >> 20) + " MB)");
    if (ec == http::error::header_limit) return refuse(431, "the request header is larger than 16 KB");
    in_flight(true);  // whatever comes now is answered
    if (ec) return refuse(400, "malformed HTTP request: " + ec.message());
    const Request& header = parser_->get();
    keep_alive_ = header.keep_alive();
    try {
      if (handler_->on_headers) handler_->on_headers(header);
    } catch (const RequestError& e) {
      return refuse(e.status(), e.what(), e.param());
    }
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

  void read_body() {
    stream_.expires_after(limits_.io_timeout);
    http::async_read(stream_, buffer_, *parser_,
                     [self = shared_from_this()](beast::error_code ec, size_t) { self->on_body(ec); });
  }

  void on_body(beast::error_code ec) {
    if (ec == http::error::body_limit)
      return refuse(413, "the request body is larger than the server takes (" +
                             std::to_string(limits_.max_body_bytes >> 20) + " MB)");
    if (ec == http::error::end_of_stream || ec == http::error::partial_message || ec == net::error::connection_reset ||
        ec == beast::error::timeout || ec == net::error::operation_aborted)
      return close();  // cut off or stalled: the client is gone, or is not worth waiting for
    if (ec) return refuse(400, "malformed HTTP request body: " + ec.message());
    stream_.expires_never();  // the handler may take a while; the reply's writes set their own limit
    Request request = parser_->release();
    if (handler_->on_upgrade && websocket::is_upgrade(request)) {  // on_headers passed it already
      in_flight(false);
      access_.status = 101;
      log_access(true);
      closed_ = true;  // the stream is the WebSocket's from here on
      return handler_->on_upgrade(std::move(request), std::move(stream_));
    }
    try {
      handler_->on_request(std::move(request), Reply(shared_from_this()));
    } catch (const RequestError& e) {
      refuse(e.status(), e.what(), e.param(), keep_alive_);
    } catch (const std::exception& e) {
      refuse(500, std::string("internal error: ") + e.what(), {}, keep_alive_);
    }
  }

  // Answers with an error in OpenAI's shape; closes the connection afterwards unless keep is set
  // (a request whose body was read whole can be followed by another).
  void refuse(int status, const std::string& message, const std::string& param = {}, bool keep = false) {
    keep_alive_ = keep_alive_ && keep;
    Response r{http::int_to_status(static_cast<unsigned>(status)), 11};
    r.set(http::field::server, "voxrt");
    r.set(http::field::content_type, "application/json");
    if (status == 401) r.set(http::field::www_authenticate, "Bearer");
    r.keep_alive(keep_alive_);
    r.body() = error_json(status, message, param);
    r.prepare_payload();
    access_.status = status;
    queue(serialize(r), true);
  }

  void queue(std::string bytes, bool ends_reply) {
    if (closed_) return;
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
      if (ec) return self->close();
      const bool ended = self->out_.front().ends_reply;
      self->out_.pop_front();
      if (ended) {
        self->writing_ = false;
        self->log_access(true);
        self->in_flight(false);
        if (!self->keep_alive_) return self->close();
        self->read_header();
        return;
      }
      self->write_next();
    });
  }

  void log_access(bool completed) {
    if (!handler_->on_access) return;
    access_.completed = completed;
    access_.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - access_start_).count();
    beast::error_code ec;
    const tcp::endpoint peer = stream_.socket().remote_endpoint(ec);
    access_.remote = ec ? "-" : peer.address().to_string();
    handler_->on_access(access_);
  }

  void in_flight(bool yes) {
    if (yes != in_flight_) counts_->in_flight += yes ? 1 : -1;
    in_flight_ = yes;
  }

  void close() {
    if (closed_.exchange(true)) return;
    if (in_flight_) log_access(false);
    in_flight(false);
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
    stream_.close();
    out_.clear();
  }

  beast::tcp_stream stream_;
  const HttpLimits limits_;
  std::shared_ptr<const Handler> handler_;
  std::shared_ptr<HttpServer::Counts> counts_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  std::deque<Out> out_;
  bool writing_ = false;
  bool keep_alive_ = false;
  bool in_flight_ = false;  // a request is being answered (HttpServer::requests_in_flight)
  AccessRecord access_;     // of the request being answered
  std::chrono::steady_clock::time_point access_start_;
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
    : acceptor_(io_), limits_(limits), handler_(std::make_shared<const Handler>(std::move(handler))) {
  beast::error_code ec;
  const net::ip::address address = net::ip::make_address(host, ec);
  if (ec) throw Error("serve: --host " + host + ": not an IP address (" + ec.message() + ")");
  const tcp::endpoint endpoint{address, port};
  acceptor_.open(endpoint.protocol(), ec);
  if (!ec) acceptor_.set_option(net::socket_base::reuse_address(true), ec);
  if (!ec) acceptor_.bind(endpoint, ec);
  if (!ec) acceptor_.listen(net::socket_base::max_listen_connections, ec);
  if (ec) throw Error("serve: cannot listen on " + host + ":" + std::to_string(port) + ": " + ec.message());
  accept();
}

HttpServer::~HttpServer() { stop(); }

void HttpServer::set_handler(Handler handler) { handler_ = std::make_shared<const Handler>(std::move(handler)); }

uint16_t HttpServer::port() const { return acceptor_.local_endpoint().port(); }

void HttpServer::accept() {
  acceptor_.async_accept(net::make_strand(io_), [this](beast::error_code ec, tcp::socket socket) {
    if (stopping_ || ec == net::error::operation_aborted) return;
    if (!ec) std::make_shared<Connection>(std::move(socket), limits_, handler_, counts_)->start();
    accept();  // a failed accept (out of descriptors, say) must not end the server
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
  net::post(io_, [this] {
    stopping_ = true;
    beast::error_code ignored;
    acceptor_.close(ignored);
  });
}

bool HttpServer::wait_requests_done(std::chrono::milliseconds timeout) const {
  const auto until = std::chrono::steady_clock::now() + timeout;
  while (counts_->in_flight.load() > 0) {
    if (std::chrono::steady_clock::now() >= until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

void HttpServer::stop() {
  stopping_ = true;
  work_.reset();
  io_.stop();
}

}  // namespace voxrt::server
