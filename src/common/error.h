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
// The same for literal texts, without building strings when cond holds (ops check their inputs
// on every call of every step).
inline void check(bool cond, const char* where, const char* what) {
  if (!cond) throw Error(std::string(where) + ": " + what);
}
// The same with the message made by what() only on failure: checks in per-step paths whose
// message names values.
template <typename What>
void check_with(bool cond, const char* where, What&& what) {
  if (!cond) throw Error(std::string(where) + ": " + what());
}

}  // namespace voxrt
