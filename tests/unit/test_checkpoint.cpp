// Checkpoint directories: configuration parsing, layout detection, Hugging Face name mapping, the
// RoPE row permutation of Mistral files (docs/model.md §6), and broken directories.
#include <gtest/gtest.h>

#include <bit>
#include <optional>

#include <set>

#include "checkpoint_test_util.h"
#include "common/error.h"
#include "models/voxtral/checkpoint.h"
#include "test_paths.h"

namespace voxrt {
namespace {

using testutil::expect_error;
using testutil::json;
using testutil::TempDir;
using testutil::write_text;

const std::string kEnc = "mm_streams_embeddings.embedding_module.whisper_encoder.";
const std::string kTok = "mm_streams_embeddings.embedding_module.tok_embeddings.weight";

// The official params.json of Voxtral-Mini-4B-Realtime-2602.
const char* kOfficialParams = R"({"dim":3072,"n_layers":26,"head_dim":128,"hidden_dim":9216,"n_heads":32,
"n_kv_heads":8,"use_biases":false,"causal":true,"rope_theta":1000000.0,"norm_eps":1e-05,"vocab_size":131072,
"model_parallel":1,"tied_embeddings":true,"sliding_window":8192,"model_max_length":131072,"multimodal":{
"whisper_model_args":{"encoder_args":{"audio_encoding_args":{"sampling_rate":16000,"frame_rate":12.5,
"num_mel_bins":128,"hop_length":160,"window_size":400,"chunk_length_s":null,"global_log_mel_max":1.5,
"transcription_format":"streaming"},"dim":1280,"n_layers":32,"head_dim":64,"hidden_dim":5120,"n_heads":32,
"vocab_size":131072,"n_kv_heads":32,"use_biases":true,"use_cache":false,"rope_theta":1000000.0,"causal":true,
"norm_eps":1e-05,"pos_embed":"rope","max_source_positions":null,"ffn_type":"swiglu","norm_type":"rms_norm",
"sliding_window":750},"downsample_args":{"downsample_factor":4}}},"ada_rms_norm_t_cond":true,
"ada_rms_norm_t_cond_dim":32})";

void expect_default_config(const ModelConfig& c) {
  const ModelConfig d;
  EXPECT_EQ(c.decoder.dim, d.decoder.dim);
  EXPECT_EQ(c.decoder.n_layers, d.decoder.n_layers);
  EXPECT_EQ(c.decoder.n_heads, d.decoder.n_heads);
  EXPECT_EQ(c.decoder.n_kv_heads, d.decoder.n_kv_heads);
  EXPECT_EQ(c.decoder.head_dim, d.decoder.head_dim);
  EXPECT_EQ(c.decoder.hidden_dim, d.decoder.hidden_dim);
  EXPECT_EQ(c.decoder.vocab_size, d.decoder.vocab_size);
  EXPECT_EQ(c.decoder.sliding_window, d.decoder.sliding_window);
  EXPECT_EQ(c.decoder.max_position, d.decoder.max_position);
  EXPECT_EQ(c.decoder.t_cond_dim, d.decoder.t_cond_dim);
  EXPECT_DOUBLE_EQ(c.decoder.rope_theta, d.decoder.rope_theta);
  EXPECT_DOUBLE_EQ(c.decoder.norm_eps, d.decoder.norm_eps);
  EXPECT_EQ(c.encoder.dim, d.encoder.dim);
  EXPECT_EQ(c.encoder.n_layers, d.encoder.n_layers);
  EXPECT_EQ(c.encoder.n_heads, d.encoder.n_heads);
  EXPECT_EQ(c.encoder.n_kv_heads, d.encoder.n_kv_heads);
  EXPECT_EQ(c.encoder.head_dim, d.encoder.head_dim);
  EXPECT_EQ(c.encoder.hidden_dim, d.encoder.hidden_dim);
  EXPECT_EQ(c.encoder.sliding_window, d.encoder.sliding_window);
  EXPECT_EQ(c.encoder.num_mel_bins, d.encoder.num_mel_bins);
  EXPECT_DOUBLE_EQ(c.encoder.rope_theta, d.encoder.rope_theta);
  EXPECT_DOUBLE_EQ(c.encoder.norm_eps, d.encoder.norm_eps);
  EXPECT_EQ(c.audio.sampling_rate, d.audio.sampling_rate);
  EXPECT_EQ(c.audio.hop_length, d.audio.hop_length);
  EXPECT_EQ(c.audio.window_size, d.audio.window_size);
  EXPECT_DOUBLE_EQ(c.audio.global_log_mel_max, d.audio.global_log_mel_max);
  EXPECT_DOUBLE_EQ(c.audio.frame_rate, d.audio.frame_rate);
  EXPECT_EQ(c.downsample_factor, d.downsample_factor);
}

