// voxrt::Error: the one exception type voxrt throws. Its message is meant for the user and names the
// file, field or byte at fault ("params.json: missing field n_kv_heads"). Public so that callers can
// catch it apart from other failures; nothing in the library aborts.
#pragma once

#include <stdexcept>
#include <string>

#include "voxrt/export.h"

namespace voxrt {

class VOXRT_API Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

}  // namespace voxrt
