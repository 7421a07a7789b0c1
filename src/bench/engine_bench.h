// `voxrt bench` on an engine loaded for it: load_bench_engine (engine/bench_access.h) instead of
// Engine::load, so that the figures reach the model and schedulers behind the public API.
#pragma once

#include <nlohmann/json.hpp>
#include <span>

#include "bench/benchmark.h"
#include "bench/offline_batch_bench.h"
#include "bench/streams_bench.h"
#include "engine/bench_access.h"

namespace voxrt {

// Ceilings, per-pass encoder/decoder times against their floors, offline RTFx for each length in
// options.offline_seconds (audio_16k tiled to it), memory in use, load time, on the engine's one
// device. See bench/benchmark.h; this fills in the protocol and the transcription.
nlohmann::json benchmark_engine(BenchEngine& engine, std::span<const float> audio_16k, int delay_ms,
                                const BenchOptions& options);

// N live streams at once through the engine's scheduler, or its devices' (bench/streams_bench.h).
nlohmann::json benchmark_streams(BenchEngine& engine, std::span<const float> audio_16k, const StreamsBenchOptions& options);
// B offline transcriptions at once through the engine's scheduler, or its devices'
// (bench/offline_batch_bench.h).
nlohmann::json benchmark_offline_batch(BenchEngine& engine, std::span<const float> audio_16k,
                                       const OfflineBatchOptions& options);

}  // namespace voxrt
