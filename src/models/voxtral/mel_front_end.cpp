#include "models/voxtral/mel_front_end.h"

#include <algorithm>

#include "common/error.h"

namespace voxrt {

MelFrontEnd::MelFrontEnd(const LogMel& logmel, const Protocol& protocol)
    : logmel_(logmel),
      protocol_(protocol),
      n_mels_(logmel.params().n_mels),
      hop_(logmel.params().hop),
      half_window_(logmel.params().n_fft / 2),
      window_(static_cast<size_t>(logmel.params().n_fft)) {
  const size_t left = static_cast<size_t>(protocol.n_left_pad_tokens) * protocol.samples_per_position;
  audio_.assign(left, 0.0f);
  total_ = static_cast<int64_t>(left);
}

void MelFrontEnd::feed(std::span<const float> samples) {
  if (flushed_) throw Error("session: feed() after flush()");
  audio_.insert(audio_.end(), samples.begin(), samples.end());
  total_ += static_cast<int64_t>(samples.size());
  fed_samples_ += static_cast<int64_t>(samples.size());
  compute_frames();
}

void MelFrontEnd::flush() {
  if (flushed_) return;
  flushed_ = true;
  if (fed_samples_ == 0) {
    // No audio at all: no steps. The offline protocol would decode the right pad of nothing (10
    // steps of a silence nobody heard); an empty input is an empty transcript on every route (a
    // file of 0 frames, 0 samples on a pipe, a session flushed at once). The left pad alone never
    // completes the prompt, so no step has run before this either.
    final_frames_ = 0;
    final_positions_ = 0;
    audio_.clear();
    return;
  }
  // The offline right pad (docs/model.md §9): zeros to a whole step, then n_delay + 1 + 10 steps.
  // The left pad is whole steps, so rounding the padded stream rounds the audio.
  const int64_t step = protocol_.samples_per_position;
  const int64_t padded = (total_ + step - 1) / step * step + protocol_.right_pad_positions() * step;
  audio_.resize(audio_.size() + static_cast<size_t>(padded - total_), 0.0f);
  total_ = padded;
  final_frames_ = total_ / hop_;
  final_positions_ = total_ / step;
  compute_frames();
}

std::vector<float> MelFrontEnd::take_frames() {
  std::vector<float> out;
  out.swap(frames_);
  return out;
}

int64_t MelFrontEnd::frames_available() const {
  // Frame k needs samples up to 160k + 200; after the flush the offline centre padding beyond the
  // end is zeros (it mirrors the right pad), so every frame of the offline count is available.
  if (flushed_) return final_frames_;
  return total_ < half_window_ ? 0 : (total_ - half_window_) / hop_ + 1;
}

void MelFrontEnd::compute_frames() {
  const int64_t available = frames_available();
  const int n_fft = static_cast<int>(window_.size());
  for (; next_frame_ < available; ++next_frame_) {
    const int64_t first = next_frame_ * hop_ - half_window_;
    for (int i = 0; i < n_fft; ++i) {
      const int64_t s = first + i;  // before the stream or past its end: zeros (see above)
      window_[i] = (s < base_ || s >= total_) ? 0.0f : audio_[static_cast<size_t>(s - base_)];
    }
    const size_t at = frames_.size();
    frames_.resize(at + n_mels_);
    logmel_.frame(window_.data(), frames_.data() + at);
  }
  // Drop audio no future frame reads.
  const int64_t keep_from = std::max<int64_t>(base_, next_frame_ * hop_ - half_window_);
  if (keep_from > base_) {
    audio_.erase(audio_.begin(), audio_.begin() + static_cast<std::ptrdiff_t>(keep_from - base_));
    base_ = keep_from;
  }
}

}  // namespace voxrt
