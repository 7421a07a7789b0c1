// Greedy decoder steps of one session: token + adapter vector in, argmax out, run as a Backend
// step so that the CUDA backend replays it as a graph. The adapter vectors are copied into the
// step's own buffer first, outside the step (their source moves from one position to the next, the
// step's launches must not), and the token ids go in as step data: the argmax's ids are the only
// thing that comes back to the host.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "voxtral/model.h"
#include "voxtral/protocol.h"

namespace voxrt {

struct DecoderStepResult {
  int32_t id = 0;
  float margin = 0;  // top-1 minus top-2 logit
  Mat logits{};      // [1, vocab], valid until the model's next decode
};

class DecoderStep {
 public:
  // key names this session's step among the backend's recorded steps (one per session).
  DecoderStep(VoxtralModel& model, std::string key);

  // Decodes model position `pos` of the cache's slot 0 with input token `input`, the adapter vector
  // `audio` ([1, dim], backend memory) and n_delay delay tokens.
  DecoderStepResult run(int32_t input, Mat audio, int64_t pos, int n_delay, KvCache& cache);

  // Decodes positions pos .. pos + k - 1 in one pass (k = inputs.size() = audio.rows): row i takes
  // token inputs[i] and adapter vector audio row i, and attends to the rows before it, so it is
  // step pos + i given that its input was the true previous output. The weights are read once for
  // all k rows. On a backend whose rows do not depend on the batch (Backend::batch_invariant())
  // each row's result is bit for bit what run() gives (draft verification, stream_decoder.h).
  std::vector<DecoderStepResult> run_rows(std::span<const int32_t> inputs, Mat audio, int64_t pos, int n_delay,
                                          KvCache& cache);

 private:
  VoxtralModel& model_;
  std::string key_;
  Buffer audio_;
};

// The prompt's prefill, in one pass: the prompt tokens with the first prompt_len() adapter vectors
// `audio` at positions 0 .. P-1 of the cache's slot `slot`; the result is the argmax of the last
// position (the first token) and its logits.
DecoderStepResult decode_prompt(VoxtralModel& model, const Protocol& protocol, const ProtocolIds& ids, Mat audio,
                                KvCache& cache, int slot = 0);

// One row of a decoder pass over several sessions: the session's cache slot, its model position,
// the token fed in (its previous output) and its delay in steps (sessions with different delays
// share a pass).
struct SessionRow {
  int slot = 0;
  int64_t pos = 0;
  int32_t input = 0;
  int n_delay = 0;
};

// One decoder pass over rows of several sessions, each in its own slot of `cache` (at most one
// row per slot: a session's drafted rows go through DecoderStep::run_rows): every product reads the
// weights once for all rows, attention runs per row over its own slot's keys. Row i takes adapter
// vector `audio` row i ([rows, dim], backend memory). Each row's result is what its session gets
// stepped alone: bit for bit on a batch-invariant backend (Backend::batch_invariant()), within
// fp32 rounding on the CPU. Run eagerly (not a recorded step). The batching scheduler's decoder
// pass (docs/scheduler.md).
std::vector<DecoderStepResult> decode_sessions(VoxtralModel& model, std::span<const SessionRow> rows, Mat audio,
                                               KvCache& cache);

// A step key no other caller uses ("<what> #<n>"), so that sessions sharing a backend each keep
// their own recorded step.
std::string unique_step_key(const std::string& what);

}  // namespace voxrt
