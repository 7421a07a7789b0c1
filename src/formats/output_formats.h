// Rendering a Transcript as txt, json, srt or vtt.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "voxrt/voxrt.h"

namespace voxrt::formats {

enum class Format { Txt, Json, Srt, Vtt };

// Subtitle cue limits (formats/subtitle_cues.h) and txt's timing.
struct RenderOptions {
  int max_line_chars = 42;       // srt, vtt: characters per line, two lines a cue at most
  double max_cue_seconds = 7.0;  // srt, vtt: the longest a cue stays up
  bool timestamps = false;       // txt: one line per cue, prefixed "[00:00:01.240 --> 00:00:03.600]"
};

// A format name as typed, as the parsers compare it: without surrounding blanks, in lower case
// ("-f SRT", "-f 'srt, vtt'").
std::string normalized_format_name(std::string_view name);
Format parse_format(const std::string& name);  // any case; throws voxrt::Error for unknown names
// "-f srt,vtt,json": each name once, in the given order; throws voxrt::Error naming --format for an
// unknown, empty or repeated name.
std::vector<Format> parse_format_list(const std::string& csv);
std::string format_extension(Format f);  // "txt", "json", "srt", "vtt"

// One document per input. json is a single line (so several inputs make JSON Lines), its times in
// whole milliseconds. srt and vtt are complete files (numbering from 1, one WEBVTT header).
std::string render(const Transcript& t, Format f, const std::string& source, const RenderOptions& o = {});
// Seconds rounded to whole milliseconds, as every JSON output writes them (3.84, not 3.8400000000000003).
double json_seconds(double seconds);
// "00:01:02,345" (srt) or "00:01:02.345" (vtt).
std::string timestamp(double seconds, char millis_separator);

}  // namespace voxrt::formats
