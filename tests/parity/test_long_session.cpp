// A long live session on the tiny model: 70 s of speech passes the encoder's 15 s window and the
// decoder's 64-token window many times, and reduced position limits force the caches to be
// re-based again and again. Its token ids must equal the offline run without any limit (itself
// checked against the reference in test_tiny_parity.cpp); the buffered audio must stay flat.
#include <gtest/gtest.h>

#include <random>

#include "audio/audio_file.h"
#include "golden.h"
#include "models/voxtral/checkpoint.h"
#include "tokenizer/tekken.h"
#include "offline_reference.h"
#include "models/voxtral/stream_decoder.h"

namespace voxrt::test {
namespace {

TEST(LongSession, RebasedPositionsGiveTheTokensOfAnUnlimitedRun) {
  auto backend = make_cpu_backend(0);
  const std::filesystem::path dir = test_data() / "tiny" / "mistral";
  const Checkpoint ckpt = Checkpoint::open(dir);
  VoxtralModel model(ckpt, *backend);
  const Tokenizer tok = Tokenizer::load(dir / "tekken.json");
  const LogMel logmel;

  const std::vector<float> one = load_audio_mono(test_data() / "audio" / "speech_long.wav");
  std::vector<float> audio;
  for (int i = 0; i < 4; ++i) audio.insert(audio.end(), one.begin(), one.end());

  Protocol proto;
  proto.n_delay = 6;
  const ProtocolIds ids{tok.bos_id(), tok.eos_id(), tok.streaming_pad_id(), tok.streaming_word_id()};
  OfflineOptions off;
  off.protocol = proto;
  off.ids = ids;
  const std::vector<int32_t> unlimited = run_offline(model, logmel, audio, off).tokens;

  StreamDecoder::Options o;
  o.protocol = proto;
  o.ids = ids;
  o.encoder_position_limit = 2000;  // ring 750 + 128: shifted by 878 frames each time (~3500 frames)
  o.decoder_position_limit = 300;   // ring 64 + 63 (the longest prompt): shifted by 127 steps each time
  StreamDecoder s(model, logmel, o);
  std::vector<int32_t> tokens;
  auto on_step = [&](int32_t t, double) { tokens.push_back(t); };
  std::mt19937 rng(3);
  std::uniform_int_distribution<size_t> chunk(1, 6000);
  size_t max_buffered = 0;
  for (size_t at = 0; at < audio.size();) {
    const size_t n = std::min(audio.size() - at, chunk(rng));
    s.feed(std::span<const float>(audio.data() + at, n), on_step);
    max_buffered = std::max(max_buffered, s.buffered_samples());
    at += n;
  }
  s.flush(on_step);

  EXPECT_GE(s.rebases(), 6);  // 2 encoder + 4 decoder re-bases
  EXPECT_LE(max_buffered, 400u + 6000u);  // one mel window plus the chunk just fed
  ASSERT_EQ(tokens.size(), unlimited.size());
  size_t differing = 0;
  for (size_t i = 0; i < tokens.size(); ++i) differing += tokens[i] != unlimited[i];
  EXPECT_EQ(differing, 0u) << "of " << tokens.size() << " steps";
}

}  // namespace
}  // namespace voxrt::test
