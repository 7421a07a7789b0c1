// Turns decoder output ids into text and timed segments (SPEC §8, §9). Output id i (the i-th step
// after the prompt) was emitted at decoder position prompt_len - 1 + i, which sees audio up to
// (i + n_delay + 1) * 80 ms; the model emits what it heard n_delay steps earlier, so token i is
// placed at [i * 80 ms, (i + 1) * 80 ms) of the input. [STREAMING_WORD] starts a new segment.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "tokenizer/tekken.h"
#include "voxrt/voxrt.h"

namespace voxrt {

struct TextAndSegments {
  std::string text;
  std::vector<Segment> segments;
};

TextAndSegments assemble_transcript(const Tokenizer& tok, std::span<const int32_t> ids, double step_seconds,
                                    double duration);

}  // namespace voxrt
