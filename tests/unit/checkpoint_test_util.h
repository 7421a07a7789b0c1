// Helpers that build small fake Voxtral model directories for tests: a temporary directory, a tiny
// configuration, random weights, and writers for both checkpoint layouts. The Hugging Face names and
// the RoPE row order are produced here independently of src/models/voxtral/checkpoint.cpp, so the tests
// check the library against a second implementation rather than against itself.
#pragma once

#include <stdlib.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <initializer_list>
#include <map>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "common/error.h"
#include "models/voxtral/checkpoint.h"
#include "models/voxtral/config.h"
#include "safetensors/safetensors.h"
#include "temp_dir.h"

namespace voxrt::testutil {

namespace fs = std::filesystem;
using nlohmann::json;

// Runs f, which must throw voxrt::Error, and returns the message (a marker when nothing was thrown;
// any other exception escapes and fails the test).
inline std::string error_message(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "<no voxrt::Error thrown>";
}

// Expects f to throw voxrt::Error whose message names every one of parts (file, field, tensor...).
inline void expect_error(const std::function<void()>& f, std::initializer_list<std::string> parts) {
  const std::string message = error_message(f);
  for (const std::string& part : parts)
    EXPECT_NE(message.find(part), std::string::npos) << "message lacks \"" << part << "\": " << message;
}

inline void write_text(const fs::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  if (!out) throw std::runtime_error("cannot write " + path.string());
}

inline void write_bytes(const fs::path& path, const std::vector<uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  if (!out) throw std::runtime_error("cannot write " + path.string());
}

inline std::vector<uint8_t> read_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// A raw safetensors file from a header string and a data section, for malformed-input tests.
inline std::vector<uint8_t> raw_safetensors(const std::string& header, const std::vector<uint8_t>& data,
                                            uint64_t declared_header_len) {
  std::vector<uint8_t> out(8 + header.size() + data.size());
  for (int i = 0; i < 8; ++i) out[i] = static_cast<uint8_t>(declared_header_len >> (8 * i));
  std::copy(header.begin(), header.end(), out.begin() + 8);
  std::copy(data.begin(), data.end(), out.begin() + 8 + static_cast<std::ptrdiff_t>(header.size()));
  return out;
}
inline std::vector<uint8_t> raw_safetensors(const std::string& header, const std::vector<uint8_t>& data) {
  return raw_safetensors(header, data, header.size());
}

// The tiny model of the tests: every dimension distinct enough that a transposed or mis-sized
// tensor shows up as a shape error.
inline ModelConfig tiny_config() {
  ModelConfig c;
  c.encoder.dim = 16;
  c.encoder.n_layers = 1;
  c.encoder.n_heads = 2;
  c.encoder.n_kv_heads = 2;
  c.encoder.head_dim = 8;
  c.encoder.hidden_dim = 24;
  c.encoder.num_mel_bins = 12;
  c.decoder.dim = 16;
  c.decoder.n_layers = 1;
  c.decoder.n_heads = 4;
  c.decoder.n_kv_heads = 2;
  c.decoder.head_dim = 8;
  c.decoder.hidden_dim = 40;
  c.decoder.vocab_size = 1100;
  // t_cond_dim stays 32: config.json cannot express another value.
  return c;
}

inline json params_json_for(const ModelConfig& c) {
  const EncoderConfig& e = c.encoder;
  const DecoderConfig& d = c.decoder;
  json enc = {{"dim", e.dim},
              {"n_layers", e.n_layers},
              {"head_dim", e.head_dim},
              {"hidden_dim", e.hidden_dim},
              {"n_heads", e.n_heads},
              {"n_kv_heads", e.n_kv_heads},
              {"use_biases", true},
              {"rope_theta", e.rope_theta},
              {"norm_eps", e.norm_eps},
              {"sliding_window", e.sliding_window},
              {"audio_encoding_args",
               {{"sampling_rate", c.audio.sampling_rate},
                {"frame_rate", c.audio.frame_rate},
                {"num_mel_bins", e.num_mel_bins},
                {"hop_length", c.audio.hop_length},
                {"window_size", c.audio.window_size},
                {"chunk_length_s", nullptr},
                {"global_log_mel_max", c.audio.global_log_mel_max},
                {"transcription_format", "streaming"}}}};
  return {{"dim", d.dim},
          {"n_layers", d.n_layers},
          {"head_dim", d.head_dim},
          {"hidden_dim", d.hidden_dim},
          {"n_heads", d.n_heads},
          {"n_kv_heads", d.n_kv_heads},
          {"use_biases", false},
          {"rope_theta", d.rope_theta},
          {"norm_eps", d.norm_eps},
          {"vocab_size", d.vocab_size},
          {"tied_embeddings", d.tied_embeddings},
          {"sliding_window", d.sliding_window},
          {"model_max_length", d.max_position},
          {"multimodal",
           {{"whisper_model_args",
             {{"encoder_args", enc}, {"downsample_args", {{"downsample_factor", c.downsample_factor}}}}}}},
          {"ada_rms_norm_t_cond", true},
          {"ada_rms_norm_t_cond_dim", d.t_cond_dim}};
}

// config.json as transformers writes it. It cannot express t_cond_dim (fixed at 32 there).
inline json config_json_for(const ModelConfig& c) {
  const EncoderConfig& e = c.encoder;
  const DecoderConfig& d = c.decoder;
  return {{"architectures", {"VoxtralRealtimeForConditionalGeneration"}},
          {"model_type", "voxtral_realtime"},
          {"audio_config",
           {{"model_type", "voxtral_realtime_encoder"},
            {"hidden_size", e.dim},
            {"num_hidden_layers", e.n_layers},
            {"num_attention_heads", e.n_heads},
            {"head_dim", e.head_dim},
            {"intermediate_size", e.hidden_dim},
            {"rms_norm_eps", e.norm_eps},
            {"sliding_window", e.sliding_window},
            {"num_mel_bins", e.num_mel_bins},
            {"max_position_embeddings", 1500},
            {"rope_parameters", {{"rope_theta", e.rope_theta}, {"rope_type", "default"}}}}},
          {"text_config",
           {{"model_type", "voxtral_realtime_text"},
            {"hidden_size", d.dim},
            {"num_hidden_layers", d.n_layers},
            {"num_attention_heads", d.n_heads},
            {"num_key_value_heads", d.n_kv_heads},
            {"head_dim", d.head_dim},
            {"intermediate_size", d.hidden_dim},
            {"rms_norm_eps", d.norm_eps},
            {"vocab_size", d.vocab_size},
            {"sliding_window", d.sliding_window},
            {"max_position_embeddings", d.max_position},
            {"tie_word_embeddings", true},
            {"rope_parameters", {{"rope_theta", d.rope_theta}, {"rope_type", "default"}}}}},
          {"downsample_factor", c.downsample_factor},
          {"audio_length_per_tok", 2 * c.downsample_factor},
          {"default_num_delay_tokens", 6},
          {"projector_hidden_act", "gelu"}};
}

// Random weights keyed by canonical name, in voxrt's internal (rotate-half) layout. Values are
// exactly representable in bf16 so every dtype round-trips without rounding.
using Weights = std::map<std::string, std::pair<std::vector<int64_t>, std::vector<float>>>;
inline Weights random_weights(const ModelConfig& c, uint32_t seed = 1) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  Weights w;
  for (const auto& [name, shape] : expected_tensors(c)) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    std::vector<float> v(static_cast<size_t>(n));
    for (float& x : v) {
      uint32_t bits;
      float f = dist(rng);
      std::memcpy(&bits, &f, 4);
      bits &= 0xffff0000u;  // truncate to bf16
      std::memcpy(&x, &bits, 4);
    }
    w[name] = {shape, std::move(v)};
  }
  return w;
}

