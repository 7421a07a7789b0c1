// EngineOptions' names and rules (include/voxrt/engine_options.h): the one place they are written,
// for Engine::load and for the front ends that check their flags before loading.
#include "voxrt/engine_options.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <string>
#include <thread>
#include <utility>

#include "voxrt/error.h"

namespace voxrt {
namespace {

template <typename Enum, size_t N>
using Names = std::array<std::pair<Enum, std::string_view>, N>;

constexpr Names<Device, 3> kDevices{{{Device::Auto, "auto"}, {Device::Cuda, "cuda"}, {Device::Cpu, "cpu"}}};
constexpr Names<Layout, 3> kLayouts{{{Layout::Auto, "auto"}, {Layout::Mistral, "mistral"}, {Layout::Hf, "hf"}}};
constexpr Names<KvCacheFormat, 3> kKvCacheFormats{
    {{KvCacheFormat::Auto, "auto"}, {KvCacheFormat::Bf16, "bf16"}, {KvCacheFormat::Fp8, "fp8"}}};

constexpr Names<WeightScheme, 4> kWeightSchemes{
    {{WeightScheme::None, "none"}, {WeightScheme::W4, "4w"}, {WeightScheme::W8, "8w"}, {WeightScheme::Fp8, "fp8"}}};
constexpr Names<QuantizationMethod, 2> kQuantizationMethods{
    {{QuantizationMethod::Search, "search"}, {QuantizationMethod::Rtn, "rtn"}}};

// "auto, cuda or cpu"
template <typename Enum, size_t N>
std::string choices(const Names<Enum, N>& names) {
  std::string out;
  for (size_t i = 0; i < N; ++i) out += std::string(i == 0 ? "" : i + 1 == N ? " or " : ", ") + std::string(names[i].second);
  return out;
}

// A value outside the enum (a cast integer) is named by its number.
template <typename Enum, size_t N>
std::string_view name_of(const Names<Enum, N>& names, Enum value) {
  for (const auto& [e, name] : names)
    if (e == value) return name;
  return {};
}

template <typename Enum, size_t N>
Enum parse(const Names<Enum, N>& names, const char* field, std::string_view text) {
  for (const auto& [e, name] : names)
    if (name == text) return e;
  throw OptionError(field, " " + std::string(text) + ": expected " + choices(names));
}

template <typename Enum, size_t N>
void check_named(const Names<Enum, N>& names, const char* field, Enum value) {
  if (name_of(names, value).empty())
    throw OptionError(field, " " + std::to_string(static_cast<int>(value)) + ": expected " + choices(names));
}

std::string number(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", v);
  return text;
}

void check_gpus(const std::vector<int>& gpus) {
  for (int g : gpus) {
    if (g < 0) throw OptionError("gpus", ": device " + std::to_string(g) + ": expected an index, 0 or more");
    if (std::count(gpus.begin(), gpus.end(), g) > 1) throw OptionError("gpus", ": device " + std::to_string(g) + " given twice");
  }
}

void check_threads(int threads) {
  const int cpus = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  if (threads < 0 || threads > cpus)
    throw OptionError("threads", " " + std::to_string(threads) + ": expected 1 to " + std::to_string(cpus) +
                                     " (the CPUs this machine has)");
}

void check_memory(const EngineOptions& o) {
  if (!(o.max_memory_fraction >= 0 && o.max_memory_fraction <= 1))
    throw OptionError("max_memory_fraction", " " + number(o.max_memory_fraction) + ": expected 0 to 1");
  if (o.max_memory > 0 && o.max_memory_fraction > 0)
    throw OptionError("max_memory", " and max_memory_fraction both given: give one");
}

// A scheme's group size: 0 (its default) or what the scheme takes.
void check_group(WeightScheme scheme, int group, const char* field) {
  if (group == 0) return;
  if (scheme == WeightScheme::Fp8)
    throw OptionError(field, " " + std::to_string(group) + ": fp8 takes one scale an output channel, no group size");
  if (scheme == WeightScheme::W4 && group != 32 && group != 64 && group != 128)
    throw OptionError(field, " " + std::to_string(group) + ": 4w takes 32, 64 or 128");
  if (group < 0 || group % 32 != 0)
    throw OptionError(field, " " + std::to_string(group) + ": expected a multiple of 32 (0: the scheme's default)");
}

}  // namespace

std::string_view to_string(Device device) { return name_of(kDevices, device); }
std::string_view to_string(Layout layout) { return name_of(kLayouts, layout); }
std::string_view to_string(KvCacheFormat format) { return name_of(kKvCacheFormats, format); }

std::string_view to_string(WeightScheme scheme) { return name_of(kWeightSchemes, scheme); }
std::string_view to_string(QuantizationMethod method) { return name_of(kQuantizationMethods, method); }
WeightScheme parse_weight_scheme(std::string_view name, const char* field) { return parse(kWeightSchemes, field, name); }
QuantizationMethod parse_quantization_method(std::string_view name) {
  return parse(kQuantizationMethods, "quantization_method", name);
}

void validate_quantization(const WeightQuantization& q) {
  check_named(kWeightSchemes, "qlinear", q.linear);
  check_named(kWeightSchemes, "qlinear_encoder", q.encoder);
  check_named(kWeightSchemes, "qembedding", q.embedding);
  check_named(kQuantizationMethods, "quantization_method", q.method);
  // fp8 quantizes a product's activations (W8A8); the embedding is a lookup.
  if (q.embedding == WeightScheme::Fp8)
    throw OptionError("qembedding", " fp8: fp8 (W8A8) is a format for linear layers and the token embedding is a "
                                    "lookup, not a product: use 8w or 4w");
  check_group(q.linear, q.linear_group_size, "qlinear_group_size");
  check_group(q.encoder, q.encoder_group_size, "qlinear_encoder_group_size");
  check_group(q.embedding, q.embedding_group_size, "qembedding_group_size");
}

Device parse_device(std::string_view name) { return parse(kDevices, "device", name); }
Layout parse_layout(std::string_view name) { return parse(kLayouts, "layout", name); }
KvCacheFormat parse_kv_cache_format(std::string_view name) { return parse(kKvCacheFormats, "kv_cache", name); }

void validate(const EngineOptions& o) {
  check_named(kDevices, "device", o.device);
  check_named(kLayouts, "layout", o.layout);
  check_named(kKvCacheFormats, "kv_cache", o.kv_cache);
  if (o.kv_cache != KvCacheFormat::Auto && o.device == Device::Cpu)
    throw OptionError("kv_cache", " " + std::string(to_string(o.kv_cache)) +
                                      ": the key/value cache storage is a GPU option; the CPU keeps fp32 caches");
  if (o.gpu < 0) throw OptionError("gpu", " " + std::to_string(o.gpu) + ": expected a device index, 0 or more");
  check_gpus(o.gpus);
  check_threads(o.threads);
  if (o.draft_rows < 0 || o.draft_rows > EngineOptions::kMaxDraftRows)
    throw OptionError("draft_rows", " " + std::to_string(o.draft_rows) + ": expected 0 (automatic) to " +
                                        std::to_string(EngineOptions::kMaxDraftRows));
  if (o.max_sessions < 0)
    throw OptionError("max_sessions", " " + std::to_string(o.max_sessions) + ": expected 0 (no limit) or more");
  check_memory(o);
  if (!(o.max_session_seconds >= 0 && o.max_session_seconds <= EngineOptions::kMaxSessionSeconds))
    throw OptionError("max_session_seconds", " " + number(o.max_session_seconds) + ": expected 0 (no limit) to " +
                                                 std::to_string(static_cast<long>(EngineOptions::kMaxSessionSeconds)));
  validate_quantization(o.quantization);
  if (!(o.overload_wait_ms > 0))
    throw OptionError("overload_wait_ms", " " + number(o.overload_wait_ms) + ": expected more than 0");
}

}  // namespace voxrt