// ---- Configuration files ----

TEST(CheckpointConfigTest, OfficialParamsJson) {
  TempDir dir;
  write_text(dir / "params.json", kOfficialParams);
  expect_default_config(parse_params_json(dir / "params.json"));
}

TEST(CheckpointConfigTest, ParamsJsonOptionalFields) {
  TempDir dir;
  json p = json::parse(kOfficialParams);
  p.erase("tied_embeddings");
  p.erase("model_max_length");
  p["max_seq_len"] = 4096;
  p["sliding_window"] = "2048";  // transformers' converter notes it may be a string
  p.erase("ada_rms_norm_t_cond_dim");
  auto& enc = p["multimodal"]["whisper_model_args"]["encoder_args"];
  enc.erase("n_kv_heads");
  enc["n_heads"] = 16;
  enc["head_dim"] = 80;
  enc.erase("sliding_window");
  p["multimodal"]["whisper_model_args"].erase("downsample_args");
  write_text(dir / "params.json", p.dump());
  const ModelConfig c = parse_params_json(dir / "params.json");
  EXPECT_EQ(c.decoder.max_position, 4096);
  EXPECT_EQ(c.decoder.sliding_window, 2048);
  EXPECT_TRUE(c.decoder.tied_embeddings);
  EXPECT_EQ(c.decoder.t_cond_dim, 32);
  EXPECT_EQ(c.encoder.n_kv_heads, 16);
  EXPECT_EQ(c.encoder.head_dim, 80);
  EXPECT_EQ(c.encoder.sliding_window, 750);
  EXPECT_EQ(c.downsample_factor, 4);
}

TEST(CheckpointConfigTest, ConfigJsonEmptyGivesTransformersDefaults) {
  TempDir dir;
  write_text(dir / "config.json", "{}");
  expect_default_config(parse_config_json(dir / "config.json"));
}

TEST(CheckpointConfigTest, ConfigJsonRoundTripsTinyConfig) {
  TempDir dir;
  const ModelConfig tiny = testutil::tiny_config();
  json j = testutil::config_json_for(tiny);
  j["text_config"]["rope_parameters"]["rope_theta"] = 5e5;
  j["audio_config"].erase("rope_parameters");
  j["audio_config"]["rope_theta"] = 2e4;
  j["audio_config"].erase("num_hidden_layers");
  j["audio_config"]["encoder_layers"] = 3;
  write_text(dir / "config.json", j.dump());
  const ModelConfig c = parse_config_json(dir / "config.json");
  EXPECT_EQ(c.decoder.dim, 16);
  EXPECT_EQ(c.decoder.n_heads, 4);
  EXPECT_EQ(c.decoder.n_kv_heads, 2);
  EXPECT_EQ(c.decoder.vocab_size, 1100);
  EXPECT_DOUBLE_EQ(c.decoder.rope_theta, 5e5);
  EXPECT_EQ(c.encoder.dim, 16);
  EXPECT_EQ(c.encoder.n_layers, 3);
  EXPECT_EQ(c.encoder.n_kv_heads, 2);
  EXPECT_EQ(c.encoder.num_mel_bins, 12);
  EXPECT_DOUBLE_EQ(c.encoder.rope_theta, 2e4);
}

TEST(CheckpointConfigTest, ExpectedTensorsOfTheRealModel) {
  const auto expected = expected_tensors(ModelConfig{});
  EXPECT_EQ(expected.size(), 711u);  // docs/model.md §1
  std::map<std::string, std::vector<int64_t>> by_name(expected.begin(), expected.end());
  EXPECT_EQ(by_name.size(), expected.size());
  EXPECT_EQ(by_name.at(kTok), (std::vector<int64_t>{131072, 3072}));
  EXPECT_EQ(by_name.at(kEnc + "conv_layers.0.conv.weight"), (std::vector<int64_t>{1280, 128, 3}));
  EXPECT_EQ(by_name.at(kEnc + "transformer.layers.31.attention.wq.weight"), (std::vector<int64_t>{2048, 1280}));
  EXPECT_EQ(by_name.at(kEnc + "transformer.layers.0.attention.wo.weight"), (std::vector<int64_t>{1280, 2048}));
  EXPECT_EQ(by_name.at("mm_streams_embeddings.embedding_module.audio_language_projection.0.weight"),
            (std::vector<int64_t>{3072, 5120}));
  EXPECT_EQ(by_name.at("layers.25.attention.wk.weight"), (std::vector<int64_t>{1024, 3072}));
  EXPECT_EQ(by_name.at("layers.0.ada_rms_norm_t_cond.0.weight"), (std::vector<int64_t>{32, 3072}));
  EXPECT_EQ(by_name.at("layers.0.feed_forward.w2.weight"), (std::vector<int64_t>{3072, 9216}));
  EXPECT_EQ(by_name.count(kEnc + "transformer.layers.0.attention.wk.bias"), 0u);
}