inline std::vector<uint8_t> encode(const std::vector<float>& v, DType dtype) {
  std::vector<uint8_t> out;
  if (dtype == DType::F32) {
    out.resize(v.size() * 4);
    std::memcpy(out.data(), v.data(), out.size());
    return out;
  }
  if (dtype != DType::BF16) throw std::runtime_error("encode: only F32 and BF16 (values are bf16-exact)");
  out.resize(v.size() * 2);
  for (size_t i = 0; i < v.size(); ++i) {
    uint32_t bits;
    std::memcpy(&bits, &v[i], 4);
    const uint16_t h = static_cast<uint16_t>(bits >> 16);
    std::memcpy(out.data() + 2 * i, &h, 2);
  }
  return out;
}

// Rotate-half rows -> Mistral's interleaved rows, per head: Mistral row h*hd + 2i + j holds the
// rotate-half row h*hd + j*hd/2 + i.
inline std::vector<float> to_interleaved(const std::vector<float>& v, int n_heads, int head_dim) {
  const size_t rows = size_t(n_heads) * head_dim, cols = v.size() / rows, half = head_dim / 2;
  std::vector<float> out(v.size());
  for (size_t h = 0; h < size_t(n_heads); ++h)
    for (size_t i = 0; i < half; ++i)
      for (size_t j = 0; j < 2; ++j) {
        const size_t mistral_row = h * head_dim + 2 * i + j, hf_row = h * head_dim + j * half + i;
        std::copy_n(v.begin() + hf_row * cols, cols, out.begin() + mistral_row * cols);
      }
  return out;
}

