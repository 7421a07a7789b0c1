// voxrt::Error: the one exception type library code throws. Its message is meant for the user and
// names the file, field or byte at fault ("params.json: missing field n_kv_heads"). The CLI and the
// public API turn it into an exit code or an error value; nothing in the library aborts.
#pragma once

#include <stdexcept>
#include <string>

namespace voxrt {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

// Throws Error(where + ": " + what) unless cond holds.
inline void check(bool cond, const std::string& where, const std::string& what) {
  if (!cond) throw Error(where + ": " + what);
}

}  // namespace voxrt
