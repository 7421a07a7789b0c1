// The tiny random-weight model loaded once for all the tests of the binary, and its test audio.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "audio/audio_file.h"
#include "golden.h"
#include "voxrt/voxrt.h"

namespace voxrt::test {

inline Engine& tiny_engine() {
  static std::unique_ptr<Engine> engine = Engine::load(test_data() / "tiny" / "mistral");
  return *engine;
}

// tests/data/audio/<name>.wav as 16 kHz mono samples.
inline std::vector<float> wav(const std::string& name) {
  return load_audio_mono(test_data() / "audio" / (name + ".wav"));
}

}  // namespace voxrt::test
