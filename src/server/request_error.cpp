#include "server/request_error.h"

#include <nlohmann/json.hpp>

namespace voxrt::server {

nlohmann::json error_object(int status, const std::string& message, const std::string& param) {
  const char* type = status == 401 ? "authentication_error" : status >= 500 ? "server_error" : "invalid_request_error";
  nlohmann::json e = {{"message", message}, {"type", type}};
  e["code"] = status == 401 ? nlohmann::json("invalid_api_key") : nlohmann::json();
  e["param"] = param.empty() ? nlohmann::json() : nlohmann::json(param);
  return e;
}

std::string error_json(int status, const std::string& message, const std::string& param) {
  // Invalid UTF-8 (from a hostile field) is replaced rather than thrown on.
  return nlohmann::json{{"error", error_object(status, message, param)}}.dump(-1, ' ', false,
                                                                               nlohmann::json::error_handler_t::replace);
}

}  // namespace voxrt::server
