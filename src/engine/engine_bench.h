// `voxrt bench` on a loaded engine (internal: the benchmark needs the model behind the public API).
#pragma once

#include <nlohmann/json.hpp>
#include <span>
#include <vector>

#include "engine/offline_batch_bench.h"
#include "engine/streams_bench.h"
#include "voxrt/voxrt.h"
#include "voxtral/benchmark.h"

namespace voxrt {

// Ceilings, per-step encoder/decoder times against their floors, offline RTFx for each length in
// options.offline_seconds (audio_16k tiled to it), memory in use, load time. See
// voxtral/benchmark.h; the engine fills in the protocol and the transcription.
nlohmann::json benchmark_engine(Engine& engine, std::span<const float> audio_16k, int delay_ms,
                                const BenchOptions& options);

// N live streams at once through the engine's scheduler, or its devices' (engine/streams_bench.h).
nlohmann::json benchmark_streams(Engine& engine, std::span<const float> audio_16k, const StreamsBenchOptions& options);
// B offline transcriptions at once through the engine's scheduler, or its devices'
// (engine/offline_batch_bench.h).
nlohmann::json benchmark_offline_batch(Engine& engine, std::span<const float> audio_16k, const OfflineBatchOptions& options);

}  // namespace voxrt
