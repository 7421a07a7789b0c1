// `voxrt quantize` and the quantization options of the model-running commands, end to end on the
// tiny model: the written directory transcribes as quantizing while loading does, the load says
// which weights it holds, and mistakes are usage errors naming the option.
#include <gtest/gtest.h>

#include "cli_run.h"

namespace voxrt::test {
namespace {

TEST(QuantizeCli, AWrittenModelTranscribesAsQuantizingWhileLoading) {
  testutil::TempDir tmp;
  const std::string out = (tmp / "q").string();
  const std::string options = " --qlinear 4w --qlinear-encoder 4w --qembedding 8w --qembedding-group-size 64";
  RunResult r = run_voxrt("quantize " + model_dir() + " " + out + options);
  ASSERT_EQ(r.status, 0) << r.err;
  // 30 linears and the embedding, and the LM head quantized apart in the decoder's format.
  EXPECT_NE(r.err.find("quantized 32 of"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("encoder 4w/32, decoder 4w/32, embedding 8w/64, LM head 4w/32"), std::string::npos) << r.err;

  const RunResult written = run_voxrt("transcribe -f json --model " + out + " " + audio("jfk"));
  ASSERT_EQ(written.status, 0) << written.err;
  EXPECT_NE(written.err.find("weights encoder 4w/32, decoder 4w/32, embedding 8w/64, LM head 4w/32"), std::string::npos)
      << written.err;
  const RunResult at_load = run_voxrt("transcribe -q -f json --model " + model_dir() + options + " " + audio("jfk"));
  ASSERT_EQ(at_load.status, 0) << at_load.err;
  EXPECT_EQ(written.out, at_load.out);

  // Quantizing the quantized model again is refused, naming what it holds.
  r = run_voxrt("transcribe -q --model " + out + " --qlinear 8w " + audio("jfk"));
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("already quantized"), std::string::npos) << r.err;
}

// fp8 (W8A8, on the CPU): written by `voxrt quantize` as quantized while loading, to the same transcript.
TEST(QuantizeCli, AnFp8ModelTranscribesAsQuantizingWhileLoading) {
  testutil::TempDir tmp;
  const std::string out = (tmp / "q").string();
  const std::string options = " --qlinear fp8 --qlinear-encoder fp8";
  RunResult r = run_voxrt("quantize " + model_dir() + " " + out + options);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("encoder fp8, decoder fp8, embedding bf16, LM head fp8"), std::string::npos) << r.err;
  const RunResult written = run_voxrt("transcribe -f json --device cpu --model " + out + " " + audio("jfk"));
  ASSERT_EQ(written.status, 0) << written.err;
  EXPECT_NE(written.err.find("weights encoder fp8, decoder fp8, embedding bf16, LM head fp8"), std::string::npos)
      << written.err;
  const RunResult at_load =
      run_voxrt("transcribe -q -f json --device cpu --model " + model_dir() + options + " " + audio("jfk"));
  ASSERT_EQ(at_load.status, 0) << at_load.err;
  EXPECT_EQ(written.out, at_load.out);
}

TEST(QuantizeCli, MistakesAreUsageErrorsNamingTheOption) {
  testutil::TempDir tmp;
  RunResult r = run_voxrt("quantize " + model_dir() + " " + (tmp / "a").string() + " --qlinear 3w");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("--qlinear 3w"), std::string::npos) << r.err;
  r = run_voxrt("quantize " + model_dir() + " " + (tmp / "b").string() + " --qlinear 4w --qlinear-group-size 48");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("--qlinear-group-size 48"), std::string::npos) << r.err;
  // fp8 takes no group size, and is not the embedding's format (a lookup, not a product).
  r = run_voxrt("quantize " + model_dir() + " " + (tmp / "b8").string() + " --qlinear fp8 --qlinear-group-size 64");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("--qlinear-group-size 64: fp8 takes one scale an output channel"), std::string::npos) << r.err;
  r = run_voxrt("quantize " + model_dir() + " " + (tmp / "e8").string() + " --qlinear fp8 --qembedding fp8");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("--qembedding fp8: "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("lookup, not a product"), std::string::npos) << r.err;
  r = run_voxrt("transcribe --device cpu --model " + model_dir() + " --qembedding fp8 " + audio("jfk"));
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("--qembedding fp8: "), std::string::npos) << r.err;
  r = run_voxrt("quantize " + model_dir() + " " + (tmp / "c").string());
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("nothing to quantize"), std::string::npos) << r.err;
  // The default embedding group (128) does not divide the tiny model's width (64): named.
  r = run_voxrt("quantize " + model_dir() + " " + (tmp / "d").string() + " --qembedding 8w");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("does not divide the input dimension 64"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace voxrt::test
