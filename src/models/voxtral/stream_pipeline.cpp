#include "models/voxtral/stream_pipeline.h"

#include "common/error.h"

namespace voxrt {

StreamPipeline::StreamPipeline(const LogMel& logmel, const Protocol& protocol, StreamWork& work)
    : front_(logmel, protocol), work_(work) {}

void StreamPipeline::refuse_if_flushed() const {
  if (front_.flushed()) throw Error("session: feed() after flush()");
}

std::vector<PositionOutput> StreamPipeline::feed(std::span<const float> samples) {
  refuse_if_flushed();
  audio_samples_ += static_cast<int64_t>(samples.size());
  if (work_.stopped()) return {};  // after EOS the rest is only counted
  front_.feed(samples);
  return work_.run(front_.take_frames(), -1);
}

std::vector<PositionOutput> StreamPipeline::flush() {
  if (front_.flushed()) return {};
  front_.flush();
  return work_.run(front_.take_frames(), front_.final_positions());
}

}  // namespace voxrt
