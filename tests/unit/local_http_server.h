// A tiny HTTP/1.1 file server for tests: serves a directory on 127.0.0.1 at an ephemeral port
// from one background thread, one connection at a time, every answer "Connection: close".
// Supports GET and HEAD, single "bytes=N-" / "bytes=N-M" ranges (206 + Content-Range, 416 past
// the end), 404, canned statuses and redirects, and a fault mode that cuts a response off after N
// body bytes to imitate a dropped connection. Every request is recorded so tests can check what
// the client asked for. Test-only: no keep-alive, no chunked bodies, no request bodies.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/time.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstdio>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <mutex>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace voxrt::test {

struct RecordedRequest {
  std::string method;
  std::string path;           // decoded, without the query string
  std::string range;          // the Range header, empty if none
  std::string authorization;  // the Authorization header, empty if none
};

class LocalHttpServer {
 public:
  // Serves the files under `root`: GET /a/b returns root/a/b.
  explicit LocalHttpServer(std::filesystem::path root) : root_(std::move(root)) {
    listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (listen_fd_ < 0) throw std::runtime_error("LocalHttpServer: socket() failed");
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = 0;  // the kernel picks a free port
    socklen_t len = sizeof addr;
    if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
        ::listen(listen_fd_, 16) != 0 ||
        ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0 || ::pipe(wake_) != 0) {
      ::close(listen_fd_);
      throw std::runtime_error("LocalHttpServer: cannot listen on 127.0.0.1");
    }
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this] { serve(); });
  }

  ~LocalHttpServer() {
    stop_ = true;
    char c = 0;
    (void)!::write(wake_[1], &c, 1);  // wakes poll() in serve()
    thread_.join();
    ::close(listen_fd_);
    ::close(wake_[0]);
    ::close(wake_[1]);
  }

  LocalHttpServer(const LocalHttpServer&) = delete;
  LocalHttpServer& operator=(const LocalHttpServer&) = delete;

  uint16_t port() const { return port_; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }

  // Answers GETs of `from` with a 302 to `to` (a path on this server or a full URL).
  void redirect(const std::string& from, const std::string& to) {
    std::lock_guard<std::mutex> lock(mu_);
    redirects_[from] = to;
  }
  // Answers requests for `path` with `status` and a small JSON error body.
  void respond_status(const std::string& path, int status) {
    std::lock_guard<std::mutex> lock(mu_);
    statuses_[path] = status;
  }
  // Fault mode: the next GET of `path` sends its headers (full Content-Length) and only the first
  // `body_bytes` bytes of the body, then closes the connection. One shot.
  void fail_after(const std::string& path, uint64_t body_bytes) {
    std::lock_guard<std::mutex> lock(mu_);
    faults_[path] = body_bytes;
  }
  // Imitates servers without range support: Range headers are ignored (200 + whole file).
  void ignore_ranges(bool ignore) { ignore_ranges_ = ignore; }

  std::vector<RecordedRequest> requests() const {
    std::lock_guard<std::mutex> lock(mu_);
    return requests_;
  }
  int count(const std::string& path) const {
    std::lock_guard<std::mutex> lock(mu_);
    int n = 0;
    for (const auto& r : requests_) n += r.path == path;
    return n;
  }

 private:
  struct Request {
    std::string method, path;
    std::map<std::string, std::string> headers;  // lower-case names
  };

  void serve() {
    while (!stop_) {
      pollfd fds[2] = {{listen_fd_, POLLIN, 0}, {wake_[0], POLLIN, 0}};
      if (::poll(fds, 2, -1) < 0) continue;
      if (stop_ || (fds[1].revents & POLLIN)) break;
      if (!(fds[0].revents & POLLIN)) continue;
      int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) continue;
      timeval tv{5, 0};  // a stuck client must not wedge the test
      ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
      ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
      if (auto req = read_request(fd)) handle(fd, *req);
      ::shutdown(fd, SHUT_WR);  // FIN rather than RST so the client sees every byte sent
      ::close(fd);
    }
  }

  static std::optional<Request> read_request(int fd) {
    std::string data;
    char buf[4096];
    while (data.find("\r\n\r\n") == std::string::npos) {
      ssize_t n = ::recv(fd, buf, sizeof buf, 0);
      if (n <= 0 || data.size() > 65536) return std::nullopt;
      data.append(buf, static_cast<size_t>(n));
    }
    std::istringstream in(data);
    Request req;
    std::string target, version, line;
    in >> req.method >> target >> version;
    std::getline(in, line);
    while (std::getline(in, line) && line != "\r") {
      auto colon = line.find(':');
      if (colon == std::string::npos) continue;
      std::string name = line.substr(0, colon);
      for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      std::string value = line.substr(colon + 1);
      while (!value.empty() && (value.front() == ' ')) value.erase(0, 1);
      while (!value.empty() && (value.back() == '\r' || value.back() == ' ')) value.pop_back();
      req.headers[name] = value;
    }
    req.path = decode(target.substr(0, target.find('?')));
    return req;
  }

  static std::string decode(const std::string& s) {
    std::string out;
    for (size_t i = 0; i < s.size(); ++i) {
      if (s[i] == '%' && i + 2 < s.size()) {
        out += static_cast<char>(std::stoi(s.substr(i + 1, 2), nullptr, 16));
        i += 2;
      } else {
        out += s[i];
      }
    }
    return out;
  }

  static std::string header(const Request& req, const std::string& name) {
    auto it = req.headers.find(name);
    return it == req.headers.end() ? "" : it->second;
  }

  void handle(int fd, const Request& req) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      requests_.push_back({req.method, req.path, header(req, "range"), header(req, "authorization")});
    }
    if (req.method != "GET" && req.method != "HEAD") return send_status(fd, req, 405);
    if (auto status = lookup(statuses_, req.path)) return send_status(fd, req, *status);
    if (auto to = lookup(redirects_, req.path)) {
      send_all(fd, "HTTP/1.1 302 Found\r\nLocation: " + *to +
                       "\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
      return;
    }
    std::optional<std::string> body = read_file(req.path);
    if (!body) return send_status(fd, req, 404);
    send_file(fd, req, *body);
  }

  template <class T>
  std::optional<T> lookup(const std::map<std::string, T>& map, const std::string& path) const {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = map.find(path);
    if (it == map.end()) return std::nullopt;
    return it->second;
  }

  std::optional<std::string> read_file(const std::string& path) const {
    if (path.empty() || path[0] != '/' || path.find("..") != std::string::npos) return std::nullopt;
    std::filesystem::path p = root_ / path.substr(1);
    std::error_code ec;
    if (!std::filesystem::is_regular_file(p, ec)) return std::nullopt;
    std::ifstream in(p, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }

  void send_file(int fd, const Request& req, const std::string& body) {
    uint64_t size = body.size(), first = 0, last = size ? size - 1 : 0;
    std::string range = header(req, "range");
    bool partial = !range.empty() && !ignore_ranges_;
    if (partial) {
      unsigned long long a = 0, b = 0;
      int fields = std::sscanf(range.c_str(), "bytes=%llu-%llu", &a, &b);
      if (fields < 1 || a >= size) {
        send_all(fd, "HTTP/1.1 416 Range Not Satisfiable\r\nContent-Range: bytes */" + std::to_string(size) +
                         "\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
        return;
      }
      first = a;
      last = fields == 2 && b < size ? b : size - 1;
    }
    uint64_t length = size ? last - first + 1 : 0;
    std::string head = partial ? "HTTP/1.1 206 Partial Content\r\nContent-Range: bytes " +
                                     std::to_string(first) + "-" + std::to_string(last) + "/" +
                                     std::to_string(size) + "\r\n"
                               : "HTTP/1.1 200 OK\r\n";
    head += "Accept-Ranges: bytes\r\nContent-Type: application/octet-stream\r\nContent-Length: " +
            std::to_string(length) + "\r\nConnection: close\r\n\r\n";
    if (!send_all(fd, head) || req.method == "HEAD") return;

    uint64_t send_len = length;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (auto it = faults_.find(req.path); it != faults_.end()) {
        send_len = std::min<uint64_t>(length, it->second);
        faults_.erase(it);
      }
    }
    send_all(fd, body.substr(first, send_len));
  }

  void send_status(int fd, const Request& req, int status) {
    std::string body = "{\"error\": \"test server says " + std::to_string(status) + "\"}";
    std::string head = "HTTP/1.1 " + std::to_string(status) +
                       " Status\r\nContent-Type: application/json\r\nContent-Length: " +
                       std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n";
    send_all(fd, req.method == "HEAD" ? head : head + body);
  }

  static bool send_all(int fd, const std::string& data) {
    size_t sent = 0;
    while (sent < data.size()) {
      ssize_t n = ::send(fd, data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
      if (n <= 0) return false;
      sent += static_cast<size_t>(n);
    }
    return true;
  }

  std::filesystem::path root_;
  int listen_fd_ = -1;
  int wake_[2] = {-1, -1};
  uint16_t port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<bool> ignore_ranges_{false};
  mutable std::mutex mu_;
  std::map<std::string, std::string> redirects_;
  std::map<std::string, int> statuses_;
  std::map<std::string, uint64_t> faults_;
  std::vector<RecordedRequest> requests_;
  std::thread thread_;
};

}  // namespace voxrt::test
