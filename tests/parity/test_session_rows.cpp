// Sessions stepped together (decode_sessions, the batching scheduler's decoder pass; issue 13):
// rows of several sessions in one decoder pass, each in its own cache slot, with different audio,
// delays and start times, sessions joining and leaving while the others go on, give each session
// what it gets stepped alone: bit for bit on a batch-invariant backend (the GPU), within fp32
// rounding and with the same ids on the CPU. GPU cases skip themselves elsewhere.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "backend_by_name.h"
#include "bench/benchmark.h"
#include "common/error.h"
#include "golden.h"
#include "gpu_here.h"
#include "tiny_engine.h"
#include "models/voxtral/decoder_pass.h"

namespace voxrt::test {
namespace {

// One session of the test: its delay, the pass at which it joins, its fixed input tokens (one per
// step: the outputs of a random model are not what is tested, the rows' arithmetic is) and its
// adapter vectors (prompt, then one per step).
struct TestSession {
  int n_delay, join_pass;
  std::vector<int32_t> inputs;
  Protocol protocol;
  Buffer audio;
  int prompt_len() const { return protocol.prompt_len(); }
};

struct Outputs {
  std::vector<int32_t> ids;
  std::vector<float> logits;  // [steps, vocab]
};

class SessionRows : public ::testing::TestWithParam<std::string> {};

TEST_P(SessionRows, SessionsInOnePassEqualEachAlone) {
  if (GetParam() == "cuda") REQUIRE_GPU();
  auto be = backend_named(GetParam());
  const std::unique_ptr<VoxtralModel> model = tiny_model(*be);
  const int dim = model->config().decoder.dim;
  const int32_t vocab = model->config().decoder.vocab_size;
  // Four sessions: delays from 1 to 15 steps, joining at passes 0, 0, 2 and 5, with 7, 6, 6 and 3
  // steps: the passes hold 2 to 4 rows (all four at pass 5), and sessions leave while others go on.
  struct Plan {
    int n_delay, join_pass, steps;
  };
  const std::vector<Plan> plans{{6, 0, 7}, {1, 0, 6}, {15, 2, 6}, {3, 5, 3}};
  std::vector<TestSession> sessions;
  int max_prompt = 0;
  for (size_t s = 0; s < plans.size(); ++s) {
    TestSession t{plans[s].n_delay, plans[s].join_pass, {}, {}, {}};
    t.protocol.n_delay = plans[s].n_delay;
    for (int i = 0; i < plans[s].steps; ++i) t.inputs.push_back(static_cast<int32_t>((s * 31 + i * 7) % std::min(vocab, 200)));
    const int rows = t.prompt_len() + plans[s].steps;
    const std::vector<float> a = random_rows(rows, dim, static_cast<unsigned>(100 + s));
    t.audio = Buffer(be.get(), rows, dim);
    be->upload(t.audio.data(), a.data(), a.size());
    max_prompt = std::max(max_prompt, t.prompt_len());
    sessions.push_back(std::move(t));
  }
  const int ring = model->config().decoder.sliding_window + max_prompt;

  // Alone: each session in a cache of its own, prompt then one step at a time.
  std::vector<Outputs> alone(sessions.size());
  for (size_t s = 0; s < sessions.size(); ++s) {
    TestSession& t = sessions[s];
    KvCache cache(be.get(), model->decoder_cache_shape(1, ring));
    decode_prompt(*model, t.protocol, ProtocolIds{}, t.audio.view(0, t.prompt_len()), cache);
    SessionDecoder step(*model, unique_recording_key("test alone"));
    for (size_t i = 0; i < t.inputs.size(); ++i) {
      const int64_t pos = t.prompt_len() + static_cast<int64_t>(i);
      const DecoderOutput r = step.run(t.inputs[i], t.audio.view(static_cast<int>(pos), 1), pos, t.n_delay, cache);
      alone[s].ids.push_back(r.id);
      const std::vector<float> l = host(*be, r.logits);
      alone[s].logits.insert(alone[s].logits.end(), l.begin(), l.end());
    }
  }

  // Together: one cache, a slot per session; a session's prompt is prefilled when it joins, then
  // each pass takes one row of every session that has steps left.
  std::vector<Outputs> together(sessions.size());
  KvCache cache(be.get(), model->decoder_cache_shape(static_cast<int>(sessions.size()), ring));
  std::vector<size_t> done(sessions.size(), 0);
  Buffer pass_audio(be.get(), static_cast<int>(sessions.size()), dim);
  int max_rows = 0;
  for (int pass = 0;; ++pass) {
    std::vector<SessionRow> rows;
    std::vector<size_t> owners;
    for (size_t s = 0; s < sessions.size(); ++s) {
      TestSession& t = sessions[s];
      if (pass == t.join_pass)
        decode_prompt(*model, t.protocol, ProtocolIds{}, t.audio.view(0, t.prompt_len()), cache, static_cast<int>(s));
      if (pass < t.join_pass || done[s] == t.inputs.size()) continue;
      const int64_t pos = t.prompt_len() + static_cast<int64_t>(done[s]);
      be->copy(pass_audio.row(static_cast<int>(rows.size())), t.audio.row(static_cast<int>(pos)), static_cast<size_t>(dim));
      rows.push_back({static_cast<int>(s), pos, t.inputs[done[s]], t.n_delay});
      owners.push_back(s);
    }
    const bool joining_later = std::any_of(sessions.begin(), sessions.end(), [&](const TestSession& t) { return t.join_pass > pass; });
    if (rows.empty() && !joining_later) break;
    if (rows.empty()) continue;
    max_rows = std::max(max_rows, static_cast<int>(rows.size()));
    const auto results = decode_sessions(*model, rows, pass_audio.view(0, static_cast<int>(rows.size())), cache);
    for (size_t i = 0; i < rows.size(); ++i) {
      together[owners[i]].ids.push_back(results[i].id);
      const std::vector<float> l = host(*be, results[i].logits);
      together[owners[i]].logits.insert(together[owners[i]].logits.end(), l.begin(), l.end());
      ++done[owners[i]];
    }
  }
  EXPECT_EQ(max_rows, 4) << "the plan is meant to put every session in one pass at some point";

  for (size_t s = 0; s < sessions.size(); ++s) {
    SCOPED_TRACE("session " + std::to_string(s) + " (delay " + std::to_string(sessions[s].n_delay) + " steps)");
    ASSERT_EQ(together[s].logits.size(), alone[s].logits.size());
    EXPECT_EQ(together[s].ids, alone[s].ids);
    if (be->batch_invariant()) {
      EXPECT_EQ(together[s].logits, alone[s].logits);  // bit for bit
    } else {
      double max_err = 0, max_ref = 0;
      for (size_t i = 0; i < alone[s].logits.size(); ++i) {
        max_err = std::max(max_err, std::abs(static_cast<double>(together[s].logits[i]) - alone[s].logits[i]));
        max_ref = std::max(max_ref, std::abs(static_cast<double>(alone[s].logits[i])));
      }
      EXPECT_LE(max_err, 1e-5 * max_ref) << "CPU rows of several sessions against each alone";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Backends, SessionRows, ::testing::Values("cpu", "cuda"),
                         [](const auto& info) { return info.param; });

TEST(SessionRowsChecks, SlotRowsAdjacentAndConsecutiveSlotsInRange) {
  auto be = make_cpu_backend();
  const std::unique_ptr<VoxtralModel> tiny = tiny_model(*be);
  VoxtralModel& model = *tiny;
  KvCache cache(be.get(), model.decoder_cache_shape(2, 64));
  Buffer audio(be.get(), 3, model.config().decoder.dim);
  be->fill(audio.data(), 0.0f, audio.size());
  const std::vector<SessionRow> gap{{1, 40, 5, 6}, {1, 42, 5, 6}};
  EXPECT_THROW(decode_sessions(model, gap, audio.view(0, 2), cache), Error);
  const std::vector<SessionRow> apart{{1, 40, 5, 6}, {0, 40, 5, 6}, {1, 41, 5, 6}};
  EXPECT_THROW(decode_sessions(model, apart, audio.all(), cache), Error);
  const std::vector<SessionRow> drafted{{1, 40, 5, 6}, {1, 41, 5, 6}, {0, 40, 5, 6}};
  EXPECT_NO_THROW(decode_sessions(model, drafted, audio.all(), cache));
  const std::vector<SessionRow> bad_slot{{2, 40, 5, 6}};
  EXPECT_THROW(decode_sessions(model, bad_slot, audio.view(0, 1), cache), Error);
  const std::vector<SessionRow> bad_delay{{0, 40, 5, 31}};
  EXPECT_THROW(decode_sessions(model, bad_delay, audio.view(0, 1), cache), Error);
}

}  // namespace
}  // namespace voxrt::test
