// The streams bench's split of a round's time into a fixed part and a part per stream
// (bench/round_cost_fit.h).
#include <gtest/gtest.h>

#include <vector>

#include "bench/round_cost_fit.h"

namespace voxrt {
namespace {

TEST(RoundCostFit, RecoversAnExactLine) {
  const std::vector<double> streams = {19, 24, 31, 76, 91};
  std::vector<double> ms;
  for (const double n : streams) ms.push_back(5.0 + 0.33 * n);
  const LineFit f = fit_line(streams, ms);
  ASSERT_TRUE(f.ok);
  EXPECT_NEAR(f.intercept, 5.0, 1e-9);
  EXPECT_NEAR(f.slope, 0.33, 1e-12);
  EXPECT_NEAR(f.r2, 1.0, 1e-12);
  EXPECT_EQ(f.points, streams.size());
}

TEST(RoundCostFit, NoisyRoundsGiveTheLeastSquaresLine) {
  // y = 1 + 2x with residuals +1, -1, -1, +1 at x = 0..3: the symmetric residuals leave the line
  // as it is, and R^2 = 1 - 4 / 24 (the residuals' squares over y's about its mean, 4).
  const std::vector<double> x = {0, 1, 2, 3}, y = {2, 2, 4, 8};
  const LineFit f = fit_line(x, y);
  ASSERT_TRUE(f.ok);
  EXPECT_NEAR(f.slope, 2.0, 1e-12);
  EXPECT_NEAR(f.intercept, 1.0, 1e-12);
  EXPECT_NEAR(f.r2, 1.0 - 4.0 / 24.0, 1e-12);
}

TEST(RoundCostFit, NothingIsFittedWhenEveryRoundHoldsAsManyStreams) {
  // One stream a round (a single stream's bench) or one round: no slope can be told apart.
  EXPECT_FALSE(fit_line(std::vector<double>{1, 1, 1}, std::vector<double>{3, 4, 5}).ok);
  EXPECT_FALSE(fit_line(std::vector<double>{7}, std::vector<double>{3}).ok);
  EXPECT_FALSE(fit_line(std::vector<double>{}, std::vector<double>{}).ok);
  EXPECT_TRUE(round_cost_json(std::vector<double>{2, 2}, std::vector<double>{1, 2}, 80).is_null());
}

TEST(RoundCostFit, ReportsTheStreamsWhoseOwnWorkWouldFillAStep) {
  const std::vector<double> streams = {10, 20, 40}, ms = {6, 8, 12};  // 4 ms + 0.2 ms a stream
  const nlohmann::json j = round_cost_json(streams, ms, 80);
  ASSERT_FALSE(j.is_null());
  EXPECT_NEAR(j["fixed_ms"].get<double>(), 4.0, 1e-9);
  EXPECT_NEAR(j["ms_per_stream"].get<double>(), 0.2, 1e-12);
  EXPECT_NEAR(j["streams_per_step_at_full"].get<double>(), 400.0, 1e-6);
  // Rounds back to back: at most (80 / 0.2)(1 - 8 / 80) = 360 streams keep within a step.
  EXPECT_NEAR(j["streams_within_a_step"].get<double>(), 360.0, 1e-6);
  EXPECT_EQ(j["rounds"].get<int>(), 3);
}

// The bound's edges: a round's fixed part of half a step or more leaves no stream its deadline,
// and so does a fit without a per-stream part; at the bound a round takes exactly half a step.
TEST(RoundCostFit, StreamsWithinAStepFromTheRoundsCost) {
  EXPECT_DOUBLE_EQ(streams_within_a_step(40, 0.2, 80), 0.0);
  EXPECT_DOUBLE_EQ(streams_within_a_step(50, 0.2, 80), 0.0);
  EXPECT_DOUBLE_EQ(streams_within_a_step(4, 0.0, 80), 0.0);
  EXPECT_DOUBLE_EQ(streams_within_a_step(4, -0.1, 80), 0.0);
  const double a = 2.47, b = 0.397, n = streams_within_a_step(a, b, 80);
  EXPECT_NEAR(n, 189.07, 0.01);  // the 8w H100 run's fit (bench/results/2026-12-07-issue36-closing-h100.txt)
  EXPECT_NEAR(a / (1 - n * b / 80), 40.0, 1e-9) << "a round of the bound's streams takes half a step";
}

}  // namespace
}  // namespace voxrt
