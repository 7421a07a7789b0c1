#include "bench/engine_bench.h"

#include "common/error.h"
#include "models/voxtral/protocol.h"

namespace voxrt {
namespace {

// The engine's load as every result records it (its first device's).
nlohmann::json with_load(nlohmann::json r, const ModelInfo& info) {
  r["load_s"] = info.load_seconds;
  r["model_dir"] = info.dir.string();
  r["layout"] = info.layout;
  return r;
}

// A many-session result with the engine's description.
nlohmann::json described(nlohmann::json r, const BenchEngine& engine, int delay_ms) {
  const ModelInfo& info = engine.devices.front()->info();
  r["delay_ms"] = delay_ms > 0 ? delay_ms : info.default_delay_ms;
  return with_load(std::move(r), info);
}

}  // namespace

nlohmann::json benchmark_engine(BenchEngine& engine, std::span<const float> audio_16k, int delay_ms,
                                const BenchOptions& options) {
  check(engine.devices.size() == 1, "bench", "one device a run for this figure (--gpus spreads only --streams and --offline-batch)");
  BenchDevice& device = *engine.devices.front();
  BenchOptions b = options;
  b.protocol = device.protocol(delay_ms > 0 ? delay_ms : device.info().default_delay_ms);
  b.transcribe = [&device, &b](std::span<const float> audio) {
    OfflineRun run;
    const BenchDevice::AloneRun alone = device.transcribe_alone(audio, b.protocol, [&](int32_t, double seconds) {
      ++run.positions;
      run.position_seconds += seconds;
    });
    run.decoder_passes = alone.decoder_passes;
    run.encoder_seconds = alone.encoder_seconds;
    return run;
  };
  // One stream alone on the model, as the scheduler steps a stream alone.
  nlohmann::json r;
  device.run_alone([&] { r = run_benchmark(device.model(), audio_16k, b); });
  return with_load(std::move(r), device.info());
}

nlohmann::json benchmark_streams(BenchEngine& engine, std::span<const float> audio_16k, const StreamsBenchOptions& options) {
  return described(options.find_capacity ? find_streams_capacity(engine, audio_16k, options)
                                         : run_streams_benchmark(engine, audio_16k, options),
                   engine, options.delay_ms);
}

nlohmann::json benchmark_offline_batch(BenchEngine& engine, std::span<const float> audio_16k,
                                       const OfflineBatchOptions& options) {
  return described(run_offline_batch_benchmark(engine, audio_16k, options), engine, options.delay_ms);
}

}  // namespace voxrt
