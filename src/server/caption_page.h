// The live-caption page served at GET / (src/server/web/captions.html, compiled in by CMake so that
// an installed server needs no files beside it).
#pragma once

#include <string_view>

namespace voxrt::server {

std::string_view caption_page();

}  // namespace voxrt::server
