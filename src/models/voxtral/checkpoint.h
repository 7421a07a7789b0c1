// Opens an official Voxtral Realtime model directory in either layout (docs/model.md §6, §7):
//   Mistral:      params.json + consolidated.safetensors (+ tekken.json)
//   Hugging Face: config.json + model.safetensors, or model-0000N-of-0000M.safetensors with
//                 model.safetensors.index.json (+ tekken.json)
// Tensors are addressed by their canonical (Mistral) names, e.g. "layers.3.attention.wq.weight" or
// "mm_streams_embeddings.embedding_module.whisper_encoder.transformer.layers.0.attention.wq.bias".
// Every expected tensor is checked for presence, dtype (BF16/F16/F32) and shape when the checkpoint
// is opened, so a broken directory fails at once with a message naming file and tensor.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "models/voxtral/config.h"
#include "models/voxtral/quant_plan.h"
#include "quant/weight_format.h"
#include "safetensors/safetensors.h"

namespace voxrt {

// The model_type of a Hugging Face config.json of Voxtral Realtime (transformers'
// VoxtralRealtimeConfig): how a directory says it is this family's.
inline constexpr const char* kVoxtralModelType = "voxtral_realtime";
// The largest JSON file of a model directory that is read: real configuration files are a few KB
// (a shard index ~100 KB); a huge one is not worth reading.
inline constexpr uintmax_t kMaxJsonFileBytes = 64u << 20;

enum class CheckpointLayout { Mistral, HuggingFace };
enum class LayoutPreference { Auto, Mistral, HuggingFace };

// Canonical tensor names and shapes the model needs for this configuration, in order: all of them,
// or one at a time to `add` (which may stop the walk by throwing).
std::vector<std::pair<std::string, std::vector<int64_t>>> expected_tensors(const ModelConfig& config);
void for_each_expected_tensor(const ModelConfig& config,
                              const std::function<void(const std::string&, const std::vector<int64_t>&)>& add);

// Parse the configuration files alone (also used by tests on malformed JSON).
ModelConfig parse_params_json(const std::filesystem::path& params_json);  // Mistral layout
ModelConfig parse_config_json(const std::filesystem::path& config_json);  // Hugging Face layout
// The weight_map of a sharded Hugging Face checkpoint (model.safetensors.index.json): tensor name ->
// shard file name (a bare file name inside the model directory; anything else is rejected).
std::map<std::string, std::string> parse_safetensors_index(const std::filesystem::path& index_json);

// Maps a Hugging Face tensor name to its canonical (Mistral) name; "" when it is not a model weight
// that voxrt uses (e.g. the tied lm_head).
std::string canonical_name_from_hf(const std::string& hf_name);

class Checkpoint {
 public:
  static Checkpoint open(const std::filesystem::path& dir, LayoutPreference pref = LayoutPreference::Auto);

  const ModelConfig& config() const { return config_; }
  CheckpointLayout layout() const { return layout_; }
  const std::filesystem::path& dir() const { return dir_; }

  bool has(const std::string& canonical) const;
  const TensorInfo& tensor(const std::string& canonical) const;  // throws if absent
  // The file that holds it, for error messages.
  const std::filesystem::path& file_of(const std::string& canonical) const;

  // Loading copies a tensor out of the mapped file slice by slice and releases each slice's pages
  // once copied (SafetensorsFile::release): while a model loads, the process holds the weights it
  // made and one slice of the file, not the whole file (8.86 GB for the full-size checkpoint).
  //
  // The tensor converted to f32 in voxrt's internal layout: q/k projection weights (and the
  // encoder's q bias) use the "rotate half" RoPE pairing (i, i + head_dim/2), i.e. the Hugging Face
  // layout; Mistral-layout tensors are permuted on the way. Row-major, shape as tensor().shape.
  std::vector<float> load_f32(const std::string& canonical) const;
  // Whether the tensor is stored as BF16 (load_bf16 can give it without a conversion).
  bool stored_as_bf16(const std::string& canonical) const;
  // The raw bf16 bits of a tensor stored as BF16, in the same internal layout as load_f32 (RoPE
  // rows permuted the same way); bits << 16 is exactly load_f32's value. Throws for other dtypes.
  std::vector<uint16_t> load_bf16(const std::string& canonical) const;

  // Quantized weights (a directory `voxrt quantize` wrote): the plan its metadata holds (nothing
  // quantized for an official checkpoint), the format a tensor is stored in, and a quantized
  // tensor with its scales and biases, rows in the internal order as load_f32's.
  const QuantPlan& stored_quantization() const { return stored_plan_; }
  WeightFormat stored_format(const std::string& canonical) const;
  QuantizedMatrix load_quantized(const std::string& canonical) const;
  // Rows of a tensor in the internal order (n elements, whole rows) put back in the Mistral
  // layout's order (the q/k projections' interleaved RoPE pairs; other tensors are left alone), for
  // writing a Mistral-layout file. T: uint8_t, uint16_t or float.
  template <typename T>
  void to_mistral_rows(const std::string& canonical, T* data, size_t n) const;

 private:
  void add_tensor(const std::string& canonical, const TensorInfo* info, size_t file);
  // Calls copy(first, count) over the tensor's elements in slices of kCopySliceBytes, releasing
  // each slice's mapped pages after its copy.
  template <typename Copy>
  void copy_out(const std::string& canonical, Copy copy) const;
  static constexpr size_t kCopySliceBytes = size_t{32} << 20;
  // Mistral-layout q/k rows into the internal (rotate-half) order, in place.
  template <typename T>
  void to_internal_rows(const std::string& canonical, T* data, size_t n) const;
  void open_shards();
  void validate(const std::string& config_file) const;
  // A quantized tensor's packed values, scales and biases against the expected shape [N, K].
  void validate_quantized(const std::string& name, const std::vector<int64_t>& shape, const WeightFormat& f) const;
  void read_stored_plan();
  template <typename T>
  std::vector<T> copy_raw(const std::string& canonical) const;

  std::filesystem::path dir_;
  ModelConfig config_;
  CheckpointLayout layout_ = CheckpointLayout::Mistral;
  std::vector<std::unique_ptr<SafetensorsFile>> files_;
  struct Entry { const TensorInfo* info; size_t file; };
  std::unordered_map<std::string, Entry> by_canonical_;
  QuantPlan stored_plan_;
};

}  // namespace voxrt
