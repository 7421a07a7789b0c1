// Context biasing on the tiny model (random weights, gibberish text), through the public API, on the
// CPU and on the GPU (a case that skips itself without one): an empty list or a strength of 0
// changes no id; a word of the tiny vocabulary that the model ranks high but never says (found from
// the backend's own unbiased logits) comes out with the list, at the first position where its tokens
// are within the strength of the winner, and not without it; a live session, and passes of drafted
// rows, give the same ids as a transcription one position a pass.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <limits>
#include <optional>

#include "audio/log_mel.h"
#include "backend_by_name.h"
#include "engine/bias_phrases.h"
#include "gpu_here.h"
#include "offline_reference.h"
#include "tiny_engine.h"
#include "tokenizer/tekken.h"
#include "tokenizer/text_encoder.h"
#include "voxrt/session.h"
#include "voxrt/voxrt.h"

namespace voxrt::test {
namespace {

// The tiny model on the backend named by the parameter (a GPU case skips itself without a GPU).
class ContextBiasDecoding : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (GetParam() == "cuda") REQUIRE_GPU();
  }
  // draft_rows 0: the engine's default (1 on the CPU, 8 on the GPU).
  std::unique_ptr<Engine> engine(int draft_rows = 0) const {
    EngineOptions o;
    o.device = GetParam() == "cuda" ? Device::Cuda : Device::Cpu;
    o.draft_rows = draft_rows;
    return Engine::load(test_data() / "tiny" / "mistral", o);
  }
};

std::vector<int32_t> session_tokens(Engine& engine, const std::vector<float>& audio, const SessionOptions& o) {
  auto s = engine.open_session(o);
  for (size_t at = 0; at < audio.size(); at += 3000)
    s->feed(std::span<const float>(audio).subspan(at, std::min<size_t>(3000, audio.size() - at)));
  s->flush();
  return s->transcript().tokens;
}

TEST_P(ContextBiasDecoding, AnEmptyListOrNoStrengthChangesNoId) {
  const auto engine = this->engine();
  for (const char* name : {"jfk", "speech_short"}) {
    const std::vector<float> audio = wav(name);
    const std::vector<int32_t> plain = engine->transcribe(audio).tokens;
    ASSERT_GT(plain.size(), 20u);
    TranscribeOptions empty;
    empty.context_bias = {};
    EXPECT_EQ(engine->transcribe(audio, empty).tokens, plain) << name;
    TranscribeOptions off;
    off.context_bias = {"quick", "brown fox"};
    off.context_bias_strength = 0;
    EXPECT_EQ(engine->transcribe(audio, off).tokens, plain) << name;
    SessionOptions live;
    live.stop_at_eos = true;
    live.context_bias = {};
    EXPECT_EQ(session_tokens(*engine, audio, live), plain) << name;
  }
}

// A word the unbiased decode never emits, and the strength that makes it come out: the first position
// whose gap (the winner's logit less the best of the word's tokens) is below the strength is where
// it must appear, every earlier one keeping its id.
struct Runner {
  std::string word;
  std::vector<int32_t> ids;  // the word's forms' tokens (the trie's first ids)
  float strength = 0;
  size_t position = 0;  // where it must appear
  int rank = 0;         // of its best token there, unbiased (1: the winner)
};

