#include "formats/subtitle_cues.h"

#include <algorithm>
#include <limits>
#include <sstream>

#include "common/error.h"

namespace voxrt::formats {

size_t utf8_length(std::string_view s) {
  return static_cast<size_t>(std::count_if(s.begin(), s.end(), [](char c) { return (c & 0xC0) != 0x80; }));
}

namespace {

// A segment's text as words timed evenly by characters: for transcripts made without word times.
std::vector<Word> words_spread_over(const Segment& s) {
  std::vector<std::string> texts;
  std::istringstream in(s.text);
  size_t total = 0;
  for (std::string w; in >> w;) {
    total += utf8_length(w);
    texts.push_back(std::move(w));
  }
  std::vector<Word> words;
  size_t before = 0;
  for (std::string& text : texts) {
    const size_t n = utf8_length(text);
    const double span = s.end - s.start;
    words.push_back({s.start + span * static_cast<double>(before) / static_cast<double>(total),
                     s.start + span * static_cast<double>(before + n) / static_cast<double>(total), std::move(text)});
    before += n;
  }
  return words;
}

std::vector<Word> timed_words(const Transcript& t) {
  if (!t.words.empty()) return t.words;
  std::vector<Word> words;
  for (const Segment& s : t.segments) {
    const std::vector<Word> w = s.words.empty() ? words_spread_over(s) : s.words;
    words.insert(words.end(), w.begin(), w.end());
  }
  return words;
}

// Greedy line filling, to know when a cue's words need a third line.
class LineFill {
 public:
  explicit LineFill(size_t max_chars) : max_(max_chars) {}
  bool fits_two_lines(size_t n) const { return lines_ == 0 || current_ + 1 + n <= max_ || lines_ < 2; }
  void add(size_t n) {
    if (lines_ > 0 && current_ + 1 + n <= max_) {
      current_ += 1 + n;
    } else {  // a new line; a word longer than a line fills one alone
      ++lines_;
      current_ = n;
    }
    chars_ += (chars_ ? 1 : 0) + n;
  }
  size_t chars() const { return chars_; }