TEST(CheckpointConfigTest, HuggingFaceNamesMapToCanonical) {
  for (const auto& [name, shape] : expected_tensors(testutil::tiny_config()))
    for (bool model_prefix : {false, true})
      EXPECT_EQ(canonical_name_from_hf(testutil::hf_name(name, model_prefix)), name) << name;
  EXPECT_EQ(canonical_name_from_hf("language_model.lm_head.weight"), "");
  EXPECT_EQ(canonical_name_from_hf("lm_head.weight"), "");
  EXPECT_EQ(canonical_name_from_hf("model.audio_tower.layers.x.self_attn.q_proj.weight"), "");
  EXPECT_EQ(canonical_name_from_hf("model.language_model.layers.0.rotary_emb.inv_freq"), "");
  EXPECT_EQ(canonical_name_from_hf("something.else"), "");
  EXPECT_EQ(canonical_name_from_hf("language_model.model.layers.7.self_attn.k_proj.weight"),
            "layers.7.attention.wk.weight");
  EXPECT_EQ(canonical_name_from_hf("language_model.model.model.layers.1.ada_rms_norm.linear2.weight"),
            "layers.1.ada_rms_norm_t_cond.2.weight");  // transformers 5.17 save_pretrained
  EXPECT_EQ(canonical_name_from_hf("language_model.model.model.embed_tokens.weight"), kTok);
  EXPECT_EQ(canonical_name_from_hf("audio_tower.layers.3.mlp.down_proj.bias"),
            kEnc + "transformer.layers.3.feed_forward.w2.bias");
}

// ---- Whole directories ----

class CheckpointTest : public ::testing::Test {
 protected:
  const ModelConfig config_ = testutil::tiny_config();
  const testutil::Weights weights_ = testutil::random_weights(config_, 7);
  TempDir mistral_, hf_;
};

TEST_F(CheckpointTest, BothLayoutsLoadIdentically) {
  testutil::write_mistral_dir(mistral_.path(), config_, weights_, DType::BF16);
  testutil::write_hf_dir(hf_.path(), config_, weights_, DType::F32);
  const Checkpoint m = Checkpoint::open(mistral_.path());
  const Checkpoint h = Checkpoint::open(hf_.path());
  EXPECT_EQ(m.layout(), CheckpointLayout::Mistral);
  EXPECT_EQ(h.layout(), CheckpointLayout::HuggingFace);
  EXPECT_EQ(m.config().decoder.n_kv_heads, 2);
  EXPECT_EQ(h.config().decoder.vocab_size, 1100);
  for (const auto& [name, shape] : expected_tensors(config_)) {
    ASSERT_TRUE(m.has(name) && h.has(name)) << name;
    EXPECT_EQ(m.tensor(name).shape, shape);
    EXPECT_EQ(m.load_f32(name), weights_.at(name).second) << name;
    EXPECT_EQ(h.load_f32(name), weights_.at(name).second) << name;
  }
  EXPECT_EQ(h.file_of(kTok).filename(), "model.safetensors");
  EXPECT_EQ(m.file_of(kTok).filename(), "consolidated.safetensors");
}

