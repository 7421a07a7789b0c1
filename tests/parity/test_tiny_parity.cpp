// Parity of every stage with the transformers reference on the tiny random-weight model
// (fixtures made by tools/reference; see tools/reference/README.md). Both checkpoint layouts.
//
// Tolerances (parity_check.h; fp32 engine vs fp32 reference, so differences come only from
// summation order): mel max abs 1e-4; conv stem, encoder, adapter, logits relative L2 error 1e-4.
// Token ids must be identical, under teacher forcing and in free-running greedy decode.
#include <gtest/gtest.h>

#include <cstdio>
#include <map>

#include "audio/audio_file.h"
#include "parity_check.h"
#include "models/voxtral/checkpoint.h"
#include "tokenizer/tekken.h"
#include "offline_reference.h"

namespace voxrt::test {
namespace {

std::filesystem::path tiny_dir() { return test_data() / "tiny"; }

// One loaded tiny model per layout, shared by all tests of the binary.
struct Loaded {
  std::unique_ptr<Backend> backend;
  std::unique_ptr<VoxtralModel> model;
  std::unique_ptr<Tokenizer> tokenizer;
  LogMel logmel;
};

Loaded& loaded(LayoutPreference layout) {
  static std::map<LayoutPreference, std::unique_ptr<Loaded>> cache;
  auto& slot = cache[layout];
  if (!slot) {
    slot = std::make_unique<Loaded>();
    const std::filesystem::path dir = tiny_dir() / (layout == LayoutPreference::Mistral ? "mistral" : "hf");
    slot->backend = make_cpu_backend(0);
    const Checkpoint ckpt = Checkpoint::open(dir, layout);
    slot->model = std::make_unique<VoxtralModel>(ckpt, *slot->backend);
    slot->tokenizer = std::make_unique<Tokenizer>(Tokenizer::load(dir / "tekken.json"));
  }
  return *slot;
}

std::vector<std::string> golden_cases() { return fixture_names("tiny/golden"); }

std::string audio_name(const std::string& golden_case) { return golden_case.substr(0, golden_case.rfind('_')); }

class TinyParity : public ::testing::TestWithParam<std::string> {};

TEST_P(TinyParity, EveryStageMatchesReferenceUnderTeacherForcing) {
  const Golden g(tiny_dir() / "golden" / (GetParam() + ".safetensors"));
  Loaded& m = loaded(LayoutPreference::Mistral);
  const std::vector<float> audio = load_audio_mono(test_data() / "audio" / (audio_name(GetParam()) + ".wav"));
  const std::vector<float> ref_audio = g.f32("audio");
  ASSERT_EQ(audio.size(), ref_audio.size());
  EXPECT_LE(max_abs_error(audio, ref_audio), 1e-7) << "decoded audio differs from the reference's";
  expect_stages_match(*m.model, m.logmel, *m.tokenizer, audio, g, GetParam());
}

TEST_P(TinyParity, FreeRunningGreedyDecodeGivesReferenceTokens) {
  const Golden g(tiny_dir() / "golden" / (GetParam() + ".safetensors"));
  Loaded& m = loaded(LayoutPreference::Mistral);
  const std::vector<float> audio = load_audio_mono(test_data() / "audio" / (audio_name(GetParam()) + ".wav"));
  const OfflineResult r = run_offline(*m.model, m.logmel, audio, golden_options(*m.tokenizer, g));
  EXPECT_EQ(r.tokens, g.i32("tokens"));
  EXPECT_EQ(r.eos_stopped, g.meta("eos_stopped") == "True" || g.meta("eos_stopped") == "true" || g.meta("eos_stopped") == "1");
}

TEST_P(TinyParity, BothCheckpointLayoutsGiveIdenticalResults) {
  const Golden g(tiny_dir() / "golden" / (GetParam() + ".safetensors"));
  const std::vector<float> audio = load_audio_mono(test_data() / "audio" / (audio_name(GetParam()) + ".wav"));
  OfflineTrace a, b;
  Loaded& mi = loaded(LayoutPreference::Mistral);
  Loaded& hf = loaded(LayoutPreference::HuggingFace);
  OfflineOptions oa = golden_options(*mi.tokenizer, g), ob = golden_options(*hf.tokenizer, g);
  oa.trace = &a;
  ob.trace = &b;
  const OfflineResult ra = run_offline(*mi.model, mi.logmel, audio, oa);
  const OfflineResult rb = run_offline(*hf.model, hf.logmel, audio, ob);
  EXPECT_EQ(ra.tokens, rb.tokens);
  EXPECT_EQ(a.encoder, b.encoder);
  EXPECT_EQ(a.adapter, b.adapter);
}

INSTANTIATE_TEST_SUITE_P(Golden, TinyParity, ::testing::ValuesIn(golden_cases()),
                         [](const auto& info) { return info.param; });
TEST(TinyFixtures, Present) { EXPECT_GE(golden_cases().size(), 8u); }

}  // namespace
}  // namespace voxrt::test
