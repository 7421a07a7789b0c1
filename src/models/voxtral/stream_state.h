// The model side of one live stream, stepped from outside (execute_round, stream_round.h) so that
// the passes of many streams can be run together (docs/model.md §10, docs/scheduler.md):
//   mel frames (from its MelFrontEnd) -> conv stem per 8 frames with its carried context (2 mel
//   rows, 1 conv1 row) -> encoder (its slot of an encoder cache that other streams may share) ->
//   adapter (4 frames -> 1 vector) into a device queue -> decoder rows in its slot of a decoder
//   cache that other streams may share: the
//   prompt's prefill once its positions exist, then one row per position, several when several
//   wait (Options::draft_rows).
// Its ids are those of the offline result for the same audio, whatever the frames' grouping. Like
// offline, the last position is never decoded. The steps it decides wait in take_outputs().
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "models/context_bias.h"
#include "models/voxtral/decoder_pass.h"
#include "models/voxtral/encoder_pass.h"
#include "models/voxtral/model.h"
#include "models/voxtral/protocol.h"
#include "models/round_plan.h"
#include "models/stream_model.h"

namespace voxrt {

class StreamState final : public PlannedStream, public ModelStream {
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
    // The rows a pass takes adapt to how often the guesses hold (next_draft_width()): twice as many
    // after a pass whose guesses all held, half as many after one with a wrong guess, between 1 and
    // draft_rows. Which rows share a pass never changes an id, only how much work is thrown away.
    int draft_rows = 1;
    // Context biasing (models/context_bias.h): the logits of the trie's boosted ids are raised at
    // every output row, each row's from the ids of its own input history (a drafted row's from the
    // guesses before it), so the ids stay those of one position a pass. Null: none, and no work.
    std::shared_ptr<const BiasTrie> context_bias;
  };

  // The most draft_rows a pass may take under this protocol: a pass's rejected rows overwrite ring
  // entries of positions up to draft_rows - 1 beyond it, and the decoder ring's prompt_len() spare
  // entries (beyond the window) keep those out of every later query's window.
  static int max_draft_rows(const Protocol& p) { return p.prompt_len() + 1; }
  // The draft width after a pass of `rows` rows of which `kept` held, from `width`, at most `most`
  // (Options::draft_rows): half after a wrong guess, twice after a pass as wide as the width whose
  // guesses all held, else the same.
  static int next_draft_width(int width, int rows, int kept, int most);
  // A decoder cache of `slots` streams of this protocol's left pad, any delay. Paged: rings of
  // pages of page_positions(window) entries (the ring rounded up to whole pages); the caller sets
  // the page count.
  static KvCacheShape decoder_cache_shape(const VoxtralModel& model, const Protocol& p, int slots, bool paged = false);
  // An encoder cache of `slots` streams encoding up to max_batch_positions a pass.
  static KvCacheShape encoder_cache_shape(const VoxtralModel& model, int max_batch_positions, int slots,
                                          bool paged = false);
  // The ring entries of a page for a window: a 32nd of it (a power of two, at least 4), so that a
  // session's memory follows its length to within 3 % of a full window (the decoder's 8192: 256).
  static int page_positions(int window);
  // Decoder positions and encoder frames of a session of `seconds` of audio at most (the offline
  // pads included); 0 seconds: no limit (0 positions).
  static int64_t decoder_positions_for(const VoxtralModel& model, const Protocol& p, double seconds);
  static int64_t encoder_frames_for(const VoxtralModel& model, const Protocol& p, double seconds);

  using CacheSlot = voxrt::CacheSlot;  // a slot of a cache shaped as the functions above say
  StreamState(VoxtralModel& model, const Options& opts, CacheSlot encoder, CacheSlot decoder);

  // Input, from the front end: mel frames (time-major, whole frames), and after its flush the
  // offline position count.
  void add_frames(std::span<const float> frames) override;
  void set_final_positions(int64_t positions) override;

  // The round's plan (round_plan.h): what it would do, and the room for what it will do.
  int encodable() const override;  // positions to encode now (only once the decoder has caught up)
  int prompt_rows_after(int encoded) const override;
  int rows_after(int encoded) const override;
  // Re-bases its positions where the plan's would pass the limits and maps their pages in both
  // caches; a cache that cannot take them fails the stream (failure() says why): false.
  bool prepare(const StreamPlan& plan) override;