TEST_F(CheckpointTest, MistralRowsArePermutedToRotateHalf) {
  testutil::write_mistral_dir(mistral_.path(), config_, weights_, DType::F32);
  const Checkpoint ck = Checkpoint::open(mistral_.path());
  auto raw_row = [&](const std::string& name, size_t row, size_t cols) {
    const float* data = reinterpret_cast<const float*>(ck.tensor(name).data);
    return std::vector<float>(data + row * cols, data + (row + 1) * cols);
  };
  // Decoder wq, hd 8: file row h*8 + 2i + j is internal row h*8 + j*4 + i. h=1, i=1, j=1: 11 -> 13.
  const std::string wq = "layers.0.attention.wq.weight";
  const std::vector<float> q = ck.load_f32(wq);
  const size_t cols = 16;
  EXPECT_EQ(std::vector<float>(q.begin() + 13 * cols, q.begin() + 14 * cols), raw_row(wq, 11, cols));
  // Row 8 (h=1, i=0, j=0) stays in place; file row 9 (i=0, j=1) moves to 12.
  EXPECT_EQ(std::vector<float>(q.begin() + 8 * cols, q.begin() + 9 * cols), raw_row(wq, 8, cols));
  EXPECT_EQ(std::vector<float>(q.begin() + 12 * cols, q.begin() + 13 * cols), raw_row(wq, 9, cols));
  // Encoder q bias (one column): file element 2 (h=0, i=1, j=0) -> internal 1.
  const std::string bias = kEnc + "transformer.layers.0.attention.wq.bias";
  EXPECT_EQ(ck.load_f32(bias)[1], raw_row(bias, 2, 1)[0]);
  // v is not rotated: unchanged.
  const std::string wv = "layers.0.attention.wv.weight";
  EXPECT_EQ(ck.load_f32(wv), raw_row(wv, 0, ck.tensor(wv).nbytes / 4));
}

TEST_F(CheckpointTest, ShardedHuggingFaceWithIndex) {
  testutil::write_hf_dir(hf_.path(), config_, weights_, DType::BF16, 3, /*model_prefix=*/true);
  const Checkpoint ck = Checkpoint::open(hf_.path());
  EXPECT_EQ(ck.layout(), CheckpointLayout::HuggingFace);
  std::set<std::string> files;
  for (const auto& [name, shape] : expected_tensors(config_)) {
    EXPECT_EQ(ck.load_f32(name), weights_.at(name).second) << name;
    files.insert(ck.file_of(name).filename().string());
  }
  EXPECT_EQ(files, (std::set<std::string>{"model-00001-of-00003.safetensors", "model-00002-of-00003.safetensors",
                                          "model-00003-of-00003.safetensors"}));
}

TEST_F(CheckpointTest, MistralShortEmbeddingNameIsAccepted) {
  testutil::Weights w = weights_;
  auto node = w.extract(kTok);
  node.key() = "tok_embeddings.weight";
  w.insert(std::move(node));
  // rope_heads() ignores the short name, so the writer stores it as is.
  testutil::write_mistral_dir(mistral_.path(), config_, w);
  const Checkpoint ck = Checkpoint::open(mistral_.path());
  EXPECT_EQ(ck.tensor(kTok).name, "tok_embeddings.weight");
  EXPECT_EQ(ck.load_f32(kTok), weights_.at(kTok).second);
}

TEST_F(CheckpointTest, BothLayoutsInOneDirectory) {
  testutil::write_mistral_dir(mistral_.path(), config_, weights_);
  testutil::write_hf_dir(mistral_.path(), config_, weights_);
  EXPECT_EQ(Checkpoint::open(mistral_.path()).layout(), CheckpointLayout::Mistral);
  EXPECT_EQ(Checkpoint::open(mistral_.path(), LayoutPreference::Mistral).layout(), CheckpointLayout::Mistral);
  const Checkpoint h = Checkpoint::open(mistral_.path(), LayoutPreference::HuggingFace);
  EXPECT_EQ(h.layout(), CheckpointLayout::HuggingFace);
  EXPECT_EQ(h.file_of(kTok).filename(), "model.safetensors");
}

TEST_F(CheckpointTest, UnknownTensorIsAnErrorOnlyWhenAsked) {
  testutil::write_hf_dir(hf_.path(), config_, weights_);
  const Checkpoint ck = Checkpoint::open(hf_.path());
  EXPECT_FALSE(ck.has("output.weight"));
  expect_error([&] { ck.tensor("output.weight"); }, {"output.weight"});
  expect_error([&] { ck.load_f32("layers.9.attention.wq.weight"); }, {"layers.9.attention.wq.weight"});
}

// The tiny fixtures written by tools/reference: a real transformers save_pretrained (sharded, F32)
// and its Mistral conversion (BF16 values, interleaved RoPE rows), opened as m and h.
class CheckpointFixtureTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::filesystem::path tiny = test::test_data() / "tiny";
    if (!std::filesystem::exists(tiny / "hf") || !std::filesystem::exists(tiny / "mistral"))
      GTEST_SKIP() << "no reference fixtures under " << tiny;
    mistral_.emplace(Checkpoint::open(tiny / "mistral"));
    hf_.emplace(Checkpoint::open(tiny / "hf"));
  }
  std::optional<Checkpoint> mistral_, hf_;
};

