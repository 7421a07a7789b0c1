// Live sessions against the reference's own streaming path (transformers' generate() pulling mel
// chunks from a generator as its processor prepares them; fixtures in tests/data/tiny/streaming,
// see tools/reference/README.md). With the flush, token ids are identical. Without it, the
// reference waits for 160 samples more than a step strictly needs (its last 400-sample window
// feeds a mel frame that is dropped), so voxrt may be one step ahead, never behind or different.
#include <gtest/gtest.h>

#include "audio/audio_file.h"
#include "golden.h"
#include "voxrt/session.h"
#include "voxrt/voxrt.h"

namespace voxrt::test {
namespace {

std::vector<std::string> streaming_cases() { return fixture_names("tiny/streaming"); }

class StreamingReference : public ::testing::TestWithParam<std::string> {};

TEST_P(StreamingReference, SameTokensAsTheReferenceStream) {
  static std::unique_ptr<Engine> engine = Engine::load(test_data() / "tiny" / "mistral");
  const Golden g(test_data() / "tiny" / "streaming" / (GetParam() + ".safetensors"));
  const std::string audio_name = GetParam().substr(0, GetParam().rfind('_'));
  const std::vector<float> audio = load_audio_mono(test_data() / "audio" / (audio_name + ".wav"));
  auto s = engine->open_session({.delay_ms = std::stoi(g.meta("delay_ms"))});
  for (size_t at = 0; at < audio.size(); at += 1280)
    s->feed(std::span<const float>(audio.data() + at, std::min<size_t>(1280, audio.size() - at)));

  const std::vector<int32_t> no_flush = s->transcript().tokens, ref_no_flush = g.i32("tokens_no_flush");
  ASSERT_GE(no_flush.size(), ref_no_flush.size());
  EXPECT_LE(no_flush.size(), ref_no_flush.size() + 1);
  EXPECT_TRUE(std::equal(ref_no_flush.begin(), ref_no_flush.end(), no_flush.begin()));

  s->flush();
  EXPECT_EQ(s->transcript().tokens, g.i32("tokens"));
}

INSTANTIATE_TEST_SUITE_P(Tiny, StreamingReference, ::testing::ValuesIn(streaming_cases()),
                         [](const auto& info) { return info.param; });

TEST(StreamingFixtures, Present) { EXPECT_GE(streaming_cases().size(), 6u); }

}  // namespace
}  // namespace voxrt::test
