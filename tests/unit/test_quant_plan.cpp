// Which weights a plan quantizes, and how the LM head follows: tied to the embedding unless the
// decoder's linears are quantized, then apart in their format (as ExecuTorch unties it); the plan
// survives its metadata, and a file written before the head was untied reads as tied.
#include <gtest/gtest.h>

#include <string>

#include "models/voxtral/quant_plan.h"
#include "models/voxtral/tensor_names.h"

namespace voxrt {
namespace {

WeightQuantization options(WeightScheme linear, WeightScheme embedding) {
  WeightQuantization q;
  q.linear = linear;
  q.encoder = linear;
  q.embedding = embedding;
  return q;
}

TEST(QuantPlan, TheLmHeadFollowsTheDecodersFormatWhenTheDecoderIsQuantized) {
  const QuantPlan both = QuantPlan::from_options(options(WeightScheme::W4, WeightScheme::W8));
  EXPECT_TRUE(both.head_untied());
  EXPECT_TRUE(both.head == (WeightFormat{QuantKind::Int4, 32}));
  EXPECT_TRUE(both.format_for(tensor_names::kLmHead, 3072) == (WeightFormat{QuantKind::Int4, 32}));
  EXPECT_TRUE(both.format_for(tensor_names::kTokEmbeddings, 3072) == (WeightFormat{QuantKind::Int8, 128}));
  EXPECT_EQ(both.describe(), "encoder 4w/32, decoder 4w/32, embedding 8w/128, LM head 4w/32");

  const QuantPlan embedding_only = QuantPlan::from_options(options(WeightScheme::None, WeightScheme::W8));
  EXPECT_FALSE(embedding_only.head_untied());
  EXPECT_EQ(embedding_only.describe(), "encoder bf16, decoder bf16, embedding 8w/128, LM head tied");

  // 8w a channel: the head's group is its own row's length.
  const QuantPlan w8 = QuantPlan::from_options(options(WeightScheme::W8, WeightScheme::None));
  EXPECT_TRUE(w8.head_untied());
  EXPECT_TRUE(w8.format_for(tensor_names::kLmHead, 3072) == (WeightFormat{QuantKind::Int8, 3072}));
}

TEST(QuantPlan, TheHeadSurvivesTheMetadataAndOlderFilesReadAsTied) {
  const QuantPlan p = QuantPlan::from_options(options(WeightScheme::W4, WeightScheme::W8));
  const QuantPlan back = QuantPlan::from_metadata(p.to_metadata(), "x.safetensors");
  EXPECT_TRUE(back.head == p.head);
  EXPECT_EQ(back.describe(), p.describe());

  const std::string older =
      R"({"version":1,"method":"search","encoder":{"format":"4w","group_size":32},)"
      R"("decoder":{"format":"4w","group_size":32},"embedding":{"format":"8w","group_size":128}})";
  const QuantPlan tied = QuantPlan::from_metadata(older, "old.safetensors");
  EXPECT_FALSE(tied.head_untied());
  EXPECT_TRUE(tied.head == tied.embedding);
}

}  // namespace
}  // namespace voxrt
