// Full-size (4.4 B parameter) random-weight model against the reference, on the CPU backend.
// Runs only where tools/reference/full_size_check.sh has made the model and golden outputs
// (the GPU machine: 16 cores, 128 GB): VOXRT_FULL_DIR=<dir with mistral/, hf/, golden/>.
// Elsewhere it reports itself skipped. VOXRT_FULL_DEVICE=cuda runs it on the CUDA backend with
// bf16 tolerances instead.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <random>
#include <tuple>

#include "audio/audio_file.h"
#include "model/checkpoint.h"
#include "parity_check.h"
#include "streams_together.h"
#include "voxtral/stream_decoder.h"

namespace voxrt::test {
namespace {

std::filesystem::path full_dir() {
  const char* d = std::getenv("VOXRT_FULL_DIR");
  return d ? std::filesystem::path(d) : std::filesystem::path();
}

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
  const std::filesystem::path dir = full_dir();
  if (dir.empty()) GTEST_SKIP() << "VOXRT_FULL_DIR not set: full-size check skipped (runs on the GPU machine)";
  const char* device = std::getenv("VOXRT_FULL_DEVICE");
  const bool cuda = device && std::string(device) == "cuda";
  std::unique_ptr<Backend> backend;
#ifdef VOXRT_WITH_CUDA
  if (cuda) backend = make_cuda_backend(0);
#endif
  if (cuda && !backend) GTEST_SKIP() << "VOXRT_FULL_DEVICE=cuda but this build has no CUDA backend";
  if (!backend) backend = make_cpu_backend(0);
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

TEST(FullSize, MistralLayoutMatchesReference) { check_layout(LayoutPreference::Mistral, "mistral"); }
TEST(FullSize, HuggingFaceLayoutMatchesReference) { check_layout(LayoutPreference::HuggingFace, "hf"); }

}  // namespace
}  // namespace voxrt::test
