#include "models/voxtral/encoder_pass.h"

#include <vector>

#include "common/error.h"

namespace voxrt {

Mat EncoderPass::run(std::span<const EncoderPart> parts, KvCache& cache) {
  const ModelConfig& c = model_.config();
  const int factor = c.downsample_factor, n_mels = c.encoder.num_mel_bins;
  int positions = 0;
  std::vector<RowRef> refs;
  std::string shape;
  // Every part's mel rows, each after its 2 context rows, for one upload and one conv stem.
  mel_host_.clear();
  part_rows_.clear();
  for (const EncoderPart& p : parts) {
    check(p.positions >= 1 && p.mel.size() == static_cast<size_t>(p.positions) * c.mel_frames_per_position() * n_mels &&
              p.mel_context.size() == 2 * static_cast<size_t>(n_mels) && p.conv1_context.rows == 1 &&
              p.slot >= 0 && p.slot < cache.shape().slots,
          "encoder pass", "malformed part");
    for (int f = 0; f < p.positions * factor; ++f) refs.push_back({p.slot, p.first_frame + f});
    positions += p.positions;
    mel_host_.insert(mel_host_.end(), p.mel_context.begin(), p.mel_context.end());
    mel_host_.insert(mel_host_.end(), p.mel.begin(), p.mel.end());
    part_rows_.push_back(p.positions * c.mel_frames_per_position());
    shape += (shape.empty() ? " x" : ",") + std::to_string(p.positions);
  }
  check(positions > 0, "encoder pass", "no positions");
  const int mel_rows = static_cast<int>(mel_host_.size() / n_mels);
  Backend& be = model_.backend();
  // Grown outside the recording: a recording allocates nothing.
  if (mel_.rows() < mel_rows) mel_ = Buffer(&be, mel_rows, n_mels);
  if (frames_.rows() < positions * factor) frames_ = Buffer(&be, positions * factor, c.encoder.dim);
  if (adapter_.rows() < positions) adapter_ = Buffer(&be, positions, c.decoder.dim);
  const int n = static_cast<int>(parts.size());
  if (contexts_.rows() < n) contexts_ = Buffer(&be, n, c.encoder.dim);
  for (int p = 0; p < n; ++p) be.copy(contexts_.row(p), parts[p].conv1_context.data, static_cast<size_t>(c.encoder.dim));
  const Mat frames = frames_.view(0, positions * factor), adapter = adapter_.view(0, positions);
  auto pass = [&] {
    be.upload(mel_.data(), mel_host_.data(), mel_host_.size());
    model_.conv_stems(mel_.view(0, mel_rows), part_rows_, contexts_.view(0, n), frames);
    model_.encode(frames, refs, cache);
    model_.adapt(Mat{frames.data, positions, frames.cols * factor}, adapter);
  };
  be.run_recorded(key_ + shape, pass);
  for (int p = 0; p < n; ++p) be.copy(parts[p].conv1_context.data, contexts_.row(p), static_cast<size_t>(c.encoder.dim));
  return adapter;
}

}  // namespace voxrt
