// Greedy decoder passes: tokens + adapter vectors in, argmax out, run as Backend recordings so that the
// CUDA backend replays them as graphs. The adapter vectors are copied into the pass's own buffer
// first, outside the recording (their source moves from one position to the next, the recording's
// launches must not), and the token ids, positions and delays go in as the recording's data: the argmax's ids are the
// only thing that comes back to the host.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "models/voxtral/model.h"
#include "models/voxtral/protocol.h"

namespace voxrt {

struct DecoderOutput {
  int32_t id = 0;
  float margin = 0;  // top-1 minus top-2 logit
  Mat logits{};      // [1, vocab], valid until the model's next decode (with the row's boosts added)
};

// One row of a decoder pass over several sessions: the session's cache slot, its model position,
// the token fed in (its previous output, or a draft's guess of it) and its delay in positions
// (sessions with different delays share a pass).
struct SessionRow {
  int slot = 0;
  int64_t pos = 0;
  int32_t input = 0;
  int n_delay = 0;
  // Whether the row's output is wanted: a prompt's rows other than its last only fill the cache.
  bool output = true;
  // Context biasing (models/context_bias.h): `boost` is added to the logits of these ids (distinct,
  // in range) before the argmax, on a row whose output is wanted. The span is the row's owner's and
  // must stay valid until the pass has run. Empty: nothing is added, and a pass none of whose rows
  // has boosts does no work for them (no upload, no kernel).
  std::span<const int32_t> boosted{};
  float boost = 0;
};

// A decoder pass over rows of several sessions, each in its own slot of one cache, run as a Backend
// recording so that the CUDA backend replays it as a graph (one per row count). A session may put
// several rows in a pass, adjacent and at consecutive positions (its drafted rows, see
// StreamDecoder::Options::draft_rows): each attends to the rows before it. Every product reads the
// weights once for all rows; attention runs per row over its own slot's keys. Each row's result is
// what its session gets stepped alone, one row a pass: bit for bit on a batch-invariant backend
// (Backend::batch_invariant()), within fp32 rounding on the CPU.
class DecoderPass {
 public:
  // key names this pass among the backend's recordings.
  DecoderPass(VoxtralModel& model, std::string key);

  // The pass's input vectors [rows, dim] (backend memory): fill row i with row i's adapter vector
  // before run(). Grows its buffer, so it is called outside any recording.
  Mat audio(int rows);
  // Runs rows.size() rows over audio(rows.size()); one result per row whose output is wanted, in
  // the rows' order.
  std::vector<DecoderOutput> run(std::span<const SessionRow> rows, KvCache& cache);
  VoxtralModel& model() const { return model_; }

 private:
  VoxtralModel& model_;
  std::string key_;
  Buffer audio_;
};

// Greedy decoder passes of one session in slot 0 of its cache.
class SessionDecoder {
 public:
  SessionDecoder(VoxtralModel& model, std::string key) : pass_(model, std::move(key)) {}

  // Decodes model position `pos` with input token `input`, the adapter vector `audio` ([1, dim],
  // backend memory) and n_delay delay tokens.
  DecoderOutput run(int32_t input, Mat audio, int64_t pos, int n_delay, KvCache& cache);

  // Decodes positions pos .. pos + k - 1 in one pass (k = inputs.size() = audio.rows): row i takes
  // token inputs[i] and adapter vector audio row i, and attends to the rows before it, so it is
  // position pos + i given that its input was the true previous output (DecoderPass).
  std::vector<DecoderOutput> run_rows(std::span<const int32_t> inputs, Mat audio, int64_t pos, int n_delay,
                                          KvCache& cache);

 private:
  DecoderPass pass_;
};

// Appends the prompt's rows of a session in cache slot `slot` to `rows`: positions 0 .. P-1 fed the
// prompt's tokens, only the last giving an output (the session's first token).
void append_prompt_rows(const Protocol& protocol, const ProtocolIds& ids, int slot, std::vector<SessionRow>& rows);

// The prompt's prefill, in one pass: the prompt tokens with the first prompt_len() adapter vectors
// `audio` at positions 0 .. P-1 of the cache's slot `slot`; the result is the argmax of the last
// position (the first token) and its logits.
DecoderOutput decode_prompt(VoxtralModel& model, const Protocol& protocol, const ProtocolIds& ids, Mat audio,
                                KvCache& cache, int slot = 0);

// One decoder pass over `rows` (as DecoderPass::run takes them) with adapter vectors `audio`
// ([rows, dim], backend memory), run eagerly (not a recording).
std::vector<DecoderOutput> decode_sessions(VoxtralModel& model, std::span<const SessionRow> rows, Mat audio,
                                               KvCache& cache);

// A recording key no other caller uses ("<what> #<n>"), so that sessions sharing a backend each keep
// their own recordings.
std::string unique_recording_key(const std::string& what);

}  // namespace voxrt
