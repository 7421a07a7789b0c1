// Checkpoint directories in the Mistral and Hugging Face layouts (docs/model.md §6, §7). Both are
// reduced to one view: canonical (Mistral) tensor names, and on load_f32 the Hugging Face "rotate
// half" RoPE row order for q/k projections.
#include "models/voxtral/checkpoint.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <optional>

#include "common/error.h"
#include "common/thread_team.h"
#include "models/voxtral/tensor_names.h"

namespace voxrt {
namespace {

namespace fs = std::filesystem;

using tensor_names::kEmbedding;
using tensor_names::kEncoder;
using tensor_names::kTokEmbeddings;

constexpr const char* kParamsJson = "params.json";
constexpr const char* kConsolidated = "consolidated.safetensors";
constexpr const char* kConfigJson = "config.json";
constexpr const char* kHfSingle = "model.safetensors";
constexpr const char* kHfIndex = "model.safetensors.index.json";

std::string shape_str(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

bool starts_with(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }

// Splits "N.rest" into N and rest when N is a layer index; false otherwise.
bool split_layer(const std::string& s, std::string* index, std::string* rest) {
  const size_t dot = s.find('.');
  if (dot == 0 || dot == std::string::npos || dot > 9) return false;
  if (s.find_first_not_of("0123456789") < dot) return false;
  *index = s.substr(0, dot);
  *rest = s.substr(dot + 1);
  return true;
}

// True when name is prefix + <layer index> + suffix.
bool is_layer_tensor(const std::string& name, const std::string& prefix, const std::string& suffix) {
  std::string index, rest;
  return starts_with(name, prefix) && split_layer(name.substr(prefix.size()), &index, &rest) &&
         "." + rest == suffix;
}

// Replaces the first matching prefix of s; "" when none matches.
std::string map_prefix(const std::string& s, std::initializer_list<std::pair<const char*, const char*>> table) {
  for (const auto& [from, to] : table)
    if (starts_with(s, from)) return to + s.substr(std::string(from).size());
  return "";
}

// Hugging Face sub-module names inside one layer, shared by the encoder and the decoder.
std::string map_layer_common(const std::string& sub) {
  return map_prefix(sub, {{"self_attn.q_proj.", "attention.wq."},
                          {"self_attn.k_proj.", "attention.wk."},
                          {"self_attn.v_proj.", "attention.wv."},
                          {"self_attn.o_proj.", "attention.wo."},
                          {"mlp.gate_proj.", "feed_forward.w1."},
                          {"mlp.up_proj.", "feed_forward.w3."},
                          {"mlp.down_proj.", "feed_forward.w2."}});
}

std::string map_decoder_layer(const std::string& sub) {
  std::string m = map_layer_common(sub);
  if (!m.empty()) return m;
  return map_prefix(sub, {{"input_layernorm.", "attention_norm."},
                          {"post_attention_layernorm.", "ffn_norm."},
                          {"ada_rms_norm.linear1.", "ada_rms_norm_t_cond.0."},
                          {"ada_rms_norm.linear2.", "ada_rms_norm_t_cond.2."}});
}

std::string map_encoder_layer(const std::string& sub) {
  std::string m = map_layer_common(sub);
  if (!m.empty()) return m;
  return map_prefix(sub, {{"self_attn_layer_norm.", "attention_norm."}, {"final_layer_norm.", "ffn_norm."}});
}

// "<prefix>N.<sub>" -> out_prefix + "N." + layer_map(sub), or "" when it is not a layer tensor.
std::string map_layers(const std::string& rest, const std::string& out_prefix,
                       std::string (*layer_map)(const std::string&)) {
  std::string index, sub;
  if (!split_layer(rest, &index, &sub)) return "";
  const std::string mapped = layer_map(sub);
  return mapped.empty() ? "" : out_prefix + index + "." + mapped;
}

// The q/k projections whose rows Mistral stores in interleaved RoPE order.
struct RopeRows {
  int n_heads;
  int head_dim;
};
std::optional<RopeRows> rope_rows(const std::string& name, const ModelConfig& c) {
  const std::string enc_layers = kEncoder + "transformer.layers.";
  for (const char* kind : {"weight", "bias"}) {
    if (is_layer_tensor(name, enc_layers, std::string(".attention.wq.") + kind))
      return RopeRows{c.encoder.n_heads, c.encoder.head_dim};
    if (is_layer_tensor(name, enc_layers, std::string(".attention.wk.") + kind))
      return RopeRows{c.encoder.n_kv_heads, c.encoder.head_dim};
  }
  if (is_layer_tensor(name, "layers.", ".attention.wq.weight")) return RopeRows{c.decoder.n_heads, c.decoder.head_dim};
  if (is_layer_tensor(name, "layers.", ".attention.wk.weight"))
    return RopeRows{c.decoder.n_kv_heads, c.decoder.head_dim};
  return std::nullopt;
}

// Mistral interleaved pairs (2i, 2i+1) -> Hugging Face halves (i, i + hd/2), per head: new row
// h*hd + j*hd/2 + i = old row h*hd + 2i + j (transformers' permute_for_rope).
// Moves the rows of each head between Mistral's interleaved RoPE order (pairs 2i, 2i + 1) and the
// rotate-half order of Hugging Face files (pairs i, i + head_dim / 2): row 2i + j of a head is row
// j * half + i the other way round (transformers' permute_for_rope). `cols` elements a row.
template <typename T>
void permute_rope_rows(T* data, int n_heads, int head_dim, size_t cols, bool to_rotate_half) {
  const size_t hd = static_cast<size_t>(head_dim), half = hd / 2;
  std::vector<T> head(hd * cols);
  for (int h = 0; h < n_heads; ++h) {
    T* base = data + static_cast<size_t>(h) * hd * cols;
    std::copy(base, base + hd * cols, head.begin());
    for (size_t i = 0; i < half; ++i)
      for (size_t j = 0; j < 2; ++j) {
        const size_t interleaved = 2 * i + j, rotate_half = j * half + i;
        const size_t from = to_rotate_half ? interleaved : rotate_half, to = to_rotate_half ? rotate_half : interleaved;
        std::copy_n(head.begin() + from * cols, cols, base + to * cols);
      }
  }
}

bool is_float_dtype(DType d) { return d == DType::BF16 || d == DType::F16 || d == DType::F32; }

// error_code overloads: an unreadable directory must give voxrt::Error, not filesystem_error.
bool present(const fs::path& dir, const char* file) {
  std::error_code ec;
  return fs::exists(dir / file, ec);
}

void require_file(const fs::path& dir, const char* file, const char* layout) {
  check(present(dir, file), dir.string(), std::string(file) + " not found (" + layout + " layout requested)");
}

CheckpointLayout choose_layout(const fs::path& dir, LayoutPreference pref) {
  switch (pref) {
    case LayoutPreference::Mistral:
      require_file(dir, kParamsJson, "Mistral");
      require_file(dir, kConsolidated, "Mistral");
      return CheckpointLayout::Mistral;
    case LayoutPreference::HuggingFace:
      require_file(dir, kConfigJson, "Hugging Face");
      check(present(dir, kHfSingle) || present(dir, kHfIndex), dir.string(),
            std::string(kHfSingle) + " (or " + kHfIndex + ") not found (Hugging Face layout requested)");
      return CheckpointLayout::HuggingFace;
    case LayoutPreference::Auto: break;
  }
  if (present(dir, kParamsJson) && present(dir, kConsolidated)) return CheckpointLayout::Mistral;
  if (present(dir, kConfigJson) && (present(dir, kHfSingle) || present(dir, kHfIndex)))
    return CheckpointLayout::HuggingFace;
  throw Error(dir.string() +
              ": not a Voxtral model directory: expected params.json + consolidated.safetensors (Mistral "
              "layout) or config.json + model*.safetensors (Hugging Face layout)");
}

}  // namespace

std::string canonical_name_from_hf(const std::string& hf_name) {
  // The wrappers vary between transformers versions and saving paths: "model.language_model.X",
  // "language_model.model.X" (the conversion script) and "language_model.model.model.X"
  // (save_pretrained in 5.17). Dropping every "model." around "language_model." covers them all.
  std::string n = hf_name;
  while (starts_with(n, "model.")) n = n.substr(6);
  if (starts_with(n, "language_model.")) {
    std::string rest = n.substr(15);
    while (starts_with(rest, "model.")) rest = rest.substr(6);
    n = "language_model." + rest;
  }

  if (starts_with(n, "language_model.")) {
    const std::string rest = n.substr(15);
    if (rest == "embed_tokens.weight") return kTokEmbeddings;
    if (rest == "norm.weight") return "norm.weight";
    if (starts_with(rest, "layers.")) return map_layers(rest.substr(7), "layers.", map_decoder_layer);
    return "";  // lm_head (tied to the embedding) and anything unknown
  }
  if (starts_with(n, "audio_tower.")) {
    const std::string rest = n.substr(12);
    if (starts_with(rest, "layers."))
      return map_layers(rest.substr(7), kEncoder + "transformer.layers.", map_encoder_layer);
    std::string m = map_prefix(rest, {{"embedder.conv1.", "conv_layers.0.conv."},
                                      {"embedder.conv2.", "conv_layers.1.conv."},
                                      {"norm.", "transformer.norm."}});
    return m.empty() ? "" : kEncoder + m;
  }
  if (n == "multi_modal_projector.linear_1.weight") return kEmbedding + "audio_language_projection.0.weight";
  if (n == "multi_modal_projector.linear_2.weight") return kEmbedding + "audio_language_projection.2.weight";
  return "";
}

void for_each_expected_tensor(const ModelConfig& config,
                              const std::function<void(const std::string&, const std::vector<int64_t>&)>& add) {
  const EncoderConfig& e = config.encoder;
  const DecoderConfig& d = config.decoder;

  const int64_t enc_q = int64_t(e.n_heads) * e.head_dim, enc_kv = int64_t(e.n_kv_heads) * e.head_dim;
  const int64_t dec_q = int64_t(d.n_heads) * d.head_dim, dec_kv = int64_t(d.n_kv_heads) * d.head_dim;

  add(kTokEmbeddings, {d.vocab_size, d.dim});
  add(kEncoder + "conv_layers.0.conv.weight", {e.dim, e.num_mel_bins, 3});
  add(kEncoder + "conv_layers.0.conv.bias", {e.dim});
  add(kEncoder + "conv_layers.1.conv.weight", {e.dim, e.dim, 3});
  add(kEncoder + "conv_layers.1.conv.bias", {e.dim});
  for (int l = 0; l < e.n_layers; ++l) {
    const std::string p = kEncoder + "transformer.layers." + std::to_string(l) + ".";
    add(p + "attention.wq.weight", {enc_q, e.dim});
    add(p + "attention.wq.bias", {enc_q});
    add(p + "attention.wk.weight", {enc_kv, e.dim});
    add(p + "attention.wv.weight", {enc_kv, e.dim});
    add(p + "attention.wv.bias", {enc_kv});
    add(p + "attention.wo.weight", {e.dim, enc_q});
    add(p + "attention.wo.bias", {e.dim});
    add(p + "attention_norm.weight", {e.dim});
    add(p + "ffn_norm.weight", {e.dim});
    add(p + "feed_forward.w1.weight", {e.hidden_dim, e.dim});
    add(p + "feed_forward.w3.weight", {e.hidden_dim, e.dim});
    add(p + "feed_forward.w2.weight", {e.dim, e.hidden_dim});
    add(p + "feed_forward.w2.bias", {e.dim});
  }
  add(kEncoder + "transformer.norm.weight", {e.dim});
  add(kEmbedding + "audio_language_projection.0.weight", {d.dim, int64_t(e.dim) * config.downsample_factor});
  add(kEmbedding + "audio_language_projection.2.weight", {d.dim, d.dim});
  for (int l = 0; l < d.n_layers; ++l) {
    const std::string p = "layers." + std::to_string(l) + ".";
    add(p + "attention_norm.weight", {d.dim});
    add(p + "ffn_norm.weight", {d.dim});
    add(p + "attention.wq.weight", {dec_q, d.dim});
    add(p + "attention.wk.weight", {dec_kv, d.dim});
    add(p + "attention.wv.weight", {dec_kv, d.dim});
    add(p + "attention.wo.weight", {d.dim, dec_q});
    add(p + "feed_forward.w1.weight", {d.hidden_dim, d.dim});
    add(p + "feed_forward.w3.weight", {d.hidden_dim, d.dim});
    add(p + "feed_forward.w2.weight", {d.dim, d.hidden_dim});
    add(p + "ada_rms_norm_t_cond.0.weight", {d.t_cond_dim, d.dim});
    add(p + "ada_rms_norm_t_cond.2.weight", {d.dim, d.t_cond_dim});
  }
  add("norm.weight", {d.dim});
}

std::vector<std::pair<std::string, std::vector<int64_t>>> expected_tensors(const ModelConfig& config) {
  std::vector<std::pair<std::string, std::vector<int64_t>>> out;
  for_each_expected_tensor(config, [&](const std::string& name, const std::vector<int64_t>& shape) {
    out.emplace_back(name, shape);
  });
  return out;
}

Checkpoint Checkpoint::open(const fs::path& dir, LayoutPreference pref) {
  std::error_code ec;
  check(fs::is_directory(dir, ec), dir.string(), "not a directory");
  Checkpoint ck;
  ck.dir_ = dir;
  ck.layout_ = choose_layout(dir, pref);

  std::string config_file;
  if (ck.layout_ == CheckpointLayout::Mistral) {
    config_file = kParamsJson;
    ck.config_ = parse_params_json(dir / kParamsJson);
    ck.files_.push_back(SafetensorsFile::open(dir / kConsolidated));
    // Some Mistral exports name the embedding without the multimodal prefix.
    for (const TensorInfo& t : ck.files_[0]->tensors())
      ck.add_tensor(t.name == "tok_embeddings.weight" ? kTokEmbeddings : t.name, &t, 0);
  } else {
    config_file = kConfigJson;
    ck.config_ = parse_config_json(dir / kConfigJson);
    if (present(dir, kHfSingle)) {  // transformers, too, prefers the single file over an index
      ck.files_.push_back(SafetensorsFile::open(dir / kHfSingle));
      for (const TensorInfo& t : ck.files_[0]->tensors()) ck.add_tensor(canonical_name_from_hf(t.name), &t, 0);
    } else {
      ck.open_shards();
    }
  }
  ck.read_stored_plan();
  ck.validate(config_file);
  return ck;
}

// A quantized directory says so in its safetensors metadata (every file of it, as `voxrt quantize`
// writes one; the first that has the key is read).
void Checkpoint::read_stored_plan() {
  for (const auto& f : files_) {
    auto it = f->metadata().find(kQuantMetadataKey);
    if (it == f->metadata().end()) continue;
    stored_plan_ = QuantPlan::from_metadata(it->second, f->path().string());
    return;
  }
}

// Registers a file's tensor under its canonical name; "" means voxrt does not use it.
void Checkpoint::add_tensor(const std::string& canonical, const TensorInfo* info, size_t file) {
  if (canonical.empty()) return;
  auto [it, inserted] = by_canonical_.emplace(canonical, Entry{info, file});
  check(inserted, files_[file]->path().string(),
        "tensors '" + it->second.info->name + "' and '" + info->name + "' both map to '" + canonical + "'");
}

// Every shard the index names must exist and hold the tensors listed for it.
void Checkpoint::open_shards() {
  const fs::path index = dir_ / kHfIndex;
  const std::string where = index.string();
  std::map<std::string, size_t> shard_of_file;
  for (const auto& [name, file] : parse_safetensors_index(index)) {
    auto it = shard_of_file.find(file);
    if (it == shard_of_file.end()) {
      check(present(dir_, file.c_str()), where,
            "shard '" + file + "' (listed for tensor '" + name + "') not found in " + dir_.string());
      files_.push_back(SafetensorsFile::open(dir_ / file));
      it = shard_of_file.emplace(file, files_.size() - 1).first;
    }
    const TensorInfo* info = files_[it->second]->find(name);
    check(info != nullptr, where, "tensor '" + name + "' is listed in shard '" + file + "', which does not contain it");
    add_tensor(canonical_name_from_hf(name), info, it->second);
  }
}

// One tensor at a time, stopping at the first one missing: the layer counts come from the
// configuration, and a list of all that it asks for would follow them however few tensors the files
// hold (a params.json of 2^31 - 1 layers: some 50 billion names).
void Checkpoint::validate(const std::string& config_file) const {
  std::string searched;
  for (const auto& f : files_) searched += (searched.empty() ? "" : ", ") + f->path().string();
  auto validate_tensor = [&](const std::string& name, const std::vector<int64_t>& shape) {
    auto it = by_canonical_.find(name);
    check(it != by_canonical_.end(), searched, "missing tensor '" + name + "'");
    const TensorInfo& t = *it->second.info;
    const std::string where = files_[it->second.file]->path().string();
    const std::string what = "tensor '" + t.name + "'" + (t.name == name ? "" : " ('" + name + "')");
    if (shape.size() == 2) {
      const WeightFormat f = stored_plan_.format_for(name, shape[1]);
      if (f.quantized()) return validate_quantized(name, shape, f);
    }
    check(is_float_dtype(t.dtype), where,
          what + " has dtype " + dtype_name(t.dtype) + ", expected BF16, F16 or F32");
    check(t.shape == shape, where,
          what + " has shape " + shape_str(t.shape) + ", expected " + shape_str(shape) + " (from " + config_file + ")");
  };
  for_each_expected_tensor(config_, validate_tensor);
  // The LM head stored apart (tensor_names.h): where the plan says so, or where a file has it.
  if (stored_plan_.head_untied() || has(tensor_names::kLmHead))
    validate_tensor(tensor_names::kLmHead, {config_.decoder.vocab_size, config_.decoder.dim});
}

void Checkpoint::validate_quantized(const std::string& name, const std::vector<int64_t>& shape,
                                    const WeightFormat& f) const {
  const int64_t N = shape[0], K = shape[1], groups = K / f.group_size;
  // One quantized tensor: present, of the dtype and shape the format gives.
  auto expect = [&](const std::string& tensor_name, DType dtype, const std::vector<int64_t>& want, const char* role) {
    auto it = by_canonical_.find(tensor_name);
    check(it != by_canonical_.end(), files_[0]->path().string(),
          std::string("missing ") + role + " tensor '" + tensor_name + "' of the " + format_name(f) + " weight '" + name + "'");
    const TensorInfo& t = *it->second.info;
    const std::string where = files_[it->second.file]->path().string();
    check(t.dtype == dtype, where,
          "tensor '" + tensor_name + "' has dtype " + dtype_name(t.dtype) + ", expected " + dtype_name(dtype) + " (" +
              format_name(f) + " " + role + ")");
    check(t.shape == want, where,
          "tensor '" + tensor_name + "' has shape " + shape_str(t.shape) + ", expected " + shape_str(want) + " (" +
              format_name(f) + " " + role + " of a [" + std::to_string(N) + ", " + std::to_string(K) + "] weight)");
  };
  expect(name, packed_dtype(f.kind),
         {N, static_cast<int64_t>(packed_row_bytes(f.kind, static_cast<int>(K)))}, "packed");
  expect(quant_scales_name(name), DType::BF16, {N, groups}, "scales");
  if (has_biases(f.kind)) expect(quant_biases_name(name), DType::BF16, {N, groups}, "biases");
}

WeightFormat Checkpoint::stored_format(const std::string& canonical) const {
  const TensorInfo& t = tensor(canonical);
  if (!stored_plan_.any() || t.shape.size() != 2) return {};
  const WeightFormat f = stored_plan_.format_for(canonical, t.dtype == DType::U8 ? t.shape[1] * 2 : t.shape[1]);
  return f;
}

template <typename T>
std::vector<T> Checkpoint::copy_raw(const std::string& canonical) const {
  const TensorInfo& t = tensor(canonical);
  check(dtype_size(t.dtype) == sizeof(T), file_of(canonical).string(), "tensor '" + t.name + "' has an unexpected dtype");
  std::vector<T> out(static_cast<size_t>(t.numel()));
  copy_out(canonical, [&](size_t first, size_t n) {
    // Large slices are copied by all cores: the copy is what touches the mapped file's pages.
    ThreadTeam::shared().parallel_for(n, size_t{1} << 20, [&](size_t i0, size_t i1) {
      std::memcpy(out.data() + first + i0, t.data + (first + i0) * sizeof(T), (i1 - i0) * sizeof(T));
    });
  });
  return out;
}

QuantizedMatrix Checkpoint::load_quantized(const std::string& canonical) const {
  const WeightFormat f = stored_format(canonical);
  check(f.quantized(), file_of(canonical).string(), "tensor '" + canonical + "' is not stored quantized");
  const TensorInfo& t = tensor(canonical);
  QuantizedMatrix m;
  m.format = f;
  m.rows = static_cast<int>(t.shape[0]);
  m.cols = static_cast<int>(f.kind == QuantKind::Int4 ? t.shape[1] * 2 : t.shape[1]);
  m.packed = copy_raw<uint8_t>(canonical);
  m.scales = copy_raw<uint16_t>(quant_scales_name(canonical));
  if (has_biases(f.kind)) m.biases = copy_raw<uint16_t>(quant_biases_name(canonical));
  // Rows move whole: the RoPE permutation of a Mistral file's q/k rows applies to each row's
  // packed values, scales and biases alike.
  to_internal_rows(canonical, m.packed.data(), m.packed.size());
  to_internal_rows(canonical, m.scales.data(), m.scales.size());
  if (!m.biases.empty()) to_internal_rows(canonical, m.biases.data(), m.biases.size());
  m.check_consistent(file_of(canonical).string() + ": tensor '" + t.name + "'");
  return m;
}

bool Checkpoint::has(const std::string& canonical) const { return by_canonical_.count(canonical) != 0; }

const TensorInfo& Checkpoint::tensor(const std::string& canonical) const {
  auto it = by_canonical_.find(canonical);
  check(it != by_canonical_.end(), dir_.string(), "no tensor '" + canonical + "' in this checkpoint");
  return *it->second.info;
}

const fs::path& Checkpoint::file_of(const std::string& canonical) const {
  auto it = by_canonical_.find(canonical);
  check(it != by_canonical_.end(), dir_.string(), "no tensor '" + canonical + "' in this checkpoint");
  return files_[it->second.file]->path();
}

std::vector<float> Checkpoint::load_f32(const std::string& canonical) const {
  const TensorInfo& t = tensor(canonical);
  const std::string where = file_of(canonical).string();
  check(is_float_dtype(t.dtype), where,
        "tensor '" + t.name + "' has dtype " + dtype_name(t.dtype) + ", which cannot be loaded as F32");
  std::vector<float> out(static_cast<size_t>(t.numel()));
  copy_out(canonical, [&](size_t first, size_t n) { convert_to_f32(t.dtype, t.data + first * dtype_size(t.dtype), out.data() + first, n); });
  to_internal_rows(canonical, out.data(), out.size());
  return out;
}

bool Checkpoint::stored_as_bf16(const std::string& canonical) const { return tensor(canonical).dtype == DType::BF16; }

std::vector<uint16_t> Checkpoint::load_bf16(const std::string& canonical) const {
  const TensorInfo& t = tensor(canonical);
  check(t.dtype == DType::BF16, file_of(canonical).string(),
        "tensor '" + t.name + "' has dtype " + dtype_name(t.dtype) + ", not BF16");
  std::vector<uint16_t> out = copy_raw<uint16_t>(canonical);
  to_internal_rows(canonical, out.data(), out.size());
  return out;
}

template <typename Copy>
void Checkpoint::copy_out(const std::string& canonical, Copy copy) const {
  const TensorInfo& t = tensor(canonical);
  const SafetensorsFile& file = *files_[by_canonical_.at(canonical).file];
  const size_t n = static_cast<size_t>(t.numel()), elem = dtype_size(t.dtype);
  const size_t slice = std::max<size_t>(1, kCopySliceBytes / elem);
  for (size_t first = 0; first < n; first += slice) {
    const size_t count = std::min(slice, n - first);
    copy(first, count);
    file.release(t.data + first * elem, count * elem);
  }
}

template <typename T>
void Checkpoint::to_internal_rows(const std::string& canonical, T* data, size_t n) const {
  if (layout_ != CheckpointLayout::Mistral) return;  // Hugging Face files are already rotate-half
  if (auto rope = rope_rows(canonical, config_)) {
    const TensorInfo& t = tensor(canonical);
    const int64_t rows = int64_t(rope->n_heads) * rope->head_dim;
    check(!t.shape.empty() && t.shape[0] == rows, file_of(canonical).string(),
          "tensor '" + t.name + "' has " + (t.shape.empty() ? "no" : std::to_string(t.shape[0])) +
              " rows, expected " + std::to_string(rows) + " for the RoPE permutation");
    permute_rope_rows(data, rope->n_heads, rope->head_dim, n / static_cast<size_t>(rows), /*to_rotate_half=*/true);
  }
}

template <typename T>
void Checkpoint::to_mistral_rows(const std::string& canonical, T* data, size_t n) const {
  if (auto rope = rope_rows(canonical, config_)) {
    const size_t rows = static_cast<size_t>(rope->n_heads) * rope->head_dim;
    check(n % rows == 0, canonical, "not whole rows for the RoPE permutation");
    permute_rope_rows(data, rope->n_heads, rope->head_dim, n / rows, /*to_rotate_half=*/false);
  }
}
template void Checkpoint::to_mistral_rows(const std::string&, uint8_t*, size_t) const;
template void Checkpoint::to_mistral_rows(const std::string&, uint16_t*, size_t) const;
template void Checkpoint::to_mistral_rows(const std::string&, float*, size_t) const;

}  // namespace voxrt
