#include "voxtral/stream_stepper.h"

#include <algorithm>
#include <chrono>
#include <vector>

#include "common/error.h"

namespace voxrt {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// A stream and what the plan gave it, in the round's serving order.
struct Share {
  StreamState* stream;
  StreamPlan plan;
};

// One encoder pass over the planned positions of `shares`; each stream's share of the pass's time
// is its share of the positions. The pass is waited for, so that its time is its own (a backend
// queues work, and the next pass would otherwise absorb it).
void encoder_pass(std::span<const Share> shares, EncoderPass& pass, KvCache& cache, RoundStats& stats) {
  std::vector<StreamState*> parts_of;
  std::vector<EncoderPart> parts;
  int positions = 0;
  for (const Share& s : shares) {
    if (s.plan.encoder_positions == 0) continue;
    parts.push_back(s.stream->put_encoder(s.plan.encoder_positions));
    parts_of.push_back(s.stream);
    positions += s.plan.encoder_positions;
  }
  if (parts.empty()) return;
  ++stats.encoder_passes;
  stats.encoded_positions += positions;
  const auto t0 = Clock::now();
  const Mat adapter = pass.run(parts, cache);
  parts_of[0]->backend().synchronize();
  const double seconds = seconds_since(t0);
  stats.encoder_seconds += seconds;
  int at = 0;
  for (size_t i = 0; i < parts.size(); ++i) {
    const int n = parts[i].positions;
    parts_of[i]->take_encoded(Mat{adapter.data + static_cast<size_t>(at) * adapter.cols, n, adapter.cols},
                              seconds * n / positions);
    at += n;
  }
}

// One decoder pass over the planned rows of `shares` (fewer for a stream whose prompt ended it);
// each stream's share of the pass's time is its share of the rows.
void decoder_pass(std::span<const Share> shares, DecoderPass& pass, KvCache& cache, RoundStats& stats) {
  std::vector<int> counts(shares.size(), 0);
  int total = 0;
  for (size_t i = 0; i < shares.size(); ++i) {
    total += counts[i] = std::min(shares[i].plan.decoder_rows, shares[i].stream->rows_ready());
    stats.decoder_streams += counts[i] > 0;
  }
  if (total == 0) return;
  const auto t0 = Clock::now();
  const Mat audio = pass.audio(total);  // may grow: before any row is put
  std::vector<SessionRow> rows;
  rows.reserve(static_cast<size_t>(total));
  for (size_t i = 0; i < shares.size(); ++i)
    if (counts[i] > 0) shares[i].stream->put_rows(counts[i], rows, audio);
  ++stats.decoder_passes;
  stats.decoder_rows += total;
  const std::vector<DecoderStepResult> results = pass.run(rows, cache);
  const double seconds = seconds_since(t0);
  stats.decoder_seconds += seconds;
  size_t at = 0;
  for (size_t i = 0; i < shares.size(); ++i) {
    if (counts[i] == 0) continue;
    shares[i].stream->take_results(std::span<const DecoderStepResult>(results).subspan(at, counts[i]),
                                   seconds * counts[i] / total);
    at += static_cast<size_t>(counts[i]);
  }
}

}  // namespace

RoundStats step_streams(std::span<StreamState* const> streams, const RoundContext& ctx) {
  RoundStats stats;
  // Plan: every stream's share decided, and room made for it, before any model work.
  const std::vector<PlannedStream*> planned(streams.begin(), streams.end());
  std::vector<Share> shares;
  for (const PlannedEntry& e :
       plan_round(planned, {ctx.max_encoder_positions, ctx.max_decoder_rows, ctx.one_pass}, ctx.first_served))
    shares.push_back({streams[e.stream], e.plan});
  // Execute, in the order served: the encoder pass, the prompts, the decoder pass; shared by every
  // stream on a batch-invariant backend, one stream's each otherwise.
  const auto each = [&](auto&& pass_of) {
    if (ctx.one_pass) return pass_of(std::span<const Share>(shares));
    for (const Share& s : shares) pass_of(std::span<const Share>(&s, 1));
  };
  each([&](std::span<const Share> some) { encoder_pass(some, ctx.encoder, ctx.encoder_cache, stats); });
  const auto t0 = Clock::now();
  for (const Share& s : shares) {
    if (!s.plan.prompt) continue;
    s.stream->decode_prompt();
    ++stats.prompts;
  }
  stats.prompt_seconds = seconds_since(t0);
  each([&](std::span<const Share> some) { decoder_pass(some, ctx.decoder, ctx.decoder_cache, stats); });
  return stats;
}

}  // namespace voxrt
