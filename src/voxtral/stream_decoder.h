// One live session's incremental pipeline, on exactly the offline grid (docs/model.md §2, §10), so
// that its token ids equal the offline result for the same audio whatever the chunk sizes:
//   samples -> log-mel frame k as soon as samples [160k-200, 160k+200) of the left-padded stream
//   exist -> conv stem per 8 mel frames with its carried context (2 mel rows, 1 conv1 row) ->
//   encoder (ring cache of its window) -> adapter (4 frames -> 1 vector) -> decoder: prefill the
//   prompt once its positions exist, then one step per new position (several in one pass when
//   they wait: Options::draft_rows).
// A position needs 80 ms of audio plus 40 samples of look-ahead (the last mel window's half width).
// flush() appends the offline right pad, and like offline the last position is never decoded, so
// the number of steps equals the offline one. A stream without a single sample of audio has no
// steps at all (an empty transcript).
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <span>
#include <vector>

#include "audio/log_mel.h"
#include "voxtral/decoder_step.h"
#include "voxtral/model.h"
#include "voxtral/protocol.h"

namespace voxrt {

class StreamDecoder {
 public:
  struct Options {
    Protocol protocol;
    ProtocolIds ids;
    bool stop_at_eos = false;
    int max_batch_positions = 32;  // positions encoded together when a large chunk arrives
    // Positions given to the model stay below these: when a stream gets there, both caches are
    // re-based (model positions shifted down by a multiple of the ring), so a session can run for
    // hours without reaching the model's 131072 positions. 0: the decoder's max_position.
    int64_t encoder_position_limit = 0;
    int64_t decoder_position_limit = 0;
    // Draft verification: when several positions wait for the decoder (an offline file, a live
    // stream that fell behind), up to draft_rows of them are decoded in one pass, each row fed the
    // last output token as its guess of the token before it (the model's output is mostly runs of
    // one token: [STREAMING_PAD] through silence and between words). The rows up to the first wrong
    // guess are kept, so the ids are those of one step at a time, bit for bit on a batch-invariant
    // backend (Backend::batch_invariant()), while the weights are read once for the whole pass.
    // 1: one position per pass. At most max_draft_rows().
    int draft_rows = 1;
  };
  // Called once per decoder step with its output id and the compute time attributed to it: its
  // share of its decoder pass (the prompt's, for the first) and of the encoder passes that
  // produced its positions. Summed over the steps, no more than the time spent in both.
  using StepCallback = std::function<void(int32_t token, double seconds)>;

  StreamDecoder(VoxtralModel& model, const LogMel& logmel, const Options& opts);

  // The most draft_rows a pass may take under this protocol: a pass's rejected rows overwrite ring
  // entries of positions up to draft_rows - 1 beyond it, and the decoder ring's prompt_len() spare
  // entries (beyond the window) keep those out of every later query's window.
  static int max_draft_rows(const Protocol& p) { return p.prompt_len() + 1; }

  void feed(std::span<const float> samples, const StepCallback& on_step);
  void flush(const StepCallback& on_step);

  bool flushed() const { return flushed_; }
  bool stopped() const { return stopped_; }  // stop_at_eos and EOS seen
  int64_t rebases() const { return rebases_; }
  int64_t decoder_passes() const { return decoder_passes_; }  // decoder forward passes, the prompt's included
  double encoder_seconds() const { return encoder_seconds_; }  // in encoder passes (conv stem to adapter)
  size_t buffered_samples() const { return audio_.size(); }
  int64_t audio_samples() const { return fed_samples_; }  // real audio fed (no padding)

 private:
  void pump(const StepCallback& on_step);
  int64_t mel_frames_available() const;
  void compute_mel_frames();
  void encode_positions(int count);
  void run_decoder(const StepCallback& on_step);
  // Shifts `base` (and the cache) so that model positions [next, next + count) stay below `limit`.
  void rebase_if_needed(KvCache& cache, bool encoder, int64_t& base, int64_t next, int count, int64_t limit);

  VoxtralModel& model_;
  const LogMel& logmel_;
  Options opts_;
  const int n_mels_, enc_dim_, dim_, hop_, half_window_;

  // Audio of the left-padded stream not yet needed by any mel frame, from absolute sample base_.
  std::vector<float> audio_;
  int64_t base_ = 0, total_ = 0, fed_samples_ = 0;
  int64_t next_frame_ = 0;         // next mel frame to compute
  int64_t final_frames_ = -1;      // after flush: the offline frame count
  std::vector<float> mel_pending_; // computed mel rows not yet through the conv stem
  std::vector<float> mel_context_; // the 2 mel rows before the next conv chunk

  KvCache enc_cache_, dec_cache_;
  // Device buffers of the encoder step, sized for max_batch_positions: mel rows with their context,
  // the conv1 row before the next chunk (carried on the device), encoder frames, adapter vectors.
  Buffer mel_, conv1_context_, frames_, adapter_;
  // Adapter vectors on the device, rows [queue_read_, queue_write_) not yet decoded; row
  // queue_read_ is position next_decode_. They never visit the host.
  Buffer queue_;
  int queue_read_ = 0, queue_write_ = 0;
  std::deque<double> queue_seconds_;  // each queued vector's share of its encoder pass
  std::string encoder_key_;
  DecoderStep decoder_step_;
  int64_t encoded_positions_ = 0;   // adapter vectors produced so far
  int64_t next_decode_ = 0;         // next decoder position to run
  int64_t enc_base_ = 0, dec_base_ = 0;  // model position = stream position - base
  int64_t final_positions_ = -1;    // after flush: N
  int32_t last_token_ = 0;
  bool flushed_ = false, stopped_ = false;
  int64_t rebases_ = 0;
  int64_t decoder_passes_ = 0;
  double encoder_seconds_ = 0;
};

}  // namespace voxrt
