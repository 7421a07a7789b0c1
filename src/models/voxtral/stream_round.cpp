#include "models/voxtral/stream_round.h"

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

// What a stream puts in one decoder pass: its prompt's rows, and rows of positions.
struct DecoderPut {
  StreamState* stream;
  bool prompt;
  int rows;
};

// One decoder pass over `puts`; the pass's time is shared by its rows (a prompt's count too).
void decoder_pass(std::span<const DecoderPut> puts, DecoderPass& pass, KvCache& cache, RoundStats& stats) {
  int total = 0, prompt_rows = 0;
  for (const DecoderPut& p : puts) {
    const int P = p.prompt ? p.stream->options().protocol.prompt_len() : 0;
    total += P + p.rows;
    prompt_rows += P;
  }
  if (total == 0) return;
  const auto t0 = Clock::now();
  const Mat audio = pass.audio(total);  // may grow: before any row is put
  std::vector<SessionRow> rows;
  rows.reserve(static_cast<size_t>(total));
  std::vector<int> outputs(puts.size(), 0), rows_put(puts.size(), 0);
  for (size_t i = 0; i < puts.size(); ++i) {
    const DecoderPut& p = puts[i];
    if (!p.prompt && p.rows == 0) continue;
    const size_t before = rows.size();
    outputs[i] = p.stream->put_decoder(p.prompt, p.rows, rows, audio);
    rows_put[i] = static_cast<int>(rows.size() - before);
    stats.prompts += p.prompt;
    stats.decoder_rows += p.rows;
    stats.decoder_streams += p.rows > 0;
  }
  ++stats.decoder_passes;
  const std::vector<DecoderOutput> results = pass.run(rows, cache);
  const double seconds = seconds_since(t0);
  stats.prompt_seconds += seconds * prompt_rows / total;
  stats.decoder_seconds += seconds * (total - prompt_rows) / total;
  size_t at = 0;
  for (size_t i = 0; i < puts.size(); ++i) {
    if (outputs[i] == 0) continue;
    puts[i].stream->take_results(std::span<const DecoderOutput>(results).subspan(at, outputs[i]),
                                 seconds * rows_put[i] / total);
    at += static_cast<size_t>(outputs[i]);
  }
}

}  // namespace

RoundStats execute_round(std::span<StreamState* const> streams, const RoundContext& ctx) {
  RoundStats stats;
  // Plan: every stream's share decided, and room made for it, before any model work.
  const std::vector<PlannedStream*> planned(streams.begin(), streams.end());
  std::vector<Share> shares;
  for (const PlannedEntry& e :
       plan_round(planned, {ctx.max_encoder_positions, ctx.max_decoder_rows, ctx.one_pass}, ctx.first_served))
    shares.push_back({streams[e.stream], e.plan});
  // Execute, in the order served: the encoder pass, then the decoder pass; shared by every stream on
  // a batch-invariant backend, one stream's each otherwise.
  const auto each = [&](auto&& pass_of) {
    if (ctx.one_pass) return pass_of(std::span<const Share>(shares));
    for (const Share& s : shares) pass_of(std::span<const Share>(&s, 1));
  };
  each([&](std::span<const Share> some) { encoder_pass(some, ctx.encoder, ctx.encoder_cache, stats); });
  if (ctx.one_pass) {
    // Prompts are rows like any other: every stream's prefill and rows in one pass, the rows behind a
    // prompt drafted on the prompt's likely output.
    std::vector<DecoderPut> puts;
    for (const Share& s : shares)
      puts.push_back({s.stream, s.plan.prompt, s.plan.prompt ? s.plan.decoder_rows
                                                             : std::min(s.plan.decoder_rows, s.stream->rows_ready())});
    decoder_pass(puts, ctx.decoder, ctx.decoder_cache, stats);
    return stats;
  }
  // One stream a pass: its prompt alone (the pass of P rows it always had), then its rows, the first
  // fed the prompt's output (fewer when that ended the stream).
  for (const Share& s : shares) {
    if (s.plan.prompt) {
      const DecoderPut prompt{s.stream, true, 0};
      decoder_pass(std::span(&prompt, 1), ctx.decoder, ctx.decoder_cache, stats);
    }
    const DecoderPut rows{s.stream, false, std::min(s.plan.decoder_rows, s.stream->rows_ready())};
    decoder_pass(std::span(&rows, 1), ctx.decoder, ctx.decoder_cache, stats);
  }
  return stats;
}

}  // namespace voxrt
