// A round as a plan (docs/architecture.md, issue 34): before any model work, each stream's share
// of the round is decided (the positions it encodes, whether its prompt runs, the decoder rows it
// puts) within the round's budgets and in its serving order, and the stream prepares it (maps the
// K/V pages, re-bases its positions) or refuses, alone, consuming nothing. The passes that follow
// (execute_round) then only run what was planned. The planner reads the streams through
// PlannedStream, so it is tested without a model (tests/unit/test_round_plan.cpp).
#pragma once

#include <cstddef>
#include <span>
#include <vector>

namespace voxrt {

struct StreamPlan {
  int encoder_positions = 0;  // positions its part of the encoder pass takes
  bool prompt = false;        // its prompt's prefill runs: rows of the decoder pass
  // Rows it puts in the decoder pass: at most this many (fewer when its prompt's id ended it).
  int decoder_rows = 0;
  bool empty() const { return encoder_positions == 0 && !prompt && decoder_rows == 0; }
};

// What the planner asks of a stream (StreamState answers for a real one).
class PlannedStream {
 public:
  // Positions it would encode now.
  virtual int encodable() const = 0;
  // Once `encoded` more positions are encoded: the rows of its prompt's prefill when that can run
  // (0 otherwise), and the decoder rows it could then put (after the prompt, if that runs too).
  virtual int prompt_rows_after(int encoded) const = 0;
  virtual int rows_after(int encoded) const = 0;
  // Makes room for the plan (pages mapped, positions re-based). False when it cannot: the stream
  // has failed alone (it says why) and takes no part in the round.
  virtual bool prepare(const StreamPlan& plan) = 0;

 protected:
  ~PlannedStream() = default;
};

struct RoundBudget {
  // The most positions an encoder pass and rows a decoder pass take (0: no limit), so that a pass's
  // memory and time stay bounded however many streams wait. A prompt's rows count when they share
  // the pass; a prompt waits for a round with room for all of them, unless it would be the pass's
  // first rows (so that one longer than the limit still runs).
  int max_encoder_positions = 0;
  int max_decoder_rows = 0;
  // One pass for all streams (a batch-invariant backend): the budgets are shared, each stream
  // taking what those served before it left. Otherwise each stream has passes, and budgets, of its own.
  bool shared = true;
};

struct PlannedEntry {
  size_t stream;  // index into the streams planned
  StreamPlan plan;
};

// The streams' shares of one round, in the order they are served: from streams[first] on,
// wrapping (the caller moves `first` from round to round, so that the streams left out of a full
// pass go first next time). Streams with nothing to do, or that refused their plan, are left out.
std::vector<PlannedEntry> plan_round(std::span<PlannedStream* const> streams, const RoundBudget& budget, size_t first);

}  // namespace voxrt
