// The access log's line for an answered request (docs/serve.md, "Access log"), and which answers it
// leaves out by default: the probes that succeed. Every open caption page polls /metrics, and load
// balancers and orchestrators poll /health; a line for each would bury the requests worth reading.
#pragma once

#include <ctime>
#include <string>

#include "server/http_server.h"

namespace voxrt::server {

// A GET (or HEAD) of /health or /metrics answered below 400 (sent whole or not). A failed one (a 503 while the model
// loads, the server drains or is saturated) is not routine, nor is any other method or route.
bool is_routine_probe(const AccessRecord& r);

// One JSON object, no line break: {"time", "remote", "method", "target", "status", "bytes", "ms",
// "completed"}, `time` being `now` in UTC.
std::string access_log_line(const AccessRecord& r, std::time_t now);

}  // namespace voxrt::server
