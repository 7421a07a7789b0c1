#include "voxtral/segments.h"

#include <algorithm>

namespace voxrt {
namespace {

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t\n");
  if (b == std::string::npos) return "";
  const auto e = s.find_last_not_of(" \t\n");
  return s.substr(b, e - b + 1);
}

}  // namespace

TextAndSegments assemble_transcript(const Tokenizer& tok, std::span<const int32_t> ids, double step_seconds,
                                    double duration) {
  TextAndSegments out;
  Utf8Assembler all;
  std::string text;
  Segment cur;
  Utf8Assembler seg_text;
  bool open = false;
  double last_text_end = 0;

  auto close = [&]() {
    if (!open) return;
    cur.text = trim(cur.text + seg_text.finish());
    cur.end = std::min(duration, std::max(cur.start, last_text_end));
    if (!cur.text.empty()) out.segments.push_back(cur);
    open = false;
  };

  for (size_t i = 0; i < ids.size(); ++i) {
    const int32_t id = ids[i];
    const double t0 = static_cast<double>(i) * step_seconds;
    if (id == tok.streaming_word_id() || id == tok.eos_id()) {
      close();
      if (id == tok.eos_id()) continue;
      cur = Segment{std::min(t0, duration), t0, ""};
      open = true;
      continue;
    }
    if (tok.is_special(id)) continue;
    const std::string_view bytes = tok.token_bytes(id);
    if (bytes.empty()) continue;
    text += all.push(bytes);
    if (!open) {  // text before any [STREAMING_WORD]: start a segment where it appears
      cur = Segment{std::min(t0, duration), t0, ""};
      open = true;
    }
    cur.text += seg_text.push(bytes);
    last_text_end = t0 + step_seconds;
  }
  close();
  out.text = trim(text + all.finish());
  return out;
}

}  // namespace voxrt
