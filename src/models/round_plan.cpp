#include "models/round_plan.h"

#include <algorithm>

namespace voxrt {
namespace {

// What is left of a budget for the next stream: all it wants where there is no limit.
int room(int limit, int used, int wanted) { return limit > 0 ? limit - used : wanted; }

}  // namespace

std::vector<PlannedEntry> plan_round(std::span<PlannedStream* const> streams, const RoundBudget& budget, size_t first) {
  std::vector<PlannedEntry> out;
  int positions = 0, rows = 0;  // taken from the shared budgets so far
  for (size_t k = 0; k < streams.size(); ++k) {
    const size_t i = (first + k) % streams.size();
    PlannedStream& s = *streams[i];
    StreamPlan p;
    const int encodable = s.encodable();
    p.encoder_positions = std::max(0, std::min(encodable, room(budget.max_encoder_positions, budget.shared ? positions : 0, encodable)));
    // A prompt's prefill shares the decoder pass (and its budget) when the budgets are shared, and
    // has a pass of its own otherwise.
    const int prompt_rows = s.prompt_rows_after(p.encoder_positions);
    const int limit = budget.max_decoder_rows;
    p.prompt = prompt_rows > 0 && (!budget.shared || limit == 0 || rows == 0 || rows + prompt_rows <= limit);
    const int shared_prompt_rows = p.prompt && budget.shared ? prompt_rows : 0;
    const int ready = prompt_rows > 0 && !p.prompt ? 0 : s.rows_after(p.encoder_positions);
    p.decoder_rows =
        std::max(0, std::min(ready, room(limit, budget.shared ? rows + shared_prompt_rows : 0, ready)));
    if (p.empty() || !s.prepare(p)) continue;
    positions += p.encoder_positions;
    rows += shared_prompt_rows + p.decoder_rows;
    out.push_back({i, p});
  }
  return out;
}

}  // namespace voxrt
