// Full-size (4.4 B parameter) random-weight model against the reference, on the CPU backend.
// Runs only where tools/reference/full_size_check.sh has made the model and golden outputs
// (the GPU machine: 16 cores, 128 GB): VOXRT_FULL_DIR=<dir with mistral/, hf/, golden/>.
// Elsewhere it reports itself skipped. VOXRT_FULL_DEVICE=cuda runs it on the CUDA backend with
// bf16 tolerances instead.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <cstdlib>
#include <random>
#include <tuple>

#include "audio/audio_file.h"
#include "models/voxtral/checkpoint.h"
#include "full_size.h"
#include "parity_check.h"
#include "streams_together.h"
#include "models/voxtral/stream_decoder.h"

namespace voxrt::test {
namespace {

// A live session fed the same audio in uneven chunks gives the free-running offline ids, step for
// step (streaming on the full model; the reference's offline ids are checked above).
void expect_streaming_equals_offline(VoxtralModel& model, const LogMel& logmel, const Tokenizer& tok,
                                     const std::vector<float>& audio, const Golden& g, const std::string& sub) {
  OfflineOptions off = golden_options(tok, g);
  off.stop_at_eos = false;
  const std::vector<int32_t> offline = run_offline(model, logmel, audio, off).tokens;
  StreamDecoder::Options o;
  o.protocol = off.protocol;
  o.ids = off.ids;
  StreamDecoder s(model, logmel, o);
  std::vector<int32_t> streamed;
  auto on_step = [&](int32_t t, double) { streamed.push_back(t); };
  std::mt19937 rng(11);
  std::uniform_int_distribution<size_t> chunk(1, 5000);
  for (size_t at = 0; at < audio.size();) {
    const size_t n = std::min(audio.size() - at, chunk(rng));
    s.feed(std::span<const float>(audio.data() + at, n), on_step);
    at += n;
  }
  s.flush(on_step);
  EXPECT_EQ(streamed, offline) << "full/" << sub << ": streaming ids differ from offline";
  std::printf("[full/%s] streaming: %zu ids, %s offline\n", sub.c_str(), streamed.size(),
              streamed == offline ? "equal to" : "DIFFERENT from");
}

// Streams of every golden audio, two each with different delays, chunk sizes and start rounds,
// stepped together through shared encoder and decoder passes (the scheduler's round): each
// stream's ids equal those it gets alone. On the GPU the passes carry drafted rows and, from 33
// rows on, go through the tiled GEMM: the batched case of the full-size check.
void expect_streams_together_equal_alone(VoxtralModel& model, const LogMel& logmel, const Tokenizer& tok,
                                         const std::vector<std::vector<float>>& audio, const std::string& sub) {
  std::vector<StreamPlan> plans;
  for (const std::vector<float>& a : audio) {
    for (const auto& [n_delay, chunk, join] : {std::tuple{6, size_t{1280}, 0}, std::tuple{12, size_t{3000}, 2}}) {
      StreamState::Options o;
      o.protocol.n_delay = n_delay;
      o.ids = {tok.bos_id(), tok.eos_id(), tok.streaming_pad_id(), tok.streaming_word_id()};
      o.draft_rows = model.backend().batch_invariant() ? 4 : 1;
      plans.push_back({&a, o, join, chunk});
    }
  }
  const TogetherRun together = run_together(model, logmel, plans, 0, 0);
  int equal = 0;
  for (size_t s = 0; s < plans.size(); ++s) {
    const std::vector<int32_t> alone = ids_alone(model, logmel, plans[s]);
    EXPECT_EQ(together.ids[s], alone) << "full/" << sub << ": stream " << s << " (delay "
                                      << plans[s].options.protocol.n_delay << ") differs stepped together";
    equal += together.ids[s] == alone;
  }
  EXPECT_GE(together.most_in_a_pass, 2) << "streams are meant to share decoder passes";
  std::printf("[full/%s] %zu streams stepped together (up to %d in a decoder pass, %d rows, %d encoder positions): "
              "%d of them equal to alone\n",
              sub.c_str(), plans.size(), together.most_in_a_pass, together.most_rows, together.most_positions, equal);
}

void check_layout(LayoutPreference layout, const std::string& sub) {
  FullSizeSetup setup = full_size_setup();
  if (!setup.skip.empty()) GTEST_SKIP() << setup.skip;
  const std::filesystem::path& dir = setup.dir;
  const bool cuda = setup.cuda;
  std::unique_ptr<Backend> backend = std::move(setup.backend);
  const auto t0 = std::chrono::steady_clock::now();
  std::unique_ptr<VoxtralModel> model;
  {
    const Checkpoint ckpt = Checkpoint::open(dir / sub, layout);
    model = std::make_unique<VoxtralModel>(ckpt, *backend);
  }
  std::printf("[full/%s] loaded in %.1f s\n", sub.c_str(),
              std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  const Tokenizer tok = Tokenizer::load(dir / sub / "tekken.json");
  const LogMel logmel;
  std::vector<std::vector<float>> audios;
  for (const auto& e : std::filesystem::directory_iterator(dir / "golden")) {
    if (e.path().extension() != ".safetensors") continue;
    const Golden g(e.path());
    const std::vector<float> audio = g.f32("audio");
    const auto t1 = std::chrono::steady_clock::now();
    expect_stages_match(*model, logmel, tok, audio, g, "full/" + backend->name() + "/" + sub + "/" + e.path().stem().string(),
                        cuda ? bf16_tolerances() : Tolerances{});
    std::printf("[full/%s] case ran in %.1f s\n", sub.c_str(),
                std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count());
    expect_streaming_equals_offline(*model, logmel, tok, audio, g, sub);
    audios.push_back(audio);
  }
  expect_streams_together_equal_alone(*model, logmel, tok, audios, sub);
}

// fp8 (e4m3, a scale per cached head) K/V against bf16 K/V on the same GPU, teacher-forced with the
// reference's tokens: the logits' relative error and how often the argmax agrees, over every step
// (README.md states these). The argmax must agree wherever bf16's top-1 margin is clear (>= 3, as
// the bf16 tolerances compare against the reference).
TEST(FullSize, Fp8KvAgainstBf16Kv) {
  const std::filesystem::path dir = full_dir();
  if (dir.empty()) GTEST_SKIP() << "VOXRT_FULL_DIR not set: full-size check skipped (runs on the GPU machine)";
  const char* device = std::getenv("VOXRT_FULL_DEVICE");
  if (!device || std::string(device) != "cuda") GTEST_SKIP() << "fp8 K/V is the GPU's: VOXRT_FULL_DEVICE=cuda runs it";
#ifdef VOXRT_WITH_CUDA
  CudaOptions bf16 = cuda_options_from_environment(), fp8 = bf16;
  bf16.fp8_kv = bf16.fp32_kv = false;
  fp8.fp8_kv = true;
  fp8.fp32_kv = false;
  std::unique_ptr<Backend> b16 = make_cuda_backend(0, bf16), b8 = make_cuda_backend(0, fp8);
  ASSERT_EQ(b8->kv_element_bytes(), 1u);
  std::unique_ptr<VoxtralModel> m16, m8;
  {
    const Checkpoint ckpt = Checkpoint::open(dir / "mistral", LayoutPreference::Mistral);
    m16 = std::make_unique<VoxtralModel>(ckpt, *b16);
    m8 = std::make_unique<VoxtralModel>(ckpt, *b8);
  }
  const Tokenizer tok = Tokenizer::load(dir / "mistral" / "tekken.json");
  const LogMel logmel;
  size_t steps = 0, agree = 0, clear = 0, clear_agree = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir / "golden")) {
    if (e.path().extension() != ".safetensors") continue;
    const Golden g(e.path());
    const std::vector<float> audio = g.f32("audio");
    const std::vector<int32_t> ref_tokens = g.i32("tokens");
    auto run = [&](VoxtralModel& m, OfflineTrace& trace) {
      OfflineOptions o = golden_options(tok, g);
      o.trace = &trace;
      o.trace_logit_steps = static_cast<int>(g.shape("tf_logits")[0]);
      o.teacher_tokens = &ref_tokens;
      return run_offline(m, logmel, audio, o);
    };
    OfflineTrace t16, t8;
    const OfflineResult r16 = run(*m16, t16), r8 = run(*m8, t8);
    ASSERT_EQ(r16.tokens.size(), r8.tokens.size());
    // Margins of bf16's own logits over the traced steps.
    const size_t vocab = t16.logits.size() / std::max(1, t16.logit_steps);
    size_t case_agree = 0;
    for (size_t i = 0; i < r16.tokens.size(); ++i) {
      ++steps;
      case_agree += r16.tokens[i] == r8.tokens[i];
      if (i < static_cast<size_t>(t16.logit_steps)) {
        std::vector<float> row(t16.logits.begin() + i * vocab, t16.logits.begin() + (i + 1) * vocab);
        std::partial_sort(row.begin(), row.begin() + 2, row.end(), std::greater<float>());
        if (row[0] - row[1] >= 3.0f) {
          ++clear;
          clear_agree += r16.tokens[i] == r8.tokens[i];
          EXPECT_EQ(r8.tokens[i], r16.tokens[i]) << e.path().stem() << " step " << i << " (bf16 margin " << row[0] - row[1] << ")";
        }
      }
    }
    agree += case_agree;
    std::printf("[full/fp8-kv/%s] logits relative error against bf16 K/V %.3g (max abs %.3g) over %d steps; "
                "teacher-forced argmax agrees at %zu of %zu steps\n",
                e.path().stem().c_str(), rel_error(t8.logits, t16.logits), max_abs_error(t8.logits, t16.logits),
                t16.logit_steps, case_agree, r16.tokens.size());
    std::printf("[full/fp8-kv/%s] against the reference: logits relative error fp8 %.3g, bf16 %.3g\n",
                e.path().stem().c_str(), rel_error(t8.logits, g.f32("tf_logits")), rel_error(t16.logits, g.f32("tf_logits")));
  }
  std::printf("[full/fp8-kv] teacher-forced argmax agrees with bf16 K/V at %zu of %zu steps (%.2f %%); at %zu of %zu "
              "steps with a clear bf16 margin\n",
              agree, steps, 100.0 * agree / std::max<size_t>(1, steps), clear_agree, clear);
#else
  GTEST_SKIP() << "this build has no CUDA backend";
#endif
}

TEST(FullSize, MistralLayoutMatchesReference) { check_layout(LayoutPreference::Mistral, "mistral"); }
TEST(FullSize, HuggingFaceLayoutMatchesReference) { check_layout(LayoutPreference::HuggingFace, "hf"); }

}  // namespace
}  // namespace voxrt::test
