// A thin libcurl wrapper for the hub client: one blocking GET at a time, redirects followed
// (the hub sends large files to a CDN), bounded connect time and a low-speed abort so a dead
// network fails fast instead of hanging. Transport failures throw voxrt::Error with a message
// naming the host; HTTP error statuses are returned so the caller can word them for its context.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace voxrt::hub {

struct HttpRequest {
  std::string url;
  std::vector<std::string> headers;  // extra request headers, "Name: value"
  uint64_t range_start = 0;          // > 0 sends "Range: bytes=N-" (resuming a download)
  long connect_timeout_s = 15;       // covers name resolution and the TCP/TLS handshake
  long low_speed_limit = 1024;       // bytes per second; slower than this ...
  long low_speed_time_s = 60;        // ... for this long aborts the transfer
  // Appended to "cannot reach HOST: ..." when no answer came: what the user can change (the caller
  // knows where the address came from).
  std::string unreachable_hint = "no network?";
};

// The head of the final response (after redirects).
struct HttpHead {
  long status = 0;
  std::optional<uint64_t> range_start;  // first byte of a 206 body, from Content-Range
};

struct HttpResult {
  long status = 0;
  uint64_t body_bytes = 0;   // bytes handed to the body callback
  std::string error_body;    // the start of the body of a non-2xx response
  std::string hub_message;   // the hub's X-Error-Message header, when sent
};

// Called once, before any body bytes, when the final response is a 2xx.
using HeadFn = std::function<void(const HttpHead&)>;
// Called with each chunk of a 2xx response body.
using BodyFn = std::function<void(const char* data, size_t n)>;

// Performs a GET. Exceptions thrown by the callbacks abort the transfer and propagate. Throws
// Error when the server cannot be reached or the transfer breaks off; returns otherwise, also for
// HTTP error statuses (see throw_http_status).
HttpResult http_get(const HttpRequest& req, const HeadFn& on_head, const BodyFn& on_body);

// GET returning the whole body; any non-2xx status throws via throw_http_status.
std::string http_get_text(const HttpRequest& req);

// Throws an Error for a non-2xx result, worded for the hub: 401/403 point at HF_TOKEN, 404 names
// the URL.
[[noreturn]] void throw_http_status(const HttpResult& result, const std::string& url);

// "https://huggingface.co" for "https://huggingface.co/api/models/x": what a user can ping.
std::string url_origin(const std::string& url);

}  // namespace voxrt::hub
