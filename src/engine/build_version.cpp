#include "voxrt/version.h"

namespace voxrt {

const char* version() { return VOXRT_VERSION_STRING; }

}  // namespace voxrt
