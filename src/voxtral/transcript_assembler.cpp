#include "voxtral/transcript_assembler.h"

#include <algorithm>
#include <limits>

namespace voxrt {
namespace {

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t\n");
  if (b == std::string::npos) return "";
  const auto e = s.find_last_not_of(" \t\n");
  return s.substr(b, e - b + 1);
}

}  // namespace

void TranscriptAssembler::close_segment(double limit, std::vector<StreamEvent>& events) {
  if (!open_) return;
  open_ = false;
  current_.text = trim(current_.text + segment_utf8_.finish());
  current_.end = std::min(limit, std::max(current_.start, last_text_end_));
  if (current_.text.empty()) return;
  segments_.push_back(current_);
  StreamEvent e;
  e.kind = StreamEvent::Kind::SegmentEnd;
  e.text = current_.text;
  e.start = current_.start;
  e.end = current_.end;
  e.step = static_cast<int64_t>(tokens_.size()) - 1;
  events.push_back(std::move(e));
}

void TranscriptAssembler::push(int32_t id, std::vector<StreamEvent>& events) {
  const int64_t step = static_cast<int64_t>(tokens_.size());
  tokens_.push_back(id);
  const double t0 = static_cast<double>(step) * step_s_;
  const double no_limit = std::numeric_limits<double>::infinity();
  auto event = [&](StreamEvent::Kind kind) {
    StreamEvent e;
    e.kind = kind;
    e.step = step;
    e.token = id;
    e.start = t0;
    e.end = t0 + step_s_;
    return e;
  };
  auto open = [&]() {
    current_ = Segment{t0, t0, ""};
    open_ = true;
    events.push_back(event(StreamEvent::Kind::SegmentStart));
  };

  if (id == tok_.streaming_word_id()) {
    close_segment(no_limit, events);
    open();
    return;
  }
  if (id == tok_.eos_id()) {
    close_segment(no_limit, events);
    events.push_back(event(StreamEvent::Kind::Eos));
    return;
  }
  if (tok_.is_special(id)) return;  // [STREAMING_PAD] and other control tokens carry no text
  const std::string_view bytes = tok_.token_bytes(id);
  if (bytes.empty()) return;
  if (!open_) open();  // text before any [STREAMING_WORD] starts a segment where it appears
  const std::string delta = text_utf8_.push(bytes);
  text_ += delta;
  current_.text += segment_utf8_.push(bytes);
  last_text_end_ = t0 + step_s_;
  if (!delta.empty()) {
    StreamEvent e = event(StreamEvent::Kind::Text);
    e.text = delta;
    events.push_back(std::move(e));
  }
}

void TranscriptAssembler::finish(double duration, std::vector<StreamEvent>& events) {
  const std::string tail = text_utf8_.finish();
  if (!tail.empty()) {
    text_ += tail;
    StreamEvent e;
    e.kind = StreamEvent::Kind::Text;
    e.text = tail;
    e.step = static_cast<int64_t>(tokens_.size()) - 1;
    events.push_back(std::move(e));
  }
  close_segment(duration, events);
  for (Segment& s : segments_) {
    s.start = std::min(s.start, duration);
    s.end = std::min(s.end, duration);
  }
}

std::string TranscriptAssembler::text() const { return trim(text_); }

Transcript assemble_transcript(const Tokenizer& tok, std::span<const int32_t> ids, double step_seconds,
                               double duration) {
  TranscriptAssembler a(tok, step_seconds);
  std::vector<StreamEvent> ignored;
  for (int32_t id : ids) a.push(id, ignored);
  a.finish(duration, ignored);
  Transcript t;
  t.text = a.text();
  t.tokens = a.tokens();
  t.segments = a.segments();
  t.duration = duration;
  return t;
}

}  // namespace voxrt
