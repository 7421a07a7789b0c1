// The seam between the scheduler and a model family (docs/architecture.md, section 1): what every
// family (src/models/<family>/) implements and the scheduler (src/scheduler/) drives, so that the
// scheduler runs rounds over streams of any architecture without knowing its passes, its protocol
// or its checkpoint. One virtual call per round or per stream per round, never per row or position:
// inside a round the family works on its own types.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "models/context_bias.h"
#include "models/round_plan.h"
#include "models/stream_work.h"
#include "runtime/backend.h"
#include "runtime/kv_cache.h"

namespace voxrt {

// What the engine asks of one stream, in no family's words; the family turns it into its own
// (Voxtral: a Protocol at this delay and its tokenizer's ids, StreamState::Options).
struct StreamOptions {
  int delay_ms = 480;        // how far the text runs behind the audio
  bool stop_at_eos = false;  // nothing more is decoded once the model ends the text
  // The most decoder rows a stream drafts in one pass (1: one position a pass); the family lowers
  // it to what its protocol allows.
  int draft_rows = 1;
  // Context biasing: the trie of the phrases' token sequences whose logits the stream's outputs
  // raise (models/context_bias.h), shared by the streams given the same list. Null: none.
  std::shared_ptr<const BiasTrie> context_bias;
};

// One stream's model side, as the scheduler uses it between and after rounds (a family's stream
// state implements it; the round itself works on the family's own type).
class ModelStream {
 public:
  virtual ~ModelStream() = default;
  // Input, from the stream's front end: mel frames (time-major, whole frames), and after its flush
  // the offline position count.
  virtual void add_frames(std::span<const float> frames) = 0;
  virtual void set_final_positions(int64_t positions) = 0;
  // The positions decided since the last call.
  virtual std::vector<PositionOutput> take_outputs() = 0;
  virtual bool has_work() const = 0;
  virtual bool stopped() const = 0;  // stop_at_eos and EOS seen, or failed
  // Why its work ended for good (its caches could not take its next positions, say); empty while
  // it goes on.
  virtual const std::string& failure() const = 0;
  // For benchmarks only (`voxrt bench --streams` fills its streams to minutes of audio before it
  // measures them): while on, a decoder pass takes as many rows of the stream as its protocol allows
  // and keeps every one, each row's guess of the token before it taken as that token, so the caches
  // fill a draft's width of positions a pass whatever the model outputs. The ids are then not the
  // model's (a row's id is the guess the next row was fed); the positions, the caches' contents
  // for those inputs and the work they cost are a stream's. Set between rounds.
  virtual void set_fill_drafts(bool on) = 0;
};

// A slot of a cache shaped as the family's StreamModel says. The cache must outlive the stream and
// may be reallocated between passes (it is held by reference).
struct CacheSlot {
  KvCache& cache;
  int slot;
};

// The work one round ran over its streams. Wall time of the encoder passes, and of the decoder
// passes split between the prompts' rows and the positions' rows by their counts.
struct RoundStats {
  int encoder_passes = 0, encoded_positions = 0, prompts = 0;
  int decoder_passes = 0, decoder_rows = 0, decoder_streams = 0;
  double encoder_seconds = 0, prompt_seconds = 0, decoder_seconds = 0;
};

// The caches a round's streams have their slots in.
struct RoundCaches {
  KvCache& encoder_cache;
  KvCache& decoder_cache;
};

// A loaded family as the scheduler drives it.
class StreamModel {
 public:
  virtual ~StreamModel() = default;

  virtual Backend& backend() const = 0;
  // Whether a pass's rows do not change each other's results: one pass for all streams then.
  bool batch_invariant() const { return backend().batch_invariant(); }

  // The paged caches of `slots` streams (the caller sets the page counts): the encoder's, and the
  // decoder's (any delay).
  virtual KvCacheShape encoder_cache_shape(int slots) const = 0;
  virtual KvCacheShape decoder_cache_shape(int slots) const = 0;
  // Encoder frames and decoder positions of a stream of `seconds` of audio at most (its pads
  // included); 0 seconds: no limit (0).
  virtual int64_t encoder_frames_for(const StreamOptions& options, double seconds) const = 0;
  virtual int64_t decoder_positions_for(const StreamOptions& options, double seconds) const = 0;

  // The frames a stream's front end hands over: how many a second of audio makes, the values of one
  // (time-major), and how many make one position.
  struct Frames {
    double per_second = 0;
    size_t values = 0;
    size_t per_position = 0;
  };
  virtual Frames frames() const = 0;

  // A stream in these two slots (as the shapes above say).
  virtual std::unique_ptr<ModelStream> open_stream(const StreamOptions& options, CacheSlot encoder,
                                                   CacheSlot decoder) = 0;

  // One round of model work over `streams` (every one opened by this model): planned within
  // `budget` from streams[first_served] on (round_plan.h), then run. A stream whose caches cannot
  // take its plan fails alone; a pass that throws fails the round.
  virtual RoundStats run_round(std::span<ModelStream* const> streams, const RoundCaches& caches,
                               const RoundBudget& budget, size_t first_served) = 0;
};

}  // namespace voxrt
