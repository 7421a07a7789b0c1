// One encoder pass over whole positions of several streams (docs/model.md §3-§4; the batching
// scheduler's encoder pass, docs/scheduler.md): each stream's mel rows go through the conv stem
// with its own carried context, then the encoder layers run once over the frames of all of them
// (each frame's K/V in its stream's slot of one cache, attention per row over its own slot), and
// the adapter turns every 4 frames into one vector. Every product reads the weights once for all
// streams; on a batch-invariant backend each stream's vectors are bit for bit those it gets alone.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "models/voxtral/model.h"

namespace voxrt {

// One stream's share of a pass.
struct EncoderPart {
  int slot = 0;               // its slot in the encoder cache
  int64_t first_frame = 0;    // model position of its first frame
  int positions = 0;          // whole positions (downsample_factor frames, 2 x that many mel rows)
  std::span<const float> mel_context;  // host: the 2 mel rows before its chunk
  std::span<const float> mel;          // host: its mel rows, time-major
  Mat conv1_context{};        // backend: the conv1 row before its chunk; updated to the next chunk's
};

class EncoderPass {
 public:
  // key names this pass among the backend's recordings.
  EncoderPass(VoxtralModel& model, std::string key) : model_(model), key_(std::move(key)) {}

  // Runs the parts, in order; returns their adapter vectors [sum of positions, dim] (backend
  // memory, valid until the next run). The pass is a recording keyed by the parts' position
  // counts, whichever streams they come from: the parts' conv1 contexts are copied into the pass's
  // own buffer before it and back after it, so that its launches do not depend on the streams.
  Mat run(std::span<const EncoderPart> parts, KvCache& cache);

 private:
  VoxtralModel& model_;
  std::string key_;
  Buffer mel_, contexts_, frames_, adapter_;
  std::vector<float> mel_host_;  // the parts' mel rows side by side, as uploaded
  std::vector<int> part_rows_;   // and each part's count of them
};

}  // namespace voxrt
