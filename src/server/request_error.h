// An error a request is answered with: its HTTP status and, in OpenAI's error shape
// ({"error": {"message", "type", "param", "code"}}), what is wrong and which field is at fault.
#pragma once

#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>

namespace voxrt::server {

class RequestError : public std::runtime_error {
 public:
  RequestError(int status, std::string message, std::string param = {})
      : std::runtime_error(std::move(message)), status_(status), param_(std::move(param)) {}
  int status() const { return status_; }
  const std::string& param() const { return param_; }  // the request field at fault, or empty
  // A 405's methods the route takes ("GET, HEAD"): its Allow header (RFC 9110 §15.5.6 requires one).
  RequestError& allowing(std::string methods) {
    allow_ = std::move(methods);
    return *this;
  }
  const std::string& allow() const { return allow_; }

 private:
  int status_;
  std::string param_;
  std::string allow_;
};

// The error object of an answer, and the answer's JSON body ({"error": object}): OpenAI's shape, the
// type following the status (invalid_request_error for 4xx, server_error for 5xx;
// authentication_error for 401), and `code` a string or null as OpenAI's (a client's code that
// switches on it must not meet an integer): "invalid_api_key" for a 401, else null, the status
// being the answer's.
nlohmann::json error_object(int status, const std::string& message, const std::string& param = {});
std::string error_json(int status, const std::string& message, const std::string& param = {});

}  // namespace voxrt::server