TEST_F(CheckpointFixtureTest, ReferenceTinyModelLoadsIdenticallyInBothLayouts) {
  const Checkpoint &m = *mistral_, &h = *hf_;
  EXPECT_EQ(m.layout(), CheckpointLayout::Mistral);
  EXPECT_EQ(h.layout(), CheckpointLayout::HuggingFace);
  for (const auto& [name, shape] : expected_tensors(m.config())) {
    // The HF side is F32 holding bf16-rounded values, so the two agree exactly.
    EXPECT_EQ(m.load_f32(name), h.load_f32(name)) << name;
  }
}

// load_bf16 gives a BF16 checkpoint's own bits in the same internal layout as load_f32 (RoPE rows
// permuted alike), and refuses tensors stored otherwise.
TEST_F(CheckpointFixtureTest, Bf16BitsEqualTheF32LoadInBothLayouts) {
  const Checkpoint &m = *mistral_, &h = *hf_;
  int checked = 0;
  for (const auto& [name, shape] : expected_tensors(m.config())) {
    ASSERT_TRUE(m.stored_as_bf16(name)) << name;
    const std::vector<uint16_t> bits = m.load_bf16(name);
    const std::vector<float> f = h.load_f32(name);  // HF side: F32 holding the same values, rotate-half
    ASSERT_EQ(bits.size(), f.size()) << name;
    for (size_t i = 0; i < bits.size(); ++i)
      ASSERT_EQ(std::bit_cast<float>(static_cast<uint32_t>(bits[i]) << 16), f[i]) << name << " [" << i << "]";
    EXPECT_FALSE(h.stored_as_bf16(name));
    ++checked;
  }
  EXPECT_GT(checked, 10);
  const std::string any = expected_tensors(h.config()).front().first;
  expect_error([&] { h.load_bf16(any); }, {"safetensors", "has dtype F32, not BF16"});
}

// ---- Broken directories: each error names the file and the field or tensor. ----

class CheckpointErrorTest : public CheckpointTest {
 protected:
  // A Mistral directory whose params.json is replaced by `params`.
  void write_mistral_with_params(const json& params) {
    testutil::write_mistral_dir(mistral_.path(), config_, weights_);
    write_text(mistral_ / "params.json", params.dump());
  }
  json tiny_params() const { return testutil::params_json_for(config_); }
  void expect_open_error(const TempDir& dir, std::initializer_list<std::string> parts) {
    expect_error([&] { Checkpoint::open(dir.path()); }, parts);
  }
  // A Mistral directory where one tensor is replaced.
  void write_mistral_with(const std::string& name, DType dtype, std::vector<int64_t> shape) {
    testutil::Weights w = weights_;
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    w[name] = {shape, std::vector<float>(size_t(n), 0.5f)};
    if (dtype == DType::I32) {  // the writer only encodes floats: write the file by hand
      std::vector<TensorToWrite> tensors;
      for (const auto& [k, sv] : w)
        tensors.push_back({k, k == name ? DType::I32 : DType::F32, sv.first, testutil::encode(sv.second, DType::F32)});
      write_text(mistral_ / "params.json", tiny_params().dump());
      write_safetensors(mistral_ / "consolidated.safetensors", tensors);
      return;
    }
    testutil::write_mistral_dir(mistral_.path(), config_, w, dtype);
  }
};

TEST_F(CheckpointErrorTest, EmptyDirectory) {
  expect_open_error(mistral_, {mistral_.path().string(), "not a Voxtral model directory", "params.json",
                               "consolidated.safetensors", "config.json"});
}

TEST_F(CheckpointErrorTest, NotADirectory) {
  expect_error([&] { Checkpoint::open(mistral_ / "nowhere"); }, {"nowhere", "not a directory"});
}

TEST_F(CheckpointErrorTest, ForcedMistralWithoutParams) {
  testutil::write_hf_dir(hf_.path(), config_, weights_);
  expect_error([&] { Checkpoint::open(hf_.path(), LayoutPreference::Mistral); }, {"params.json not found"});
}

