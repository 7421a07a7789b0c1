#include "voxtral/stream_decoder.h"

#include <algorithm>
#include <chrono>

#include "common/error.h"

namespace voxrt {
namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

StreamDecoder::StreamDecoder(VoxtralModel& model, const LogMel& logmel, const Options& opts)
    : model_(model),
      logmel_(logmel),
      opts_(opts),
      n_mels_(logmel.params().n_mels),
      enc_dim_(model.config().encoder.dim),
      dim_(model.config().decoder.dim),
      hop_(logmel.params().hop),
      half_window_(logmel.params().n_fft / 2) {
  const ModelConfig& c = model.config();
  Backend& be = model.backend();
  const int frames_per_position = c.downsample_factor;
  enc_cache_ = KvCache(&be, model.encoder_cache_shape(1, c.encoder.sliding_window + frames_per_position * opts.max_batch_positions));
  dec_cache_ = KvCache(&be, model.decoder_cache_shape(1, c.decoder.sliding_window + opts.protocol.prompt_len()));
  if (opts_.encoder_position_limit <= 0) opts_.encoder_position_limit = c.decoder.max_position;
  if (opts_.decoder_position_limit <= 0) opts_.decoder_position_limit = c.decoder.max_position;
  mel_context_.assign(2 * static_cast<size_t>(n_mels_), 0.0f);
  conv1_tail_.assign(enc_dim_, 0.0f);
  // The stream starts with the left pad: silent steps the prompt is aligned with.
  const size_t left = static_cast<size_t>(opts.protocol.n_left_pad_tokens) * opts.protocol.samples_per_step;
  audio_.assign(left, 0.0f);
  total_ = static_cast<int64_t>(left);
}

void StreamDecoder::feed(std::span<const float> samples, const StepCallback& on_step) {
  if (flushed_) throw Error("session: feed() after flush()");
  audio_.insert(audio_.end(), samples.begin(), samples.end());
  total_ += static_cast<int64_t>(samples.size());
  fed_samples_ += static_cast<int64_t>(samples.size());
  pump(on_step);
}

void StreamDecoder::flush(const StepCallback& on_step) {
  if (flushed_) return;
  // The offline right pad (SPEC §9): zeros to a whole step, then n_delay + 1 + 10 steps. The left
  // pad is whole steps, so rounding the padded stream rounds the audio.
  const int64_t step = opts_.protocol.samples_per_step;
  const int64_t padded = (total_ + step - 1) / step * step + opts_.protocol.right_pad_steps() * step;
  audio_.resize(audio_.size() + static_cast<size_t>(padded - total_), 0.0f);
  total_ = padded;
  flushed_ = true;
  final_frames_ = total_ / hop_;
  final_positions_ = total_ / step;
  pump(on_step);
}

int64_t StreamDecoder::mel_frames_available() const {
  // Frame k needs samples up to 160k + 200; after the flush the offline centre padding beyond the
  // end is zeros (it mirrors the right pad), so every frame of the offline count is available.
  if (flushed_) return final_frames_;
  return total_ < half_window_ ? 0 : (total_ - half_window_) / hop_ + 1;
}

void StreamDecoder::compute_mel_frames() {
  const int64_t available = mel_frames_available();
  const int n_fft = logmel_.params().n_fft;
  std::vector<float> window(n_fft);
  for (; next_frame_ < available; ++next_frame_) {
    const int64_t first = next_frame_ * hop_ - half_window_;
    for (int i = 0; i < n_fft; ++i) {
      const int64_t s = first + i;  // before the stream or past its end: zeros (see above)
      window[i] = (s < base_ || s >= total_) ? 0.0f : audio_[static_cast<size_t>(s - base_)];
    }
    const size_t at = mel_pending_.size();
    mel_pending_.resize(at + n_mels_);
    logmel_.frame(window.data(), mel_pending_.data() + at);
  }
  // Drop audio no future frame reads.
  const int64_t keep_from = std::max<int64_t>(base_, next_frame_ * hop_ - half_window_);
  if (keep_from > base_) {
    audio_.erase(audio_.begin(), audio_.begin() + static_cast<std::ptrdiff_t>(keep_from - base_));
    base_ = keep_from;
  }
}

void StreamDecoder::encode_positions(int count, double& seconds) {
  const auto t0 = std::chrono::steady_clock::now();
  Backend& be = model_.backend();
  const int per_position = 2 * model_.config().downsample_factor;  // mel frames per position
  const int rows = count * per_position;

  Buffer mel(&be, rows + 2, n_mels_);
  be.upload(mel.data(), mel_context_.data(), mel_context_.size());
  be.upload(mel.row(2), mel_pending_.data(), static_cast<size_t>(rows) * n_mels_);
  Buffer conv1_ctx(&be, 1, enc_dim_);
  be.upload(conv1_ctx.data(), conv1_tail_.data(), enc_dim_);
  Buffer frames = model_.conv_stem(mel.all(), conv1_ctx.all(), &conv1_tail_);
  std::copy(mel_pending_.begin() + static_cast<std::ptrdiff_t>(rows - 2) * n_mels_,
            mel_pending_.begin() + static_cast<std::ptrdiff_t>(rows) * n_mels_, mel_context_.begin());
  mel_pending_.erase(mel_pending_.begin(), mel_pending_.begin() + static_cast<std::ptrdiff_t>(rows) * n_mels_);

  const int factor = model_.config().downsample_factor;
  const int64_t first_frame = encoded_positions_ * factor;
  rebase_if_needed(enc_cache_, true, enc_base_, first_frame, frames.rows(), opts_.encoder_position_limit);
  std::vector<RowRef> refs(frames.rows());
  for (int i = 0; i < frames.rows(); ++i) refs[i] = {0, first_frame + i - enc_base_};
  model_.encode(frames.all(), refs, enc_cache_);
  Buffer adapter = model_.adapt(Mat{frames.data(), count, enc_dim_ * factor});
  const size_t at = adapter_queue_.size();
  adapter_queue_.resize(at + static_cast<size_t>(count) * dim_);
  be.download(adapter_queue_.data() + at, adapter.data(), static_cast<size_t>(count) * dim_);
  encoded_positions_ += count;
  seconds += seconds_since(t0);
}

void StreamDecoder::run_decoder(const StepCallback& on_step, double enc_seconds_per_position) {
  Backend& be = model_.backend();
  const int P = opts_.protocol.prompt_len();
  const int n_delay = opts_.protocol.n_delay;
  auto queued = [&]() { return static_cast<int64_t>(adapter_queue_.size() / dim_); };
  auto pop = [&](int n) {
    adapter_queue_.erase(adapter_queue_.begin(), adapter_queue_.begin() + static_cast<std::ptrdiff_t>(n) * dim_);
    next_decode_ += n;
  };
  auto emit = [&](const Buffer& logits, double seconds) {
    int32_t id = 0;
    be.argmax(logits.all(), std::span<int32_t>(&id, 1), {});
    last_token_ = id;
    if (opts_.stop_at_eos && id == opts_.ids.eos) stopped_ = true;
    on_step(id, seconds);
  };

  if (next_decode_ == 0) {  // prefill the prompt once all its positions exist
    if (queued() < P) return;
    const auto t0 = std::chrono::steady_clock::now();
    Buffer audio(&be, P, dim_);
    be.upload(audio.data(), adapter_queue_.data(), static_cast<size_t>(P) * dim_);
    std::vector<RowRef> rows(P);
    for (int i = 0; i < P; ++i) rows[i] = {0, i};
    const std::vector<int> delays(P, n_delay);
    const int last = P - 1;
    const std::vector<int32_t> prompt = opts_.protocol.prompt(opts_.ids);
    Buffer logits = model_.decode(prompt, audio.all(), rows, delays, dec_cache_, std::span<const int>(&last, 1));
    pop(P);
    emit(logits, seconds_since(t0) + P * enc_seconds_per_position);
  }
  Buffer audio(&be, 1, dim_);
  const int zero = 0;
  // Like offline, the last position (N - 1) is never decoded: its output would lie past the end.
  while (!stopped_ && queued() > 0 && (final_positions_ < 0 || next_decode_ <= final_positions_ - 2)) {
    const auto t0 = std::chrono::steady_clock::now();
    be.upload(audio.data(), adapter_queue_.data(), dim_);
    rebase_if_needed(dec_cache_, false, dec_base_, next_decode_, 1, opts_.decoder_position_limit);
    const RowRef row{0, next_decode_ - dec_base_};
    const int32_t input = last_token_;
    Buffer logits = model_.decode(std::span<const int32_t>(&input, 1), audio.all(), std::span<const RowRef>(&row, 1),
                                  std::span<const int>(&n_delay, 1), dec_cache_, std::span<const int>(&zero, 1));
    pop(1);
    emit(logits, seconds_since(t0) + enc_seconds_per_position);
  }
}

void StreamDecoder::rebase_if_needed(KvCache& cache, bool encoder, int64_t& base, int64_t next, int count,
                                     int64_t limit) {
  if (next + count - base <= limit) return;
  // Every key a query at `next` or later can see (the last window - 1 positions) must keep a
  // non-negative position; shifting by whole rings keeps each key in its ring entry.
  const int64_t ring = cache.shape().ring;
  const int window = encoder ? model_.config().encoder.sliding_window : model_.config().decoder.sliding_window;
  const int64_t shift = (next - base - window + 1) / ring * ring;
  check(shift > 0 && next + count - base - shift <= limit, "session",
        "position limit " + std::to_string(limit) + " too small for the cache ring " + std::to_string(ring));
  model_.shift_positions(cache, 0, encoder, shift);
  base += shift;
  ++rebases_;
}

void StreamDecoder::pump(const StepCallback& on_step) {
  if (stopped_) return;
  compute_mel_frames();
  const int per_position = 2 * model_.config().downsample_factor;
  for (;;) {
    const int ready = static_cast<int>(mel_pending_.size() / n_mels_) / per_position;
    const int count = std::min(ready, opts_.max_batch_positions);
    double enc_seconds = 0;
    if (count > 0) encode_positions(count, enc_seconds);
    run_decoder(on_step, count > 0 ? enc_seconds / count : 0.0);
    if (count == 0 || stopped_) break;
  }
}

}  // namespace voxrt
