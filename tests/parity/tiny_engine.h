// The tiny random-weight model: loaded once for all the tests of the binary as an engine, or as the
// model alone on a backend of a test's own; and its test audio.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "audio/audio_file.h"
#include "golden.h"
#include "models/voxtral/checkpoint.h"
#include "voxrt/voxrt.h"
#include "models/voxtral/model.h"
#include "models/voxtral/quant_plan.h"

namespace voxrt::test {

inline Engine& tiny_engine() {
  static std::unique_ptr<Engine> engine = Engine::load(test_data() / "tiny" / "mistral");
  return *engine;
}

// The tiny model's weights uploaded to `backend` (the checkpoint's mapping is released once they
// are), quantized as they load when `quantize` says so.
inline std::unique_ptr<VoxtralModel> tiny_model(Backend& backend, const QuantPlan& quantize = {}) {
  const Checkpoint ckpt = Checkpoint::open(test_data() / "tiny" / "mistral", LayoutPreference::Mistral);
  return std::make_unique<VoxtralModel>(ckpt, backend, quantize);
}

// tests/data/audio/<name>.wav as 16 kHz mono samples.
inline std::vector<float> wav(const std::string& name) {
  return load_audio_mono(test_data() / "audio" / (name + ".wav"));
}

}  // namespace voxrt::test
