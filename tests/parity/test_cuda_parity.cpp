// The CUDA backend against the reference on the tiny fixtures (bf16 tolerances, parity_check.h),
// and the CUDA backend's live sessions against its own offline run. GPU machine only: elsewhere
// each test reports itself skipped.
#include <gtest/gtest.h>

#include "audio/audio_file.h"
#include "models/voxtral/checkpoint.h"
#include "gpu_here.h"
#include "parity_check.h"
#include "voxrt/session.h"
#include "voxrt/voxrt.h"

namespace voxrt::test {
namespace {

TEST(CudaParity, TinyModelStagesMatchReference) {
  REQUIRE_GPU();
#ifdef VOXRT_WITH_CUDA
  for (const char* layout : {"mistral", "hf"}) {
    auto backend = make_cuda_backend(0);
    const std::filesystem::path dir = test_data() / "tiny" / layout;
    std::unique_ptr<VoxtralModel> model;
    {
      const Checkpoint ckpt = Checkpoint::open(dir, std::string(layout) == "hf" ? LayoutPreference::HuggingFace
                                                                                : LayoutPreference::Mistral);
      model = std::make_unique<VoxtralModel>(ckpt, *backend);
    }
    const Tokenizer tok = Tokenizer::load(dir / "tekken.json");
    const LogMel logmel;
    for (const auto& e : std::filesystem::directory_iterator(test_data() / "tiny" / "golden")) {
      if (e.path().extension() != ".safetensors") continue;
      const Golden g(e.path());
      const std::string name = e.path().stem().string();
      const std::vector<float> audio =
          load_audio_mono(test_data() / "audio" / (name.substr(0, name.rfind('_')) + ".wav"));
      expect_stages_match(*model, logmel, tok, audio, g, std::string("cuda/") + layout + "/" + name, bf16_tolerances());
    }
  }
#endif
}

TEST(CudaParity, StreamingEqualsOfflineOnTheGpu) {
  REQUIRE_GPU();
  EngineOptions o;
  o.device = Device::Cuda;
  auto engine = Engine::load(test_data() / "tiny" / "mistral", o);
  ASSERT_EQ(engine->info().backend, "cuda");
  for (const char* name : {"speech_short", "jfk", "speech_long"}) {
    const std::vector<float> audio = load_audio_mono(test_data() / "audio" / (std::string(name) + ".wav"));
    const Transcript offline = engine->transcribe(audio);
    auto s = engine->open_session({});
    for (size_t at = 0; at < audio.size(); at += 777)
      s->feed(std::span<const float>(audio.data() + at, std::min<size_t>(777, audio.size() - at)));
    s->flush();
    EXPECT_EQ(s->transcript().tokens, offline.tokens) << name;
  }
}

}  // namespace
}  // namespace voxrt::test
