// Turns decoder output ids, one step at a time, into text, timed segments and stream events
// (SPEC §8, §9). Used by offline transcription (all ids at once) and live sessions (id by id).
//
// Timing: output id i (the i-th step after the prompt) is emitted at decoder position
// prompt_len - 1 + i, whose audio reaches (i + n_delay + 1) * 80 ms; the model speaks n_delay steps
// behind, so the id is placed at [i * 80 ms, (i + 1) * 80 ms) of the input.
// [STREAMING_WORD] starts a segment; EOS closes the open one (a boundary, not the end of a stream).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "tokenizer/tekken.h"
#include "voxrt/session.h"
#include "voxrt/voxrt.h"

namespace voxrt {

class TranscriptAssembler {
 public:
  TranscriptAssembler(const Tokenizer& tok, double step_seconds) : tok_(tok), step_s_(step_seconds) {}

  // The output of the next decoder step; appends the events it causes.
  void push(int32_t id, std::vector<StreamEvent>& events);
  // End of input: closes the open segment (ends clamped to `duration` seconds).
  void finish(double duration, std::vector<StreamEvent>& events);

  std::string text() const;  // everything so far, trimmed
  const std::vector<Segment>& segments() const { return segments_; }
  const std::vector<int32_t>& tokens() const { return tokens_; }

 private:
  void close_segment(double limit, std::vector<StreamEvent>& events);

  const Tokenizer& tok_;
  double step_s_;
  std::vector<int32_t> tokens_;
  std::string text_;
  Utf8Assembler text_utf8_, segment_utf8_;
  Segment current_;
  bool open_ = false;
  double last_text_end_ = 0;
  std::vector<Segment> segments_;
};

// Offline convenience: all ids at once.
Transcript assemble_transcript(const Tokenizer& tok, std::span<const int32_t> ids, double step_seconds,
                               double duration);

}  // namespace voxrt
