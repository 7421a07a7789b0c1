// Reading the model configuration: params.json (Mistral layout), config.json (Hugging Face layout)
// and model.safetensors.index.json. Every value is type- and range-checked; messages name the file
// and the dotted JSON path of the field ("params.json: field multimodal.whisper_model_args.
// encoder_args.dim: expected an integer, got string").
//
// sliding_window: Mistral and Hugging Face both read "absent" or null as "no window". The model this
// engine serves always states its windows, and an unbounded decoder window would size a 13 GB cache,
// so absent or null keeps the default of config.h (8192 decoder tokens, 750 encoder frames).
#include <cmath>
#include <fstream>
#include <limits>
#include <sstream>

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "models/voxtral/checkpoint.h"

namespace voxrt {
namespace {

using nlohmann::json;

json read_json_file(const std::filesystem::path& path) {
  const std::string where = path.string();
  std::ifstream in(path, std::ios::binary);
  check(static_cast<bool>(in), where, "cannot open file");
  std::error_code ec;
  const uintmax_t size = std::filesystem::file_size(path, ec);
  check(ec || size <= kMaxJsonFileBytes, where,
        "file is " + std::to_string(size) + " bytes, over the " + std::to_string(kMaxJsonFileBytes) + "-byte limit");
  std::stringstream text;
  text << in.rdbuf();
  json root;
  try {
    root = json::parse(text.str());
  } catch (const json::exception& e) {
    throw Error(where + ": not valid JSON: " + e.what());
  }
  check(root.is_object(), where, std::string("expected a JSON object, got ") + root.type_name());
  return root;
}

// Typed access to the fields of one JSON document by dotted path. Absent and null are the same:
// optional fields fall back to their default, required ones throw "missing field".
class Fields {
 public:
  Fields(const std::filesystem::path& file, json root) : where_(file.string()), root_(std::move(root)) {}

  const std::string& where() const { return where_; }

  const json* find(const std::string& path) const {
    const json* node = &root_;
    size_t start = 0;
    while (true) {
      const size_t dot = path.find('.', start);
      const std::string key = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
      if (!node->is_object())
        fail(path.substr(0, start ? start - 1 : 0), std::string("expected an object, got ") + node->type_name());
      auto it = node->find(key);
      if (it == node->end() || it->is_null()) return nullptr;
      node = &*it;
      if (dot == std::string::npos) return node;
      start = dot + 1;
    }
  }
  bool has(const std::string& path) const { return find(path) != nullptr; }

  // Sizes: integers that must be >= 1.
  int size(const std::string& path) const { return checked_size(path, require(path)); }
  int size(const std::string& path, int fallback) const {
    const json* v = find(path);
    return v ? checked_size(path, *v) : fallback;
  }
  // The first of several spellings of one field that is present, else the fallback.
  int size(std::initializer_list<const char*> paths, int fallback) const {
    for (const char* p : paths)
      if (has(p)) return size(p);
    return fallback;
  }

  // Strictly positive real numbers (eps, theta, rates).
  double positive(const std::string& path) const { return checked_positive(path, require(path)); }
  double positive(const std::string& path, double fallback) const {
    const json* v = find(path);
    return v ? checked_positive(path, *v) : fallback;
  }
  double positive(std::initializer_list<const char*> paths, double fallback) const {
    for (const char* p : paths)
      if (has(p)) return positive(p);
    return fallback;
  }

  double number(const std::string& path, double fallback) const {
    const json* v = find(path);
    return v ? checked_number(path, *v) : fallback;
  }

  bool boolean(const std::string& path, bool fallback) const {
    const json* v = find(path);
    if (!v) return fallback;
    if (!v->is_boolean()) fail(path, std::string("expected a boolean, got ") + v->type_name());
    return v->get<bool>();
  }

  // params.json sometimes spells the window as a string ("8192"), as transformers' converter notes.
  int window(const std::string& path, int fallback) const {
    const json* v = find(path);
    if (!v) return fallback;
    if (!v->is_string()) return checked_size(path, *v);
    const std::string& s = v->get_ref<const std::string&>();
    if (s.empty() || s.size() > 9 || s.find_first_not_of("0123456789") != std::string::npos || std::stoi(s) < 1)
      fail(path, "expected a positive integer, got string \"" + s + "\"");
    return std::stoi(s);
  }

  [[noreturn]] void fail(const std::string& path, const std::string& what) const {
    throw Error(where_ + ": field " + path + ": " + what);
  }

 private:
  const json& require(const std::string& path) const {
    const json* v = find(path);
    if (!v) throw Error(where_ + ": missing field " + path);
    return *v;
  }
  int checked_size(const std::string& path, const json& v) const {
    if (!v.is_number_integer()) fail(path, std::string("expected an integer, got ") + v.type_name());
    // Unsigned values above INT64_MAX read back negative here and are rejected with the rest.
    const int64_t x = v.is_number_unsigned() && v.get<uint64_t>() > uint64_t(INT64_MAX) ? -1 : v.get<int64_t>();
    if (x < 1 || x > std::numeric_limits<int>::max())
      fail(path, "expected a positive integer below 2^31, got " + v.dump());
    return static_cast<int>(x);
  }
  double checked_number(const std::string& path, const json& v) const {
    if (!v.is_number()) fail(path, std::string("expected a number, got ") + v.type_name());
    return v.get<double>();
  }
  double checked_positive(const std::string& path, const json& v) const {
    const double x = checked_number(path, v);
    if (!(x > 0) || !std::isfinite(x)) fail(path, "expected a positive number, got " + v.dump());
    return x;
  }

