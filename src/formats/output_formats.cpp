#include "formats/output_formats.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "formats/subtitle_cues.h"
#include "common/error.h"

namespace voxrt::formats {

std::string normalized_format_name(std::string_view name) {
  const size_t first = name.find_first_not_of(" \t"), last = name.find_last_not_of(" \t");
  std::string out(first == std::string_view::npos ? std::string_view{} : name.substr(first, last - first + 1));
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

Format parse_format(const std::string& given) {
  const std::string name = normalized_format_name(given);
  if (name == "txt") return Format::Txt;
  if (name == "json") return Format::Json;
  if (name == "srt") return Format::Srt;
  if (name == "vtt") return Format::Vtt;
  throw Error("--format " + given + ": expected txt, json, srt or vtt");
}

std::vector<Format> parse_format_list(const std::string& csv) {
  std::vector<Format> formats;
  size_t begin = 0;
  while (true) {
    const size_t comma = std::min(csv.find(',', begin), csv.size());
    const std::string name = normalized_format_name(csv.substr(begin, comma - begin));
    if (name.empty()) throw Error("--format " + csv + ": empty format name; expected e.g. srt,vtt,json");
    const Format f = parse_format(name);
    if (std::find(formats.begin(), formats.end(), f) != formats.end())
      throw Error("--format " + csv + ": " + name + " is given twice");
    formats.push_back(f);
    if (comma == csv.size()) return formats;
    begin = comma + 1;
  }
}

std::string format_extension(Format f) {
  switch (f) {
    case Format::Txt: return "txt";
    case Format::Json: return "json";
    case Format::Srt: return "srt";
    case Format::Vtt: return "vtt";
  }
  return "";
}

std::string timestamp(double seconds, char sep) {
  const long long ms = std::llround(std::max(0.0, seconds) * 1000.0);
  char buf[32];
  std::snprintf(buf, sizeof buf, "%02lld:%02lld:%02lld%c%03lld", ms / 3600000, ms / 60000 % 60, ms / 1000 % 60, sep,
                ms % 1000);
  return buf;
}

double json_seconds(double seconds) { return std::round(seconds * 1000.0) / 1000.0; }

namespace {

nlohmann::json words_json(const std::vector<Word>& words) {
  nlohmann::json a = nlohmann::json::array();
  for (const Word& w : words)
    a.push_back({{"start", json_seconds(w.start)}, {"end", json_seconds(w.end)}, {"text", w.text}});
  return a;
}

std::string render_json(const Transcript& t, const std::string& source) {
  nlohmann::json j;
  j["file"] = source;
  j["text"] = t.text;
  j["tokens"] = t.tokens;
  j["segments"] = nlohmann::json::array();
  for (const Segment& s : t.segments)
    j["segments"].push_back({{"start", json_seconds(s.start)},
                             {"end", json_seconds(s.end)},
                             {"text", s.text},
                             {"words", words_json(s.words)}});
  j["words"] = words_json(t.words);
  j["duration"] = json_seconds(t.duration);
  j["delay_ms"] = t.delay_ms;
  j["eos"] = t.eos;
  // Invalid UTF-8 cannot occur (the tokenizer replaces it), but never let a dump throw.
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

CueLimits cue_limits(const RenderOptions& o) { return {o.max_line_chars, o.max_cue_seconds}; }

// WebVTT cue text is markup: '&' and '<' start escapes and tags, and "-->" ends a cue's text where a
// parser expects timings. The spec's escapes for all three ('>' too, so no "-->" survives).
std::string webvtt_escaped(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    if (c == '&') out += "&amp;";
    else if (c == '<') out += "&lt;";
    else if (c == '>') out += "&gt;";
    else out += c;
  }
  return out;
}

std::string render_cues(const Transcript& t, bool vtt, const RenderOptions& o) {
  const char sep = vtt ? '.' : ',';
  std::string out = vtt ? "WEBVTT\n\n" : "";
  int n = 0;
  for (const Cue& c : build_cues(t, cue_limits(o))) {
    if (!vtt) out += std::to_string(++n) + "\n";
    out += timestamp(c.start, sep) + " --> " + timestamp(c.end, sep) + "\n";
    for (const std::string& line : c.lines) out += (vtt ? webvtt_escaped(line) : line) + "\n";
    out += "\n";
  }
  return out;
}

// whisper.cpp's layout: "[00:00:01.240 --> 00:00:03.600]  text", one line per cue.
std::string render_timed_text(const Transcript& t, const RenderOptions& o) {
  std::string out;
  for (const Cue& c : build_cues(t, cue_limits(o))) {
    out += "[" + timestamp(c.start, '.') + " --> " + timestamp(c.end, '.') + "] ";
    for (const std::string& line : c.lines) out += " " + line;
    out += "\n";
  }
  return out;
}

}  // namespace

std::string render(const Transcript& t, Format f, const std::string& source, const RenderOptions& o) {
  switch (f) {
    case Format::Txt: return o.timestamps ? render_timed_text(t, o) : t.text + "\n";
    case Format::Json: return render_json(t, source);
    case Format::Srt: return render_cues(t, false, o);
    case Format::Vtt: return render_cues(t, true, o);
  }
  return "";
}

}  // namespace voxrt::formats
