#include "server/text_deltas.h"

namespace voxrt::server {
namespace {
// What Transcript::text is trimmed of at both ends (TranscriptAssembler::text, src/models/voxtral).
constexpr std::string_view kBlanks = " \t\n\r\v\f";
}  // namespace

std::string TextDeltas::next(std::string_view text) {
  if (!started_) {
    const size_t first = text.find_first_not_of(kBlanks);
    if (first == std::string_view::npos) return {};
    text.remove_prefix(first);
    started_ = true;
  }
  const size_t last = text.find_last_not_of(kBlanks);
  if (last == std::string_view::npos) {
    held_ += text;
    return {};
  }
  std::string delta = std::move(held_);
  delta += text.substr(0, last + 1);
  held_ = std::string(text.substr(last + 1));
  return delta;
}

void TextDeltas::reset() {
  started_ = false;
  held_.clear();
}

}  // namespace voxrt::server
