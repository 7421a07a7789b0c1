#include "voxtral/stream_stepper.h"

#include <algorithm>
#include <chrono>
#include <vector>

#include "common/error.h"

namespace voxrt {
namespace {

// Runs `put`, a stream's share of a pass; a voxrt::Error there (its caches cannot take its next
// positions) ends that stream alone, and the pass goes on with the others. False when it failed.
template <typename Put>
bool put_or_fail(StreamState& s, Put put) {
  try {
    put();
    return true;
  } catch (const Error& e) {
    s.fail(e.what());
    return false;
  }
}

// One decoder pass over the ready rows of `streams`; each stream's share of the pass's time is its
// share of the rows.
void decoder_pass(std::span<StreamState* const> streams, DecoderPass& pass, KvCache& cache, int max_rows,
                  RoundStats& stats) {
  std::vector<int> counts(streams.size(), 0);
  int total = 0;
  for (size_t i = 0; i < streams.size(); ++i) {
    const int room = max_rows > 0 ? max_rows - total : streams[i]->rows_ready();
    total += counts[i] = std::min(streams[i]->rows_ready(), room);
    stats.decoder_streams += counts[i] > 0;
  }
  if (total == 0) return;
  const auto t0 = std::chrono::steady_clock::now();
  const Mat audio = pass.audio(total);  // may grow: before any row is put
  std::vector<SessionRow> rows;
  rows.reserve(static_cast<size_t>(total));
  for (size_t i = 0; i < streams.size(); ++i) {
    if (counts[i] == 0) continue;
    if (!put_or_fail(*streams[i], [&] { streams[i]->put_rows(counts[i], rows, audio); })) {
      total -= counts[i];
      counts[i] = 0;
    }
  }
  if (total == 0) return;
  ++stats.decoder_passes;
  stats.decoder_rows += total;
  const std::vector<DecoderStepResult> results = pass.run(rows, cache);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  stats.decoder_seconds += seconds;
  size_t at = 0;
  for (size_t i = 0; i < streams.size(); ++i) {
    if (counts[i] == 0) continue;
    streams[i]->take_results(std::span<const DecoderStepResult>(results).subspan(at, counts[i]),
                             seconds * counts[i] / total);
    at += static_cast<size_t>(counts[i]);
  }
}

// One encoder pass over the positions `streams` have ready; each stream's share of the pass's time
// is its share of the positions. The pass is waited for, so that its time is its own (a backend
// queues work, and the next pass would otherwise absorb it).
void encoder_pass(std::span<StreamState* const> streams, EncoderPass& pass, KvCache& cache, int max_positions,
                  RoundStats& stats) {
  std::vector<StreamState*> parts_of;
  std::vector<EncoderPart> parts;
  int positions = 0;
  for (StreamState* s : streams) {
    const int room = max_positions > 0 ? max_positions - positions : s->encodable();
    if (const int n = std::min(s->encodable(), room); n > 0) {
      if (!put_or_fail(*s, [&] { parts.push_back(s->put_encoder(n)); })) continue;
      parts_of.push_back(s);
      positions += n;
    }
  }
  if (parts.empty()) return;
  ++stats.encoder_passes;
  stats.encoded_positions += positions;
  const auto t0 = std::chrono::steady_clock::now();
  const Mat adapter = pass.run(parts, cache);
  Backend& be = parts_of[0]->backend();
  be.synchronize();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  stats.encoder_seconds += seconds;
  int at = 0;
  for (size_t i = 0; i < parts.size(); ++i) {
    const int n = parts[i].positions;
    parts_of[i]->take_encoded(Mat{adapter.data + static_cast<size_t>(at) * adapter.cols, n, adapter.cols},
                              seconds * n / positions);
    at += n;
  }
}

}  // namespace

RoundStats step_streams(std::span<StreamState* const> streams, const RoundContext& ctx) {
  RoundStats stats;
  if (ctx.one_pass) {
    encoder_pass(streams, ctx.encoder, ctx.encoder_cache, ctx.max_encoder_positions, stats);
  } else {
    for (StreamState* s : streams)
      encoder_pass(std::span<StreamState* const>(&s, 1), ctx.encoder, ctx.encoder_cache, ctx.max_encoder_positions, stats);
  }
  const auto t0 = std::chrono::steady_clock::now();
  for (StreamState* s : streams) {
    if (s->prompt_ready() && put_or_fail(*s, [&] { s->decode_prompt(); })) ++stats.prompts;
  }
  stats.prompt_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (ctx.one_pass) {
    decoder_pass(streams, ctx.decoder, ctx.decoder_cache, ctx.max_decoder_rows, stats);
  } else {
    for (StreamState* s : streams)
      decoder_pass(std::span<StreamState* const>(&s, 1), ctx.decoder, ctx.decoder_cache, ctx.max_decoder_rows, stats);
  }
  return stats;
}

}  // namespace voxrt
