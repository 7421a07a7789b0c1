// --context-bias, --context-bias-file and --context-bias-strength on `voxrt transcribe` and `voxrt
// stream`: the phrases reach the engine as the API takes them (the command's ids equal the
// library's with the same list), and every limit is refused naming the option: before the model
// loads (exit status 2), or for a phrase of too many tokens, once the tokenizer is loaded (status 1).
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "../parity/golden.h"
#include "audio/audio_file.h"
#include "cli_run.h"
#include "voxrt/session.h"
#include "voxrt/voxrt.h"

namespace voxrt::test {
namespace {

std::vector<int32_t> tokens_of(const RunResult& r) {
  return nlohmann::json::parse(r.out)["tokens"].get<std::vector<int32_t>>();
}

std::unique_ptr<Engine> cpu_engine() {
  EngineOptions o;
  o.device = Device::Cpu;
  return Engine::load(model_dir(), o);
}

// Words of the tiny vocabulary that bite on jfk at this strength (test_context_bias_decoding.cpp
// finds "text" a runner-up there, within 3.2 of the winner).
// TranscribeOptions or SessionOptions with these phrases at strength 4.
template <typename Options>
Options biased() {
  Options o;
  o.context_bias = {"text", "purpose", "quick brown"};
  o.context_bias_strength = 4.0f;
  return o;
}

TEST(ContextBiasCli, TranscribeTakesTheListTheFileAndTheStrength) {
  testutil::TempDir tmp;
  std::ofstream(tmp / "phrases.txt") << "# the file's phrases\n\n  purpose \nquick brown\n";
  const RunResult r = run_voxrt("transcribe -q -f json --device cpu --model " + model_dir() +
                                " --context-bias text --context-bias-file " + (tmp / "phrases.txt").string() +
                                " --context-bias-strength 4 " + audio("jfk"));
  ASSERT_EQ(r.status, 0) << r.err;
  const std::vector<float> wav = load_audio_mono(audio("jfk"));
  const auto engine = cpu_engine();
  const std::vector<int32_t> want = engine->transcribe(wav, biased<TranscribeOptions>()).tokens;
  EXPECT_EQ(tokens_of(r), want);
  EXPECT_NE(want, engine->transcribe(wav).tokens) << "the list is meant to change the ids";
  // Commas separate phrases, and --context-bias may be given again: the same list.
  const RunResult again = run_voxrt("transcribe -q -f json --device cpu --model " + model_dir() +
                                    " --context-bias 'text, purpose' --context-bias 'quick brown'"
                                    " --context-bias-strength 4 " + audio("jfk"));
  ASSERT_EQ(again.status, 0) << again.err;
  EXPECT_EQ(tokens_of(again), want);
}

TEST(ContextBiasCli, StreamTakesTheListAndTheStrength) {
  const RunResult r = run_voxrt("stream -q -f json --device cpu --model " + model_dir() +
                                " --context-bias 'text,purpose,quick brown' --context-bias-strength 4 " + audio("jfk"));
  ASSERT_EQ(r.status, 0) << r.err;
  const auto engine = cpu_engine();
  auto session = engine->open_session(biased<SessionOptions>());
  session->feed(load_audio_mono(audio("jfk")));
  session->flush();
  EXPECT_EQ(tokens_of(r), session->transcript().tokens);
}

TEST(ContextBiasCli, LimitsAreRefusedNamingTheOption) {
  testutil::TempDir tmp;
  {
    std::ofstream many(tmp / "many.txt");
    for (int i = 0; i <= kMaxContextBiasPhrases; ++i) many << "fox\n";
  }
  struct Case {
    std::string args;
    int status;
    std::vector<std::string> said;
  };
  const std::string long_phrase(kMaxContextBiasPhraseBytes + 1, 'a');
  const std::vector<Case> cases{
      {"--context-bias-strength 25", 2, {"--context-bias-strength 25: expected 0 to 20"}},
      {"--context-bias-strength -1", 2, {"--context-bias-strength -1"}},
      {"--context-bias 'fox,,dog'", 2, {"--context-bias: phrase 2 is empty"}},
      {"--context-bias " + long_phrase, 2, {"--context-bias: phrase 1", "101 bytes, more than the 100 allowed"}},
      {"--context-bias-file " + (tmp / "many.txt").string(), 2, {"--context-bias: 101 phrases, more than the 100"}},
      {"--context-bias-file " + (tmp / "absent.txt").string(), 1, {"--context-bias-file", "cannot open it"}},
      // Found once the tokenizer is loaded: 35 byte tokens of the tiny vocabulary.
      {"--context-bias 'zq zq zq zq zq zq zq zq zq zq zq zq'", 1, {"--context-bias: phrase 1", "tokens, more than the 32"}},
  };
  for (const char* command : {"transcribe", "stream"})
    for (const Case& c : cases) {
      SCOPED_TRACE(std::string(command) + " " + c.args);
      const RunResult r = run_voxrt(std::string(command) + " -q --device cpu --model " + model_dir() + " " + c.args + " " +
                                    audio("speech_short"));
      EXPECT_EQ(r.status, c.status) << r.err;
      for (const std::string& s : c.said) EXPECT_NE(r.err.find(s), std::string::npos) << r.err;
    }
}

}  // namespace
}  // namespace voxrt::test
