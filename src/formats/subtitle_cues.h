// Subtitle cues people can read, built from a transcript's timed words (srt, vtt, txt --timestamps).
//
// Words are packed in order into cues of at most two lines of at most max_line_chars characters
// (UTF-8 code points), broken only between words; a single word longer than a line gets a line of its
// own, uncut. A cue spans at most max_cue_seconds (first word's start to last word's end) unless one
// word alone is longer. A new cue also starts after a pause of kPauseSeconds (no text lingers through a
// silence) and after a sentence's end once the cue holds at least a line's worth. Cues cross the model's
// word-group marks: their frequency depends on the model (the random test model gives one group for a
// 30-minute file), so they are no guide to where a subtitle should break.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "voxrt/voxrt.h"

namespace voxrt::formats {

struct CueLimits {
  int max_line_chars = 42;
  double max_cue_seconds = 7.0;
};

struct Cue {
  // Times of its words, made readable: end - start >= kMinCueSeconds where the audio has room (and
  // always > 0), end <= the next cue's start, within the audio unless it is too short to hold them.
  double start = 0, end = 0;
  std::vector<Word> words;
  std::vector<std::string> lines;  // one or two: the words joined by single spaces
};

inline constexpr double kPauseSeconds = 2.0;
// The least time a cue stays on screen (or max_cue_seconds if that is less): about what subtitling
// guidelines give a viewer to notice a cue and read a short line (some say 5/6 s, most about 1 s).
inline constexpr double kMinCueSeconds = 1.0;

// Throws voxrt::Error for limits that cannot hold a cue (max_line_chars < 1, max_cue_seconds <= 0).
// Uses t.words; a transcript without them (made by hand) takes its segments' words, or their text
// split at whitespace and timed evenly over the segment by characters.
std::vector<Cue> build_cues(const Transcript& t, const CueLimits& limits = {});

size_t utf8_length(std::string_view s);  // code points (continuation bytes are not counted)

}  // namespace voxrt::formats