TEST_F(CheckpointErrorTest, ForcedHuggingFaceWithoutWeights) {
  testutil::write_mistral_dir(mistral_.path(), config_, weights_);
  write_text(mistral_ / "config.json", "{}");
  expect_error([&] { Checkpoint::open(mistral_.path(), LayoutPreference::HuggingFace); },
               {"model.safetensors", "not found", "Hugging Face"});
}

TEST_F(CheckpointErrorTest, WrongShape) {
  write_mistral_with("layers.0.attention.wq.weight", DType::BF16, {16, 32});
  expect_open_error(mistral_, {"consolidated.safetensors", "tensor 'layers.0.attention.wq.weight' has shape [16, 32], "
                                                           "expected [32, 16] (from params.json)"});
}

TEST_F(CheckpointErrorTest, WrongShapeInHuggingFaceNamesBothNames) {
  testutil::Weights w = weights_;
  w["norm.weight"] = {{17}, std::vector<float>(17, 1.0f)};
  testutil::write_hf_dir(hf_.path(), config_, w);
  expect_open_error(hf_, {"model.safetensors", "language_model.model.norm.weight", "'norm.weight'", "[17]",
                          "expected [16] (from config.json)"});
}

TEST_F(CheckpointErrorTest, WrongDtype) {
  write_mistral_with("norm.weight", DType::I32, {16});
  expect_open_error(mistral_, {"consolidated.safetensors", "tensor 'norm.weight'", "dtype I32"});
}

TEST_F(CheckpointErrorTest, MissingTensor) {
  testutil::Weights w = weights_;
  w.erase(kEnc + "transformer.layers.0.attention.wv.bias");
  testutil::write_mistral_dir(mistral_.path(), config_, w);
  expect_open_error(mistral_, {"consolidated.safetensors", "missing tensor '" + kEnc +
                                                               "transformer.layers.0.attention.wv.bias'"});
}

TEST_F(CheckpointErrorTest, CorruptWeightsFile) {
  testutil::write_mistral_dir(mistral_.path(), config_, weights_);
  auto bytes = testutil::read_bytes(mistral_ / "consolidated.safetensors");
  bytes.erase(bytes.end() - 100, bytes.end());
  testutil::write_bytes(mistral_ / "consolidated.safetensors", bytes);
  expect_open_error(mistral_, {"consolidated.safetensors", "data_offsets"});
}

TEST_F(CheckpointErrorTest, DuplicateCanonicalName) {
  testutil::Weights w = weights_;
  w["tok_embeddings.weight"] = w.at(kTok);
  testutil::write_mistral_dir(mistral_.path(), config_, w);
  expect_open_error(mistral_, {"consolidated.safetensors", "tok_embeddings.weight", kTok});
}

TEST_F(CheckpointErrorTest, ParamsMissingField) {
  json p = tiny_params();
  p.erase("n_kv_heads");
  write_mistral_with_params(p);
  expect_open_error(mistral_, {"params.json: missing field n_kv_heads"});
}

TEST_F(CheckpointErrorTest, ParamsMissingEncoderField) {
  json p = tiny_params();
  p["multimodal"]["whisper_model_args"]["encoder_args"].erase("dim");
  write_mistral_with_params(p);
  expect_open_error(mistral_, {"params.json: missing field multimodal.whisper_model_args.encoder_args.dim"});
}

TEST_F(CheckpointErrorTest, ParamsWrongType) {
  json p = tiny_params();
  p["dim"] = "3072";
  write_mistral_with_params(p);
  expect_open_error(mistral_, {"params.json: field dim: expected an integer, got string"});
}

TEST_F(CheckpointErrorTest, ParamsIntermediateNotObject) {
  json p = tiny_params();
  p["multimodal"]["whisper_model_args"] = 5;
  write_mistral_with_params(p);
  expect_open_error(mistral_, {"params.json: field multimodal.whisper_model_args: expected an object, got number"});
}

TEST_F(CheckpointErrorTest, ParamsNotJson) {
  testutil::write_mistral_dir(mistral_.path(), config_, weights_);
  write_text(mistral_ / "params.json", "{\"dim\": 16,");
  expect_open_error(mistral_, {"params.json", "not valid JSON"});
}

TEST_F(CheckpointErrorTest, ParamsNonPositiveSize) {
  json p = tiny_params();
  p["n_layers"] = 0;
  write_mistral_with_params(p);
  expect_open_error(mistral_, {"params.json: field n_layers", "positive"});
}

