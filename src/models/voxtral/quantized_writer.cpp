#include "models/voxtral/quantized_writer.h"

#include <cmath>
#include <cstring>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <vector>

#include "common/error.h"
#include "models/voxtral/tensor_names.h"
#include "quant/quantizer.h"
#include "safetensors/safetensors.h"

namespace voxrt {
namespace {

namespace fs = std::filesystem;

template <typename T>
std::vector<uint8_t> bytes_of(const std::vector<T>& v) {
  std::vector<uint8_t> b(v.size() * sizeof(T));
  if (!b.empty()) std::memcpy(b.data(), v.data(), b.size());
  return b;
}

// Sums of a component's squared errors and energies (QuantError), over its weights.
struct ErrorSum {
  QuantError sum;
  void add(const QuantError& e) {
    sum.error += e.error;
    sum.energy += e.energy;
  }
};

void check_output_dir(const Checkpoint& ckpt, const fs::path& out) {
  std::error_code ec;
  if (fs::exists(out, ec)) {
    check(fs::is_directory(out, ec), out.string(), "exists and is not a directory");
    check(!fs::equivalent(out, ckpt.dir(), ec), out.string(), "is the model's own directory: give a new one");
    check(fs::is_empty(out, ec), out.string(), "is not empty: give a new directory (nothing is overwritten)");
  } else {
    fs::create_directories(out, ec);
    check(!ec, out.string(), "cannot create the directory: " + ec.message());
  }
}

}  // namespace

std::string params_json_text(const ModelConfig& c) {
  const EncoderConfig& e = c.encoder;
  const DecoderConfig& d = c.decoder;
  const AudioConfig& a = c.audio;
  nlohmann::ordered_json audio = {{"sampling_rate", a.sampling_rate},
                                  {"frame_rate", a.frame_rate},
                                  {"num_mel_bins", e.num_mel_bins},
                                  {"hop_length", a.hop_length},
                                  {"window_size", a.window_size},
                                  {"global_log_mel_max", a.global_log_mel_max},
                                  {"transcription_format", "streaming"}};
  nlohmann::ordered_json encoder = {{"audio_encoding_args", audio},  {"dim", e.dim},
                                    {"n_layers", e.n_layers},        {"head_dim", e.head_dim},
                                    {"hidden_dim", e.hidden_dim},    {"n_heads", e.n_heads},
                                    {"n_kv_heads", e.n_kv_heads},    {"use_biases", true},
                                    {"rope_theta", e.rope_theta},    {"causal", true},
                                    {"norm_eps", e.norm_eps},        {"sliding_window", e.sliding_window},
                                    {"ffn_type", "swiglu"},          {"norm_type", "rms_norm"},
                                    {"pos_embed", "rope"}};
  nlohmann::ordered_json j = {
      {"dim", d.dim},
      {"n_layers", d.n_layers},
      {"head_dim", d.head_dim},
      {"hidden_dim", d.hidden_dim},
      {"n_heads", d.n_heads},
      {"n_kv_heads", d.n_kv_heads},
      {"use_biases", false},
      {"causal", true},
      {"rope_theta", d.rope_theta},
      {"norm_eps", d.norm_eps},
      {"vocab_size", d.vocab_size},
      {"tied_embeddings", d.tied_embeddings},
      {"sliding_window", d.sliding_window},
      {"model_max_length", d.max_position},
      {"multimodal",
       {{"whisper_model_args", {{"encoder_args", encoder}, {"downsample_args", {{"downsample_factor", c.downsample_factor}}}}}}},
      {"ada_rms_norm_t_cond", true},
      {"ada_rms_norm_t_cond_dim", d.t_cond_dim}};
  return j.dump(2) + "\n";
}

QuantizeReport write_quantized_model(const Checkpoint& ckpt, const QuantPlan& plan, const fs::path& out) {
  check(plan.any(), "quantize", "no weights to quantize: give --qlinear, --qlinear-encoder or --qembedding");
  check(!ckpt.stored_quantization().any(), ckpt.dir().string(),
        "already quantized (" + ckpt.stored_quantization().describe() + "): quantize the original model");
  // Every group size is checked against its tensor before anything is written.
  for_each_expected_tensor(ckpt.config(), [&](const std::string& name, const std::vector<int64_t>& shape) {
    if (shape.size() == 2) plan.format_for(name, shape[1]);
  });
  check_output_dir(ckpt, out);

  QuantizeReport report;
  ErrorSum encoder, decoder, embedding, head;
  std::vector<TensorToWrite> tensors;
  // Tensor `name` written from the checkpoint's tensor `source` (the untied LM head from the
  // embedding), in the plan's format for `name`.
  auto emit = [&](const std::string& name, const std::vector<int64_t>& shape, const std::string& source) {
    const TensorInfo& t = ckpt.tensor(source);
    const size_t numel = static_cast<size_t>(t.numel());
    if (name == source) report.weight_bytes_before += numel * 2;  // the untied head is not in the original
    ++report.tensors;
    const WeightFormat f = shape.size() == 2 ? plan.format_for(name, shape[1]) : WeightFormat{};
    if (!f.quantized()) {
      if (t.dtype == DType::BF16) {
        std::vector<uint16_t> bits = ckpt.load_bf16(source);
        ckpt.to_mistral_rows(name, bits.data(), bits.size());
        tensors.push_back({name, DType::BF16, t.shape, bytes_of(bits)});
      } else {
        std::vector<float> values = ckpt.load_f32(source);
        ckpt.to_mistral_rows(name, values.data(), values.size());
        tensors.push_back({name, DType::F32, t.shape, bytes_of(values)});
      }
      report.weight_bytes_after += numel * 2;  // as bf16, as "before" counts it
      return;
    }
    const int rows = static_cast<int>(shape[0]), cols = static_cast<int>(shape[1]);
    const std::vector<float> values = ckpt.load_f32(source);
    QuantizedMatrix q = quantize(values.data(), rows, cols, f, plan.method);
    const QuantError err = quantization_error(values.data(), q);
    (name == tensor_names::kTokEmbeddings ? embedding
     : name == tensor_names::kLmHead      ? head
     : name.rfind(tensor_names::kDecoderLayers, 0) == 0 ? decoder
                                                         : encoder)
        .add(err);
    report.weight_bytes_after += q.bytes();
    ckpt.to_mistral_rows(name, q.packed.data(), q.packed.size());
    ckpt.to_mistral_rows(name, q.scales.data(), q.scales.size());
    const int64_t groups = q.groups();
    tensors.push_back({name, packed_dtype(f.kind),
                       {shape[0], static_cast<int64_t>(q.packed_row_bytes())}, std::move(q.packed)});
    tensors.push_back({quant_scales_name(name), DType::BF16, {shape[0], groups}, bytes_of(q.scales)});
    if (!q.biases.empty()) {
      ckpt.to_mistral_rows(name, q.biases.data(), q.biases.size());
      tensors.push_back({quant_biases_name(name), DType::BF16, {shape[0], groups}, bytes_of(q.biases)});
    }
    ++report.quantized;
  };
  for_each_expected_tensor(ckpt.config(), [&](const std::string& name, const std::vector<int64_t>& shape) {
    emit(name, shape, name);
  });
  if (plan.head_untied())
    emit(tensor_names::kLmHead, {ckpt.config().decoder.vocab_size, ckpt.config().decoder.dim}, tensor_names::kTokEmbeddings);
  report.encoder_error = encoder.sum.relative();
  report.decoder_error = decoder.sum.relative();
  report.embedding_error = embedding.sum.relative();
  report.head_error = head.sum.relative();

  write_safetensors(out / "consolidated.safetensors", tensors, {{kQuantMetadataKey, plan.to_metadata()}});
  {
    std::ofstream params(out / "params.json");
    params << params_json_text(ckpt.config());
    check(static_cast<bool>(params), (out / "params.json").string(), "cannot write");
  }
  std::error_code ec;
  const fs::path tekken = ckpt.dir() / "tekken.json";
  if (fs::exists(tekken, ec)) {
    fs::copy_file(tekken, out / "tekken.json", fs::copy_options::overwrite_existing, ec);
    check(!ec, (out / "tekken.json").string(), "cannot copy the tokenizer: " + ec.message());
  }
  return report;
}

}  // namespace voxrt