 private:
  size_t max_;
  int lines_ = 0;
  size_t current_ = 0, chars_ = 0;
};

std::string join(const std::vector<Word>& words, size_t from, size_t to) {
  std::string s;
  for (size_t i = from; i < to; ++i) s += (i > from ? " " : "") + words[i].text;
  return s;
}

// One line if it fits, else the two lines of most equal length (the top one shorter on a tie), each
// within the limit unless it is a single word.
std::vector<std::string> break_lines(const std::vector<Word>& words, size_t max_chars) {
  const std::string all = join(words, 0, words.size());
  if (words.size() == 1 || utf8_length(all) <= max_chars) return {all};
  size_t best = 0, best_longest = 0;
  for (size_t k = 1; k < words.size(); ++k) {
    const size_t top = utf8_length(join(words, 0, k)), bottom = utf8_length(join(words, k, words.size()));
    const bool ok = (top <= max_chars || k == 1) && (bottom <= max_chars || k + 1 == words.size());
    if (ok && (best == 0 || std::max(top, bottom) < best_longest)) {
      best = k;
      best_longest = std::max(top, bottom);
    }
  }
  if (best == 0) best = words.size() - 1;  // not reached: build_cues only packs what two lines hold
  return {join(words, 0, best), join(words, best, words.size())};
}

bool ends_sentence(const std::string& word) {
  const char last = word.empty() ? '\0' : word.back();
  return last == '.' || last == '?' || last == '!';
}

// Cues shorter than min_seconds start earlier, from the last back (each cue ends by the next one's
// start, within `limit`, the end of the audio). False when the audio is too short for that: a cue
// would start before 0.
bool cues_fit_backward(std::vector<Cue>& cues, double limit, double min_seconds) {
  bool fits = true;
  for (size_t i = cues.size(); i-- > 0;) {
    Cue& c = cues[i];
    c.start = std::min(c.start, limit);
    c.end = std::min(std::max(c.end, c.start + min_seconds), limit);
    if (c.end - c.start < min_seconds) c.start = c.end - min_seconds;
    if (c.start < 0) {
      c.start = 0;
      fits = false;
    }
    limit = c.start;
  }
  return fits;
}

// Times every cue so that a player shows it: at least min_seconds on screen, never overlapping the
// next cue, within the audio. Word times can overlap by a step (a token holding the end of one word
// and the start of the next), and the words the model says after the audio has ended are timed at
// its end, so the last cue can start where the audio ends: left as it is, it lasts 0 s, and players
// never show a cue of 0 s.
//
// A short cue first grows forward, up to the next cue's start and the end of the audio. Where that
// leaves it short (the last words of the audio, or a cue the next follows at once), it starts
// earlier instead, taking time from the end of the cue before it (which is shortened in its turn,
// and so on back): showing words a little before they are heard is what subtitles often do anyway,
// while showing them past the end of the audio is showing them never (a player stops at the end).
// Where the audio is too short for every cue to get min_seconds so (speech denser than a cue a
// second), every cue gets the most that fits for all: the largest equal minimum, found by bisection.
void fit_cue_times(std::vector<Cue>& cues, double duration, double min_seconds) {
  const bool bounded = duration > 0;  // a transcript made by hand may not say how long its audio is
  for (Cue& c : cues)
    if (bounded) c.start = std::min(c.start, duration);
  const double limit = bounded ? duration : std::numeric_limits<double>::infinity();
  const std::vector<Cue> given = cues;
  if (cues_fit_backward(cues, limit, min_seconds)) return;
  double fits = 0, fails = min_seconds;
  for (int i = 0; i < 50; ++i) {
    const double mid = (fits + fails) / 2;
    std::vector<Cue> trial = given;
    (cues_fit_backward(trial, limit, mid) ? fits : fails) = mid;
  }
  cues = given;
  cues_fit_backward(cues, limit, fits);
  // Cues that still have no time (all of them at one instant, at the start of the audio): one
  // after the other from there, each min_seconds, since a cue past the end beats one never shown.
  double previous_end = 0;
  for (Cue& c : cues) {
    c.start = std::max(c.start, previous_end);
    if (c.end <= c.start) c.end = c.start + min_seconds;
    previous_end = c.end;
  }
}

}  // namespace

std::vector<Cue> build_cues(const Transcript& t, const CueLimits& limits) {
  if (limits.max_line_chars < 1) throw Error("max_line_chars " + std::to_string(limits.max_line_chars) + ": expected 1 or more");
  if (!(limits.max_cue_seconds > 0))
    throw Error("max_cue_seconds " + std::to_string(limits.max_cue_seconds) + ": expected more than 0");
  const size_t max_chars = static_cast<size_t>(limits.max_line_chars);

  std::vector<Cue> cues;
  Cue cue;
  LineFill fill(max_chars);
  auto close = [&] {
    if (cue.words.empty()) return;
    cue.start = cue.words.front().start;
    cue.end = cue.words.back().end;
    cue.lines = break_lines(cue.words, max_chars);
    cues.push_back(std::move(cue));
    cue = Cue{};
    fill = LineFill(max_chars);
  };
  for (const Word& w : timed_words(t)) {
    if (w.text.empty()) continue;
    const size_t n = utf8_length(w.text);
    if (!cue.words.empty() && (w.start - cue.words.back().end > kPauseSeconds ||
                               w.end - cue.words.front().start > limits.max_cue_seconds || !fill.fits_two_lines(n)))
      close();
    cue.words.push_back(w);
    fill.add(n);
    if (ends_sentence(w.text) && fill.chars() >= max_chars) close();
  }
  close();

  fit_cue_times(cues, t.duration, std::min(kMinCueSeconds, limits.max_cue_seconds));
  return cues;
}

}  // namespace voxrt::formats