// Heads of a q/k projection that Mistral stores interleaved, or 0 for any other tensor.
inline int rope_heads(const std::string& name, const ModelConfig& c, int* head_dim) {
  const std::string enc = "mm_streams_embeddings.embedding_module.whisper_encoder.transformer.layers.";
  auto ends_with = [&](const char* suffix) {
    const std::string s(suffix);
    return name.size() >= s.size() && name.compare(name.size() - s.size(), s.size(), s) == 0;
  };
  if (name.rfind(enc, 0) == 0) {
    *head_dim = c.encoder.head_dim;
    if (ends_with(".attention.wq.weight") || ends_with(".attention.wq.bias")) return c.encoder.n_heads;
    if (ends_with(".attention.wk.weight")) return c.encoder.n_kv_heads;
    return 0;
  }
  if (name.rfind("layers.", 0) == 0) {
    *head_dim = c.decoder.head_dim;
    if (ends_with(".attention.wq.weight")) return c.decoder.n_heads;
    if (ends_with(".attention.wk.weight")) return c.decoder.n_kv_heads;
  }
  return 0;
}

// The Hugging Face name of a canonical tensor, as transformers' conversion script writes it
// (prefix "language_model.model." style) or as the model's state dict spells it ("model." style).
inline std::string hf_name(const std::string& canonical, bool model_prefix) {
  static const std::vector<std::pair<std::string, std::string>> kRules = {
      // canonical fragment -> HF fragment, applied in order, first match per fragment
      {"mm_streams_embeddings.embedding_module.tok_embeddings.weight", "@LM.embed_tokens.weight"},
      {"mm_streams_embeddings.embedding_module.audio_language_projection.0.", "@MM.linear_1."},
      {"mm_streams_embeddings.embedding_module.audio_language_projection.2.", "@MM.linear_2."},
      {"mm_streams_embeddings.embedding_module.whisper_encoder.conv_layers.0.conv.", "@AT.embedder.conv1."},
      {"mm_streams_embeddings.embedding_module.whisper_encoder.conv_layers.1.conv.", "@AT.embedder.conv2."},
      {"mm_streams_embeddings.embedding_module.whisper_encoder.transformer.norm.", "@AT.norm."},
      {"mm_streams_embeddings.embedding_module.whisper_encoder.transformer.layers.", "@AT.layers."},
      {"layers.", "@LM.layers."},
      {"norm.weight", "@LM.norm.weight"},
  };
  static const std::vector<std::pair<std::string, std::string>> kLayerRules = {
      {".attention.wq.", ".self_attn.q_proj."},
      {".attention.wk.", ".self_attn.k_proj."},
      {".attention.wv.", ".self_attn.v_proj."},
      {".attention.wo.", ".self_attn.o_proj."},
      {".feed_forward.w1.", ".mlp.gate_proj."},
      {".feed_forward.w3.", ".mlp.up_proj."},
      {".feed_forward.w2.", ".mlp.down_proj."},
      {".ada_rms_norm_t_cond.0.", ".ada_rms_norm.linear1."},
      {".ada_rms_norm_t_cond.2.", ".ada_rms_norm.linear2."},
  };
  std::string out;
  for (const auto& [from, to] : kRules)
    if (canonical.rfind(from, 0) == 0) {
      out = to + canonical.substr(from.size());
      break;
    }
  if (out.empty()) throw std::runtime_error("hf_name: no rule for " + canonical);
  for (const auto& [from, to] : kLayerRules) {
    const size_t at = out.find(from);
    if (at != std::string::npos) out.replace(at, from.size(), to);
  }
  const bool encoder = out.rfind("@AT.", 0) == 0;
  for (const auto& [from, to] : std::vector<std::pair<std::string, std::string>>{
           {".attention_norm.", encoder ? ".self_attn_layer_norm." : ".input_layernorm."},
           {".ffn_norm.", encoder ? ".final_layer_norm." : ".post_attention_layernorm."}}) {
    const size_t at = out.find(from);
    if (at != std::string::npos) out.replace(at, from.size(), to);
  }
  const std::string lm = model_prefix ? "model.language_model." : "language_model.model.";
  const std::string other = model_prefix ? "model." : "";
  if (out.rfind("@LM.", 0) == 0) return lm + out.substr(4);
  if (out.rfind("@AT.", 0) == 0) return other + "audio_tower." + out.substr(4);
  return other + "multi_modal_projector." + out.substr(4);
}

