#include "models/voxtral/transcript_assembler.h"

#include <algorithm>
#include <cmath>

namespace voxrt {
namespace {

constexpr const char* kBlanks = " \t\n\r\v\f";

bool is_blank(char c) { return std::string_view(kBlanks).find(c) != std::string_view::npos; }

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(kBlanks);
  if (b == std::string::npos) return "";
  const auto e = s.find_last_not_of(kBlanks);
  return s.substr(b, e - b + 1);
}

// Whole milliseconds: position * 0.08 is 3.8400000000000003 in binary, reported as 3.84.
double round_ms(double seconds) { return std::round(seconds * 1000.0) / 1000.0; }

}  // namespace

void TranscriptAssembler::limit_times(double duration) {
  // Rounded down (a tolerance for durations already whole in ms), so a rounded time never passes it.
  limit_s_ = std::min(limit_s_, std::floor(std::max(0.0, duration) * 1000.0 + 1e-6) / 1000.0);
}

double TranscriptAssembler::time_at(int64_t position) const {
  return std::min(round_ms(static_cast<double>(std::max<int64_t>(position, 0)) * position_s_), limit_s_);
}

StreamEvent TranscriptAssembler::event(StreamEvent::Kind kind, int64_t position) const {
  StreamEvent e;
  e.kind = kind;
  e.position = e.step = position;  // step: the deprecated name
  e.token = position >= 0 && position < static_cast<int64_t>(tokens_.size()) ? tokens_[position] : 0;
  e.start = time_at(position);
  e.end = time_at(position + 1);
  return e;
}

void TranscriptAssembler::open_segment(int64_t position, std::vector<StreamEvent>& events) {
  current_ = Segment{time_at(position), time_at(position), "", {}};
  segment_start_position_ = position;
  open_ = true;
  events.push_back(event(StreamEvent::Kind::SegmentStart, position));
}

void TranscriptAssembler::add_chars(std::string_view chars, int64_t first_position, int64_t position, int64_t now,
                                    std::vector<StreamEvent>& events) {
  current_.text += chars;
  for (size_t i = 0; i < chars.size(); ++i) {
    // UTF-8 lead and continuation bytes are never ASCII, so a byte-wise test cannot split a character.
    if (is_blank(chars[i])) {
      close_word(now, events);
      continue;
    }
    if (word_.empty()) word_first_position_ = i == 0 ? first_position : position;
    word_ += chars[i];
    word_last_position_ = position;
  }
}

void TranscriptAssembler::close_word(int64_t now, std::vector<StreamEvent>& events) {
  if (word_.empty()) return;
  Word w{time_at(word_first_position_), time_at(word_last_position_ + 1), std::move(word_)};
  word_.clear();
  StreamEvent e = event(StreamEvent::Kind::Word, now);
  e.text = w.text;
  e.start = w.start;
  e.end = w.end;
  events.push_back(std::move(e));
  current_.words.push_back(std::move(w));
}

void TranscriptAssembler::close_segment(int64_t now, std::vector<StreamEvent>& events) {
  if (!open_) return;
  open_ = false;
  // A character cut by the boundary becomes U+FFFD (as decoding the segment's ids alone would give).
  const std::string tail = segment_utf8_.finish();
  add_chars(tail, pending_position_, std::max(last_text_position_, pending_position_), now, events);
  close_word(now, events);
  current_.text = trim(current_.text);
  current_.end = std::max(current_.start, time_at(std::max(last_text_position_, segment_start_position_) + 1));
  if (current_.text.empty()) return;
  words_.insert(words_.end(), current_.words.begin(), current_.words.end());
  StreamEvent e = event(StreamEvent::Kind::SegmentEnd, now);
  e.text = current_.text;
  e.start = current_.start;
  e.end = current_.end;
  events.push_back(std::move(e));
  segments_.push_back(std::move(current_));
}

void TranscriptAssembler::push(int32_t id, std::vector<StreamEvent>& events) {
  const int64_t position = static_cast<int64_t>(tokens_.size());
  tokens_.push_back(id);

  if (id == tok_.streaming_word_id()) {
    close_segment(position, events);
    open_segment(position, events);
    return;
  }
  if (id == tok_.eos_id()) {
    close_segment(position, events);
    events.push_back(event(StreamEvent::Kind::Eos, position));
    return;
  }
  if (tok_.is_special(id)) return;  // [STREAMING_PAD] and other control tokens carry no text
  const std::string_view bytes = tok_.token_bytes(id);
  if (bytes.empty()) return;
  if (!open_) open_segment(position, events);  // text before any [STREAMING_WORD] starts a segment where it appears
  const std::string delta = text_utf8_.push(bytes);
  text_ += delta;
  last_text_position_ = position;
  const bool continues = segment_utf8_.pending();
  const int64_t first_position = continues ? pending_position_ : position;
  const std::string chars = segment_utf8_.push(bytes);
  if (segment_utf8_.pending() && (!continues || !chars.empty())) pending_position_ = position;
  // The words this position's text closes first, then the text: a consumer holding word times for the
  // next text it sends (the server's deltas) then sends them with the text that ended them.
  add_chars(chars, first_position, position, position, events);
  if (!delta.empty()) {
    StreamEvent e = event(StreamEvent::Kind::Text, position);
    e.text = delta;
    events.push_back(std::move(e));
  }
}

void TranscriptAssembler::finish(double duration, std::vector<StreamEvent>& events) {
  limit_times(duration);
  const int64_t last = static_cast<int64_t>(tokens_.size()) - 1;
  const std::string tail = text_utf8_.finish();
  if (!tail.empty()) {
    text_ += tail;
    StreamEvent e = event(StreamEvent::Kind::Text, last);
    e.text = tail;
    events.push_back(std::move(e));
  }
  close_segment(last, events);
}

std::string TranscriptAssembler::text() const { return trim(text_); }

Transcript assemble_transcript(const Tokenizer& tok, std::span<const int32_t> ids, double position_seconds,
                               double duration) {
  TranscriptAssembler a(tok, position_seconds);
  a.limit_times(duration);
  // The events are not wanted here: dropped position by position, so that memory holds the transcript only
  // (kept, they would add a Text and a Word event a position, growing with the input's length).
  std::vector<StreamEvent> ignored;
  for (int32_t id : ids) {
    a.push(id, ignored);
    ignored.clear();
  }
  a.finish(duration, ignored);
  return std::move(a).take_transcript(duration);
}

Transcript TranscriptAssembler::take_transcript(double duration) && {
  Transcript t;
  t.text = text();
  t.tokens = std::move(tokens_);
  t.segments = std::move(segments_);
  t.words = std::move(words_);
  t.duration = duration;
  return t;
}

}  // namespace voxrt
