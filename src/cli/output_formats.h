// Rendering a Transcript as txt, json, srt or vtt.
#pragma once

#include <string>

#include "voxrt/voxrt.h"

namespace voxrt::cli {

enum class Format { Txt, Json, Srt, Vtt };

Format parse_format(const std::string& name);  // throws voxrt::Error for unknown names
// One document per input. json is a single line (so several inputs make JSON Lines).
std::string render(const Transcript& t, Format f, const std::string& source);
// "00:01:02,345" (srt) or "00:01:02.345" (vtt).
std::string timestamp(double seconds, char millis_separator);

}  // namespace voxrt::cli
