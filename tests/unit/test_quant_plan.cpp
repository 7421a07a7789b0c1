// Which weights a plan quantizes, and how the LM head follows: tied to the embedding unless the
// decoder's linears are quantized, then apart in their format (as ExecuTorch unties it); the plan
// survives its metadata, and a file written before the head was untied reads as tied.
#include <gtest/gtest.h>

#include <string>

#include "models/voxtral/quant_plan.h"
#include "models/voxtral/tensor_names.h"
#include "voxrt/error.h"

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

// fp8 (W8A8) is one scale an output channel, for the linear layers and the head quantized apart,
// never the embedding (a lookup): the options, the plan and its metadata each refuse what it does
// not take, naming the field.
TEST(QuantPlan, Fp8IsOneScaleAnOutputChannelForProductsAndNeverTheEmbedding) {
  const QuantPlan p = QuantPlan::from_options(options(WeightScheme::Fp8, WeightScheme::W8));
  EXPECT_TRUE(p.decoder == (WeightFormat{QuantKind::Fp8, 0}));
  EXPECT_TRUE(p.head_untied());
  EXPECT_TRUE(p.format_for(tensor_names::kLmHead, 3072) == (WeightFormat{QuantKind::Fp8, 3072}));
  EXPECT_TRUE(p.format_for(tensor_names::kDecoderLayers + "3.feed_forward.w2.weight", 9216) ==
              (WeightFormat{QuantKind::Fp8, 9216}));
  EXPECT_TRUE(p.format_for(tensor_names::kEncoderLayers + "0.attention.wq.weight", 1280) ==
              (WeightFormat{QuantKind::Fp8, 1280}));
  EXPECT_EQ(p.describe(), "encoder fp8, decoder fp8, embedding 8w/128, LM head fp8");
  const std::string metadata = p.to_metadata();
  EXPECT_NE(metadata.find(R"("decoder":{"format":"fp8","group_size":0})"), std::string::npos) << metadata;
  const QuantPlan back = QuantPlan::from_metadata(metadata, "x.safetensors");
  EXPECT_TRUE(back.encoder == p.encoder && back.decoder == p.decoder && back.head == p.head);

  auto error_of = [](const auto& f) -> std::string {
    try {
      f();
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  };
  // A group size: refused by the options' rules (naming the option's field) and by the plan (naming the tensor).
  WeightQuantization grouped = options(WeightScheme::Fp8, WeightScheme::None);
  grouped.linear_group_size = 64;
  const std::string option = error_of([&] { validate_quantization(grouped); });
  EXPECT_EQ(option.rfind("qlinear_group_size 64: fp8 takes one scale an output channel", 0), 0u) << option;
  const std::string tensor = error_of([&] {
    QuantPlan::from_options(grouped).format_for(tensor_names::kDecoderLayers + "0.attention.wo.weight", 3072);
  });
  EXPECT_NE(tensor.find("tensor 'layers.0.attention.wo.weight'"), std::string::npos) << tensor;
  EXPECT_NE(tensor.find("not a group of 64"), std::string::npos) << tensor;
  // The embedding: refused by the options' rules, the plan, and a file's metadata.
  const WeightQuantization embedding = options(WeightScheme::None, WeightScheme::Fp8);
  const std::string lookup = error_of([&] { validate_quantization(embedding); });
  EXPECT_EQ(lookup.rfind("qembedding fp8: ", 0), 0u) << lookup;  // the field, as OptionError names it
  EXPECT_NE(lookup.find("lookup, not a product"), std::string::npos) << lookup;
  EXPECT_NE(error_of([&] { QuantPlan::from_options(embedding); }).find("the token embedding is a lookup"), std::string::npos);
  std::string fp8_embedding = metadata;
  const std::string w8 = R"("embedding":{"format":"8w","group_size":128})";
  fp8_embedding.replace(fp8_embedding.find(w8), w8.size(), R"("embedding":{"format":"fp8","group_size":0})");
  const std::string refused = error_of([&] { QuantPlan::from_metadata(fp8_embedding, "x.safetensors"); });
  EXPECT_NE(refused.find("voxrt.quantization.embedding.format"), std::string::npos) << refused;
}

}  // namespace
}  // namespace voxrt
