// The Voxtral Realtime network (docs/model.md §3-§5), written once against the Backend interface:
//   conv stem -> causal sliding-window encoder -> adapter (4 frames -> 1 vector) -> decoder.
// Each stage works on a batch of rows; rows carry (cache slot, absolute position) so one call can
// advance several sessions. The decode protocol (prompt, padding, greedy loop) is in stream_state.h
// (tests/parity/offline_reference.h: the whole-file pass the parity tests use).
#pragma once

#include <array>
#include <span>
#include <vector>

#include "models/voxtral/checkpoint.h"
#include "runtime/backend.h"
#include "runtime/kv_cache.h"
#include "models/voxtral/weights.h"

namespace voxrt {

class VoxtralModel {
 public:
  // quantize: weights to quantize while loading (models/voxtral/quant_plan.h); none by default. A
  // checkpoint already quantized loads as it is stored.
  VoxtralModel(const Checkpoint& ckpt, Backend& backend, const QuantPlan& quantize = {});

  const ModelConfig& config() const { return cfg_; }
  Backend& backend() const { return backend_; }
  const ModelWeights& weights() const { return w_; }

  // The stage calls below allocate nothing once their largest batch has been seen (scratch kept
  // between calls), download nothing and never wait for the device, so a run of them can be a
  // Backend recording (run_recorded), replayed as a CUDA graph.

  // Conv stem. mel_with_context: time-major mel rows preceded by 2 rows of causal context (zeros at
  // the start of a stream); mel rows must be even. conv1_context: the 1 row of conv1 output before
  // this chunk (zeros at the start); on return it holds this chunk's last conv1 row, the next
  // chunk's context. Writes (mel rows) / 2 frames to out [frames, enc_dim].
  void conv_stem(Mat mel_with_context, Mat conv1_context, Mat out);
  // The conv stem of several streams' chunks at once (an encoder pass's parts), each as conv_stem
  // computes it alone: mel holds part i's 2 context rows then its part_rows[i] mel rows (even), the
  // parts one after another; contexts [parts, enc_dim] their conv1 contexts, updated as conv_stem
  // updates its one; out [sum of part_rows / 2, enc_dim] their frames, in order. Each convolution
  // is one product over every part (the weights read once, not once a part); one part is exactly
  // conv_stem.
  void conv_stems(Mat mel, std::span<const int> part_rows, Mat contexts, Mat out);

  // Encoder layers + final norm, in place on x [rows, enc_dim]. Rows' K/V go into `cache` (one
  // slot per session; ring >= window + rows - 1).
  void encode(Mat x, std::span<const RowRef> rows, KvCache& cache);

  // Adapter: x [rows, 4 * enc_dim] (4 consecutive encoder frames per row) -> out [rows, dim].
  void adapt(Mat x, Mat out);

  // The audio side of whole positions, as a live session's encoder pass runs it: conv stem (as
  // conv_stem) into frames [4 n, enc_dim], encoder over them at `rows`, adapter into adapter [n, dim].
  void encode_positions(Mat mel_with_context, Mat conv1_context, Mat frames, std::span<const RowRef> rows,
                        KvCache& cache, Mat adapter);

  // Decoder over rows: input = embed(ids) + audio (both [rows, dim]). Writes K/V to `cache`.
  // Returns logits [logit_rows.size(), vocab] for the rows listed in `logit_rows` (after the final
  // norm), in scratch owned by the model that the next decode() overwrites.
  Mat decode(std::span<const int32_t> ids, Mat audio, std::span<const RowRef> rows, std::span<const int> n_delay,
             KvCache& cache, std::span<const int> logit_rows);

  // Re-bases a session's cached keys from positions p to p - shift (RoPE scores depend only on
  // position differences, so the cache stays valid for queries at re-based positions). shift must
  // be a multiple of the cache ring so that every key keeps its ring entry.
  void shift_positions(KvCache& cache, int slot, bool encoder, int64_t shift);

  KvCacheShape encoder_cache_shape(int slots, int ring) const;
  KvCacheShape decoder_cache_shape(int slots, int ring) const;

  static constexpr int kMaxDelayTokens = 30;  // 2400 ms

 private:
  // What a layer needs to know about its stack (encoder or decoder).
  struct Stack {
    int dim, n_heads, n_kv_heads, head_dim, hidden_dim, window;
    float eps;
    const std::vector<float>* inv_freq;
    int rows_per_position;  // rows a live pass runs per session and position (AttentionParams::rows_per_position)
  };
  // A layer's intermediate activations, kept between calls and grown when a call has more rows:
  // no allocation per layer or per pass once the largest batch has been seen (a CUDA graph
  // needs fixed addresses too). One per stack; model calls are serialised by the engine.
  struct LayerScratch {
    Buffer h, q, k, v, o, g, u;
    int capacity = 0;
  };
  LayerScratch& scratch(LayerScratch& w, const Stack& s, int rows);
  // Grows b to at least rows x cols (contents not kept).
  Buffer& ensure(Buffer& b, int rows, int cols);

  // h = x + Attn(RMSNorm(x)); x = h + FFN(RMSNorm(h) [* ffn_scale rows]), in place on x.
  void layer(const LayerWeights& l, const Stack& s, LayerScratch& scratch, int index, Mat x,
             std::span<const RowRef> rows, KvCache& cache, const Buffer* ffn_scale, std::span<const int> scale_rows);

  const ModelConfig cfg_;
  Backend& backend_;
  ModelWeights w_;
  std::vector<float> enc_inv_freq_, dec_inv_freq_;
  Stack enc_stack_{}, dec_stack_{};
  LayerScratch enc_scratch_, dec_scratch_;
  Buffer conv1_out_;                      // conv stem: conv1 output with its context row
  Buffer stems_conv1_, stems_conv2_in_, stems_conv2_out_;  // conv_stems: the parts' rows side by side
  std::vector<int32_t> stems_conv2_rows_, stems_context_rows_, stems_frame_rows_;  // and the rows it gathers
  Buffer adapter_hidden_;                 // adapter: after the first product
  Buffer dec_x_, dec_final_, dec_logits_;  // decoder: hidden rows, normed logit rows, logits
  // Per decoder layer: rows n = 0..30 hold (1 + ada(t_cond(n))) for n delay tokens (docs/model.md §5).
  std::vector<Buffer> ada_scale_;
};

// RoPE inverse frequencies as the reference computes them: 1 / theta^(2i/d) in fp32.
std::vector<float> rope_inv_freq(double theta, int head_dim);
// (1 + W2 gelu(W1 t_cond(n_delay))) for one decoder layer, in fp32 like the reference.
std::vector<float> ada_scale(const LayerWeights& l, int dim, int t_cond_dim, float n_delay);

}  // namespace voxrt