TEST_F(CheckpointErrorTest, ParamsOutOfRangeSize) {
  json p = tiny_params();
  p["vocab_size"] = 1e3;  // a float, not an integer
  write_mistral_with_params(p);
  expect_open_error(mistral_, {"params.json: field vocab_size: expected an integer"});
  p["vocab_size"] = 99999999999;
  write_mistral_with_params(p);
  expect_open_error(mistral_, {"params.json: field vocab_size", "99999999999"});
}

TEST_F(CheckpointErrorTest, ParamsHeadsNotDivisible) {
  json p = tiny_params();
  p["n_kv_heads"] = 3;
  write_mistral_with_params(p);
  expect_open_error(mistral_, {"params.json", "decoder", "4 attention heads", "3 key/value heads"});
}

TEST_F(CheckpointErrorTest, ParamsOddHeadDim) {
  json p = tiny_params();
  p["multimodal"]["whisper_model_args"]["encoder_args"]["head_dim"] = 7;
  write_mistral_with_params(p);
  expect_open_error(mistral_, {"params.json", "encoder", "head_dim 7 is odd"});
}

TEST_F(CheckpointErrorTest, ParamsBadSlidingWindowString) {
  json p = tiny_params();
  p["sliding_window"] = "wide";
  write_mistral_with_params(p);
  expect_open_error(mistral_, {"params.json: field sliding_window", "\"wide\""});
}

TEST_F(CheckpointErrorTest, ParamsUntiedEmbeddingsRejected) {
  json p = tiny_params();
  p["tied_embeddings"] = false;
  write_mistral_with_params(p);
  expect_open_error(mistral_, {"params.json: field tied_embeddings", "not supported"});
}

TEST_F(CheckpointErrorTest, ParamsFrameRateInconsistent) {
  json p = tiny_params();
  p["multimodal"]["whisper_model_args"]["encoder_args"]["audio_encoding_args"]["frame_rate"] = 25.0;
  write_mistral_with_params(p);
  expect_open_error(mistral_, {"params.json", "frame_rate"});
}

// Found by review, and reported by the fuzz target (tests/fuzz/fuzz_model_config.cpp: out of memory)
// on tests/fuzz/corpus/config/finding-params-2g-layers.json: the layer counts of a configuration
// sized the list of tensors to check before any was looked up, so 2^31 - 1 layers asked for some 50
// billion names. The check walks the tensors and stops at the first one missing.
TEST_F(CheckpointErrorTest, LayerCountsBeyondTheFilesStopAtTheFirstMissingTensor) {
  json p = tiny_params();
  p["n_layers"] = 2147483647;
  write_mistral_with_params(p);
  expect_open_error(mistral_, {"consolidated.safetensors", "missing tensor 'layers." +
                                                               std::to_string(config_.decoder.n_layers) + "."});
  p = tiny_params();
  p["multimodal"]["whisper_model_args"]["encoder_args"]["n_layers"] = 2147483647;
  write_mistral_with_params(p);
  expect_open_error(mistral_, {"missing tensor '" + kEnc + "transformer.layers." +
                               std::to_string(config_.encoder.n_layers) + "."});

  testutil::write_hf_dir(hf_.path(), config_, weights_);
  json c = testutil::config_json_for(config_);
  c["text_config"]["num_hidden_layers"] = 300000000;
  write_text(hf_ / "config.json", c.dump());
  expect_open_error(hf_, {"model.safetensors", "missing tensor 'layers." + std::to_string(config_.decoder.n_layers) + "."});
}

// Found by review, and reported by the fuzz target (UBSan) on
// tests/fuzz/corpus/config/finding-config-downsample-overflow.json: sizes that each fit an int
// multiplied past it. config.json's downsample_factor of 2^30 overflowed in 2 * downsample_factor
// (undefined behaviour), and so did the samples of one decoder step, hop_length * 2 *
// downsample_factor, in either file.
TEST_F(CheckpointErrorTest, DecoderStepOverAnIntIsAnError) {
  testutil::write_hf_dir(hf_.path(), config_, weights_);
  for (int64_t factor : {int64_t{1} << 30, int64_t{1500000000}, int64_t{6710887}}) {
    json c = testutil::config_json_for(config_);
    c["downsample_factor"] = factor;
    c.erase("audio_length_per_tok");
    write_text(hf_ / "config.json", c.dump());
    expect_open_error(hf_, {"config.json: field downsample_factor", "hop_length 160 * 2 * downsample_factor " +
                                                                         std::to_string(factor), "over 2^31 - 1"});
  }
  json p = tiny_params();
  p["multimodal"]["whisper_model_args"]["encoder_args"]["audio_encoding_args"]["hop_length"] = 65536;
  p["multimodal"]["whisper_model_args"]["downsample_args"]["downsample_factor"] = 65536;
  write_mistral_with_params(p);
  expect_open_error(mistral_, {"params.json: field multimodal.whisper_model_args.downsample_args.downsample_factor",
                               "hop_length 65536 * 2 * downsample_factor 65536 = 8589934592 samples"});
}

