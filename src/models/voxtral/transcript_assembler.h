// Turns decoder output ids, one position at a time, into text, timed segments, timed words and stream
// events (docs/model.md §8, §11). Used by offline transcription (all ids at once) and live sessions
// (id by id), so both routes give the same words and times.
//
// Timing (the one place it is defined): output id i (the i-th position after the prompt) is emitted at
// decoder position prompt_len - 1 + i, whose audio reaches (i + n_delay + 1) * 80 ms; the model speaks
// n_delay positions behind, so the id is placed at [i * 80 ms, (i + 1) * 80 ms) of the input. Times are
// rounded to whole milliseconds and clamped to the audio's duration (rounded down to the millisecond):
// the right pad decoded at the end maps past the end of the audio. Before that, a position is only
// decoded once its audio plus the delay has arrived, so its time is within the audio already fed.
//
// Segments: [STREAMING_WORD] starts one, EOS closes the open one (a boundary, not the end of a stream).
// Words: split at ASCII whitespace in the decoded text, at segment boundaries, at EOS and at the end.
// A word starts at the position of its first byte (a character split over tokens starts where its first
// byte came) and ends at the end of the position of its last byte. Characters are never split: the
// segment's UTF-8 assembler decides them, so a segment's words are its text split at whitespace.
#pragma once

#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/tekken.h"
#include "voxrt/session.h"
#include "voxrt/voxrt.h"

namespace voxrt {

class TranscriptAssembler {
 public:
  TranscriptAssembler(const Tokenizer& tok, double position_seconds) : tok_(tok), position_s_(position_seconds) {}

  // From now on no time is reported past `duration` seconds. A live session calls it before it
  // decodes the right pad; offline transcription before the first id.
  void limit_times(double duration);
  // The output of the next decoder position; appends the events it causes.
  void push(int32_t id, std::vector<StreamEvent>& events);
  // End of input: closes the open word and segment (times clamped to `duration` seconds).
  void finish(double duration, std::vector<StreamEvent>& events);

  std::string text() const;  // everything so far, trimmed
  const std::vector<Segment>& segments() const { return segments_; }
  const std::vector<Word>& words() const { return words_; }
  const std::vector<int32_t>& tokens() const { return tokens_; }
  // Everything, moved out (the assembler is spent): a transcript of hours is not held twice.
  Transcript take_transcript(double duration) &&;

 private:
  // Seconds at the start of position `position` (position + 1: the end of `position`), rounded and clamped.
  double time_at(int64_t position) const;
  StreamEvent event(StreamEvent::Kind kind, int64_t position) const;
  void open_segment(int64_t position, std::vector<StreamEvent>& events);
  // Adds decoded characters to the open segment and word; the first one's bytes began at
  // `first_position`, the rest came from `position`. `now` is the position being decoded (for events).
  void add_chars(std::string_view chars, int64_t first_position, int64_t position, int64_t now,
                 std::vector<StreamEvent>& events);
  void close_word(int64_t now, std::vector<StreamEvent>& events);
  void close_segment(int64_t now, std::vector<StreamEvent>& events);

  const Tokenizer& tok_;
  double position_s_;
  double limit_s_ = std::numeric_limits<double>::infinity();
  std::vector<int32_t> tokens_;
  std::string text_;
  Utf8Assembler text_utf8_, segment_utf8_;
  int64_t pending_position_ = 0;  // where the bytes waiting in segment_utf8_ began
  Segment current_;
  bool open_ = false;
  int64_t segment_start_position_ = 0;
  int64_t last_text_position_ = -1;
  std::string word_;  // the word being read; empty between words
  int64_t word_first_position_ = 0, word_last_position_ = 0;
  std::vector<Segment> segments_;
  std::vector<Word> words_;
};

// Offline convenience: all ids at once.
Transcript assemble_transcript(const Tokenizer& tok, std::span<const int32_t> ids, double position_seconds,
                               double duration);

}  // namespace voxrt
