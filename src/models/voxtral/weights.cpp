#include "models/voxtral/weights.h"

#include <string>

#include "common/error.h"
#include "models/voxtral/tensor_names.h"
#include "quant/quantizer.h"

namespace voxrt {
namespace {

const std::string& kEmbed = tensor_names::kEmbedding;
const std::string& kEnc = tensor_names::kEncoder;

class Loader {
 public:
  Loader(const Checkpoint& ckpt, Backend& backend, const QuantPlan& quantize)
      : ckpt_(ckpt), backend_(backend), quantize_(quantize) {}

  // A matrix [rows, cols] (or a vector, uploaded as [n, 1]); quantized as stored, or as the plan
  // asks for the tensor `as` (the LM head is quantized from the embedding's values).
  Weight get(const std::string& name) { return get(name, name); }
  Weight get(const std::string& name, const std::string& as) {
    if (ckpt_.stored_format(name).quantized()) return backend_.upload_quantized(ckpt_.load_quantized(name));
    const TensorInfo& t = ckpt_.tensor(name);
    const int rows = static_cast<int>(t.shape[0]);
    const int cols = t.shape.size() > 1 ? static_cast<int>(t.numel() / rows) : 1;
    if (t.shape.size() == 2) {
      const WeightFormat f = quantize_.format_for(as, cols);
      if (f.quantized()) {
        const std::vector<float> values = ckpt_.load_f32(name);
        return backend_.upload_quantized(quantize(values.data(), rows, cols, f, quantize_.method));
      }
    }
    // A backend that stores bf16 matrices takes a BF16 checkpoint's bits as they are: no fp32
    // round trip (twice the bytes, written and read again) on the way to the device.
    if (cols > 1 && backend_.weight_element_bytes() == 2 && ckpt_.stored_as_bf16(name))
      return backend_.upload_weight_bf16(ckpt_.load_bf16(name), rows, cols);
    return backend_.upload_weight(ckpt_.load_f32(name), rows, cols);
  }

  // Conv1d weight [out, in, 3] rearranged to [out, 3 * in] with column k * in + c, so that the
  // convolution is a product with im2col patches laid out [x(t), x(t+1), x(t+2)].
  Weight conv(const std::string& name) {
    const TensorInfo& t = ckpt_.tensor(name);
    const int out = static_cast<int>(t.shape[0]), in = static_cast<int>(t.shape[1]), k = static_cast<int>(t.shape[2]);
    const std::vector<float> w = ckpt_.load_f32(name);
    std::vector<float> r(w.size());
    for (int o = 0; o < out; ++o)
      for (int c = 0; c < in; ++c)
        for (int j = 0; j < k; ++j) r[(static_cast<size_t>(o) * k + j) * in + c] = w[(static_cast<size_t>(o) * in + c) * k + j];
    return backend_.upload_weight(std::move(r), out, k * in);
  }

  std::vector<float> host(const std::string& name) { return ckpt_.load_f32(name); }

 private:
  const Checkpoint& ckpt_;
  Backend& backend_;
  const QuantPlan& quantize_;
};

// Both stacks use the same tensor names under their prefix; the encoder adds biases on q, v, o and
// w2, the decoder adds the delay-conditioning MLP.
LayerWeights load_layer(Loader& L, const std::string& p, bool encoder) {
  LayerWeights l;
  l.attn_norm = L.get(p + "attention_norm.weight");
  l.wq = L.get(p + "attention.wq.weight");
  l.wk = L.get(p + "attention.wk.weight");
  l.wv = L.get(p + "attention.wv.weight");
  l.wo = L.get(p + "attention.wo.weight");
  l.ffn_norm = L.get(p + "ffn_norm.weight");
  l.w1 = L.get(p + "feed_forward.w1.weight");
  l.w3 = L.get(p + "feed_forward.w3.weight");
  l.w2 = L.get(p + "feed_forward.w2.weight");
  if (encoder) {
    l.bq = L.get(p + "attention.wq.bias");
    l.bv = L.get(p + "attention.wv.bias");
    l.bo = L.get(p + "attention.wo.bias");
    l.b2 = L.get(p + "feed_forward.w2.bias");
  } else {
    l.ada_w1 = L.host(p + "ada_rms_norm_t_cond.0.weight");
    l.ada_w2 = L.host(p + "ada_rms_norm_t_cond.2.weight");
  }
  return l;
}

}  // namespace

ModelWeights load_weights(const Checkpoint& ckpt, Backend& backend, const QuantPlan& quantize) {
  const ModelConfig& cfg = ckpt.config();
  check(!(quantize.any() && ckpt.stored_quantization().any()), ckpt.dir().string(),
        "already quantized (" + ckpt.stored_quantization().describe() + "); it cannot be quantized again (" +
            quantize.describe() + "): load it without the quantization options, or quantize the original");
  Loader L(ckpt, backend, quantize);
  ModelWeights w;
  w.conv1_w = L.conv(kEnc + "conv_layers.0.conv.weight");
  w.conv1_b = L.get(kEnc + "conv_layers.0.conv.bias");
  w.conv2_w = L.conv(kEnc + "conv_layers.1.conv.weight");
  w.conv2_b = L.get(kEnc + "conv_layers.1.conv.bias");
  for (int i = 0; i < cfg.encoder.n_layers; ++i)
    w.encoder.push_back(load_layer(L, kEnc + "transformer.layers." + std::to_string(i) + ".", /*encoder=*/true));
  w.encoder_norm = L.get(kEnc + "transformer.norm.weight");
  w.adapter_w1 = L.get(kEmbed + "audio_language_projection.0.weight");
  w.adapter_w2 = L.get(kEmbed + "audio_language_projection.2.weight");
  w.tok_embeddings = L.get(tensor_names::kTokEmbeddings);
  // The LM head: stored apart by `voxrt quantize`, quantized apart from the embedding's values as
  // the plan asks, or the embedding itself.
  if (ckpt.has(tensor_names::kLmHead)) w.lm_head = L.get(tensor_names::kLmHead);
  else if (quantize.head_untied()) w.lm_head = L.get(tensor_names::kTokEmbeddings, tensor_names::kLmHead);
  else w.lm_head = w.tok_embeddings;
  for (int i = 0; i < cfg.decoder.n_layers; ++i)
    w.decoder.push_back(load_layer(L, "layers." + std::to_string(i) + ".", /*encoder=*/false));
  w.norm = L.get("norm.weight");
  return w;
}

}  // namespace voxrt
