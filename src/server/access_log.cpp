#include "server/access_log.h"

#include <cmath>
#include <nlohmann/json.hpp>
#include <string_view>

namespace voxrt::server {

bool is_routine_probe(const AccessRecord& r) {
  if (r.method != "GET" && r.method != "HEAD") return false;
  // Whether the poller stayed for the answer's last byte does not matter: a client that reads the
  // answer and hangs up at once can be recorded as not completed.
  if (r.status <= 0 || r.status >= 400) return false;
  const std::string_view path = std::string_view(r.target).substr(0, r.target.find('?'));
  return path == "/health" || path == "/metrics";
}

std::string access_log_line(const AccessRecord& r, std::time_t now) {
  char when[32];
  std::tm utc{};
  gmtime_r(&now, &utc);
  std::strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &utc);
  const nlohmann::json line = {{"time", when},      {"remote", r.remote}, {"method", r.method},
                               {"target", r.target}, {"status", r.status}, {"bytes", r.bytes},
                               {"ms", std::round(r.seconds * 1e4) / 10}, {"completed", r.completed}};
  // A hostile target's invalid UTF-8 is replaced rather than thrown on.
  return line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace voxrt::server
