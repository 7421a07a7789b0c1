// Quantized weights on the tiny model (README.md, "Quantized weights"). What proves the kernels: a
// model with quantized weights computes what the same model computes with the values those weights
// stand for (dequantized to a checkpoint), within the fp32 tolerance of the CPU (fp8, which rounds
// the activations too, within that rounding). What the
// formats cost against the original weights is printed, not asserted (the real weights cannot be
// had here). And the files: `voxrt quantize` from either layout gives the same model, quantizing
// while loading gives the same bits as loading the written directory, and a broken quantized file
// is refused naming the tensor and field.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <algorithm>
#include <cstring>
#include <functional>
#include <map>
#include <tuple>

#include "../unit/temp_dir.h"
#include "audio/audio_file.h"
#include "models/voxtral/checkpoint.h"
#include "models/voxtral/quantized_writer.h"
#include "models/voxtral/tensor_names.h"
#include "gpu_here.h"
#include "offline_reference.h"
#include "parity_check.h"
#include "safetensors/safetensors.h"
#include "tokenizer/tekken.h"
#include "voxrt/error.h"

namespace voxrt::test {
namespace {

namespace fs = std::filesystem;

fs::path tiny(const char* layout) { return test_data() / "tiny" / layout; }

QuantPlan plan(QuantKind linear, int group, QuantKind embedding = QuantKind::Int8, int embedding_group = 64) {
  QuantPlan p;
  p.encoder = p.decoder = {linear, takes_channel_scales(linear) && group == 0 ? 0 : group};
  p.embedding = {embedding, embedding == QuantKind::None ? 0 : embedding_group};
  p.head = p.decoder.quantized() ? p.decoder : p.embedding;  // as QuantPlan::from_options
  return p;
}

// The bytes of a vector of 2- or 4-byte values, as a tensor holds them.
template <typename T>
std::vector<uint8_t> bytes_of(const std::vector<T>& values) {
  std::vector<uint8_t> bytes(values.size() * sizeof(T));
  std::memcpy(bytes.data(), values.data(), bytes.size());
  return bytes;
}

// A Mistral-layout copy of a quantized directory with every weight replaced by the values it stands
// for: the reference a quantized model must compute. Those of a quantized weight are written as F32
// (4w's and 8w's are bf16 values; fp8's, e4m3 values times a bf16 scale, need fp32's bits), the
// others as the bf16 they are.
void write_dequantized(const fs::path& quantized, const fs::path& out) {
  const Checkpoint ck = Checkpoint::open(quantized);
  std::vector<TensorToWrite> tensors;
  auto dequantized = [&](const std::string& name, const std::vector<int64_t>& shape) {
    if (!ck.stored_format(name).quantized()) {
      std::vector<uint16_t> bits = ck.load_bf16(name);
      ck.to_mistral_rows(name, bits.data(), bits.size());
      tensors.push_back({name, DType::BF16, shape, bytes_of(bits)});
      return;
    }
    const QuantizedMatrix q = ck.load_quantized(name);
    std::vector<float> values(static_cast<size_t>(q.rows) * q.cols);
    for (int r = 0; r < q.rows; ++r) dequantize_row(q, r, values.data() + static_cast<size_t>(r) * q.cols);
    ck.to_mistral_rows(name, values.data(), values.size());
    tensors.push_back({name, DType::F32, shape, bytes_of(values)});
  };
  for_each_expected_tensor(ck.config(), dequantized);
  // The LM head quantized apart from the embedding: a bf16 head of its own (tensor_names.h).
  if (ck.has(tensor_names::kLmHead))
    dequantized(tensor_names::kLmHead, {ck.config().decoder.vocab_size, ck.config().decoder.dim});
  fs::create_directories(out);
  write_safetensors(out / "consolidated.safetensors", tensors);
  fs::copy_file(quantized / "params.json", out / "params.json");
  fs::copy_file(quantized / "tekken.json", out / "tekken.json");
}

struct ModelRun {
  OfflineTrace trace;
  OfflineResult result;
};

// The tiny model in `dir` (quantized while loading as `at_load` says) over jfk_480's audio, teacher
// forced with its reference tokens.
ModelRun run(const fs::path& dir, const QuantPlan& at_load = {}, std::unique_ptr<Backend> backend = make_cpu_backend(0)) {
  const Golden g(test_data() / "tiny" / "golden" / "jfk_480.safetensors");
  const std::vector<float> audio = load_audio_mono(test_data() / "audio" / "jfk.wav");
  const Checkpoint ck = Checkpoint::open(dir);
  VoxtralModel model(ck, *backend, at_load);
  const Tokenizer tok = Tokenizer::load(dir / "tekken.json");
  const LogMel logmel;
  const std::vector<int32_t> tokens = g.i32("tokens");
  OfflineOptions o = golden_options(tok, g);
  ModelRun r;
  o.trace = &r.trace;
  o.trace_logit_steps = static_cast<int>(tokens.size());
  o.teacher_tokens = &tokens;
  r.result = run_offline(model, logmel, audio, o);
  return r;
}

int argmax_agreement(const ModelRun& a, const ModelRun& b, int vocab, int* steps) {
  *steps = static_cast<int>(a.trace.logits.size() / vocab);
  int same = 0;
  for (int s = 0; s < *steps; ++s) {
    const float* x = a.trace.logits.data() + static_cast<size_t>(s) * vocab;
    const float* y = b.trace.logits.data() + static_cast<size_t>(s) * vocab;
    same += std::max_element(x, x + vocab) - x == std::max_element(y, y + vocab) - y;
  }
  return same;
}

class QuantizedModel : public ::testing::TestWithParam<std::pair<QuantKind, int>> {};

// fp8 is W8A8: its products round their activations to e4m3 as well (3 mantissa bits, a scale a
// row), which the reference on the dequantized weights (fp32 activations) does not, so there the
// model computes the reference within that rounding, not within the fp32 tolerance. Each product's
// rounding of x adds a relative error of some 2.4 % to its output, and the errors of the products
// on the way add up (in quadrature: independent roundings): measured on the tiny model, encoder
// 0.067, adapter 0.079, logits 0.092 against the dequantized weights, and the teacher-forced argmax
// the same at 127 of 148 steps (its logits' margins are small: a random model). The bounds leave
// room above that and stay far below what a misplaced or missing scale gives (an error of order 1;
// the product itself is checked against the definition exactly, unit/test_fp8_linear.cpp).
constexpr double kFp8ActivationTolerance = 0.15;

TEST_P(QuantizedModel, ComputesWhatTheDequantizedWeightsGiveAndSaysWhatItCosts) {
  const auto [kind, group] = GetParam();
  const bool w8a8 = kind == QuantKind::Fp8;
  testutil::TempDir tmp;
  const QuantPlan p = plan(kind, group);
  const QuantizeReport report = write_quantized_model(Checkpoint::open(tiny("mistral")), p, tmp / "q");
  // 7 linear layers in each of 2 encoder and 2 decoder layers, the adapter's 2, the embedding, and the
  // LM head apart from it (in the decoder's format)
  EXPECT_EQ(report.quantized, 2u * 7 * 2 + 2 + 1 + 1);
  EXPECT_LT(report.weight_bytes_after, report.weight_bytes_before);
  write_dequantized(tmp / "q", tmp / "dq");

  const ModelRun quantized = run(tmp / "q"), reference = run(tmp / "dq"), original = run(tiny("mistral"));
  const std::string label = "[quantized " + p.describe() + "]";
  for (const auto& [name, ours, ref] :
       {std::tuple{"encoder", &quantized.trace.encoder, &reference.trace.encoder},
        std::tuple{"adapter", &quantized.trace.adapter, &reference.trace.adapter},
        std::tuple{"logits", &quantized.trace.logits, &reference.trace.logits}}) {
    ASSERT_EQ(ours->size(), ref->size());
    const double e = rel_error(*ours, *ref);
    std::printf("%s %s relative error against the dequantized weights %.3g\n", label.c_str(), name, e);
    EXPECT_LT(e, w8a8 ? kFp8ActivationTolerance : 1e-5) << name;
  }
  const int vocab = Checkpoint::open(tiny("mistral")).config().decoder.vocab_size;
  int steps = 0;
  const int same = argmax_agreement(quantized, reference, vocab, &steps);
  std::printf("%s teacher-forced argmax agrees with the dequantized weights' at %d of %d steps\n", label.c_str(), same,
              steps);
  if (w8a8)
    EXPECT_GE(same, steps * 4 / 5);  // where the logits' margin is within the activations' rounding, it may turn
  else
    EXPECT_EQ(same, steps);
  // What the format costs: against the original weights (reported).
  const int agree = argmax_agreement(quantized, original, vocab, &steps);
  std::printf("%s weights %.1f%% of bf16; against the original weights: encoder %.4f, adapter %.4f, logits %.4f "
              "relative error, teacher-forced argmax agrees at %d of %d steps\n",
              label.c_str(), 100.0 * report.weight_bytes_after / report.weight_bytes_before,
              rel_error(quantized.trace.encoder, original.trace.encoder),
              rel_error(quantized.trace.adapter, original.trace.adapter),
              rel_error(quantized.trace.logits, original.trace.logits), agree, steps);
}

INSTANTIATE_TEST_SUITE_P(Formats, QuantizedModel,
                         ::testing::Values(std::pair{QuantKind::Int4, 32}, std::pair{QuantKind::Int4, 64},
                                           std::pair{QuantKind::Int8, 0}, std::pair{QuantKind::Int8, 32},
                                           std::pair{QuantKind::Fp8, 0}),
                         [](const auto& info) {
                           const QuantKind k = info.param.first;
                           return std::string(k == QuantKind::Int4 ? "W4" : k == QuantKind::Int8 ? "W8" : "Fp8") +
                                  "Group" + std::to_string(info.param.second);
                         });

TEST(QuantizedFiles, QuantizingWhileLoadingGivesTheWrittenDirectorysBitsFromEitherLayout) {
  for (const QuantPlan& p : {plan(QuantKind::Int4, 32), plan(QuantKind::Fp8, 0)}) {
    SCOPED_TRACE(p.describe());
    testutil::TempDir tmp;
    write_quantized_model(Checkpoint::open(tiny("mistral")), p, tmp / "from_mistral");
    write_quantized_model(Checkpoint::open(tiny("hf")), p, tmp / "from_hf");
    const ModelRun written = run(tmp / "from_mistral"), from_hf = run(tmp / "from_hf"), at_load = run(tiny("mistral"), p);
    EXPECT_EQ(written.trace.logits, at_load.trace.logits);
    EXPECT_EQ(written.trace.logits, from_hf.trace.logits);
    EXPECT_EQ(written.trace.encoder, from_hf.trace.encoder);
    // And the written model says what it is.
    EXPECT_EQ(Checkpoint::open(tmp / "from_hf").stored_quantization().describe(), p.describe());
  }
}

// The GPU's quantized kernels against the CPU's, on the same quantized model: within the bf16
// tolerances of the bf16 path (the GPU rounds activations to bf16 for its products); fp8 (W8A8,
// where the GPU has fp8 tensor cores) within the activations' rounding, as against its dequantized
// weights (an activation a hair apart on the two devices may take the next e4m3 code).
TEST(QuantizedModelOnTheGpu, AgreesWithTheCpuWithinTheBf16Tolerances) {
  REQUIRE_GPU();
#ifdef VOXRT_WITH_CUDA
  for (const QuantPlan& p : {plan(QuantKind::Int4, 32), plan(QuantKind::Int8, 0), plan(QuantKind::Fp8, 0)}) {
    const bool w8a8 = p.decoder.kind == QuantKind::Fp8;
    const ModelRun cpu = run(tiny("mistral"), p);
    ModelRun gpu;
    try {
      gpu = run(tiny("mistral"), p, make_cuda_backend(0));
    } catch (const Error& e) {
      // fp8 is refused where the GPU (or this build's code for it) has no fp8 tensor cores.
      const std::string m = e.what();
      if (w8a8 && (m.find("fp8 tensor cores") != std::string::npos || m.find("fp8 tensor-core") != std::string::npos)) {
        std::printf("[quantized on the GPU %s] refused here: %s\n", p.describe().c_str(), m.c_str());
        continue;
      }
      throw;
    }
    const std::string label = "[quantized on the GPU " + p.describe() + "]";
    for (const auto& [name, ours, ref] : {std::tuple{"encoder", &gpu.trace.encoder, &cpu.trace.encoder},
                                          std::tuple{"adapter", &gpu.trace.adapter, &cpu.trace.adapter},
                                          std::tuple{"logits", &gpu.trace.logits, &cpu.trace.logits}}) {
      const double e = rel_error(*ours, *ref);
      std::printf("%s %s relative error against the CPU %.3g\n", label.c_str(), name, e);
      EXPECT_LT(e, w8a8 ? kFp8ActivationTolerance : bf16_tolerances().stage_rel) << name;
    }
    const int vocab = Checkpoint::open(tiny("mistral")).config().decoder.vocab_size;
    int steps = 0;
    const int agree = argmax_agreement(gpu, cpu, vocab, &steps);
    std::printf("%s teacher-forced argmax agrees with the CPU at %d of %d steps\n", label.c_str(), agree, steps);
    EXPECT_GE(agree, w8a8 ? steps * 4 / 5 : steps * 9 / 10);
  }
#endif
}

using Edit = std::function<void(std::vector<TensorToWrite>&, std::map<std::string, std::string>&)>;

// Rewrites consolidated.safetensors of `dir` with `edit` applied to its tensors and metadata.
void rewrite(const fs::path& dir, const Edit& edit) {
  std::vector<TensorToWrite> tensors;
  std::map<std::string, std::string> metadata;
  {
    auto f = SafetensorsFile::open(dir / "consolidated.safetensors");
    metadata = f->metadata();
    for (const TensorInfo& t : f->tensors()) tensors.push_back({t.name, t.dtype, t.shape, {t.data, t.data + t.nbytes}});
  }
  edit(tensors, metadata);
  write_safetensors(dir / "consolidated.safetensors", tensors, metadata);
}

std::string load_error(const fs::path& dir) {
  try {
    Checkpoint::open(dir);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// What loading a copy of the quantized directory `dir` (made at `copy`) says once `edit` is applied
// to it.
std::string load_error_after(const fs::path& dir, const fs::path& copy, const Edit& edit) {
  fs::copy(dir, copy);
  rewrite(copy, edit);
  return load_error(copy);
}

// The edits: the tensors whose names start with `prefix` removed; tensor `name` changed; `from` (which
// must be there) replaced by `to` in the quantization metadata.
Edit without_tensors(const std::string& prefix) {
  return [prefix](auto& tensors, auto&) {
    std::erase_if(tensors, [&](const TensorToWrite& t) { return t.name.rfind(prefix, 0) == 0; });
  };
}
Edit changing_tensor(const std::string& name, const std::function<void(TensorToWrite&)>& change) {
  return [name, change](auto& tensors, auto&) {
    for (TensorToWrite& t : tensors)
      if (t.name == name) change(t);
  };
}
Edit replacing_in_metadata(const std::string& from, const std::string& to) {
  return [from, to](auto&, auto& metadata) {
    std::string& m = metadata[kQuantMetadataKey];
    const size_t at = m.find(from);
    ASSERT_NE(at, std::string::npos) << m;
    m.replace(at, from.size(), to);
  };
}

// What loading a copy of `dir` (made at `copy`) says with its last 100 bytes cut off.
std::string truncated_load_error(const fs::path& dir, const fs::path& copy) {
  fs::copy(dir, copy);
  const fs::path f = copy / "consolidated.safetensors";
  fs::resize_file(f, fs::file_size(f) - 100);
  return load_error(copy);
}

TEST(QuantizedFiles, ABrokenQuantizedFileIsRefusedNamingTheTensorAndField) {
  testutil::TempDir tmp;
  const fs::path q = tmp / "q";
  write_quantized_model(Checkpoint::open(tiny("mistral")), plan(QuantKind::Int4, 32), q);
  const std::string scales = "layers.1.feed_forward.w2.scales";
  std::string e = load_error_after(q, tmp / "missing", without_tensors(scales));
  EXPECT_NE(e.find("missing scales tensor '" + scales + "'"), std::string::npos) << e;
  e = load_error_after(q, tmp / "group", replacing_in_metadata("\"group_size\":32", "\"group_size\":48"));
  EXPECT_NE(e.find("group_size"), std::string::npos) << e;
  EXPECT_NE(e.find("not 48"), std::string::npos) << e;
  e = load_error_after(q, tmp / "scheme", replacing_in_metadata("\"4w\"", "\"3w\""));
  EXPECT_NE(e.find("unknown weight format '3w'"), std::string::npos) << e;
  EXPECT_NE(e.find(std::string(kQuantMetadataKey) + "."), std::string::npos) << e;
  e = load_error_after(q, tmp / "shape", changing_tensor(scales, [](TensorToWrite& t) {
                         t.shape[1] /= 2;
                         t.bytes.resize(t.bytes.size() / 2);
                       }));
  EXPECT_NE(e.find("tensor '" + scales + "' has shape"), std::string::npos) << e;
  // The plan quantizes the LM head apart (4w linears): its tensor must be there.
  e = load_error_after(q, tmp / "head", without_tensors("output."));
  EXPECT_NE(e.find("missing tensor 'output.weight'"), std::string::npos) << e;
  EXPECT_NE(truncated_load_error(q, tmp / "truncated"), "");
  // Quantized again, or over a directory that holds something: refused before anything is written.
  try {
    write_quantized_model(Checkpoint::open(q), plan(QuantKind::Int8, 0), tmp / "again");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("already quantized"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(fs::exists(tmp / "again"));
  try {
    write_quantized_model(Checkpoint::open(tiny("mistral")), plan(QuantKind::Int4, 32), q);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("is not empty"), std::string::npos) << e.what();
  }
  // A group size that does not divide a tensor's dimension (the tiny model's 64): named.
  try {
    write_quantized_model(Checkpoint::open(tiny("mistral")), plan(QuantKind::Int4, 32, QuantKind::Int8, 128), tmp / "g");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("tok_embeddings.weight"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("does not divide the input dimension 64"), std::string::npos) << e.what();
  }
}

// fp8's files: its codes' dtype and its one scale a row are named as 4w's tensors are; a group size
// or an embedding the format does not take is refused naming the field.
TEST(QuantizedFiles, ABrokenFp8FileIsRefusedNamingTheTensorAndField) {
  testutil::TempDir tmp;
  const fs::path q = tmp / "q";
  write_quantized_model(Checkpoint::open(tiny("mistral")), plan(QuantKind::Fp8, 0), q);
  const std::string weight = "layers.1.feed_forward.w2.weight", scales = "layers.1.feed_forward.w2.scales";
  std::string e = load_error_after(q, tmp / "dtype", changing_tensor(weight, [](TensorToWrite& t) { t.dtype = DType::I8; }));
  EXPECT_NE(e.find("tensor '" + weight + "' has dtype I8, expected F8_E4M3 (fp8 packed)"), std::string::npos) << e;
  e = load_error_after(q, tmp / "missing", without_tensors(scales));
  EXPECT_NE(e.find("missing scales tensor '" + scales + "' of the fp8 weight"), std::string::npos) << e;
  e = load_error_after(q, tmp / "shape", changing_tensor(scales, [](TensorToWrite& t) {
                         t.shape[1] = 2;  // a scale a group of half a row: not fp8's
                         t.bytes.resize(t.bytes.size() * 2);
                       }));
  EXPECT_NE(e.find("tensor '" + scales + "' has shape"), std::string::npos) << e;
  EXPECT_NE(e.find(", 1] (fp8 scales"), std::string::npos) << e;
  e = load_error_after(q, tmp / "group",
                       replacing_in_metadata(R"("decoder":{"format":"fp8","group_size":0})",
                                             R"("decoder":{"format":"fp8","group_size":64})"));
  EXPECT_NE(e.find(std::string(kQuantMetadataKey) + ".decoder.group_size: fp8 takes one scale an output channel (0), not 64"),
            std::string::npos)
      << e;
  e = load_error_after(q, tmp / "embedding",
                       replacing_in_metadata(R"("embedding":{"format":"8w","group_size":64})",
                                             R"("embedding":{"format":"fp8","group_size":0})"));
  EXPECT_NE(e.find(std::string(kQuantMetadataKey) + ".embedding.format"), std::string::npos) << e;
  EXPECT_NE(e.find("the token embedding is a lookup"), std::string::npos) << e;
  e = truncated_load_error(q, tmp / "truncated");
  EXPECT_NE(e.find("tensor '"), std::string::npos) << e;
  EXPECT_NE(e.find("truncated file?"), std::string::npos) << e;
}

}  // namespace
}  // namespace voxrt::test