  // Work, in the order execute_round runs it, as prepared. Each call reads or writes only this
  // stream's state.
  // Its share of the next encoder pass: `count` positions. Its spans stay valid until take_encoded().
  EncoderPart put_encoder(int count);
  // The pass's adapter vectors for the positions put ([count, dim], backend memory) and this
  // stream's share of the pass's time.
  void take_encoded(Mat adapter, double seconds);
  bool prompt_ready() const;  // the prompt's positions are encoded and it has not run
  int rows_ready() const;     // decoder rows (positions) it could put in the next pass
  // Appends its share of a decoder pass to `rows`, as prepared, and copies their adapter vectors
  // into `pass_audio` rows [rows.size(), + its rows): the prompt's rows when `prompt` (its prefill,
  // append_prompt_rows), then `k` rows of positions. Row 0 of those is fed its previous output, or,
  // behind its prompt in the same pass, the guess that the prompt gives [STREAMING_PAD]; the rows
  // after guess that the output repeats (Options::draft_rows). Returns the outputs it will take back.
  int put_decoder(bool prompt, int k, std::vector<SessionRow>& rows, Mat pass_audio);
  // The outputs of what it put last, and its share of the pass's time.
  void take_results(std::span<const DecoderOutput> results, double seconds);
  bool has_work() const override;
  // Ends the stream's work for good (its caches could not take its next positions, say): it puts
  // nothing in any later pass, and failure() says why.
  void fail(const std::string& why);
  const std::string& failure() const override { return failure_; }
  void set_fill_drafts(bool on) override;

  std::vector<PositionOutput> take_outputs() override;

  Backend& backend() const { return model_.backend(); }
  int encoder_slot() const { return enc_slot_; }
  int decoder_slot() const { return slot_; }
  const Options& options() const { return opts_; }
  bool stopped() const override { return stopped_; }  // stop_at_eos and EOS seen, or failed
  int64_t rebases() const { return rebases_; }
  int64_t decoder_passes() const { return decoder_passes_; }  // decoder passes it took part in, the prompt's included
  double encoder_seconds() const { return encoder_seconds_; }  // in encoder passes (conv stem to adapter)

 private:
  int64_t queued() const { return queue_write_ - queue_read_; }
  int64_t decodable() const;  // positions the decoder could run now
  // Positions the decoder could run with `queued` vectors waiting and `next` its next position.
  int64_t decodable_at(int64_t queued, int64_t next) const;
  double pop(int n);          // takes n vectors off the queue; returns their encoder seconds
  void emit(int32_t id, double seconds);
  // Sets the boosts of the output rows put_decoder just appended (`mine`: the prompt's when `prompt`,
  // then k rows fed `input`), from the stream's place in the bias trie.
  void put_boosts(bool prompt, int k, int32_t input, std::span<SessionRow> mine);
  // Shifts `base` (and the cache slot) so that model positions [next, next + count) stay below `limit`.
  void rebase_if_needed(KvCache& cache, int slot, bool encoder, int64_t& base, int64_t next, int count, int64_t limit);

  VoxtralModel& model_;
  Options opts_;
  const int n_mels_, enc_dim_, dim_;
  KvCache& enc_cache_;
  const int enc_slot_;
  KvCache& dec_cache_;
  const int slot_;

  std::string failure_;
  std::vector<float> mel_pending_;  // frames not yet through the conv stem
  std::vector<float> mel_context_;  // the 2 mel rows before the next conv chunk
  Buffer conv1_context_;            // the conv1 row before the next chunk, carried on the device
  int put_positions_ = 0;           // in the encoder pass being run
  // Adapter vectors on the device, rows [queue_read_, queue_write_) not yet decoded; row
  // queue_read_ is position next_decode_. They never visit the host.
  Buffer queue_;
  int queue_read_ = 0, queue_write_ = 0;
  std::deque<double> queue_seconds_;  // each queued vector's share of its encoder pass
  int64_t encoded_positions_ = 0;   // adapter vectors produced so far
  int64_t next_decode_ = 0;         // next decoder position to run
  int64_t enc_base_ = 0, dec_base_ = 0;  // model position = stream position - base
  int64_t final_positions_ = -1;    // after the flush: N
  int32_t last_token_ = 0;
  bool put_prompt_ = false;         // its prompt is in the pass being run
  int put_rows_ = 0;                // and this many rows of positions
  StreamPlan prepared_;             // this round's plan, once prepare() made room for it
  int64_t prepared_decode_ = 0;     // the first decoder position of the rows prepared
  int draft_width_ = 1;             // rows_ready()'s most, 1 .. Options::draft_rows (max_draft_rows when filling)
  bool fill_drafts_ = false;        // set_fill_drafts: every drafted row kept, its guess taken as the output
  std::vector<PositionOutput> outputs_;
  std::optional<BiasMatcher> bias_;  // the stream's place in Options::context_bias, after its emitted ids
  std::vector<std::vector<int32_t>> row_boosts_;  // the boosted ids of the rows put last (their spans)
  bool stopped_ = false;
  int64_t rebases_ = 0;
  int64_t decoder_passes_ = 0;
  double encoder_seconds_ = 0;
};

}  // namespace voxrt
