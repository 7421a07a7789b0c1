// `voxrt bench --offline-batch B`: many offline transcriptions through one engine's scheduler.
#pragma once

#include <nlohmann/json.hpp>
#include <span>
#include <string>

#include "engine/scheduler.h"
#include "voxrt/voxrt.h"

namespace voxrt {

// `voxrt bench --offline-batch B --offline-seconds S`: B transcriptions of S seconds each at once,
// each fed as fast as the engine takes it (a session fed in 5 s pieces, then flushed: the offline
// ids, without stopping at EOS so that every run does the same work). Reported: wall time, RTFx
// (B x S seconds of audio over the wall time), the scheduler's rounds, and the compute floor
// (every position's FLOPs at the matrix rate).
struct OfflineBatchOptions {
  int batch = 1;
  double seconds = 30;
  int delay_ms = 0;
};
nlohmann::json run_offline_batch_benchmark(Engine& engine, Scheduler& scheduler, VoxtralModel& model,
                                           std::span<const float> audio, const OfflineBatchOptions& options);
std::string format_offline_batch_benchmark(const nlohmann::json& result);

}  // namespace voxrt
