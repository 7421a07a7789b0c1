#include "voxtral/stream_decoder.h"

#include <algorithm>
#include <chrono>
#include <vector>

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
      half_window_(logmel.params().n_fft / 2),
      encoder_key_(unique_step_key("encoder")),
      decoder_step_(model, unique_step_key("decoder")) {
  const ModelConfig& c = model.config();
  Backend& be = model.backend();
  const int frames_per_position = c.downsample_factor;
  enc_cache_ = KvCache(&be, model.encoder_cache_shape(1, c.encoder.sliding_window + frames_per_position * opts.max_batch_positions));
  dec_cache_ = KvCache(&be, model.decoder_cache_shape(1, c.decoder.sliding_window + opts.protocol.prompt_len()));
  if (opts_.encoder_position_limit <= 0) opts_.encoder_position_limit = c.decoder.max_position;
  if (opts_.decoder_position_limit <= 0) opts_.decoder_position_limit = c.decoder.max_position;
  check(opts_.max_batch_positions >= 1, "session", "max_batch_positions must be at least 1");
  check(opts_.draft_rows >= 1 && opts_.draft_rows <= max_draft_rows(opts_.protocol), "session",
        "draft_rows must be 1 .. " + std::to_string(max_draft_rows(opts_.protocol)));
  mel_context_.assign(2 * static_cast<size_t>(n_mels_), 0.0f);
  const int max_frames = frames_per_position * opts_.max_batch_positions;
  mel_ = Buffer(&be, 2 * max_frames + 2, n_mels_);
  conv1_context_ = Buffer(&be, 1, enc_dim_);
  be.fill(conv1_context_.data(), 0.0f, conv1_context_.size());
  frames_ = Buffer(&be, max_frames, enc_dim_);
  adapter_ = Buffer(&be, opts_.max_batch_positions, dim_);
  // Pending vectors never exceed the prompt plus one batch (the decoder drains the queue after
  // every encoder pass once the prompt is in): twice that plus a batch lets compaction copy
  // forward without overlap.
  queue_ = Buffer(&be, 2 * (opts_.protocol.prompt_len() + opts_.max_batch_positions) + opts_.max_batch_positions, dim_);
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
  if (fed_samples_ == 0) {
    // No audio at all: no steps. The offline protocol would decode the right pad of nothing (10
    // steps of a silence nobody heard); an empty input is an empty transcript on every route (a
    // file of 0 frames, 0 samples on a pipe, a session flushed at once). The left pad alone never
    // completes the prompt, so no step has run before this either.
    flushed_ = true;
    final_frames_ = 0;
    final_positions_ = 0;
    audio_.clear();
    return;
  }
  // The offline right pad (docs/model.md §9): zeros to a whole step, then n_delay + 1 + 10 steps.
  // The left pad is whole steps, so rounding the padded stream rounds the audio.
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

void StreamDecoder::encode_positions(int count) {
  const auto t0 = std::chrono::steady_clock::now();
  Backend& be = model_.backend();
  const int factor = model_.config().downsample_factor;
  const int rows = count * 2 * factor;  // mel rows
  const int n_frames = count * factor;
  const int64_t first_frame = encoded_positions_ * factor;
  rebase_if_needed(enc_cache_, true, enc_base_, first_frame, n_frames, opts_.encoder_position_limit);
  std::vector<RowRef> refs(n_frames);
  for (int i = 0; i < n_frames; ++i) refs[i] = {0, first_frame + i - enc_base_};

  const Mat mel = mel_.view(0, rows + 2), frames = frames_.view(0, n_frames), adapter = adapter_.view(0, count);
  be.run_step(encoder_key_ + " x" + std::to_string(count), [&] {
    be.upload(mel.data, mel_context_.data(), mel_context_.size());
    be.upload(mel_.row(2), mel_pending_.data(), static_cast<size_t>(rows) * n_mels_);
    model_.encode_positions(mel, conv1_context_.all(), frames, refs, enc_cache_, adapter);
  });
  std::copy(mel_pending_.begin() + static_cast<std::ptrdiff_t>(rows - 2) * n_mels_,
            mel_pending_.begin() + static_cast<std::ptrdiff_t>(rows) * n_mels_, mel_context_.begin());
  mel_pending_.erase(mel_pending_.begin(), mel_pending_.begin() + static_cast<std::ptrdiff_t>(rows) * n_mels_);

  // Into the device queue, outside the step (its place in the queue moves); nothing waits here.
  if (queue_write_ + count > queue_.rows()) {
    // Move the vectors not yet decoded to the front. The queue holds at least twice what can be
    // pending, so the source lies wholly past the destination.
    const int pending = queue_write_ - queue_read_;
    if (pending > 0) be.copy(queue_.row(0), queue_.row(queue_read_), static_cast<size_t>(pending) * dim_);
    queue_read_ = 0;
    queue_write_ = pending;
  }
  check(queue_write_ + count <= queue_.rows(), "session", "adapter queue overflow");
  be.copy(queue_.row(queue_write_), adapter.data, static_cast<size_t>(count) * dim_);
  queue_write_ += count;
  encoded_positions_ += count;
  // Wait for the pass, so that its time is its own: a backend queues work (the GPU's), and the next
  // decoder pass would otherwise absorb it (its ids come back to the host, so it waits anyway).
  be.synchronize();
  const double seconds = seconds_since(t0);
  encoder_seconds_ += seconds;
  queue_seconds_.insert(queue_seconds_.end(), count, seconds / count);
}

void StreamDecoder::run_decoder(const StepCallback& on_step) {
  const int P = opts_.protocol.prompt_len();
  const int n_delay = opts_.protocol.n_delay;
  auto queued = [&]() { return static_cast<int64_t>(queue_write_ - queue_read_); };
  auto pop = [&](int n) {  // returns the encoder seconds of the n vectors
    queue_read_ += n;
    next_decode_ += n;
    double s = 0;
    for (int i = 0; i < n; ++i) {
      s += queue_seconds_.front();
      queue_seconds_.pop_front();
    }
    return s;
  };
  auto emit = [&](int32_t id, double seconds) {
    last_token_ = id;
    if (opts_.stop_at_eos && id == opts_.ids.eos) stopped_ = true;
    on_step(id, seconds);
  };

  if (next_decode_ == 0) {  // prefill the prompt once all its positions exist
    if (queued() < P) return;
    const auto t0 = std::chrono::steady_clock::now();
    const int32_t id = decode_prompt(model_, opts_.protocol, opts_.ids, queue_.view(queue_read_, P), dec_cache_).id;
    ++decoder_passes_;
    const double decode_s = seconds_since(t0);
    emit(id, decode_s + pop(P));
  }
  // Like offline, the last position (N - 1) is never decoded: its output would lie past the end.
  auto decodable = [&]() {
    const int64_t q = queued();
    return final_positions_ < 0 ? q : std::min(q, final_positions_ - 1 - next_decode_);
  };
  std::vector<int32_t> inputs;
  while (!stopped_ && decodable() > 0) {
    const auto t0 = std::chrono::steady_clock::now();
    const int k = static_cast<int>(std::min<int64_t>(opts_.draft_rows, decodable()));
    rebase_if_needed(dec_cache_, false, dec_base_, next_decode_, k, opts_.decoder_position_limit);
    // Row 0 takes the true previous token; rows 1.. guess that the output repeats it.
    const int32_t guess = last_token_;
    inputs.assign(k, guess);
    const std::vector<DecoderStepResult> r =
        decoder_step_.run_rows(inputs, queue_.view(queue_read_, k), next_decode_ - dec_base_, n_delay, dec_cache_);
    ++decoder_passes_;
    // Row i was fed the right token when row i - 1's output is the guess.
    int kept = 1;
    while (kept < k && r[kept - 1].id == guess) ++kept;
    const double seconds = seconds_since(t0) / kept;
    for (int i = 0; i < kept && !stopped_; ++i) emit(r[i].id, seconds + pop(1));
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
    if (count > 0) encode_positions(count);
    run_decoder(on_step);
    if (count == 0 || stopped_) break;
  }
}

}  // namespace voxrt
