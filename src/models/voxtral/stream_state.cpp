#include "models/voxtral/stream_state.h"

#include <algorithm>
#include <string>

#include "common/error.h"

namespace voxrt {
namespace {

KvCacheShape paged_shape(KvCacheShape s, int window) {
  const int len = StreamState::page_positions(window);
  s.page_positions = len;
  s.ring = (s.ring + len - 1) / len * len;
  return s;
}

}  // namespace

int StreamState::page_positions(int window) {
  int len = 4;
  while (len * 2 <= window / 32) len *= 2;
  return len;
}

int StreamState::next_draft_width(int width, int rows, int kept, int most) {
  if (kept < rows) return std::max(1, width / 2);
  if (rows >= width) return std::min(2 * width, most);
  return width;
}

KvCacheShape StreamState::decoder_cache_shape(const VoxtralModel& model, const Protocol& p, int slots, bool paged) {
  // The spare entries beyond the window hold the longest prompt of any delay, so that streams of
  // every delay share one cache, and a stream alone has the cache it has among others.
  Protocol longest = p;
  longest.n_delay = VoxtralModel::kMaxDelayTokens;
  const int window = model.config().decoder.sliding_window;
  const KvCacheShape s = model.decoder_cache_shape(slots, window + longest.prompt_len());
  return paged ? paged_shape(s, window) : s;
}

KvCacheShape StreamState::encoder_cache_shape(const VoxtralModel& model, int max_batch_positions, int slots, bool paged) {
  const ModelConfig& c = model.config();
  const KvCacheShape s = model.encoder_cache_shape(slots, c.encoder.sliding_window + c.downsample_factor * max_batch_positions);
  return paged ? paged_shape(s, c.encoder.sliding_window) : s;
}

int64_t StreamState::decoder_positions_for(const VoxtralModel& model, const Protocol& p, double seconds) {
  if (seconds <= 0) return 0;
  return p.offline_positions(static_cast<size_t>(seconds * model.config().audio.sampling_rate + 0.5));
}

int64_t StreamState::encoder_frames_for(const VoxtralModel& model, const Protocol& p, double seconds) {
  return decoder_positions_for(model, p, seconds) * model.config().downsample_factor;
}

StreamState::StreamState(VoxtralModel& model, const Options& opts, CacheSlot encoder, CacheSlot decoder)
    : model_(model),
      opts_(opts),
      n_mels_(model.config().encoder.num_mel_bins),
      enc_dim_(model.config().encoder.dim),
      dim_(model.config().decoder.dim),
      enc_cache_(encoder.cache),
      enc_slot_(encoder.slot),
      dec_cache_(decoder.cache),
      slot_(decoder.slot) {
  const ModelConfig& c = model.config();
  Backend& be = model.backend();
  if (opts_.encoder_position_limit <= 0) opts_.encoder_position_limit = c.decoder.max_position;
  if (opts_.decoder_position_limit <= 0) opts_.decoder_position_limit = c.decoder.max_position;
  check(opts_.max_batch_positions >= 1, "session", "max_batch_positions must be at least 1");
  check(opts_.draft_rows >= 1 && opts_.draft_rows <= max_draft_rows(opts_.protocol), "session",
        "draft_rows must be 1 .. " + std::to_string(max_draft_rows(opts_.protocol)));
  draft_width_ = opts_.draft_rows;
  if (opts_.context_bias) bias_.emplace(*opts_.context_bias);
  auto check_slot = [](const CacheSlot& s, const KvCacheShape& want, const char* what) {
    const KvCacheShape& have = s.cache.shape();
    check(s.slot >= 0 && s.slot < have.slots, "session", std::string(what) + " cache slot out of range");
    check(have.ring >= want.ring && have.layers == want.layers && have.kv_heads == want.kv_heads &&
              have.head_dim == want.head_dim,
          "session", std::string(what) + " cache too small for the stream");
  };
  check_slot(encoder, encoder_cache_shape(model, opts_.max_batch_positions, 1), "encoder");
  check_slot(decoder, decoder_cache_shape(model, opts_.protocol, 1), "decoder");
  mel_context_.assign(2 * static_cast<size_t>(n_mels_), 0.0f);
  conv1_context_ = Buffer(&be, 1, enc_dim_);
  be.fill(conv1_context_.data(), 0.0f, conv1_context_.size());
  // Before the prompt runs the queue holds fewer than prompt_len() + max_batch_positions vectors,
  // after it fewer than max_batch_positions (encodable() waits for the decoder to catch up): twice
  // the first plus a batch lets compaction copy forward without overlap.
  queue_ = Buffer(&be, 2 * (opts_.protocol.prompt_len() + opts_.max_batch_positions) + opts_.max_batch_positions, dim_);
}

void StreamState::add_frames(std::span<const float> frames) {
  check(frames.size() % n_mels_ == 0, "session", "mel frames of the model's width expected");
  mel_pending_.insert(mel_pending_.end(), frames.begin(), frames.end());
}

void StreamState::set_final_positions(int64_t positions) { final_positions_ = positions; }

int64_t StreamState::decodable() const {
  if (next_decode_ == 0) return 0;  // the prompt first
  return decodable_at(queued(), next_decode_);
}

int64_t StreamState::decodable_at(int64_t queued, int64_t next) const {
  // Like offline, the last position (N - 1) is never decoded: its output would lie past the end.
  return final_positions_ < 0 ? queued : std::min(queued, final_positions_ - 1 - next);
}

int StreamState::encodable() const {
  if (stopped_) return 0;
  // Encode ahead only what the decoder will take next: the prompt's positions (none more while a
  // prompt waits for room in a pass), then a batch once the queue is drained. This bounds the
  // queue, and one stream alone runs as it always has.
  if (next_decode_ == 0 ? queued() >= opts_.protocol.prompt_len() : decodable() > 0) return 0;
  const int per_position = model_.config().mel_frames_per_position();
  const int ready = static_cast<int>(mel_pending_.size() / n_mels_) / per_position;
  return std::min(ready, opts_.max_batch_positions);
}

EncoderPart StreamState::put_encoder(int count) {
  const int factor = model_.config().downsample_factor;
  const int rows = count * model_.config().mel_frames_per_position();
  check(count >= 1 && count <= opts_.max_batch_positions && mel_pending_.size() >= static_cast<size_t>(rows) * n_mels_,
        "session", "put_encoder: positions not ready");
  const int64_t first_frame = encoded_positions_ * factor;
  check(count <= prepared_.encoder_positions, "session", "put_encoder: more positions than prepared");
  put_positions_ = count;
  EncoderPart p;
  p.slot = enc_slot_;
  p.first_frame = first_frame - enc_base_;
  p.positions = count;
  p.mel_context = mel_context_;
  p.mel = std::span<const float>(mel_pending_).first(static_cast<size_t>(rows) * n_mels_);
  p.conv1_context = conv1_context_.all();
  return p;
}

void StreamState::take_encoded(Mat adapter, double seconds) {
  const int count = put_positions_;
  check(count > 0 && adapter.rows == count && adapter.cols == dim_, "session", "take_encoded: not the positions put");
  put_positions_ = 0;
  const int rows = count * model_.config().mel_frames_per_position();
  std::copy(mel_pending_.begin() + static_cast<std::ptrdiff_t>(rows - 2) * n_mels_,
            mel_pending_.begin() + static_cast<std::ptrdiff_t>(rows) * n_mels_, mel_context_.begin());
  mel_pending_.erase(mel_pending_.begin(), mel_pending_.begin() + static_cast<std::ptrdiff_t>(rows) * n_mels_);

  // Into the device queue (the pass's output is overwritten by the next pass).
  Backend& be = model_.backend();
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
  encoder_seconds_ += seconds;
  queue_seconds_.insert(queue_seconds_.end(), count, seconds / count);
}

int StreamState::prompt_rows_after(int encoded) const {
  const int P = opts_.protocol.prompt_len();
  return !stopped_ && next_decode_ == 0 && queued() + encoded >= P ? P : 0;
}

int StreamState::rows_after(int encoded) const {
  if (stopped_) return 0;
  int64_t queued_then = queued() + encoded, next = next_decode_;
  if (next == 0) {  // the prompt first, in this round once its positions exist
    const int P = opts_.protocol.prompt_len();
    if (queued_then < P) return 0;
    queued_then -= P;
    next = P;
  }
  return static_cast<int>(std::clamp<int64_t>(decodable_at(queued_then, next), 0, draft_width_));
}

bool StreamState::prepare(const StreamPlan& plan) {
  prepared_ = {};
  try {
    if (plan.encoder_positions > 0) {
      const int factor = model_.config().downsample_factor;
      const int64_t first_frame = encoded_positions_ * factor;
      rebase_if_needed(enc_cache_, enc_slot_, true, enc_base_, first_frame, plan.encoder_positions * factor,
                       opts_.encoder_position_limit);
      enc_cache_.map(enc_slot_, first_frame - enc_base_, plan.encoder_positions * factor);
    }
    const int P = opts_.protocol.prompt_len();
    if (plan.prompt) dec_cache_.map(slot_, 0, P);
    prepared_decode_ = plan.prompt ? P : next_decode_;
    if (plan.decoder_rows > 0) {
      rebase_if_needed(dec_cache_, slot_, false, dec_base_, prepared_decode_, plan.decoder_rows, opts_.decoder_position_limit);
      dec_cache_.map(slot_, prepared_decode_ - dec_base_, plan.decoder_rows);
    }
  } catch (const Error& e) {
    fail(e.what());
    return false;
  }
  prepared_ = plan;
  return true;
}

bool StreamState::prompt_ready() const {
  return !stopped_ && next_decode_ == 0 && queued() >= opts_.protocol.prompt_len();
}

int StreamState::rows_ready() const {
  if (stopped_) return 0;
  return static_cast<int>(std::min<int64_t>(draft_width_, decodable()));
}

int StreamState::put_decoder(bool prompt, int k, std::vector<SessionRow>& rows, Mat pass_audio) {
  const int P = opts_.protocol.prompt_len();
  const int first = static_cast<int>(rows.size());
  const int prompt_rows = prompt ? P : 0;
  check(put_rows_ == 0 && !put_prompt_, "session", "put_decoder: the last pass's results not taken");
  check(prompt ? prompt_ready() && prepared_.prompt : next_decode_ == prepared_decode_, "session",
        "put_decoder: not the prompt or rows prepared");
  check(k >= 0 && k <= prepared_.decoder_rows && (prompt || k <= rows_ready()) && prompt_rows + k > 0, "session",
        "put_decoder: rows not ready");
  check(first + prompt_rows + k <= pass_audio.rows && pass_audio.cols == dim_, "session", "put_decoder: pass too small");
  if (prompt) append_prompt_rows(opts_.protocol, opts_.ids, slot_, rows);
  // Row 0 takes the true previous token (or the prompt's likely one); rows 1.. guess that the
  // output repeats it.
  const int64_t pos = prompt ? P : next_decode_;
  const int32_t input = prompt ? opts_.ids.streaming_pad : last_token_;
  for (int i = 0; i < k; ++i) rows.push_back({slot_, pos + i - dec_base_, input, opts_.protocol.n_delay});
  if (bias_) put_boosts(prompt, k, input, std::span<SessionRow>(rows).subspan(static_cast<size_t>(first)));
  model_.backend().copy(pass_audio.data + static_cast<size_t>(first) * dim_, queue_.row(queue_read_),
                        static_cast<size_t>(prompt_rows + k) * dim_);
  put_prompt_ = prompt;
  put_rows_ = k;
  return (prompt ? 1 : 0) + k;
}

void StreamState::put_boosts(bool prompt, int k, int32_t input, std::span<SessionRow> mine) {
  // A row's history is the emitted ids and then its input and the inputs before it that are guesses:
  // behind the prompt every row's input is one (the prompt's output is not known yet), else all but
  // row 0's, which is the last id emitted.
  BiasMatcher at = *bias_;
  row_boosts_.resize(static_cast<size_t>(prompt + k));  // before any span into them is taken
  size_t n = 0;
  const auto boost = [&](SessionRow& row) {
    std::vector<int32_t>& ids = row_boosts_[n++];
    at.boosted(ids);
    row.boosted = ids;
    row.boost = opts_.context_bias->strength();
  };
  const size_t P = prompt ? static_cast<size_t>(opts_.protocol.prompt_len()) : 0;
  if (prompt) {
    boost(mine[P - 1]);
    at.advance(input);
  }
  for (int i = 0; i < k; ++i) {
    if (i > 0) at.advance(input);
    boost(mine[P + static_cast<size_t>(i)]);
  }
}

void StreamState::take_results(std::span<const DecoderOutput> results, double seconds) {
  const int P = opts_.protocol.prompt_len();
  const bool prompt = put_prompt_;
  const int k = put_rows_;
  check((prompt || k > 0) && results.size() == static_cast<size_t>(prompt + k), "session",
        "take_results: not the rows put");
  put_prompt_ = false;
  put_rows_ = 0;
  ++decoder_passes_;
  // The pass's time is shared by its rows: the prompt's P and the positions'.
  const double per_row = seconds / (prompt * P + k);
  // Rows 1.. were fed `guess` as the output before them, and row 0 too behind a prompt. Filling
  // (set_fill_drafts), every guess is taken as holding: the ids are then the history the caches'
  // contents were computed from.
  const int32_t guess = prompt ? opts_.ids.streaming_pad : last_token_;
  const bool filling = fill_drafts_ && k > 0;
  if (prompt) {
    emit(filling ? guess : results[0].id, per_row * P + pop(P));
    results = results.subspan(1);
  }
  if (k == 0) return;
  // Row i was fed the right token when the output before it (row i - 1's, or the prompt's, or the
  // previous pass's) is the row's input.
  int kept = filling ? k : 0;
  while (kept < k && (kept == 0 ? (!prompt || last_token_ == guess) : results[kept - 1].id == guess)) ++kept;
  // The next pass's width. Where the output runs in long stretches of one token (the real model's
  // [STREAMING_PAD] through silence and between words) the width climbs back to draft_rows within a
  // few passes of each word; where it seldom repeats, it stays near 1, instead of paying draft_rows
  // rows of attention and products for one position a pass (a random-weights model offline: draft
  // rows 8 gave RTFx 295, 1 gave 360; bench/results/2026-12-04-adaptive-draft.txt). Filling, it
  // stays at the protocol's most.
  if (!filling) draft_width_ = next_draft_width(draft_width_, k, kept, opts_.draft_rows);
  // A kept row's output before the last is the next row's input, the guess (verified, or when
  // filling taken as it); the last's is the model's.
  for (int i = 0; i < kept && !stopped_; ++i) emit(i + 1 < kept ? guess : results[i].id, per_row + pop(1));
}

void StreamState::set_fill_drafts(bool on) {
  check(put_rows_ == 0 && !put_prompt_ && put_positions_ == 0, "session", "set_fill_drafts: inside a round");
  fill_drafts_ = on;
  // Filling: the widest pass the decoder ring's spare entries allow; after it, the adaptive width
  // starts again from its most, as a new stream's does.
  draft_width_ = on ? max_draft_rows(opts_.protocol) : opts_.draft_rows;
}

void StreamState::fail(const std::string& why) {
  failure_ = why;
  stopped_ = true;
}

bool StreamState::has_work() const { return encodable() > 0 || prompt_ready() || rows_ready() > 0; }

std::vector<PositionOutput> StreamState::take_outputs() {
  std::vector<PositionOutput> out;
  out.swap(outputs_);
  return out;
}

double StreamState::pop(int n) {
  queue_read_ += n;
  next_decode_ += n;
  double s = 0;
  for (int i = 0; i < n; ++i) {
    s += queue_seconds_.front();
    queue_seconds_.pop_front();
  }
  return s;
}

void StreamState::emit(int32_t id, double seconds) {
  last_token_ = id;
  if (bias_) bias_->advance(id);
  if (opts_.stop_at_eos && id == opts_.ids.eos) stopped_ = true;
  outputs_.push_back({id, seconds});
}

void StreamState::rebase_if_needed(KvCache& cache, int slot, bool encoder, int64_t& base, int64_t next, int count,
                                   int64_t limit) {
  if (next + count - base <= limit) return;
  // Every key a query at `next` or later can see (the last window - 1 positions) must keep a
  // non-negative position; shifting by whole rings keeps each key in its ring entry.
  const int64_t ring = cache.shape().ring;
  const int window = encoder ? model_.config().encoder.sliding_window : model_.config().decoder.sliding_window;
  const int64_t shift = (next - base - window + 1) / ring * ring;
  check(shift > 0 && next + count - base - shift <= limit, "session",
        "position limit " + std::to_string(limit) + " too small for the cache ring " + std::to_string(ring));
  model_.shift_positions(cache, slot, encoder, shift);
  base += shift;
  ++rebases_;
}

}  // namespace voxrt
