// One round of model work over streams that share a decoder cache: the batching scheduler's round
// (docs/scheduler.md), and with a single stream the round of one session alone (StreamDecoder).
#pragma once

#include <span>

#include "models/voxtral/decoder_pass.h"
#include "models/voxtral/encoder_pass.h"
#include "models/stream_model.h"
#include "models/voxtral/stream_state.h"

namespace voxrt {

// A round is planned first (round_plan.h: each stream's positions, prompt and rows, its pages
// mapped, a stream that cannot have them failed alone), then run: every stream whose decoder has
// caught up encodes the positions waiting for it, then the decoder pass takes the prompts whose
// positions now exist (a prompt's prefill is its P rows, only the last giving an output) and the
// ready rows of all streams (drafted rows included). The encoder and decoder passes take
//   - every stream at once when `one_pass` (a batch-invariant backend: each row's result does not
//     depend on the rows beside it, so sharing a pass changes no id): prefill is batched across
//     streams, and a stream's rows behind its prompt are drafted on the prompt's likely output;
//   - one stream a pass otherwise (the CPU, whose products round differently for different row
//     counts: each stream's ids stay those it gets alone, whoever else is stepping): its prompt in
//     a pass of its own, then its rows.
// Passes are recordings keyed by their shape (row counts), replayed as graphs whichever streams
// they carry.
// Every stream with work gets its rows in every round: none waits for another to finish. Each
// stream's results and times go to its own positions' outputs (StreamState::take_outputs). RoundStats: the
// family-neutral account of the round (models/stream_model.h).

// What a round runs on: the passes (their buffers and recordings) and the caches the streams'
// slots are in.
struct RoundContext {
  EncoderPass& encoder;
  KvCache& encoder_cache;
  DecoderPass& decoder;
  KvCache& decoder_cache;
  bool one_pass;
  // The most positions an encoder pass and rows a decoder pass take (0: no limit), so that a pass's
  // memory and time stay bounded however many streams wait: streams are served in the order given
  // (the scheduler rotates it from round to round), each taking what is left, and those that get
  // nothing wait for the next round. A stream alone is never limited below one encoder batch and
  // its drafted rows when the limits are at least max_batch_positions and draft_rows.
  int max_encoder_positions = 0;
  int max_decoder_rows = 0;
  // The stream served first (round_plan.h): moved from round to round by the caller.
  size_t first_served = 0;
};
RoundStats execute_round(std::span<StreamState* const> streams, const RoundContext& ctx);

}  // namespace voxrt
