// Streams stepped together through execute_round (the batching scheduler's round), and each alone
// (StreamDecoder), for the tests that compare the two: test_streams_together.cpp on the tiny
// model, test_full_size.cpp on the full-size one.
#pragma once

#include <algorithm>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "audio/log_mel.h"
#include "runtime/kv_pool.h"
#include "models/voxtral/mel_front_end.h"
#include "models/voxtral/stream_decoder.h"
#include "models/voxtral/stream_round.h"

namespace voxrt::test {

struct StreamPlan {
  const std::vector<float>* audio;
  StreamState::Options options;
  int join_round = 0;
  size_t chunk = 1280;  // samples fed a round
};

// Each stream alone, fed in its chunks.
inline std::vector<int32_t> ids_alone(VoxtralModel& model, const LogMel& logmel, const StreamPlan& p) {
  std::vector<int32_t> ids;
  StreamDecoder d(model, logmel, p.options);
  auto on_step = [&](int32_t t, double) { ids.push_back(t); };
  const std::vector<float>& a = *p.audio;
  for (size_t at = 0; at < a.size(); at += p.chunk)
    d.feed(std::span<const float>(a).subspan(at, std::min(p.chunk, a.size() - at)), on_step);
  d.flush(on_step);
  return ids;
}

struct TogetherRun {
  std::vector<std::vector<int32_t>> ids;
  int most_in_a_pass = 0, slots_reused = 0, most_encoded_together = 0, pool_slots = 0;
  int most_rows = 0, most_positions = 0;
  int most_pages = 0;  // the decoder pool's pages at most
  int most_prompts_in_a_pass = 0;  // prompts whose prefill shared one decoder pass
};

// Together: each round, every stream that has joined feeds its next chunk (or flushes), then
// rounds of model work over all of them until they have caught up; a stream with nothing left
// leaves and frees its slots (pools that start with one slot, so they grow while streams are in
// flight). With limits on a pass (> 0), the streams' order rotates from round to round, as the
// scheduler rotates it.
inline TogetherRun run_together(VoxtralModel& model, const LogMel& logmel, const std::vector<StreamPlan>& plans,
                                int max_positions, int max_rows) {
  TogetherRun t;
  t.ids.resize(plans.size());
  struct Live {
    size_t plan;
    MelFrontEnd front;
    std::unique_ptr<StreamState> state;
    size_t at = 0;
  };
  Backend& be = model.backend();
  // Paged pools that start with one slot and one page and grow: the streams' pages interleave in
  // the order their positions reach them, so every ring is scattered over the storage, unlike the
  // contiguous slot each stream has alone. Each stream reserves exactly what its audio needs.
  KvCacheShape decoder_shape = StreamState::decoder_cache_shape(model, plans[0].options.protocol, 1, /*paged=*/true);
  KvCacheShape encoder_shape =
      StreamState::encoder_cache_shape(model, plans[0].options.max_batch_positions, 1, /*paged=*/true);
  decoder_shape.pages = encoder_shape.pages = 1;
  KvPool pool(be, decoder_shape, /*grows=*/true);
  KvPool encoder_pool(be, encoder_shape, /*grows=*/true);
  EncoderPass encoder(model, unique_recording_key("test encoder pass"));
  DecoderPass pass(model, unique_recording_key("test pass"));
  std::vector<std::unique_ptr<Live>> live;
  size_t joined = 0;
  uint64_t rounds = 0;
  std::vector<bool> slot_seen;
  for (int round = 0; joined < plans.size() || !live.empty(); ++round) {
    for (size_t s = 0; s < plans.size(); ++s) {
      if (plans[s].join_round != round) continue;
      const StreamState::Options& o = plans[s].options;
      auto l = std::make_unique<Live>(Live{s, MelFrontEnd(logmel, o.protocol), nullptr});
      const double seconds = static_cast<double>(plans[s].audio->size()) / model.config().audio.sampling_rate;
      const int slot = pool.acquire(pool.pages_for(StreamState::decoder_positions_for(model, o.protocol, seconds)));
      const int encoder_slot =
          encoder_pool.acquire(encoder_pool.pages_for(StreamState::encoder_frames_for(model, o.protocol, seconds)));
      t.most_pages = std::max(t.most_pages, pool.pages());
      if (static_cast<size_t>(slot) < slot_seen.size() && slot_seen[slot]) ++t.slots_reused;
      slot_seen.resize(std::max(slot_seen.size(), static_cast<size_t>(slot) + 1));
      slot_seen[slot] = true;
      l->state = std::make_unique<StreamState>(model, o, StreamState::CacheSlot{encoder_pool.cache(), encoder_slot},
                                               StreamState::CacheSlot{pool.cache(), slot});
      live.push_back(std::move(l));
      ++joined;
    }
    std::vector<StreamState*> states;
    for (auto& l : live) {
      const std::vector<float>& a = *plans[l->plan].audio;
      if (l->at < a.size()) {
        const size_t n = std::min(plans[l->plan].chunk, a.size() - l->at);
        l->front.feed(std::span<const float>(a).subspan(l->at, n));
        l->at += n;
      } else if (!l->front.flushed()) {
        l->front.flush();
        l->state->set_final_positions(l->front.final_positions());
      }
      l->state->add_frames(l->front.take_frames());
      states.push_back(l->state.get());
    }
    for (bool work = true; work;) {
      const size_t first = max_rows > 0 && !states.empty() ? rounds % states.size() : 0;
      ++rounds;
      std::vector<int64_t> passes;
      for (StreamState* st : states) passes.push_back(st->decoder_passes());
      const RoundStats r = execute_round(states, {encoder, encoder_pool.cache(), pass, pool.cache(), /*one_pass=*/true,
                                                 max_positions, max_rows, first});
      if (r.decoder_passes == 1) t.most_prompts_in_a_pass = std::max(t.most_prompts_in_a_pass, r.prompts);
      t.most_encoded_together = std::max(t.most_encoded_together, r.encoder_passes == 1 ? r.encoded_positions : 0);
      t.most_rows = std::max(t.most_rows, r.decoder_rows);
      t.most_positions = std::max(t.most_positions, r.encoded_positions);
      int stepped = 0;  // streams whose rows went through this round's one decoder pass
      for (size_t i = 0; i < states.size(); ++i) stepped += states[i]->decoder_passes() > passes[i];
      t.most_in_a_pass = std::max(t.most_in_a_pass, stepped);
      work = false;
      for (auto& l : live) {
        for (const PositionOutput& st : l->state->take_outputs()) t.ids[l->plan].push_back(st.token);
        work = work || l->state->has_work();
      }
    }
    for (auto it = live.begin(); it != live.end();) {
      if ((*it)->front.flushed() && !(*it)->state->has_work()) {
        pool.release((*it)->state->decoder_slot());
        encoder_pool.release((*it)->state->encoder_slot());
        it = live.erase(it);
      } else {
        ++it;
      }
    }
  }
  t.pool_slots = pool.slots();
  return t;
}

}  // namespace voxrt::test
