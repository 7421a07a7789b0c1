// `voxrt bench --offline-batch B`: many offline transcriptions through an engine's schedulers.
#pragma once

#include <nlohmann/json.hpp>
#include <span>
#include <string>

#include "engine/bench_access.h"

namespace voxrt {

// `voxrt bench --offline-batch B --offline-seconds S`: B transcriptions of S seconds each at once,
// each fed as fast as the engine takes it (a session fed in 5 s pieces, then flushed: the offline
// ids, without stopping at EOS so that every run does the same work). Reported: wall time, RTFx
// (B x S seconds of audio over the wall time), the scheduler's rounds, and the compute floor
// (every position's FLOPs at the matrix rate of every device together).
struct OfflineBatchOptions {
  int batch = 1;
  double seconds = 30;
  int delay_ms = 0;
};
// The transcriptions are opened through `engine.engine`, which places them on its devices; with
// several devices the result has each one's transcriptions, rounds and busy time in "devices", and the
// rounds' figures (and "seconds_in") cover every device's rounds.
nlohmann::json run_offline_batch_benchmark(BenchEngine& engine, std::span<const float> audio,
                                           const OfflineBatchOptions& options);
std::string format_offline_batch_benchmark(const nlohmann::json& result);

}  // namespace voxrt
