// `voxrt quantize` and the quantization options of the model-running commands, end to end on the
// tiny model: the written directory transcribes as quantizing while loading does, the load says
// which weights it holds, and mistakes are usage errors naming the option.
#include <gtest/gtest.h>

#include "cli_run.h"

namespace voxrt::test {
namespace {

// `voxrt quantize` of the tiny model with `options` into `out`: the report and the written model's
// load say `weights`, and its transcript of jfk (with `device`, "" or " --device cpu") is the one
// quantizing while loading gives. Returns the report.
std::string expect_written_as_at_load(const std::string& out, const std::string& options, const std::string& weights,
                                      const std::string& device = "") {
  const RunResult r = run_voxrt("quantize " + model_dir() + " " + out + options);
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find(weights), std::string::npos) << r.err;
  const RunResult written = run_voxrt("transcribe -f json" + device + " --model " + out + " " + audio("jfk"));
  EXPECT_EQ(written.status, 0) << written.err;
  EXPECT_NE(written.err.find("weights " + weights), std::string::npos) << written.err;
  const RunResult at_load =
      run_voxrt("transcribe -q -f json" + device + " --model " + model_dir() + options + " " + audio("jfk"));
  EXPECT_EQ(at_load.status, 0) << at_load.err;
  EXPECT_EQ(written.out, at_load.out);
  return r.err;
}

TEST(QuantizeCli, AWrittenModelTranscribesAsQuantizingWhileLoading) {
  testutil::TempDir tmp;
  const std::string out = (tmp / "q").string();
  const std::string report =
      expect_written_as_at_load(out, " --qlinear 4w --qlinear-encoder 4w --qembedding 8w --qembedding-group-size 64",
                                "encoder 4w/32, decoder 4w/32, embedding 8w/64, LM head 4w/32");
  // 30 linears and the embedding, and the LM head quantized apart in the decoder's format.
  EXPECT_NE(report.find("quantized 32 of"), std::string::npos) << report;

  // Quantizing the quantized model again is refused, naming what it holds.
  const RunResult r = run_voxrt("transcribe -q --model " + out + " --qlinear 8w " + audio("jfk"));
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("already quantized"), std::string::npos) << r.err;
}

// fp8 (W8A8) runs on the CPU today: written and loaded there as 4w is.
TEST(QuantizeCli, AnFp8ModelTranscribesAsQuantizingWhileLoading) {
  testutil::TempDir tmp;
  expect_written_as_at_load((tmp / "q").string(), " --qlinear fp8 --qlinear-encoder fp8",
                            "encoder fp8, decoder fp8, embedding bf16, LM head fp8", " --device cpu");
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
