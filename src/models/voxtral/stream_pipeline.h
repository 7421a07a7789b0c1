// The one path of a stream's audio to its decided steps (docs/architecture.md), shared by live
// sessions (LiveSession), offline transcription (the engine's decode_whole) and the benchmarks
// (StreamDecoder): samples -> MelFrontEnd -> the stream's model work (a scheduler's stream, or one
// stepped alone) -> steps. It keeps the rules every driver needs the same:
//   - audio after flush() is refused before it is counted;
//   - once the model work has stopped (EOS with stop_at_eos) audio is counted, not turned into frames;
//   - flush() appends the offline right pad and hands the stream's offline position count over with
//     the last frames; a second flush() does nothing.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "models/stream_work.h"
#include "models/voxtral/mel_front_end.h"
#include "models/voxtral/stream_state.h"

namespace voxrt {


class StreamPipeline {
 public:
  // `work` must outlive the pipeline.
  StreamPipeline(const LogMel& logmel, const Protocol& protocol, StreamWork& work);

  // Samples of the model's rate; the steps they made possible. Throws voxrt::Error after flush().
  std::vector<PositionOutput> feed(std::span<const float> samples);
  // Throws the error feed() throws after flush(): for a caller that converts audio first.
  void refuse_if_flushed() const;
  // End of input: every remaining step.
  std::vector<PositionOutput> flush();

  bool flushed() const { return front_.flushed(); }
  bool stopped() const { return work_.stopped(); }
  int64_t audio_samples() const { return audio_samples_; }  // every sample fed (no padding), after EOS too
  size_t buffered_samples() const { return front_.buffered_samples(); }

 private:
  MelFrontEnd front_;
  StreamWork& work_;
  int64_t audio_samples_ = 0;
};

}  // namespace voxrt
