#include "cli/output_formats.h"

#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "common/error.h"

namespace voxrt::cli {

Format parse_format(const std::string& name) {
  if (name == "txt") return Format::Txt;
  if (name == "json") return Format::Json;
  if (name == "srt") return Format::Srt;
  if (name == "vtt") return Format::Vtt;
  throw Error("--format " + name + ": expected txt, json, srt or vtt");
}

std::string timestamp(double seconds, char sep) {
  const long long ms = std::llround(std::max(0.0, seconds) * 1000.0);
  char buf[32];
  std::snprintf(buf, sizeof buf, "%02lld:%02lld:%02lld%c%03lld", ms / 3600000, ms / 60000 % 60, ms / 1000 % 60, sep,
                ms % 1000);
  return buf;
}

namespace {

std::string render_json(const Transcript& t, const std::string& source) {
  nlohmann::json j;
  j["file"] = source;
  j["text"] = t.text;
  j["tokens"] = t.tokens;
  j["segments"] = nlohmann::json::array();
  for (const Segment& s : t.segments) j["segments"].push_back({{"start", s.start}, {"end", s.end}, {"text", s.text}});
  j["duration"] = t.duration;
  j["delay_ms"] = t.delay_ms;
  j["eos"] = t.eos;
  // Invalid UTF-8 cannot occur (the tokenizer replaces it), but never let a dump throw.
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

std::string render_cues(const Transcript& t, bool vtt) {
  std::string out = vtt ? "WEBVTT\n\n" : "";
  int n = 0;
  for (const Segment& s : t.segments) {
    if (!vtt) out += std::to_string(++n) + "\n";
    out += timestamp(s.start, vtt ? '.' : ',') + " --> " + timestamp(s.end, vtt ? '.' : ',') + "\n";
    out += s.text + "\n\n";
  }
  return out;
}

}  // namespace

std::string render(const Transcript& t, Format f, const std::string& source) {
  switch (f) {
    case Format::Txt: return t.text + "\n";
    case Format::Json: return render_json(t, source);
    case Format::Srt: return render_cues(t, false);
    case Format::Vtt: return render_cues(t, true);
  }
  return "";
}

}  // namespace voxrt::cli
