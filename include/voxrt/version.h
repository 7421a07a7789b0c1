// voxrt's version: the macros say which headers a program was compiled against, version() which
// library it runs with (they differ when a program built against one release loads another's
// libvoxrt.so). The macros follow CMakeLists.txt's project(VERSION), which a test checks.
#pragma once

#include "voxrt/export.h"

#define VOXRT_VERSION_MAJOR 0
#define VOXRT_VERSION_MINOR 1
#define VOXRT_VERSION_PATCH 0
#define VOXRT_VERSION_STRING "0.1.0"
// One number that orders releases: major * 10000 + minor * 100 + patch.
#define VOXRT_VERSION (VOXRT_VERSION_MAJOR * 10000 + VOXRT_VERSION_MINOR * 100 + VOXRT_VERSION_PATCH)

namespace voxrt {

// The library's VOXRT_VERSION_STRING, as it was built.
VOXRT_API const char* version();

}  // namespace voxrt
