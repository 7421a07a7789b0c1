// Streams stepped together (step_streams, the batching scheduler's round; docs/scheduler.md):
// four streams with different audio, delays and chunk sizes, joining at different rounds and
// leaving while the others go on, encode and decode into shared caches (KvSlotPools that start with
// one slot, so they grow while streams are in flight, and a leaver's slots are taken again) with
// every stream's ready positions in one encoder pass and every ready row in one decoder pass; then
// again with passes limited below what the streams have ready (the rest wait for the next round,
// served in rotating order). Each stream's ids equal those it gets stepped alone (StreamDecoder).
// On the GPU (batch-invariant) drafted rows take part too; on the CPU, where rows of one pass round
// differently from rows alone, one row per stream, and the ids still agree. GPU cases skip
// themselves elsewhere.
#include <gtest/gtest.h>

#include <algorithm>

#include "audio/log_mel.h"
#include "backend_by_name.h"
#include "gpu_here.h"
#include "model/checkpoint.h"
#include "runtime/kv_slot_pool.h"
#include "tiny_engine.h"
#include "tokenizer/tekken.h"
#include "voxtral/mel_front_end.h"
#include "voxtral/stream_decoder.h"
#include "voxtral/stream_stepper.h"

namespace voxrt::test {
namespace {

struct Plan {
  std::string audio;
  int n_delay;      // steps
  int join_round;
  size_t chunk;     // samples fed a round
};

class StreamsTogether : public ::testing::TestWithParam<std::string> {};

TEST_P(StreamsTogether, EachStreamGetsTheIdsItGetsAlone) {
  if (GetParam() == "cuda") REQUIRE_GPU();
  auto be = backend_named(GetParam());
  const std::filesystem::path dir = test_data() / "tiny" / "mistral";
  std::unique_ptr<VoxtralModel> model;
  {
    const Checkpoint ckpt = Checkpoint::open(dir, LayoutPreference::Mistral);
    model = std::make_unique<VoxtralModel>(ckpt, *be);
  }
  const Tokenizer tok = Tokenizer::load(dir / "tekken.json");
  const LogMel logmel;
  const std::vector<Plan> plans{{"jfk", 6, 0, 1280}, {"speech_short", 1, 0, 3000},
                                {"speech_long", 15, 3, 7000}, {"speech_to_end", 3, 40, 640}};
  auto options = [&](const Plan& p) {
    StreamState::Options o;
    o.protocol.n_delay = p.n_delay;
    o.ids = {tok.bos_id(), tok.eos_id(), tok.streaming_pad_id(), tok.streaming_word_id()};
    o.draft_rows = be->batch_invariant() ? 4 : 1;
    return o;
  };
  std::vector<std::vector<float>> audio;
  for (const Plan& p : plans) audio.push_back(wav(p.audio));

  // Alone, in the same chunks.
  std::vector<std::vector<int32_t>> alone(plans.size());
  for (size_t s = 0; s < plans.size(); ++s) {
    StreamDecoder d(*model, logmel, options(plans[s]));
    auto on_step = [&](int32_t t, double) { alone[s].push_back(t); };
    for (size_t at = 0; at < audio[s].size(); at += plans[s].chunk)
      d.feed(std::span<const float>(audio[s]).subspan(at, std::min(plans[s].chunk, audio[s].size() - at)), on_step);
    d.flush(on_step);
    ASSERT_GT(alone[s].size(), 20u);
  }

  // Together: each round, every stream that has joined feeds its next chunk (or flushes), then
  // rounds of model work over all of them until they have caught up; a stream with nothing left
  // leaves and frees its slots. With limits on a pass, the streams' order rotates from round to
  // round, as the scheduler rotates it.
  struct Together {
    std::vector<std::vector<int32_t>> ids;
    int most_in_a_pass = 0, slots_reused = 0, most_encoded_together = 0, pool_slots = 0;
    int most_rows = 0, most_positions = 0;
  };
  auto run_together = [&](int max_positions, int max_rows) {
    Together t;
    t.ids.resize(plans.size());
    struct Live {
      size_t plan;
      MelFrontEnd front;
      std::unique_ptr<StreamState> state;
      size_t at = 0;
    };
    KvSlotPool pool(*be, StreamState::decoder_cache_shape(*model, options(plans[0]).protocol, 1));
    KvSlotPool encoder_pool(*be, StreamState::encoder_cache_shape(*model, options(plans[0]).max_batch_positions, 1));
    EncoderPass encoder(*model, unique_step_key("test encoder pass"));
    DecoderPass pass(*model, unique_step_key("test pass"));
    std::vector<std::unique_ptr<Live>> live;
    size_t joined = 0;
    uint64_t rounds = 0;
    std::vector<bool> slot_seen;
    for (int round = 0; joined < plans.size() || !live.empty(); ++round) {
      for (size_t s = 0; s < plans.size(); ++s) {
        if (plans[s].join_round != round) continue;
        const StreamState::Options o = options(plans[s]);
        auto l = std::make_unique<Live>(Live{s, MelFrontEnd(logmel, o.protocol), nullptr});
        const int slot = pool.acquire();
        const int encoder_slot = encoder_pool.acquire();
        if (static_cast<size_t>(slot) < slot_seen.size() && slot_seen[slot]) ++t.slots_reused;
        slot_seen.resize(std::max(slot_seen.size(), static_cast<size_t>(slot) + 1));
        slot_seen[slot] = true;
        l->state = std::make_unique<StreamState>(*model, o, StreamState::CacheSlot{encoder_pool.cache(), encoder_slot},
                                                 StreamState::CacheSlot{pool.cache(), slot});
        live.push_back(std::move(l));
        ++joined;
      }
      std::vector<StreamState*> states;
      for (auto& l : live) {
        const std::vector<float>& a = audio[l->plan];
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
        if (max_rows > 0 && !states.empty())
          std::rotate(states.begin(), states.begin() + static_cast<std::ptrdiff_t>(rounds % states.size()), states.end());
        ++rounds;
        std::vector<int64_t> passes;
        for (StreamState* st : states) passes.push_back(st->decoder_passes());
        const RoundStats r = step_streams(states, {encoder, encoder_pool.cache(), pass, pool.cache(), /*one_pass=*/true,
                                                   max_positions, max_rows});
        t.most_encoded_together = std::max(t.most_encoded_together, r.encoder_passes == 1 ? r.encoded_positions : 0);
        t.most_rows = std::max(t.most_rows, r.decoder_rows);
        t.most_positions = std::max(t.most_positions, r.encoded_positions);
        int stepped = 0;  // streams whose rows went through this round's one decoder pass
        for (size_t i = 0; i < states.size(); ++i) stepped += states[i]->decoder_passes() > passes[i];
        t.most_in_a_pass = std::max(t.most_in_a_pass, stepped);
        work = false;
        for (auto& l : live) {
          for (const StreamState::Step& st : l->state->take_steps()) t.ids[l->plan].push_back(st.token);
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
  };

  const Together open = run_together(0, 0);
  EXPECT_GE(open.most_in_a_pass, 3) << "streams are meant to share decoder passes";
  EXPECT_GE(open.most_encoded_together, 3) << "streams are meant to share encoder passes";
  EXPECT_GE(open.pool_slots, 4) << "the pool is meant to grow while streams are in flight";
  EXPECT_GE(open.slots_reused, 1) << "the last stream is meant to take a slot a finished stream left";
  // Passes limited below what the streams have ready: the rest wait for the next round.
  const int max_positions = 20, max_rows = 2;
  const Together limited = run_together(max_positions, max_rows);
  EXPECT_LE(limited.most_rows, max_rows);
  EXPECT_LE(limited.most_positions, max_positions);
  EXPECT_GT(open.most_rows, max_rows) << "the limit is meant to bite";
  EXPECT_GT(open.most_positions, max_positions) << "the limit is meant to bite";
  for (size_t s = 0; s < plans.size(); ++s) {
    SCOPED_TRACE(plans[s].audio + ", delay " + std::to_string(plans[s].n_delay) + " steps");
    EXPECT_EQ(open.ids[s], alone[s]);
    EXPECT_EQ(limited.ids[s], alone[s]) << "with passes limited to " << max_rows << " rows, " << max_positions << " positions";
  }
}

INSTANTIATE_TEST_SUITE_P(Backends, StreamsTogether, ::testing::Values("cpu", "cuda"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace voxrt::test
