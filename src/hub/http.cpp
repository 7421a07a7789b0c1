#include "hub/http.h"

#include <curl/curl.h>

#include <cctype>
#include <cstdlib>
#include <exception>
#include <memory>
#include <mutex>
#include <string_view>

#include "common/error.h"

namespace voxrt::hub {

namespace {

constexpr size_t kMaxErrorBody = 4096;
constexpr size_t kMaxTextBody = size_t{64} << 20;  // a tree listing is kilobytes; refuse a flood
constexpr long kMaxRedirects = 10;

void init_curl_once() {
  static std::once_flag once;
  std::call_once(once, [] {
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) throw Error("libcurl: global init failed");
  });
}

struct CurlFree {
  void operator()(CURL* c) const { curl_easy_cleanup(c); }
};
struct SlistFree {
  void operator()(curl_slist* l) const { curl_slist_free_all(l); }
};

bool starts_with_nocase(std::string_view s, std::string_view prefix) {
  if (s.size() < prefix.size()) return false;
  for (size_t i = 0; i < prefix.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(s[i])) != std::tolower(static_cast<unsigned char>(prefix[i])))
      return false;
  }
  return true;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

// The value of "Name: value" when the line carries header `name`.
std::optional<std::string_view> header_value(std::string_view line, std::string_view name) {
  if (line.size() <= name.size() || line[name.size()] != ':' || !starts_with_nocase(line, name))
    return std::nullopt;
  return trim(line.substr(name.size() + 1));
}

// State shared with the C callbacks of one transfer. Responses arrive as a sequence (1xx interim
// answers, 3xx redirects that curl follows, then the final one); the header callback tracks which
// one is current so only the final body reaches the caller.
struct Transfer {
  const HeadFn* on_head;
  const BodyFn* on_body;
  HttpHead head;
  bool has_location = false;
  bool final_head = false;   // the current response is the one whose body the caller gets
  HttpResult result;
  std::exception_ptr error;  // thrown by a caller callback; rethrown after curl returns

  bool is_success() const { return head.status >= 200 && head.status < 300; }

  void on_header_line(std::string_view line) {
    if (line.starts_with("HTTP/")) {  // a new response starts
      head = HttpHead{};
      has_location = false;
      final_head = false;
      auto sp = line.find(' ');
      if (sp != std::string_view::npos) head.status = std::strtol(std::string(line.substr(sp + 1, 3)).c_str(), nullptr, 10);
      return;
    }
    if (trim(line).empty()) {
      end_of_headers();
      return;
    }
    if (header_value(line, "Location")) has_location = true;
    if (auto v = header_value(line, "X-Error-Message")) result.hub_message = std::string(*v);
    if (auto v = header_value(line, "Content-Range")) head.range_start = parse_range_start(*v);
  }

  void end_of_headers() {
    bool interim = head.status >= 100 && head.status < 200;
    bool followed_redirect = head.status >= 300 && head.status < 400 && has_location;
    if (interim || followed_redirect) return;
    final_head = true;
    result.status = head.status;
    if (is_success() && *on_head) (*on_head)(head);
  }

  // "bytes 100-199/200" -> 100.
  static std::optional<uint64_t> parse_range_start(std::string_view v) {
    if (!starts_with_nocase(v, "bytes ")) return std::nullopt;
    v.remove_prefix(6);
    char* end = nullptr;
    std::string s(v);
    unsigned long long start = std::strtoull(s.c_str(), &end, 10);
    if (end == s.c_str() || *end != '-') return std::nullopt;
    return start;
  }

  void on_body_bytes(const char* data, size_t n) {
    if (!final_head) return;  // the body of a redirect curl is following
    if (is_success()) {
      (*on_body)(data, n);
      result.body_bytes += n;
    } else if (result.error_body.size() < kMaxErrorBody) {
      result.error_body.append(data, std::min(n, kMaxErrorBody - result.error_body.size()));
    }
  }
};

size_t header_cb(char* data, size_t size, size_t n, void* user) {
  auto* t = static_cast<Transfer*>(user);
  try {
    t->on_header_line(std::string_view(data, size * n));
    return size * n;
  } catch (...) {
    t->error = std::current_exception();
    return 0;  // aborts the transfer
  }
}

size_t write_cb(char* data, size_t size, size_t n, void* user) {
  auto* t = static_cast<Transfer*>(user);
  try {
    t->on_body_bytes(data, size * n);
    return size * n;
  } catch (...) {
    t->error = std::current_exception();
    return 0;  // aborts the transfer
  }
}

std::unique_ptr<curl_slist, SlistFree> make_header_list(const std::vector<std::string>& headers) {
  curl_slist* list = nullptr;
  for (const auto& h : headers) {
    curl_slist* next = curl_slist_append(list, h.c_str());
    if (!next) {
      curl_slist_free_all(list);
      throw Error("libcurl: out of memory building request headers");
    }
    list = next;
  }
  return std::unique_ptr<curl_slist, SlistFree>(list);
}

