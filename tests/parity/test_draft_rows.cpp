// Draft verification (StreamDecoder::Options::draft_rows): several decoder positions in one pass
// give what one position a pass gives. On a batch-invariant backend (the GPU) the rows of a pass
// equal single steps bit for bit (logits, ids, margins); on the CPU, whose products round
// differently for one row and for several, they agree within fp32 rounding, and the ids of whole
// transcriptions still equal the reference's. GPU cases skip themselves elsewhere.
#include <gtest/gtest.h>

#include <cmath>

#include "audio/audio_file.h"
#include "audio/log_mel.h"
#include "backend_by_name.h"
#include "bench/benchmark.h"
#include "common/error.h"
#include "golden.h"
#include "gpu_here.h"
#include "tiny_engine.h"
#include "voxrt/session.h"
#include "voxrt/voxrt.h"
#include "models/voxtral/decoder_pass.h"
#include "tokenizer/tekken.h"
#include "models/voxtral/stream_decoder.h"
#include "models/voxtral/stream_state.h"

namespace voxrt::test {
namespace {

struct Decoded {
  std::vector<int32_t> ids;
  std::vector<float> margins;
  std::vector<float> logits;  // [rows, vocab]
};

class DraftRows : public ::testing::TestWithParam<std::string> {};

// The prompt is prefilled from random adapter vectors, then positions P .. P + 6 are decoded with
// fixed input tokens: one position a pass, and again (on a fresh cache) all seven in one pass.
TEST_P(DraftRows, RowsOfOnePassEqualSingleSteps) {
  if (GetParam() == "cuda") REQUIRE_GPU();
  auto be = backend_named(GetParam());
  const std::unique_ptr<VoxtralModel> model = tiny_model(*be);
  const int dim = model->config().decoder.dim, rows = 7;
  Protocol proto;
  proto.n_delay = 3;
  const int P = proto.prompt_len();
  const std::vector<float> audio_host = random_rows(P + rows, dim, 11);
  Buffer audio(be.get(), P + rows, dim);
  be->upload(audio.data(), audio_host.data(), audio_host.size());
  const std::vector<int32_t> inputs{5, 17, 17, 32, 32, 2, 40};
  const int32_t vocab = model->config().decoder.vocab_size;
  for (int32_t t : inputs) ASSERT_LT(t, vocab);

  auto fresh_cache = [&] {
    KvCache cache(be.get(), model->decoder_cache_shape(1, model->config().decoder.sliding_window + P));
    decode_prompt(*model, proto, ProtocolIds{}, audio.view(0, P), cache);
    return cache;
  };
  Decoded single, pass;
  {
    KvCache cache = fresh_cache();
    SessionDecoder step(*model, unique_recording_key("test single"));
    for (int i = 0; i < rows; ++i) {
      const DecoderOutput r = step.run(inputs[i], audio.view(P + i, 1), P + i, proto.n_delay, cache);
      single.ids.push_back(r.id);
      single.margins.push_back(r.margin);
      const std::vector<float> l = host(*be, r.logits);
      single.logits.insert(single.logits.end(), l.begin(), l.end());
    }
  }
  {
    KvCache cache = fresh_cache();
    SessionDecoder step(*model, unique_recording_key("test rows"));
    for (const DecoderOutput& r : step.run_rows(inputs, audio.view(P, rows), P, proto.n_delay, cache)) {
      pass.ids.push_back(r.id);
      pass.margins.push_back(r.margin);
      const std::vector<float> l = host(*be, r.logits);
      pass.logits.insert(pass.logits.end(), l.begin(), l.end());
    }
  }
  ASSERT_EQ(pass.logits.size(), single.logits.size());
  EXPECT_EQ(pass.ids, single.ids);
  if (be->batch_invariant()) {
    EXPECT_EQ(pass.margins, single.margins);
    EXPECT_EQ(pass.logits, single.logits);  // bit for bit
  } else {
    double max_err = 0, max_ref = 0;
    for (size_t i = 0; i < pass.logits.size(); ++i) {
      max_err = std::max(max_err, std::abs(static_cast<double>(pass.logits[i]) - single.logits[i]));
      max_ref = std::max(max_ref, std::abs(static_cast<double>(single.logits[i])));
    }
    EXPECT_LE(max_err, 1e-5 * max_ref) << "CPU rows of one pass against single steps";
  }
}

INSTANTIATE_TEST_SUITE_P(Backends, DraftRows, ::testing::Values("cpu", "cuda"),
                         [](const auto& info) { return info.param; });

// The width a stream drafts follows its guesses: it doubles after passes as wide as it whose
// guesses all held, up to draft_rows, halves after a wrong guess, down to 1, and a pass narrower
// than the width (fewer positions were waiting) that held leaves it as it was.
TEST(DraftWidth, FollowsHowOftenTheGuessesHold) {
  EXPECT_EQ(StreamState::next_draft_width(1, 1, 1, 8), 2);
  EXPECT_EQ(StreamState::next_draft_width(2, 2, 2, 8), 4);
  EXPECT_EQ(StreamState::next_draft_width(8, 8, 8, 8), 8);  // not past draft_rows
  EXPECT_EQ(StreamState::next_draft_width(4, 4, 4, 6), 6);
  EXPECT_EQ(StreamState::next_draft_width(8, 3, 3, 8), 8);  // a narrow pass that held: no news
  EXPECT_EQ(StreamState::next_draft_width(4, 1, 1, 8), 4);
  EXPECT_EQ(StreamState::next_draft_width(8, 8, 1, 8), 4);  // a wrong guess halves it ...
  EXPECT_EQ(StreamState::next_draft_width(8, 8, 7, 8), 4);
  EXPECT_EQ(StreamState::next_draft_width(2, 2, 1, 8), 1);
  EXPECT_EQ(StreamState::next_draft_width(1, 1, 0, 8), 1);  // ... down to 1
  EXPECT_EQ(StreamState::next_draft_width(1, 1, 1, 1), 1);  // draft_rows 1: one row a pass for good
  // From 8, a stream whose guesses never hold drafts 1 or 2 rows once it has met two wrong guesses.
  int w = 8;
  for (int pass = 0; pass < 3; ++pass) w = StreamState::next_draft_width(w, w, 1, 8);
  EXPECT_EQ(w, 1);
}

std::vector<float> wav(const std::string& name) { return load_audio_mono(test_data() / "audio" / (name + ".wav")); }

// The bench's fast fill (StreamState::set_fill_drafts): while on, a pass takes every position
// waiting (up to the protocol's most) and keeps all its rows, each row's guess taken as the id
// before it; once off, the stream verifies its drafts again, so its ids are whatever width it
// drafts (one position a pass and eight give the same).
TEST(FillDrafts, KeepEveryRowThenVerifyAgain) {
  auto be = backend_named("cpu");
  const std::unique_ptr<VoxtralModel> model = tiny_model(*be);
  const LogMel logmel;
  const Tokenizer tok = Tokenizer::load(test_data() / "tiny" / "mistral" / "tekken.json");
  const std::vector<float> audio = wav("jfk");
  const size_t fill = 6 * 16000;
  struct Run {
    std::vector<int32_t> fill_ids, ids;
    int64_t fill_passes = 0, passes = 0;
  };
  auto run = [&](int draft_rows) {
    StreamDecoder::Options o;
    o.protocol.n_delay = 6;
    o.ids = {tok.bos_id(), tok.eos_id(), tok.streaming_pad_id(), tok.streaming_word_id()};
    o.draft_rows = draft_rows;
    StreamDecoder d(*model, logmel, o);
    Run r;
    d.set_fill_drafts(true);
    d.feed(std::span<const float>(audio).first(fill), [&](int32_t t, double) { r.fill_ids.push_back(t); });
    r.fill_passes = d.decoder_passes();
    d.set_fill_drafts(false);
    auto on_step = [&](int32_t t, double) { r.ids.push_back(t); };
    for (size_t at = fill; at < audio.size(); at += 16000)
      d.feed(std::span<const float>(audio).subspan(at, std::min<size_t>(16000, audio.size() - at)), on_step);
    d.flush(on_step);
    r.passes = d.decoder_passes() - r.fill_passes;
    return r;
  };
  const Run one = run(1), eight = run(8);
  // The fill does not depend on draft_rows: it takes the widest passes whatever it is.
  EXPECT_EQ(one.fill_ids, eight.fill_ids);
  EXPECT_EQ(one.fill_passes, eight.fill_passes);
  const int64_t positions = static_cast<int64_t>(one.fill_ids.size());
  ASSERT_GT(positions, 60);
  // A pass a 32-position encoder batch (the prompt's first), not one a position.
  EXPECT_LE(one.fill_passes, positions / 16 + 2) << positions << " positions";
  // Within a pass every id but the last is the guess (the id before it): the ids change at most
  // once a pass.
  int changes = 0;
  for (size_t i = 1; i < one.fill_ids.size(); ++i) changes += one.fill_ids[i] != one.fill_ids[i - 1];
  EXPECT_LE(changes, one.fill_passes);
  // Then verified again: one position a pass with draft_rows 1, and the same ids with 8.
  ASSERT_FALSE(one.ids.empty());
  EXPECT_EQ(one.passes, static_cast<int64_t>(one.ids.size()));
  EXPECT_EQ(eight.ids, one.ids);
  EXPECT_LT(eight.passes, one.passes);
}

// Whole transcriptions and live sessions with drafted passes give the reference's ids (the tiny
// goldens), whatever the pass size; the CPU engine drafts only when asked.
TEST(DraftRowsEngine, CpuTranscriptionsKeepTheReferenceIds) {
  for (int draft : {2, 8, 32}) {
    EngineOptions o;
    o.device = Device::Cpu;
    o.draft_rows = draft;
    auto engine = Engine::load(test_data() / "tiny" / "mistral", o);
    for (const auto& [name, delay] : std::vector<std::pair<std::string, int>>{
             {"speech_short", 160}, {"speech_short", 480}, {"speech_short", 2400}, {"speech_long", 480},
             {"odd_length", 480}, {"jfk", 480}}) {
      const std::vector<int32_t> golden =
          Golden(test_data() / "tiny" / "golden" / (name + "_" + std::to_string(delay) + ".safetensors")).i32("tokens");
      const std::vector<float> audio = wav(name);
      EXPECT_EQ(engine->transcribe(audio, {.delay_ms = delay}).tokens, golden) << name << " " << delay << " ms, draft " << draft;
      // A live session fed 1 s at a time has up to 12 positions waiting after each chunk.
      auto s = engine->open_session({.delay_ms = delay});
      for (size_t at = 0; at < audio.size(); at += 16000)
        s->feed(std::span<const float>(audio.data() + at, std::min<size_t>(16000, audio.size() - at)));
      s->flush();
      EXPECT_EQ(s->transcript().tokens, golden) << name << " live, " << delay << " ms, draft " << draft;
    }
  }
}

TEST(DraftRowsEngine, OutOfRangeDraftRowsAreRefused) {
  EngineOptions o;
  o.device = Device::Cpu;
  o.draft_rows = 33;
  try {
    Engine::load(test_data() / "tiny" / "mistral", o);
    FAIL() << "draft_rows 33 accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("draft_rows"), std::string::npos) << e.what();
  }
}

// On the GPU drafting is on by default and must not change a single id.
TEST(DraftRowsEngine, GpuDraftedTranscriptionsEqualOnePositionAPass) {
  REQUIRE_GPU();
  EngineOptions one;
  one.device = Device::Cuda;
  one.draft_rows = 1;
  EngineOptions drafted = one;
  drafted.draft_rows = 0;  // the default: 8 on the GPU
  auto a = Engine::load(test_data() / "tiny" / "mistral", one);
  auto b = Engine::load(test_data() / "tiny" / "mistral", drafted);
  for (const char* name : {"speech_short", "jfk", "speech_long", "odd_length"}) {
    const std::vector<float> audio = wav(name);
    const Transcript ta = a->transcribe(audio), tb = b->transcribe(audio);
    EXPECT_EQ(tb.tokens, ta.tokens) << name;
    EXPECT_FALSE(ta.tokens.empty()) << name;
  }
}

}  // namespace
}  // namespace voxrt::test