std::optional<Runner> runner_up_word(const Tokenizer& tok, const TextEncoder& encoder, const std::vector<int32_t>& ids,
                                     const std::vector<float>& logits, int vocab) {
  std::vector<std::string> words;
  for (int id = tok.num_special() + 256; id < tok.vocab_size(); ++id) {
    std::string w(tok.token_bytes(id));
    if (!w.empty() && w[0] == ' ') w.erase(0, 1);
    if (w.empty() || !std::all_of(w.begin(), w.end(), [](unsigned char c) { return std::isalpha(c); })) continue;
    std::transform(w.begin(), w.end(), w.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    if (std::find(words.begin(), words.end(), w) == words.end()) words.push_back(w);
  }
  std::optional<Runner> best;
  float best_gap = std::numeric_limits<float>::infinity();
  for (const std::string& w : words) {
    const auto trie = make_bias_trie({w}, 1.0f, encoder, tok.num_special());
    const std::span<const int32_t> first = trie->next_ids(BiasTrie::kRoot);
    if (std::any_of(first.begin(), first.end(), [&](int32_t t) { return std::count(ids.begin(), ids.end(), t) > 0; }))
      continue;  // emitted without the list
    Runner r{w, std::vector<int32_t>(first.begin(), first.end())};
    std::vector<float> gaps;
    for (size_t p = 0; p < ids.size(); ++p) {
      const float* row = logits.data() + p * static_cast<size_t>(vocab);
      float word_best = -std::numeric_limits<float>::infinity();
      for (const int32_t t : r.ids) word_best = std::max(word_best, row[t]);
      gaps.push_back(row[ids[p]] - word_best);
    }
    const float least = *std::min_element(gaps.begin(), gaps.end());
    if (least >= best_gap) continue;
    // Half a logit past the closest gap; every gap must stay clear of it, so that rounding cannot
    // move where the word appears.
    r.strength = least + 0.5f;
    r.position = static_cast<size_t>(std::find_if(gaps.begin(), gaps.end(), [&](float g) { return g < r.strength; }) -
                                     gaps.begin());
    bool clear = r.strength <= kMaxContextBiasStrength;
    for (size_t p = 0; p <= r.position; ++p) clear = clear && std::abs(gaps[p] - r.strength) > 0.05f;
    if (!clear) continue;
    const float* row = logits.data() + r.position * static_cast<size_t>(vocab);
    float word_best = -std::numeric_limits<float>::infinity();
    for (const int32_t t : r.ids) word_best = std::max(word_best, row[t]);
    r.rank = 1 + static_cast<int>(std::count_if(row, row + vocab, [&](float v) { return v > word_best; }));
    best_gap = least;
    best = r;
  }
  return best;
}

TEST_P(ContextBiasDecoding, ARunnerUpWordComesOutWithTheListAndNotWithout) {
  const Tokenizer tok = Tokenizer::load(test_data() / "tiny" / "mistral" / "tekken.json");
  const TextEncoder encoder(tok);
  const std::unique_ptr<Backend> be = backend_named(GetParam());
  const std::unique_ptr<VoxtralModel> model = tiny_model(*be);
  const auto engine = this->engine(), one_row = this->engine(1), drafted = this->engine(8);
  const LogMel logmel;
  const int vocab = model->config().decoder.vocab_size;
  int found = 0;
  for (const char* name : {"jfk", "speech_short", "speech_long"}) {
    SCOPED_TRACE(name);
    const std::vector<float> audio = wav(name);
    // The unbiased decode and its logits at every position.
    OfflineOptions o;
    o.protocol.n_delay = 6;
    o.protocol.n_left_pad_tokens = tok.audio().streaming_n_left_pad_tokens;
    o.ids = {tok.bos_id(), tok.eos_id(), tok.streaming_pad_id(), tok.streaming_word_id()};
    OfflineTrace trace;
    o.trace = &trace;
    o.trace_logit_steps = std::numeric_limits<int>::max();
    const OfflineResult plain = run_offline(*model, logmel, audio, o);
    ASSERT_EQ(engine->transcribe(audio).tokens, plain.tokens) << "the engine's unbiased ids are the offline pass's";
    ASSERT_EQ(trace.logits.size(), plain.tokens.size() * static_cast<size_t>(vocab));

    const std::optional<Runner> r = runner_up_word(tok, encoder, plain.tokens, trace.logits, vocab);
    if (!r) continue;
    ++found;
    std::printf("[%s] \"%s\": strength %.2f, position %zu of %zu, rank %d there unbiased\n", name, r->word.c_str(),
                r->strength, r->position, plain.tokens.size(), r->rank);
    EXPECT_LE(r->rank, 3) << "the word is meant to be among the top few where it comes out";
    TranscribeOptions biased;
    biased.context_bias = {r->word};
    biased.context_bias_strength = r->strength;
    const std::vector<int32_t> ids = engine->transcribe(audio, biased).tokens;
    ASSERT_GT(ids.size(), r->position);
    EXPECT_TRUE(std::equal(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(r->position), plain.tokens.begin()))
        << "before it the list changes nothing";
    EXPECT_NE(std::find(r->ids.begin(), r->ids.end(), ids[r->position]), r->ids.end())
        << "\"" << r->word << "\" is meant to come out at position " << r->position << ", got id " << ids[r->position];
    // A live session with the list, and passes of drafted rows, give these ids too.
    SessionOptions live;
    live.stop_at_eos = true;
    live.context_bias = biased.context_bias;
    live.context_bias_strength = biased.context_bias_strength;
    EXPECT_EQ(session_tokens(*engine, audio, live), ids) << "live";
    EXPECT_EQ(one_row->transcribe(audio, biased).tokens, ids) << "one row a pass";
    EXPECT_EQ(drafted->transcribe(audio, biased).tokens, ids) << "8 drafted rows a pass";
  }
  EXPECT_GE(found, 1) << "no word of the tiny vocabulary is a runner-up the model never says";
}

// A list out of its limits is the caller's error, on one device or several: an OptionError naming
// context_bias, before any file or session (a phrase of too many tokens too, found as it is tokenized).
TEST(ContextBiasEngine, ABadListIsAnOptionErrorOnOneDeviceOrSeveral) {
  const std::vector<std::string> too_many_tokens{"zq zq zq zq zq zq zq zq zq zq zq zq"};
  for (const std::vector<int> gpus : {std::vector<int>{}, std::vector<int>{0, 1}}) {
    SCOPED_TRACE(gpus.size() > 1 ? "two CPU copies" : "one");
    auto engine = Engine::load(test_data() / "tiny" / "mistral", {.device = Device::Cpu, .gpus = gpus, .threads = 1});
    const auto expect_refused = [](const auto& call) {
      try {
        call();
        ADD_FAILURE() << "a bad list was accepted";
      } catch (const OptionError& e) {
        EXPECT_EQ(e.field(), "context_bias") << e.what();
      }
    };
    expect_refused([&] { engine->open_session({.context_bias = too_many_tokens}); });
    expect_refused([&] { engine->open_session({.context_bias = {"fox", ""}}); });
    const std::vector<std::filesystem::path> files{test_data() / "audio" / "jfk.wav"};
    TranscribeOptions o;
    o.context_bias = {"fox", " "};
    expect_refused([&] { engine->transcribe_batch(files, o); });
    o.context_bias = too_many_tokens;
    expect_refused([&] { engine->transcribe(wav("speech_short"), o); });
  }
}

INSTANTIATE_TEST_SUITE_P(Backends, ContextBiasDecoding, ::testing::Values("cpu", "cuda"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace voxrt::test
