// The checks library code makes before it throws voxrt::Error (include/voxrt/error.h): every
// message names the file, field or value at fault.
#pragma once

#include <string>

#include "voxrt/error.h"

namespace voxrt {

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
