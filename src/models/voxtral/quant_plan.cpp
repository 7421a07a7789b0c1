#include "models/voxtral/quant_plan.h"

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "models/voxtral/tensor_names.h"

namespace voxrt {
namespace {

using tensor_names::kDecoderLayers;
using tensor_names::kEmbedding;
using tensor_names::kEncoderLayers;
using tensor_names::kLmHead;
using tensor_names::kTokEmbeddings;

enum class Component { None, Encoder, Decoder, Embedding, Head };

bool starts_with(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }
bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// "<prefix><layer>.<a linear layer's weight>"
bool is_layer_linear(const std::string& name, const std::string& prefix) {
  if (!starts_with(name, prefix)) return false;
  const size_t dot = name.find('.', prefix.size());
  if (dot == std::string::npos || dot == prefix.size()) return false;
  for (size_t i = prefix.size(); i < dot; ++i)
    if (name[i] < '0' || name[i] > '9') return false;
  const std::string rest = name.substr(dot + 1);
  for (const char* linear : {"attention.wq.weight", "attention.wk.weight", "attention.wv.weight", "attention.wo.weight",
                             "feed_forward.w1.weight", "feed_forward.w2.weight", "feed_forward.w3.weight"})
    if (rest == linear) return true;
  return false;
}

Component component_of(const std::string& name) {
  if (name == kTokEmbeddings) return Component::Embedding;
  if (name == kLmHead) return Component::Head;
  if (is_layer_linear(name, kEncoderLayers)) return Component::Encoder;
  if (name == kEmbedding + "audio_language_projection.0.weight" || name == kEmbedding + "audio_language_projection.2.weight")
    return Component::Encoder;
  if (is_layer_linear(name, kDecoderLayers)) return Component::Decoder;
  return Component::None;
}

QuantKind kind_of(WeightScheme s) {
  switch (s) {
    case WeightScheme::W4: return QuantKind::Int4;
    case WeightScheme::W8: return QuantKind::Int8;
    case WeightScheme::Fp8: return QuantKind::Fp8;
    case WeightScheme::None: break;
  }
  return QuantKind::None;
}

// A scheme and its group size (0: its default: 32 for 4w; for 8w `w8_default`, 0 being an output
// channel; fp8 has no other: a group given is refused by format_for).
WeightFormat format_of(WeightScheme s, int group, int w8_default) {
  WeightFormat f{kind_of(s), 0};
  if (f.kind == QuantKind::Int4) f.group_size = group ? group : 32;
  if (f.kind == QuantKind::Int8) f.group_size = group ? group : w8_default;
  if (f.kind == QuantKind::Fp8) f.group_size = group;
  return f;
}

// fp8 quantizes a product's activations too (W8A8); the token embedding is a lookup, with no
// activations to quantize, so it is not a format the embedding takes.
void check_embedding_format(const WeightFormat& embedding, const std::string& where) {
  check(embedding.kind != QuantKind::Fp8, where,
        "fp8 (W8A8) is a format for linear layers: the token embedding is a lookup, not a product (use 8w or 4w)");
}

std::string group_text(const WeightFormat& f) {
  if (f.kind == QuantKind::Int8 && f.group_size == 0) return "8w/channel";
  return format_name(f);
}

nlohmann::json format_json(const WeightFormat& f) {
  return {{"format", std::string(quant_kind_name(f.kind))}, {"group_size", f.group_size}};
}

WeightFormat format_from_json(const nlohmann::json& j, const char* component, const std::string& where) {
  const std::string field = std::string(kQuantMetadataKey) + "." + component;
  check(j.is_object(), where, field + ": expected an object with format and group_size");
  check(j.contains("format") && j["format"].is_string(), where, field + ".format: missing or not a string");
  check(j.contains("group_size") && j["group_size"].is_number_integer(), where,
        field + ".group_size: missing or not an integer");
  WeightFormat f;
  f.kind = parse_quant_kind(j["format"].get<std::string>(), where + ": " + field + ".format");
  const auto group = j["group_size"].get<int64_t>();
  check(group >= 0 && group <= (int64_t{1} << 30), where, field + ".group_size: " + std::to_string(group) + " out of range");
  f.group_size = f.quantized() ? static_cast<int>(group) : 0;
  // 0 is an output channel for 8w; otherwise the sizes the format takes (the dimension is checked
  // per tensor by format_for).
  if (f.kind == QuantKind::Int4 || (f.kind == QuantKind::Int8 && f.group_size != 0))
    check_group_size(f, f.group_size, where + ": " + field + ".group_size");
  check(f.kind != QuantKind::Fp8 || f.group_size == 0, where,
        field + ".group_size: fp8 takes one scale an output channel (0), not " + std::to_string(f.group_size));
  return f;
}

}  // namespace

// The engine checks the options (validate_quantization) before it loads; a group size a scheme does not take is
// refused again by format_for, naming the tensor.
QuantPlan QuantPlan::from_options(const WeightQuantization& q) {
  QuantPlan p;
  p.encoder = format_of(q.encoder, q.encoder_group_size, 0);
  p.decoder = format_of(q.linear, q.linear_group_size, 0);
  p.embedding = format_of(q.embedding, q.embedding_group_size, 128);
  check_embedding_format(p.embedding, "qembedding");
  p.head = p.decoder.quantized() ? p.decoder : p.embedding;
  p.method = q.method == QuantizationMethod::Rtn ? QuantMethod::Rtn : QuantMethod::Search;
  return p;
}

WeightFormat QuantPlan::format_for(const std::string& name, int64_t K) const {
  WeightFormat f;
  switch (component_of(name)) {
    case Component::Encoder: f = encoder; break;
    case Component::Decoder: f = decoder; break;
    case Component::Embedding: f = embedding; break;
    case Component::Head: f = head; break;
    case Component::None: return {};
  }
  if (!f.quantized()) return {};
  f = format_for_width(f, K);
  check_group_size(f, K, "tensor '" + name + "' (" + format_name(f) + ")");
  return f;
}

std::string QuantPlan::describe() const {
  return "encoder " + group_text(encoder) + ", decoder " + group_text(decoder) + ", embedding " + group_text(embedding) +
         ", LM head " + (head_untied() ? group_text(head) : std::string("tied"));
}

std::string QuantPlan::to_metadata() const {
  nlohmann::json j = {{"version", 1},
                      {"method", std::string(quant_method_name(method))},
                      {"encoder", format_json(encoder)},
                      {"decoder", format_json(decoder)},
                      {"embedding", format_json(embedding)},
                      {"head", format_json(head)}};
  return j.dump();
}

QuantPlan QuantPlan::from_metadata(const std::string& text, const std::string& where) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw Error(where + ": metadata " + kQuantMetadataKey + " is not valid JSON: " + e.what());
  }
  check(j.is_object(), where, std::string("metadata ") + kQuantMetadataKey + ": expected a JSON object");
  check(j.contains("version") && j["version"] == 1, where,
        std::string("metadata ") + kQuantMetadataKey + ".version: expected 1 (a file of another voxrt?)");
  QuantPlan p;
  if (j.contains("method") && j["method"].is_string())
    p.method = parse_quant_method(j["method"].get<std::string>(), where);
  for (const char* c : {"encoder", "decoder", "embedding"})
    check(j.contains(c), where, std::string("metadata ") + kQuantMetadataKey + "." + c + ": missing");
  p.encoder = format_from_json(j["encoder"], "encoder", where);
  p.decoder = format_from_json(j["decoder"], "decoder", where);
  p.embedding = format_from_json(j["embedding"], "embedding", where);
  check_embedding_format(p.embedding, where + ": " + kQuantMetadataKey + ".embedding.format");
  // Files written before the head was untied have none: their head is the embedding.
  p.head = j.contains("head") ? format_from_json(j["head"], "head", where) : p.embedding;
  return p;
}

DType packed_dtype(QuantKind kind) {
  if (kind == QuantKind::Int4) return DType::U8;
  return kind == QuantKind::Fp8 ? DType::F8_E4M3 : DType::I8;
}

std::string quant_scales_name(const std::string& weight_name) {
  return (ends_with(weight_name, ".weight") ? weight_name.substr(0, weight_name.size() - 7) : weight_name) + ".scales";
}

std::string quant_biases_name(const std::string& weight_name) {
  return (ends_with(weight_name, ".weight") ? weight_name.substr(0, weight_name.size() - 7) : weight_name) + ".biases";
}

}  // namespace voxrt
