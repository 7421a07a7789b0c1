// A blocking HTTP/1.1 client for the server's tests: a request as Beast builds it, or raw bytes
// (for the malformed ones), each on a fresh connection with a receive timeout so that a server that
// never answers fails the test instead of hanging it.
#pragma once

#include <sys/socket.h>
#include <sys/time.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>

#include <string>
#include <utility>
#include <vector>

namespace voxrt::testutil {

struct HttpAnswer {
  int status = 0;
  std::string body;
  std::string content_type;
};

class HttpTestClient {
 public:
  explicit HttpTestClient(uint16_t port) : port_(port) {}

  HttpAnswer request(boost::beast::http::verb method, const std::string& target, std::string body = {},
                     const std::vector<std::pair<std::string, std::string>>& headers = {}) const {
    namespace http = boost::beast::http;
    boost::asio::io_context io;
    boost::asio::ip::tcp::socket socket = connect(io);
    http::request<http::string_body> req{method, target, 11};
    req.set(http::field::host, "127.0.0.1");
    for (const auto& [name, value] : headers) req.set(name, value);
    req.body() = std::move(body);
    req.prepare_payload();
    http::write(socket, req);
    boost::beast::flat_buffer buffer;
    http::response_parser<http::string_body> parser;
    parser.body_limit(size_t{1} << 30);
    http::read(socket, buffer, parser);
    const auto& res = parser.get();
    return {static_cast<int>(res.result_int()), res.body(), std::string(res[http::field::content_type])};
  }

  // Sends `bytes` as they are (shutting the sending side when close_after), and returns everything
  // the server answers until it closes the connection (or the timeout).
  std::string raw(const std::string& bytes, bool close_after = false) const {
    boost::asio::io_context io;
    boost::asio::ip::tcp::socket socket = connect(io);
    boost::asio::write(socket, boost::asio::buffer(bytes));
    if (close_after) socket.shutdown(boost::asio::ip::tcp::socket::shutdown_send);
    std::string answer;
    boost::system::error_code ec;
    boost::asio::read(socket, boost::asio::dynamic_buffer(answer), ec);  // to EOF, an error or the timeout
    return answer;
  }

  boost::asio::ip::tcp::socket connect(boost::asio::io_context& io) const {
    boost::asio::ip::tcp::socket socket(io);
    socket.connect({boost::asio::ip::make_address("127.0.0.1"), port_});
    timeval tv{60, 0};
    setsockopt(socket.native_handle(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    return socket;
  }

 private:
  uint16_t port_;
};

// A multipart/form-data body of (name, filename, bytes) parts; filename empty for plain fields.
struct FormField {
  std::string name, filename, data;
};
inline const char* kTestBoundary = "voxrt-test-boundary-7c1f";
inline std::string form_body(const std::vector<FormField>& fields, const std::string& boundary = kTestBoundary) {
  std::string body;
  for (const FormField& f : fields) {
    body += "--" + boundary + "\r\nContent-Disposition: form-data; name=\"" + f.name + "\"";
    if (!f.filename.empty()) body += "; filename=\"" + f.filename + "\"\r\nContent-Type: application/octet-stream";
    body += "\r\n\r\n" + f.data + "\r\n";
  }
  return body + "--" + boundary + "--\r\n";
}
inline std::string form_type(const std::string& boundary = kTestBoundary) {
  return "multipart/form-data; boundary=" + boundary;
}

}  // namespace voxrt::testutil