TEST_F(CheckpointErrorTest, ConfigJsonTextConfigTypeError) {
  testutil::write_hf_dir(hf_.path(), config_, weights_);
  json c = testutil::config_json_for(config_);
  c["text_config"]["num_key_value_heads"] = true;
  write_text(hf_ / "config.json", c.dump());
  expect_open_error(hf_, {"config.json: field text_config.num_key_value_heads: expected an integer, got boolean"});
}

TEST_F(CheckpointErrorTest, ConfigJsonTextConfigNotObject) {
  testutil::write_hf_dir(hf_.path(), config_, weights_);
  json c = testutil::config_json_for(config_);
  c["text_config"] = "mistral";
  write_text(hf_ / "config.json", c.dump());
  expect_open_error(hf_, {"config.json: field text_config: expected an object, got string"});
}

TEST_F(CheckpointErrorTest, ConfigJsonRopeThetaWrongType) {
  testutil::write_hf_dir(hf_.path(), config_, weights_);
  json c = testutil::config_json_for(config_);
  c["audio_config"]["rope_parameters"]["rope_theta"] = "1e6";
  write_text(hf_ / "config.json", c.dump());
  expect_open_error(hf_, {"config.json: field audio_config.rope_parameters.rope_theta: expected a number"});
}

TEST_F(CheckpointErrorTest, ConfigJsonNotAnObject) {
  testutil::write_hf_dir(hf_.path(), config_, weights_);
  write_text(hf_ / "config.json", "[1]");
  expect_open_error(hf_, {"config.json", "expected a JSON object, got array"});
}

TEST_F(CheckpointErrorTest, IndexPointsToMissingShard) {
  testutil::write_hf_dir(hf_.path(), config_, weights_, DType::BF16, 2);
  std::filesystem::remove(hf_ / "model-00002-of-00002.safetensors");
  expect_open_error(hf_, {"model.safetensors.index.json", "shard 'model-00002-of-00002.safetensors'", "not found"});
}

TEST_F(CheckpointErrorTest, IndexListsTensorAbsentFromShard) {
  testutil::write_hf_dir(hf_.path(), config_, weights_, DType::BF16, 2);
  json index = json::parse(testutil::read_bytes(hf_ / "model.safetensors.index.json"));
  index["weight_map"]["language_model.model.norm.weight"] =
      index["weight_map"]["language_model.model.norm.weight"] == "model-00001-of-00002.safetensors"
          ? "model-00002-of-00002.safetensors"
          : "model-00001-of-00002.safetensors";
  write_text(hf_ / "model.safetensors.index.json", index.dump());
  expect_open_error(hf_, {"model.safetensors.index.json", "tensor 'language_model.model.norm.weight'",
                          "does not contain it"});
}

TEST_F(CheckpointErrorTest, IndexShardOutsideDirectory) {
  testutil::write_hf_dir(hf_.path(), config_, weights_, DType::BF16, 2);
  json index = json::parse(testutil::read_bytes(hf_ / "model.safetensors.index.json"));
  index["weight_map"]["language_model.model.norm.weight"] = "../model-00001-of-00002.safetensors";
  write_text(hf_ / "model.safetensors.index.json", index.dump());
  expect_open_error(hf_, {"model.safetensors.index.json", "not a plain file name"});
}

TEST_F(CheckpointErrorTest, IndexWithoutWeightMap) {
  testutil::write_hf_dir(hf_.path(), config_, weights_, DType::BF16, 2);
  write_text(hf_ / "model.safetensors.index.json", R"({"metadata": {}})");
  expect_open_error(hf_, {"model.safetensors.index.json", "missing field weight_map"});
}

TEST_F(CheckpointErrorTest, MissingTensorInShardsNamesAllFiles) {
  testutil::Weights w = weights_;
  w.erase("layers.0.ffn_norm.weight");
  testutil::write_hf_dir(hf_.path(), config_, w, DType::BF16, 2);
  expect_open_error(hf_, {"model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors",
                          "missing tensor 'layers.0.ffn_norm.weight'"});
}

}  // namespace
}  // namespace voxrt
