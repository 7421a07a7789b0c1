// The test-only reference path (not in the library): the whole-file offline pass (docs/model.md §9),
// shaped like the reference's: pad, log-mel, conv stem,
// encoder over the file in chunks (it is causal with a window, so chunking is exact), adapter, then
// the decoder: prefill the prompt, take the argmax at its last position, and step once per
// remaining audio position (greedy). The reference generates exactly (audio positions - prompt
// length) tokens. It records every stage and takes teacher forcing, so the parity tests use it;
// Engine::transcribe (and `voxrt bench`'s offline figure) runs the streaming pipeline instead
// (identical ids, flat memory).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "audio/log_mel.h"
#include "models/voxtral/model.h"
#include "models/voxtral/protocol.h"

namespace voxrt {

// Intermediate results, captured for parity tests when requested. All time-major.
struct OfflineTrace {
  std::vector<float> mel;      // [T, n_mels]
  std::vector<float> conv;     // [T/2, enc_dim]
  std::vector<float> encoder;  // [T/2, enc_dim]
  std::vector<float> adapter;  // [T/8, dim]
  std::vector<float> logits;   // [logit_steps, vocab]: the first decode steps
  int logit_steps = 0;
};

struct OfflineOptions {
  Protocol protocol;
  ProtocolIds ids;
  bool stop_at_eos = true;
  // Teacher forcing: feed these tokens instead of the model's own argmax (parity tests).
  const std::vector<int32_t>* teacher_tokens = nullptr;
  OfflineTrace* trace = nullptr;
  int trace_logit_steps = 0;
  int encoder_chunk = 128;  // encoder rows per pass
};

struct OfflineResult {
  std::vector<int32_t> tokens;  // one per decode step after the prompt, EOS included if reached
  std::vector<float> margins;   // top-1 minus top-2 logit per step
  bool eos_stopped = false;
  int positions = 0;            // audio positions (adapter vectors) of the padded input
};

OfflineResult run_offline(VoxtralModel& model, const LogMel& mel, std::span<const float> audio16k,
                          const OfflineOptions& opts);

}  // namespace voxrt
