// The model's weights on a backend, loaded once from a Checkpoint (either layout) by canonical name.
#pragma once

#include <vector>

#include "models/voxtral/checkpoint.h"
#include "models/voxtral/quant_plan.h"
#include "runtime/backend.h"

namespace voxrt {

// One pre-norm transformer layer. The encoder and decoder layers have the same shape; the encoder's
// has biases on q, v, o and w2 (left empty in the decoder's), the decoder's has the delay
// conditioning MLP (dim -> t_cond_dim -> dim). That MLP stays on the host: it runs once per delay
// value at load time (see VoxtralModel), never per step.
struct LayerWeights {
  Weight attn_norm, wq, bq, wk, wv, bv, wo, bo;
  Weight ffn_norm, w1, w3, w2, b2;
  std::vector<float> ada_w1, ada_w2;
};

struct ModelWeights {
  Weight conv1_w, conv1_b, conv2_w, conv2_b;  // conv weights as [out, 3 * in], k-major
  std::vector<LayerWeights> encoder;
  Weight encoder_norm;
  Weight adapter_w1, adapter_w2;
  Weight tok_embeddings;  // [vocab, dim]
  Weight lm_head;         // [vocab, dim]: tok_embeddings itself (tied), or quantized apart (QuantPlan::head)
  std::vector<LayerWeights> decoder;
  Weight norm;
};

// quantize: the weights to quantize on the way (none by default). A checkpoint stored quantized
// loads as it is; asking to quantize it again is an Error naming both.
ModelWeights load_weights(const Checkpoint& ckpt, Backend& backend, const QuantPlan& quantize = {});

}  // namespace voxrt
