// `voxrt bench --figures attention`: one layer's attention of many live streams at once, the
// encoder's (each stream's step of frames over a full window) and the decoder's (one token a
// stream over 60 s, 5 minutes and a full window of keys), timed alone inside a recording,
// against its floor: the K/V bytes the rows read over the copy rate measured in the same run.
// Every attention kernel the backend has is timed on the same caches (the CUDA backend: its
// tensor-core and CUDA-core kernels), so that the live rounds' largest reads can be followed
// without the whole model.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "models/voxtral/config.h"
#include "runtime/backend.h"

namespace voxrt {

struct AttentionTiming {
  double read_bytes_per_s = 0;  // the measured copy ceiling (reads)
  std::vector<int> streams;     // stream counts to time
};

// One entry per shape and stream count: name, streams, rows, keys, kv_bytes, floor_us, and per
// kernel path ("auto", or "tensor_cores", "cuda_cores"): p50_us and GBps.
nlohmann::json time_attention(Backend& backend, const ModelConfig& config, const AttentionTiming& timing);

// The table for people.
std::string format_attention(const nlohmann::json& attention);

}  // namespace voxrt