void configure(CURL* c, const HttpRequest& req, curl_slist* headers, Transfer& t, char* errbuf) {
  curl_easy_setopt(c, CURLOPT_URL, req.url.c_str());
  curl_easy_setopt(c, CURLOPT_HTTPGET, 1L);
  curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 1L);
  curl_easy_setopt(c, CURLOPT_MAXREDIRS, kMaxRedirects);
  // A redirect must not lead to file:// or other schemes curl happens to support.
  curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(c, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, req.connect_timeout_s);
  curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, req.low_speed_limit);
  curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, req.low_speed_time_s);
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);  // timeouts must not use SIGALRM in a threaded program
  curl_easy_setopt(c, CURLOPT_TCP_KEEPALIVE, 1L);
  curl_easy_setopt(c, CURLOPT_USERAGENT, "voxrt/0.1");
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
  curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, header_cb);
  curl_easy_setopt(c, CURLOPT_HEADERDATA, &t);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, write_cb);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &t);
  // CURLOPT_RANGE rather than RESUME_FROM: curl then leaves a 200 answer (server ignored the
  // range) to us instead of failing, and we restart from zero.
  std::string range = std::to_string(req.range_start) + "-";
  if (req.range_start > 0) curl_easy_setopt(c, CURLOPT_RANGE, range.c_str());  // curl copies it
}

[[noreturn]] void throw_transport_error(CURL* c, CURLcode code, const char* errbuf, const Transfer& t,
                                        const HttpRequest& req) {
  const char* effective = nullptr;
  curl_easy_getinfo(c, CURLINFO_EFFECTIVE_URL, &effective);
  std::string origin = url_origin(effective ? effective : req.url);
  std::string detail = errbuf[0] ? errbuf : curl_easy_strerror(code);
  if (!t.final_head) {  // no answer at all, or only redirects to a host that is unreachable
    throw Error("cannot reach " + origin + ": " + detail + " (" + req.unreachable_hint + ")");
  }
  throw Error("transfer from " + origin + " broke off after " + std::to_string(t.result.body_bytes) +
              " bytes: " + detail);
}

// The hub answers errors as {"error": "..."}; pull that text out without a JSON dependency here.
std::string hub_error_text(const HttpResult& r) {
  if (!r.hub_message.empty()) return r.hub_message;
  auto key = r.error_body.find("\"error\"");
  if (key == std::string::npos) return {};
  auto open = r.error_body.find('"', r.error_body.find(':', key));
  if (open == std::string::npos) return {};
  auto close = r.error_body.find('"', open + 1);
  if (close == std::string::npos) return {};
  return r.error_body.substr(open + 1, close - open - 1);
}

}  // namespace

std::string url_origin(const std::string& url) {
  auto scheme = url.find("://");
  if (scheme == std::string::npos) return url;
  auto path = url.find('/', scheme + 3);
  return path == std::string::npos ? url : url.substr(0, path);
}

HttpResult http_get(const HttpRequest& req, const HeadFn& on_head, const BodyFn& on_body) {
  init_curl_once();
  std::unique_ptr<CURL, CurlFree> curl(curl_easy_init());
  if (!curl) throw Error("libcurl: cannot create a transfer handle");
  auto headers = make_header_list(req.headers);
  Transfer t{&on_head, &on_body, {}, false, false, {}, nullptr};
  char errbuf[CURL_ERROR_SIZE] = {0};
  configure(curl.get(), req, headers.get(), t, errbuf);

  CURLcode code = curl_easy_perform(curl.get());
  if (t.error) std::rethrow_exception(t.error);
  if (code != CURLE_OK) throw_transport_error(curl.get(), code, errbuf, t, req);
  if (!t.final_head) {  // e.g. a 3xx loop cut off by the redirect limit is reported as an error above
    throw Error("no usable answer from " + url_origin(req.url) + " for " + req.url);
  }
  return t.result;
}

std::string http_get_text(const HttpRequest& req) {
  std::string body;
  auto append = [&](const char* data, size_t n) {
    if (body.size() + n > kMaxTextBody) throw Error(req.url + ": answer larger than 64 MB, refusing it");
    body.append(data, n);
  };
  HttpResult r = http_get(req, nullptr, append);
  if (r.status < 200 || r.status >= 300) throw_http_status(r, req.url);
  return body;
}

void throw_http_status(const HttpResult& r, const std::string& url) {
  std::string hub = hub_error_text(r);
  std::string suffix = hub.empty() ? "" : " (hub says: " + hub + ")";
  std::string status = "HTTP " + std::to_string(r.status);
  if (r.status == 401 || r.status == 403) {
    const char* token = std::getenv("HF_TOKEN");
    std::string hint = token && *token
        ? "HF_TOKEN is set but was refused: check that the token is valid and that your account "
          "has accepted the model's terms on the hub"
        : "the repo may be gated or private: accept its terms on the hub, create an access token "
          "and set HF_TOKEN to it";
    throw Error(status + " (access denied) for " + url + suffix + "; " + hint);
  }
  if (r.status == 404) throw Error("not found (" + status + "): " + url + suffix);
  throw Error(status + " from " + url + suffix);
}

}  // namespace voxrt::hub
