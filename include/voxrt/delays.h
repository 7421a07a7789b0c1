// The transcription delays a model accepts (TranscribeOptions::delay_ms, SessionOptions::delay_ms):
// how far behind the audio it speaks. A loaded model says its own (ModelInfo::delays); a front end
// that checks a delay before any model is loaded (a command line) asks model_delays().
#pragma once

#include <string>
#include <vector>

#include "voxrt/export.h"

namespace voxrt {

struct DelayRange {
  // Every step_ms from min_ms to max_ms, and the longer ones in beyond_ms (ascending).
  int min_ms = 0, max_ms = 0, step_ms = 0;
  std::vector<int> beyond_ms;

  bool accepts(int delay_ms) const {
    if (delay_ms >= min_ms && delay_ms <= max_ms && step_ms > 0 && (delay_ms - min_ms) % step_ms == 0) return true;
    for (int ms : beyond_ms)
      if (delay_ms == ms) return true;
    return false;
  }
};

// The delays for messages: "80 to 1200 ms in steps of 80 ms, or 2400 ms".
VOXRT_API std::string to_string(const DelayRange& delays);

// The delays of the model voxrt runs (Voxtral Realtime): what ModelInfo::delays holds once one is
// loaded (its default delay, ModelInfo::default_delay_ms, is the model directory's own).
VOXRT_API DelayRange model_delays();

// Throws an OptionError naming delay_ms unless model_delays() accepts it:
// "delay_ms 500: the model supports 80 to 1200 ms in steps of 80 ms, or 2400 ms".
VOXRT_API void validate_delay_ms(int delay_ms);

}  // namespace voxrt
