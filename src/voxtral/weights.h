// The model's weights on a backend, loaded once from a Checkpoint (either layout) by canonical name.
#pragma once

#include <vector>

#include "model/checkpoint.h"
#include "runtime/backend.h"

namespace voxrt {

struct EncoderLayerWeights {
  Weight attn_norm, wq, bq, wk, wv, bv, wo, bo;
  Weight ffn_norm, w1, w3, w2, b2;
};

struct DecoderLayerWeights {
  Weight attn_norm, wq, wk, wv, wo;
  Weight ffn_norm, w1, w3, w2;
  // The delay-conditioning MLP (dim -> t_cond_dim -> dim) stays on the host: it runs once per
  // delay value at load time (see Decoder), never per step.
  std::vector<float> ada_w1, ada_w2;
};

struct ModelWeights {
  Weight conv1_w, conv1_b, conv2_w, conv2_b;  // conv weights as [out, 3 * in], k-major
  std::vector<EncoderLayerWeights> encoder;
  Weight encoder_norm;
  Weight adapter_w1, adapter_w2;
  Weight tok_embeddings;  // [vocab, dim], also the tied LM head
  std::vector<DecoderLayerWeights> decoder;
  Weight norm;
};

ModelWeights load_weights(const Checkpoint& ckpt, Backend& backend);

}  // namespace voxrt
