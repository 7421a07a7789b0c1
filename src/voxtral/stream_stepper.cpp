#include "voxtral/stream_stepper.h"

#include <chrono>
#include <vector>

namespace voxrt {
namespace {

// One decoder pass over the ready rows of `streams`; each stream's share of the pass's time is its
// share of the rows.
void decoder_pass(std::span<StreamState* const> streams, DecoderPass& pass, KvCache& cache, RoundStats& stats) {
  std::vector<int> counts(streams.size(), 0);
  int total = 0;
  for (size_t i = 0; i < streams.size(); ++i) {
    total += counts[i] = streams[i]->rows_ready();
    stats.decoder_streams += counts[i] > 0;
  }
  if (total == 0) return;
  ++stats.decoder_passes;
  stats.decoder_rows += total;
  const auto t0 = std::chrono::steady_clock::now();
  const Mat audio = pass.audio(total);  // may grow: before any row is put
  std::vector<SessionRow> rows;
  rows.reserve(static_cast<size_t>(total));
  for (size_t i = 0; i < streams.size(); ++i)
    if (counts[i] > 0) streams[i]->put_rows(counts[i], rows, audio);
  const std::vector<DecoderStepResult> results = pass.run(rows, cache);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  size_t at = 0;
  for (size_t i = 0; i < streams.size(); ++i) {
    if (counts[i] == 0) continue;
    streams[i]->take_results(std::span<const DecoderStepResult>(results).subspan(at, counts[i]),
                             seconds * counts[i] / total);
    at += static_cast<size_t>(counts[i]);
  }
}

}  // namespace

RoundStats step_streams(std::span<StreamState* const> streams, DecoderPass& pass, KvCache& cache, bool one_pass) {
  RoundStats stats;
  for (StreamState* s : streams) {
    if (const int n = s->encodable(); n > 0) {
      s->encode(n);
      ++stats.encoder_passes;
      stats.encoded_positions += n;
    }
  }
  for (StreamState* s : streams) {
    if (s->prompt_ready()) {
      s->decode_prompt();
      ++stats.prompts;
    }
  }
  if (one_pass) {
    decoder_pass(streams, pass, cache, stats);
  } else {
    for (StreamState* s : streams) decoder_pass(std::span<StreamState* const>(&s, 1), pass, cache, stats);
  }
  return stats;
}

}  // namespace voxrt
