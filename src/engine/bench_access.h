// `voxrt bench`'s way into a loaded engine. The benchmarks (src/bench/) time what lies behind the
// public API: a device's model and backend, its scheduler's rounds. So the bench loads its engine
// here rather than through Engine::load, and gets the public Engine together with typed access to
// each of its devices. Internal: no public header declares it, and only the bench calls it.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "voxrt/voxrt.h"

namespace voxrt {

class Scheduler;
class VoxtralModel;
struct Protocol;

// One device of the engine under test: the engine's own, or each of EngineOptions::gpus.
class BenchDevice {
 public:
  virtual const std::string& device_name() const = 0;  // "cuda:0", "cpu:1": its EngineStats::devices entry
  virtual const ModelInfo& info() const = 0;           // this device's load (load_seconds its own)
  virtual Scheduler& scheduler() = 0;
  virtual VoxtralModel& model() = 0;
  // A stream's protocol at delay_ms (the tokenizer's padding, the model's step).
  virtual Protocol protocol(int delay_ms) const = 0;

  // Runs `work` with the model to itself: the scheduler's rounds wait meanwhile, so that a figure
  // times one stream alone (as the scheduler steps a stream alone).
  virtual void run_alone(const std::function<void()>& work) = 0;

  // An offline transcription of `audio` (16 kHz) in the pieces `voxrt transcribe` feeds, straight
  // on the model rather than through the scheduler and without stopping at EOS, so that every run
  // does the same work; on_step gets each step's id and seconds. Call it inside run_alone.
  struct AloneRun {
    int64_t decoder_passes = 0;  // forward passes of the decoder (each reads all the weights)
    double encoder_seconds = 0;  // in the encoder's passes
  };
  virtual AloneRun transcribe_alone(std::span<const float> audio, const Protocol& protocol,
                                    const std::function<void(int32_t, double)>& on_step) = 0;

 protected:
  ~BenchDevice() = default;
};

// A loaded engine and its devices.
struct BenchEngine {
  std::unique_ptr<Engine> engine;     // as programs see it: it places the bench's sessions on its devices
  std::vector<BenchDevice*> devices;  // owned by `engine`; one, or one for each of EngineOptions::gpus
};

// Engine::load's engine, with its devices.
BenchEngine load_bench_engine(const std::filesystem::path& model_dir, const EngineOptions& options);

}  // namespace voxrt
