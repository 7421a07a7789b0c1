#include "runtime/cuda/op_repeat.h"

#include <sstream>

#include "common/error.h"

namespace voxrt::cuda {

OpRepeat parse_op_repeat(const char* value) {
  OpRepeat r;
  if (!value) return r;
  static constexpr std::array<const char*, 4> kNames = {"attention", "norm", "rope", "product"};
  std::istringstream in(value);
  std::string kind;
  while (std::getline(in, kind, ',')) {
    if (kind.empty()) continue;
    bool known = false;
    for (size_t i = 0; i < kNames.size(); ++i) {
      if (kind == kNames[i]) {
        r.times[i] = 2;
        known = true;
      }
    }
    if (!known)
      throw Error("VOXRT_CUDA_REPEAT: unknown kind '" + kind + "' (attention, norm, rope or product, comma-separated)");
  }
  return r;
}

}  // namespace voxrt::cuda