// params.json + consolidated.safetensors, with q/k rows permuted to Mistral's interleaved order.
inline void write_mistral_dir(const fs::path& dir, const ModelConfig& c, const Weights& w,
                              DType dtype = DType::BF16) {
  write_text(dir / "params.json", params_json_for(c).dump(2));
  std::vector<TensorToWrite> tensors;
  for (const auto& [name, sv] : w) {
    int hd = 0;
    const int heads = rope_heads(name, c, &hd);
    tensors.push_back({name, dtype, sv.first, encode(heads ? to_interleaved(sv.second, heads, hd) : sv.second, dtype)});
  }
  write_safetensors(dir / "consolidated.safetensors", tensors, {{"format", "pt"}});
}

// config.json + model.safetensors (n_shards == 1) or n_shards shards with an index. The tied
// lm_head is written too, as transformers does, to check that it is ignored.
inline void write_hf_dir(const fs::path& dir, const ModelConfig& c, const Weights& w, DType dtype = DType::BF16,
                         int n_shards = 1, bool model_prefix = false) {
  write_text(dir / "config.json", config_json_for(c).dump(2));
  std::vector<std::vector<TensorToWrite>> shards(n_shards);
  size_t k = 0;
  for (const auto& [name, sv] : w)
    shards[k++ % n_shards].push_back({hf_name(name, model_prefix), dtype, sv.first, encode(sv.second, dtype)});
  const auto& emb = w.at("mm_streams_embeddings.embedding_module.tok_embeddings.weight");
  shards[0].push_back({model_prefix ? "lm_head.weight" : "language_model.lm_head.weight", dtype, emb.first,
                       encode(emb.second, dtype)});
  if (n_shards == 1) {
    write_safetensors(dir / "model.safetensors", shards[0], {{"format", "pt"}});
    return;
  }
  json index = {{"metadata", {{"total_size", 0}}}, {"weight_map", json::object()}};
  for (int s = 0; s < n_shards; ++s) {
    char file[64];
    std::snprintf(file, sizeof file, "model-%05d-of-%05d.safetensors", s + 1, n_shards);
    write_safetensors(dir / file, shards[s], {{"format", "pt"}});
    for (const auto& t : shards[s]) index["weight_map"][t.name] = file;
  }
  write_text(dir / "model.safetensors.index.json", index.dump(2));
}

}  // namespace voxrt::testutil
