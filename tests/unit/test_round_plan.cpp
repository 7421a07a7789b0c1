// The round's planner (models/round_plan.h) on streams that only answer its questions: budgets
// shared in serving order or per stream, the serving order moving with `first`, a refusal that
// consumes nothing, and the decoder rows asked after the positions actually granted.
#include <gtest/gtest.h>

#include <vector>

#include "models/round_plan.h"

namespace voxrt {
namespace {

// A stream with fixed offers: it could encode `encodable` positions; after k of them its prompt of
// prompt_len rows runs when k >= prompt_at (prompt_at < 0: never), and it could put
// rows_per_position * k + rows rows.
struct FakeStream final : PlannedStream {
  int encodable_ = 0, prompt_at = -1, prompt_len = 3, rows = 0, rows_per_position = 0;
  bool refuse = false;
  std::vector<int> asked;  // the encoder positions rows_after was asked about
  std::vector<StreamPlan> prepared;

  int encodable() const override { return encodable_; }
  int prompt_rows_after(int encoded) const override { return prompt_at >= 0 && encoded >= prompt_at ? prompt_len : 0; }
  int rows_after(int encoded) const override {
    const_cast<FakeStream*>(this)->asked.push_back(encoded);
    return rows + rows_per_position * encoded;
  }
  bool prepare(const StreamPlan& plan) override {
    prepared.push_back(plan);
    return !refuse;
  }
};

std::vector<PlannedEntry> plan(std::vector<FakeStream>& fakes, const RoundBudget& budget, size_t first = 0) {
  std::vector<PlannedStream*> streams;
  for (FakeStream& f : fakes) streams.push_back(&f);
  return plan_round(streams, budget, first);
}

TEST(RoundPlan, SharedBudgetsAreTakenInServingOrderFromFirst) {
  std::vector<FakeStream> s(3);
  for (FakeStream& f : s) f.encodable_ = 20, f.rows = 6;
  const std::vector<PlannedEntry> p = plan(s, {.max_encoder_positions = 32, .max_decoder_rows = 8, .shared = true}, 1);
  // Served from stream 1 and wrapping; stream 0, served last, finds both budgets spent.
  ASSERT_EQ(p.size(), 2u);
  EXPECT_EQ(p[0].stream, 1u);
  EXPECT_EQ(p[1].stream, 2u);
  EXPECT_EQ(p[0].plan.encoder_positions, 20);
  EXPECT_EQ(p[1].plan.encoder_positions, 12);  // what stream 1 left of 32
  EXPECT_EQ(p[0].plan.decoder_rows, 6);
  EXPECT_EQ(p[1].plan.decoder_rows, 2);
  EXPECT_TRUE(s[0].prepared.empty()) << "a stream with nothing planned is not asked to prepare";
}

TEST(RoundPlan, UnsharedBudgetsAreEachStreamsOwn) {
  std::vector<FakeStream> s(3);
  for (FakeStream& f : s) f.encodable_ = 20, f.rows = 6;
  const std::vector<PlannedEntry> p = plan(s, {.max_encoder_positions = 16, .max_decoder_rows = 4, .shared = false});
  ASSERT_EQ(p.size(), 3u);
  for (const PlannedEntry& e : p) {
    EXPECT_EQ(e.plan.encoder_positions, 16);
    EXPECT_EQ(e.plan.decoder_rows, 4);
  }
}

TEST(RoundPlan, NoLimitGivesEachStreamAllItOffers) {
  std::vector<FakeStream> s(2);
  s[0].encodable_ = 7, s[0].rows = 3;
  s[1].encodable_ = 0, s[1].rows = 5;
  const std::vector<PlannedEntry> p = plan(s, {});
  ASSERT_EQ(p.size(), 2u);
  EXPECT_EQ(p[0].plan.encoder_positions, 7);
  EXPECT_EQ(p[0].plan.decoder_rows, 3);
  EXPECT_EQ(p[1].plan.encoder_positions, 0);
  EXPECT_EQ(p[1].plan.decoder_rows, 5);
}

TEST(RoundPlan, ARefusedStreamConsumesNothingAndIsLeftOut) {
  std::vector<FakeStream> s(2);
  for (FakeStream& f : s) f.encodable_ = 10, f.rows = 4;
  s[0].refuse = true;
  const std::vector<PlannedEntry> p = plan(s, {.max_encoder_positions = 10, .max_decoder_rows = 4, .shared = true});
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(p[0].stream, 1u);
  EXPECT_EQ(p[0].plan.encoder_positions, 10);  // all of it: the refused stream took none
  EXPECT_EQ(p[0].plan.decoder_rows, 4);
  ASSERT_EQ(s[0].prepared.size(), 1u);
  EXPECT_EQ(s[0].prepared[0].encoder_positions, 10);
}

TEST(RoundPlan, RowsAndPromptFollowThePositionsGranted) {
  // Rows depend on the positions encoded in the same round (a stream whose prompt completes now).
  std::vector<FakeStream> s(2);
  s[0].encodable_ = 8, s[0].prompt_at = 8, s[0].rows_per_position = 1;
  s[1].encodable_ = 8, s[1].prompt_at = 8, s[1].rows_per_position = 1;
  const std::vector<PlannedEntry> p = plan(s, {.max_encoder_positions = 12, .max_decoder_rows = 0, .shared = true});
  ASSERT_EQ(p.size(), 2u);
  EXPECT_EQ(s[0].asked, std::vector<int>{8});
  EXPECT_EQ(s[1].asked, std::vector<int>{4});  // granted 4 of its 8
  EXPECT_TRUE(p[0].plan.prompt);
  EXPECT_FALSE(p[1].plan.prompt);  // its prompt's positions are not all there yet
  EXPECT_EQ(p[0].plan.decoder_rows, 8);
  EXPECT_EQ(p[1].plan.decoder_rows, 4);
}

TEST(RoundPlan, APromptAloneIsPlanned) {
  std::vector<FakeStream> s(1);
  s[0].prompt_at = 0;  // its positions were encoded in an earlier round
  const std::vector<PlannedEntry> p = plan(s, {.max_encoder_positions = 4, .max_decoder_rows = 4, .shared = true});
  ASSERT_EQ(p.size(), 1u);
  EXPECT_TRUE(p[0].plan.prompt);
  EXPECT_EQ(p[0].plan.encoder_positions, 0);
  EXPECT_EQ(p[0].plan.decoder_rows, 0);
}

TEST(RoundPlan, APromptsRowsCountAgainstTheSharedDecoderBudget) {
  // Budget 12: stream 0's prompt (4 rows) and 2 rows, stream 1's 4 rows; stream 2's prompt does not
  // fit in what is left and waits, with its rows; stream 3's rows take the rest.
  std::vector<FakeStream> s(4);
  s[0].prompt_at = 0, s[0].prompt_len = 4, s[0].rows = 2;
  s[1].rows = 4;
  s[2].prompt_at = 0, s[2].prompt_len = 4, s[2].rows = 1;
  s[3].rows = 3;
  const std::vector<PlannedEntry> p = plan(s, {.max_encoder_positions = 0, .max_decoder_rows = 12, .shared = true});
  ASSERT_EQ(p.size(), 3u);
  EXPECT_TRUE(p[0].plan.prompt);
  EXPECT_EQ(p[0].plan.decoder_rows, 2);
  EXPECT_EQ(p[1].plan.decoder_rows, 4);
  EXPECT_EQ(p[2].stream, 3u);
  EXPECT_EQ(p[2].plan.decoder_rows, 2) << "4 + 2 + 4 rows took 10 of the budget of 12";
  EXPECT_TRUE(s[2].prepared.empty()) << "a prompt without room waits, rows and all";
  // Served first, the same prompt runs, and unshared budgets give every prompt a pass of its own.
  const std::vector<PlannedEntry> first = plan(s, {.max_encoder_positions = 0, .max_decoder_rows = 12, .shared = true}, 2);
  EXPECT_TRUE(first[0].plan.prompt);
  EXPECT_EQ(first[0].plan.decoder_rows, 1);
  for (const PlannedEntry& e : plan(s, {.max_encoder_positions = 0, .max_decoder_rows = 3, .shared = false}))
    EXPECT_EQ(e.plan.prompt, e.stream == 0 || e.stream == 2);
}

TEST(RoundPlan, APromptLongerThanTheBudgetRunsAsThePassesFirstRows) {
  std::vector<FakeStream> s(2);
  s[0].prompt_at = 0, s[0].prompt_len = 40, s[0].rows = 3;
  s[1].rows = 2;
  const std::vector<PlannedEntry> p = plan(s, {.max_encoder_positions = 0, .max_decoder_rows = 16, .shared = true});
  ASSERT_EQ(p.size(), 1u) << "the prompt took the whole pass";
  EXPECT_TRUE(p[0].plan.prompt);
  EXPECT_EQ(p[0].plan.decoder_rows, 0);
}

}  // namespace
}  // namespace voxrt