  std::string where_;
  json root_;
};

// Attention shapes every layer relies on: GQA groups must divide evenly, RoPE rotates pairs.
void check_attention(const std::string& where, const char* block, int n_heads, int n_kv_heads, int head_dim) {
  check(n_heads % n_kv_heads == 0, where,
        std::string(block) + ": " + std::to_string(n_heads) + " attention heads are not divisible by " +
            std::to_string(n_kv_heads) + " key/value heads");
  check(head_dim % 2 == 0, where,
        std::string(block) + ": head_dim " + std::to_string(head_dim) + " is odd (RoPE rotates pairs)");
}

// One decoder step consumes hop_length * 2 (the conv stride) * downsample_factor samples
// (ModelConfig::samples_per_position), an int wherever the engine counts audio: sizes that each fit an int
// may multiply past it (2 * downsample_factor alone overflowed for 2^30).
void check_step(const Fields& f, const ModelConfig& c, const std::string& downsample_path) {
  const int64_t step = int64_t{c.audio.hop_length} * 2 * c.downsample_factor;
  if (step > std::numeric_limits<int>::max())
    f.fail(downsample_path, "hop_length " + std::to_string(c.audio.hop_length) + " * 2 * downsample_factor " +
                                std::to_string(c.downsample_factor) + " = " + std::to_string(step) +
                                " samples a decoder step, over 2^31 - 1");
}

constexpr const char* kTiedWhy = "Voxtral Realtime ties the LM head to the token embedding";
constexpr const char* kTCondWhy = "Voxtral Realtime needs the delay conditioning";

// A feature flag this engine cannot do without: rejecting the file beats producing wrong text.
void require_true(const Fields& f, const std::string& path, bool value, const char* why) {
  if (!value) f.fail(path, std::string("false is not supported (") + why + ")");
}

}  // namespace

ModelConfig parse_params_json(const std::filesystem::path& params_json) {
  const Fields f(params_json, read_json_file(params_json));
  ModelConfig c;

  DecoderConfig& d = c.decoder;
  d.dim = f.size("dim");
  d.n_layers = f.size("n_layers");
  d.head_dim = f.size("head_dim");
  d.hidden_dim = f.size("hidden_dim");
  d.n_heads = f.size("n_heads");
  d.n_kv_heads = f.size("n_kv_heads");
  d.rope_theta = f.positive("rope_theta");
  d.norm_eps = f.positive("norm_eps");
  d.vocab_size = f.size("vocab_size");
  d.tied_embeddings = f.boolean("tied_embeddings", true);
  d.sliding_window = f.window("sliding_window", d.sliding_window);
  d.max_position = f.size({"model_max_length", "max_seq_len"}, d.max_position);
  d.t_cond_dim = f.size("ada_rms_norm_t_cond_dim", d.t_cond_dim);
  require_true(f, "tied_embeddings", d.tied_embeddings, kTiedWhy);
  require_true(f, "ada_rms_norm_t_cond", f.boolean("ada_rms_norm_t_cond", true), kTCondWhy);
  check_attention(f.where(), "decoder", d.n_heads, d.n_kv_heads, d.head_dim);

  const std::string enc = "multimodal.whisper_model_args.encoder_args.";
  EncoderConfig& e = c.encoder;
  e.dim = f.size(enc + "dim");
  e.n_layers = f.size(enc + "n_layers");
  e.n_heads = f.size(enc + "n_heads");
  e.head_dim = f.size(enc + "head_dim");
  e.hidden_dim = f.size(enc + "hidden_dim");
  e.n_kv_heads = f.size(enc + "n_kv_heads", e.n_heads);
  e.rope_theta = f.positive(enc + "rope_theta");
  e.norm_eps = f.positive(enc + "norm_eps");
  e.sliding_window = f.window(enc + "sliding_window", e.sliding_window);
  check_attention(f.where(), "encoder", e.n_heads, e.n_kv_heads, e.head_dim);

  const std::string audio = enc + "audio_encoding_args.";
  AudioConfig& a = c.audio;
  a.sampling_rate = f.size(audio + "sampling_rate", a.sampling_rate);
  a.frame_rate = f.positive(audio + "frame_rate", a.frame_rate);
  e.num_mel_bins = f.size(audio + "num_mel_bins", e.num_mel_bins);
  a.hop_length = f.size(audio + "hop_length", a.hop_length);
  a.window_size = f.size(audio + "window_size", a.window_size);
  a.global_log_mel_max = f.number(audio + "global_log_mel_max", a.global_log_mel_max);  // a log, may be < 0
  c.downsample_factor = f.size("multimodal.whisper_model_args.downsample_args.downsample_factor", c.downsample_factor);
  check_step(f, c, "multimodal.whisper_model_args.downsample_args.downsample_factor");

  // One decoder step is hop * 2 (conv stride) * downsample samples; frame_rate must agree.
  const double step_rate = double(a.sampling_rate) / (double(a.hop_length) * 2.0 * c.downsample_factor);
  if (std::abs(step_rate - a.frame_rate) > 1e-6 * a.frame_rate)
    f.fail(audio + "frame_rate", "value " + std::to_string(a.frame_rate) + " does not match sampling_rate / " +
                                     "(hop_length * 2 * downsample_factor) = " + std::to_string(step_rate));
  return c;
}

ModelConfig parse_config_json(const std::filesystem::path& config_json) {
  // Missing fields take the defaults transformers' VoxtralRealtimeConfig fills in, which are those
  // of config.h; only the names differ.
  const Fields f(config_json, read_json_file(config_json));
  ModelConfig c;

  DecoderConfig& d = c.decoder;
  d.dim = f.size("text_config.hidden_size", d.dim);
  d.n_layers = f.size("text_config.num_hidden_layers", d.n_layers);
  d.n_heads = f.size("text_config.num_attention_heads", d.n_heads);
  d.n_kv_heads = f.size("text_config.num_key_value_heads", d.n_kv_heads);
  d.head_dim = f.size("text_config.head_dim", d.head_dim);
  d.hidden_dim = f.size("text_config.intermediate_size", d.hidden_dim);
  d.norm_eps = f.positive("text_config.rms_norm_eps", d.norm_eps);
  d.vocab_size = f.size("text_config.vocab_size", d.vocab_size);
  d.sliding_window = f.window("text_config.sliding_window", d.sliding_window);
  d.max_position = f.size("text_config.max_position_embeddings", d.max_position);
  d.rope_theta = f.positive({"text_config.rope_parameters.rope_theta", "text_config.rope_theta"}, d.rope_theta);
  d.tied_embeddings = f.boolean("text_config.tie_word_embeddings", true);
  require_true(f, "text_config.tie_word_embeddings", d.tied_embeddings, kTiedWhy);
  check_attention(f.where(), "text_config", d.n_heads, d.n_kv_heads, d.head_dim);
  // d.t_cond_dim: fixed at 32 in transformers' VoxtralRealtimeTextConfig, not stored in config.json.

  EncoderConfig& e = c.encoder;
  e.dim = f.size("audio_config.hidden_size", e.dim);
  e.n_layers = f.size({"audio_config.num_hidden_layers", "audio_config.encoder_layers"}, e.n_layers);
  e.n_heads = f.size({"audio_config.num_attention_heads", "audio_config.encoder_attention_heads"}, e.n_heads);
  e.n_kv_heads = f.size("audio_config.num_key_value_heads", e.n_heads);
  e.head_dim = f.size("audio_config.head_dim", e.head_dim);
  e.hidden_dim = f.size({"audio_config.intermediate_size", "audio_config.encoder_ffn_dim"}, e.hidden_dim);
  e.norm_eps = f.positive("audio_config.rms_norm_eps", e.norm_eps);
  e.sliding_window = f.window("audio_config.sliding_window", e.sliding_window);
  e.num_mel_bins = f.size("audio_config.num_mel_bins", e.num_mel_bins);
  e.rope_theta = f.positive({"audio_config.rope_parameters.rope_theta", "audio_config.rope_theta"}, e.rope_theta);
  check_attention(f.where(), "audio_config", e.n_heads, e.n_kv_heads, e.head_dim);

  c.downsample_factor = f.size("downsample_factor", c.downsample_factor);
  check_step(f, c, "downsample_factor");  // hop_length is not in config.json: 160
  // audio_length_per_tok counts mel frames per decoder step: conv stride 2 times the downsampling.
  const int per_tok = f.size("audio_length_per_tok", 2 * c.downsample_factor);
  if (per_tok != 2 * c.downsample_factor)
    f.fail("audio_length_per_tok", "value " + std::to_string(per_tok) + " does not match 2 * downsample_factor = " +
                                       std::to_string(2 * c.downsample_factor));
  f.size("default_num_delay_tokens", 6);  // type-checked only; the delay is chosen per session
  return c;
}

std::map<std::string, std::string> parse_safetensors_index(const std::filesystem::path& index_json) {
  const std::string where = index_json.string();
  const json root = read_json_file(index_json);
  auto it = root.find("weight_map");
  check(it != root.end(), where, "missing field weight_map");
  check(it->is_object(), where, std::string("field weight_map: expected an object, got ") + it->type_name());
  std::map<std::string, std::string> out;
  for (const auto& [name, file] : it->items()) {
    check(file.is_string(), where, "weight_map entry '" + name + "': expected a file name, got " + file.type_name());
    const std::string& f = file.get_ref<const std::string&>();
    // Shards are siblings of the index; a path could reach outside the model directory.
    check(!f.empty() && f != "." && f != ".." && f.find_first_of("/\\") == std::string::npos, where,
          "weight_map entry '" + name + "': shard '" + f + "' is not a plain file name");
    out[name] = f;
  }
  return out;
}

}  // namespace voxrt
