// The conv stem of several streams' chunks in one pass (VoxtralModel::conv_stems, the encoder
// pass's): each part's frames and its next conv1 context equal what conv_stem computes for that
// part alone, bit for bit on a batch-invariant backend (the GPU: a product's rows do not depend on
// the others), within fp32 rounding on the CPU. Parts of different lengths, so that the windows
// straddling the parts' boundaries (computed and dropped) fall at different rows. GPU cases skip
// themselves elsewhere.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "backend_by_name.h"
#include "bench/benchmark.h"
#include "common/error.h"
#include "golden.h"
#include "gpu_here.h"
#include "tiny_engine.h"
#include "models/voxtral/model.h"

namespace voxrt::test {
namespace {

class ConvStems : public ::testing::TestWithParam<std::string> {};

TEST_P(ConvStems, PartsTogetherEqualEachAlone) {
  if (GetParam() == "cuda") REQUIRE_GPU();
  auto be = backend_named(GetParam());
  const std::unique_ptr<VoxtralModel> model = tiny_model(*be);
  const int n_mels = model->config().encoder.num_mel_bins, D = model->config().encoder.dim;
  const std::vector<int> part_rows{8, 24, 8, 16};  // mel rows: 1, 3, 1 and 2 positions
  const int n = static_cast<int>(part_rows.size());
  int total = 0, frames = 0;
  for (const int r : part_rows) total += r + 2, frames += r / 2;
  const std::vector<float> mel = random_rows(total, n_mels, 7);
  const std::vector<float> contexts = random_rows(n, D, 8);

  // Alone: conv_stem on each part's rows, with its own context.
  std::vector<float> frames_alone, contexts_alone;
  for (int i = 0, at = 0; i < n; at += part_rows[i] + 2, ++i) {
    Buffer m(be.get(), part_rows[i] + 2, n_mels), c(be.get(), 1, D), out(be.get(), part_rows[i] / 2, D);
    be->upload(m.data(), mel.data() + static_cast<size_t>(at) * n_mels, static_cast<size_t>(part_rows[i] + 2) * n_mels);
    be->upload(c.data(), contexts.data() + static_cast<size_t>(i) * D, D);
    model->conv_stem(m.all(), c.all(), out.all());
    const std::vector<float> f = host(*be, out.all()), cn = host(*be, c.all());
    frames_alone.insert(frames_alone.end(), f.begin(), f.end());
    contexts_alone.insert(contexts_alone.end(), cn.begin(), cn.end());
  }

  // Together: one conv_stems over every part.
  Buffer m(be.get(), total, n_mels), c(be.get(), n, D), out(be.get(), frames, D);
  be->upload(m.data(), mel.data(), mel.size());
  be->upload(c.data(), contexts.data(), contexts.size());
  model->conv_stems(m.all(), part_rows, c.all(), out.all());
  const std::vector<float> frames_together = host(*be, out.all()), contexts_together = host(*be, c.all());

  ASSERT_EQ(frames_together.size(), frames_alone.size());
  ASSERT_EQ(contexts_together.size(), contexts_alone.size());
  const bool exact = be->batch_invariant();
  double worst = 0, scale = 0;
  for (size_t i = 0; i < frames_alone.size(); ++i) {
    if (exact) ASSERT_EQ(frames_together[i], frames_alone[i]) << "frame element " << i;
    worst = std::max(worst, static_cast<double>(std::fabs(frames_together[i] - frames_alone[i])));
    scale = std::max(scale, static_cast<double>(std::fabs(frames_alone[i])));
  }
  for (size_t i = 0; i < contexts_alone.size(); ++i) {
    if (exact) ASSERT_EQ(contexts_together[i], contexts_alone[i]) << "context element " << i;
    worst = std::max(worst, static_cast<double>(std::fabs(contexts_together[i] - contexts_alone[i])));
  }
  EXPECT_LE(worst, 1e-5 * std::max(1.0, scale)) << GetParam();
  EXPECT_GT(scale, 0.0);  // the frames are not all zeros: the comparison compares something
}

TEST_P(ConvStems, RejectsOddOrMismatchedParts) {
  if (GetParam() == "cuda") REQUIRE_GPU();
  auto be = backend_named(GetParam());
  const std::unique_ptr<VoxtralModel> tiny = tiny_model(*be);
  VoxtralModel& model = *tiny;
  const int n_mels = model.config().encoder.num_mel_bins, D = model.config().encoder.dim;
  Buffer m(be.get(), 30, n_mels), c(be.get(), 2, D), out(be.get(), 13, D);
  const std::vector<int> odd{9, 17};
  EXPECT_THROW(model.conv_stems(m.all(), odd, c.all(), out.all()), Error);
  const std::vector<int> too_many_rows{8, 20};  // 32 rows with their contexts, the matrix has 30
  EXPECT_THROW(model.conv_stems(m.all(), too_many_rows, c.all(), Buffer(be.get(), 14, D).all()), Error);
}

INSTANTIATE_TEST_SUITE_P(Backends, ConvStems, ::testing::Values("cpu", "cuda"), [](const auto& i) { return i.param; });

}  // namespace
}  // namespace voxrt::test
