// The host half of a live stream (docs/model.md §2, §9, §10): samples in, log-mel frames out, on
// exactly the offline grid. The stream starts with the protocol's left pad (silent steps the
// prompt is aligned with); frame k is computed as soon as samples [160k - 200, 160k + 200) of the
// left-padded stream exist; flush() appends the offline right pad and completes every frame of the
// offline count. It never touches the model, so it runs on the thread that feeds the audio while
// the model works elsewhere (the batching scheduler, docs/scheduler.md).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "audio/log_mel.h"
#include "models/voxtral/protocol.h"

namespace voxrt {

class MelFrontEnd {
 public:
  MelFrontEnd(const LogMel& logmel, const Protocol& protocol);

  // Adds samples and computes every frame they complete. Throws voxrt::Error after flush().
  void feed(std::span<const float> samples);
  // End of input: the right pad, then the remaining frames. Twice is harmless. A stream without a
  // single sample of audio gets no frames at all (and no positions: an empty transcript).
  void flush();

  // Frames computed and not yet taken, time-major [frames * n_mels]; take_frames() hands them over.
  std::vector<float> take_frames();
  const std::vector<float>& frames() const { return frames_; }

  bool flushed() const { return flushed_; }
  // After flush(): the offline position count of the stream (left pad, audio, right pad); -1 before.
  int64_t final_positions() const { return final_positions_; }
  int64_t audio_samples() const { return fed_samples_; }  // real audio fed (no padding)
  size_t buffered_samples() const { return audio_.size(); }

 private:
  int64_t frames_available() const;
  void compute_frames();

  const LogMel& logmel_;
  Protocol protocol_;
  const int n_mels_, hop_, half_window_;
  // Audio of the left-padded stream not yet needed by any frame, from absolute sample base_.
  std::vector<float> audio_;
  int64_t base_ = 0, total_ = 0, fed_samples_ = 0;
  int64_t next_frame_ = 0;       // next frame to compute
  int64_t final_frames_ = -1;    // after flush: the offline frame count
  int64_t final_positions_ = -1;
  std::vector<float> frames_;    // computed, not yet taken
  std::vector<float> window_;    // one frame's samples (kept to avoid an allocation per frame)
  bool flushed_ = false;
};

}  // namespace voxrt
