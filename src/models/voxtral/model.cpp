#include "models/voxtral/model.h"

#include <algorithm>
#include <cmath>

#include "common/error.h"

namespace voxrt {

std::vector<float> rope_inv_freq(double theta, int head_dim) {
  std::vector<float> f(head_dim / 2);
  for (int i = 0; i < head_dim / 2; ++i) {
    // torch: 1.0 / (base ** (arange(0, d, 2).float() / d)), all in fp32.
    const float exponent = static_cast<float>(2 * i) / static_cast<float>(head_dim);
    f[i] = 1.0f / std::pow(static_cast<float>(theta), exponent);
  }
  return f;
}

std::vector<float> ada_scale(const LayerWeights& l, int dim, int t_cond_dim, float n_delay) {
  // t_cond = cat(cos(t * inv_freq), sin(t * inv_freq)), inv_freq = exp(-ln(1e4) * arange(d/2) / (d/2)).
  const int half = dim / 2;
  std::vector<float> t(dim);
  for (int i = 0; i < half; ++i) {
    const float inv = std::exp(-std::log(10000.0f) * static_cast<float>(i) / static_cast<float>(half));
    const float a = n_delay * inv;
    t[i] = std::cos(a);
    t[i + half] = std::sin(a);
  }
  std::vector<float> hidden(t_cond_dim);
  for (int j = 0; j < t_cond_dim; ++j) {
    double s = 0;
    for (int i = 0; i < dim; ++i) s += static_cast<double>(l.ada_w1[static_cast<size_t>(j) * dim + i]) * t[i];
    const float x = static_cast<float>(s);
    hidden[j] = 0.5f * x * (1.0f + std::erf(x * static_cast<float>(M_SQRT1_2)));
  }
  std::vector<float> out(dim);
  for (int i = 0; i < dim; ++i) {
    double s = 0;
    for (int j = 0; j < t_cond_dim; ++j) s += static_cast<double>(l.ada_w2[static_cast<size_t>(i) * t_cond_dim + j]) * hidden[j];
    out[i] = 1.0f + static_cast<float>(s);
  }
  return out;
}

VoxtralModel::VoxtralModel(const Checkpoint& ckpt, Backend& backend, const QuantPlan& quantize)
    : cfg_(ckpt.config()), backend_(backend), w_(load_weights(ckpt, backend, quantize)) {
  enc_inv_freq_ = rope_inv_freq(cfg_.encoder.rope_theta, cfg_.encoder.head_dim);
  dec_inv_freq_ = rope_inv_freq(cfg_.decoder.rope_theta, cfg_.decoder.head_dim);
  const EncoderConfig& e = cfg_.encoder;
  const DecoderConfig& d = cfg_.decoder;
  enc_stack_ = {e.dim, e.n_heads, e.n_kv_heads, e.head_dim, e.hidden_dim, e.sliding_window,
                static_cast<float>(e.norm_eps), &enc_inv_freq_, cfg_.downsample_factor};
  dec_stack_ = {d.dim, d.n_heads, d.n_kv_heads, d.head_dim, d.hidden_dim, d.sliding_window,
                static_cast<float>(d.norm_eps), &dec_inv_freq_, 1};
  const int dim = cfg_.decoder.dim;
  for (const auto& l : w_.decoder) {
    std::vector<float> table;
    for (int n = 0; n <= kMaxDelayTokens; ++n) {
      const auto s = ada_scale(l, dim, cfg_.decoder.t_cond_dim, static_cast<float>(n));
      table.insert(table.end(), s.begin(), s.end());
    }
    Buffer b(&backend_, kMaxDelayTokens + 1, dim);
    backend_.upload(b.data(), table.data(), table.size());
    ada_scale_.push_back(std::move(b));
  }
}

void VoxtralModel::shift_positions(KvCache& cache, int slot, bool encoder, int64_t shift) {
  check(shift % cache.shape().ring == 0, "shift_positions", "shift must be a multiple of the ring");
  backend_.shift_cached_keys(cache, slot, shift, encoder ? enc_inv_freq_ : dec_inv_freq_);
}

KvCacheShape VoxtralModel::encoder_cache_shape(int slots, int ring) const {
  return {slots, cfg_.encoder.n_layers, ring, cfg_.encoder.n_kv_heads, cfg_.encoder.head_dim};
}

KvCacheShape VoxtralModel::decoder_cache_shape(int slots, int ring) const {
  return {slots, cfg_.decoder.n_layers, ring, cfg_.decoder.n_kv_heads, cfg_.decoder.head_dim};
}

Buffer& VoxtralModel::ensure(Buffer& b, int rows, int cols) {
  if (b.rows() < rows || b.cols() != cols) b = Buffer(&backend_, std::max(rows, b.cols() == cols ? 2 * b.rows() : 0), cols);
  return b;
}

void VoxtralModel::conv_stem(Mat mel, Mat conv1_context, Mat out) {
  const int D = cfg_.encoder.dim;
  const int t_mel = mel.rows - 2;
  check(t_mel > 0 && t_mel % 2 == 0, "conv stem", "mel rows must be a positive even number");
  check(out.rows == t_mel / 2 && out.cols == D && conv1_context.rows == 1 && conv1_context.cols == D, "conv stem",
        "shape mismatch");
  // conv1 (stride 1, causal pad 2) writes rows 1.. of a buffer whose row 0 is conv2's causal context.
  Buffer& h1 = ensure(conv1_out_, t_mel + 1, D);
  backend_.copy(h1.row(0), conv1_context.data, D);
  const Mat h1_body = h1.view(1, t_mel);
  backend_.conv1d_k3(mel, w_.conv1_w, w_.conv1_b, 1, h1_body);
  backend_.gelu(h1_body);
  backend_.copy(conv1_context.data, h1.row(t_mel), D);  // the next chunk's context
  backend_.conv1d_k3(h1.view(0, t_mel + 1), w_.conv2_w, w_.conv2_b, 2, out);
  backend_.gelu(out);
}

void VoxtralModel::conv_stems(Mat mel, std::span<const int> part_rows, Mat contexts, Mat out) {
  const int D = cfg_.encoder.dim, n = static_cast<int>(part_rows.size());
  int total = 0, frames = 0;
  for (const int rows : part_rows) {
    check(rows > 0 && rows % 2 == 0, "conv stem", "mel rows must be a positive even number");
    total += rows + 2;
    frames += rows / 2;
  }
  check(n > 0 && mel.rows == total && contexts.rows == n && contexts.cols == D && out.rows == frames && out.cols == D,
        "conv stem", "shape mismatch");
  if (n == 1) return conv_stem(mel, contexts, out);
  // Part i's rows start at a_i = sum of (rows + 2) before it, an even row. conv1's window g is mel
  // rows g .. g + 2: part i's t-th window is g = a_i + t (t < rows_i); the two windows straddling
  // each boundary are computed and never read. They sit after the contexts in one matrix, so that
  // one gather lays out conv2's input.
  Buffer& conv1 = ensure(stems_conv1_, n + total - 2, D);
  backend_.copy(conv1.row(0), contexts.data, static_cast<size_t>(n) * D);
  const Mat windows1 = conv1.view(n, total - 2);
  backend_.conv1d_k3(mel, w_.conv1_w, w_.conv1_b, 1, windows1);
  backend_.gelu(windows1);
  // conv2's input, each part laid out as conv_stem's: its context row, its conv1 rows, then one
  // row of padding (its context again: any finite row) so that the next part starts at an even
  // row, where conv2's stride-2 windows begin. Each part's last conv1 row is its next context.
  stems_conv2_rows_.clear();
  stems_context_rows_.clear();
  stems_frame_rows_.clear();
  for (int i = 0, a = 0; i < n; a += part_rows[i] + 2, ++i) {
    stems_conv2_rows_.push_back(i);
    for (int t = 0; t < part_rows[i]; ++t) stems_conv2_rows_.push_back(n + a + t);
    stems_conv2_rows_.push_back(i);
    stems_context_rows_.push_back(a + part_rows[i]);
    // conv2's window p is rows 2p .. 2p + 2: part i's t-th is p = a_i / 2 + t (t < rows_i / 2).
    for (int t = 0; t < part_rows[i] / 2; ++t) stems_frame_rows_.push_back(a / 2 + t);
  }
  const Mat conv2_in = ensure(stems_conv2_in_, total, D).view(0, total);
  backend_.gather_rows(conv1.view(0, n + total - 2), stems_conv2_rows_, conv2_in);
  backend_.gather_rows(conv2_in, stems_context_rows_, contexts);
  const int windows2 = (total - 3) / 2 + 1;
  const Mat conv2_out = ensure(stems_conv2_out_, windows2, D).view(0, windows2);
  backend_.conv1d_k3(conv2_in, w_.conv2_w, w_.conv2_b, 2, conv2_out);
  backend_.gather_rows(conv2_out, stems_frame_rows_, out);
  backend_.gelu(out);
}

// Biases are optional (the decoder has none): an empty Weight means "no bias".
static const Weight* bias(const Weight& b) { return b.empty() ? nullptr : &b; }

VoxtralModel::LayerScratch& VoxtralModel::scratch(LayerScratch& w, const Stack& s, int rows) {
  if (rows <= w.capacity) return w;
  const int cap = std::max(rows, 2 * w.capacity);
  const int qw = s.n_heads * s.head_dim, kvw = s.n_kv_heads * s.head_dim;
  w.h = Buffer(&backend_, cap, s.dim);
  w.q = Buffer(&backend_, cap, qw);
  w.k = Buffer(&backend_, cap, kvw);
  w.v = Buffer(&backend_, cap, kvw);
  w.o = Buffer(&backend_, cap, qw);
  w.g = Buffer(&backend_, cap, s.hidden_dim);
  w.u = Buffer(&backend_, cap, s.hidden_dim);
  w.capacity = cap;
  return w;
}

void VoxtralModel::layer(const LayerWeights& l, const Stack& s, LayerScratch& scratch_space, int index, Mat x,
                         std::span<const RowRef> rows, KvCache& cache, const Buffer* ffn_scale,
                         std::span<const int> scale_rows) {
  const int M = x.rows;
  LayerScratch& w = scratch(scratch_space, s, M);
  const Mat h = w.h.view(0, M), q = w.q.view(0, M), k = w.k.view(0, M), v = w.v.view(0, M), o = w.o.view(0, M);
  backend_.rms_norm(x, l.attn_norm, s.eps, h);
  const LinearOut qkv[3] = {{&l.wq, bias(l.bq), q}, {&l.wk, nullptr, k}, {&l.wv, bias(l.bv), v}};
  backend_.linears(h, qkv);
  backend_.rope_store_kv(q, k, v, s.n_heads, rows, *s.inv_freq, cache, index);
  const AttentionParams ap{s.n_heads, s.n_kv_heads, s.head_dim, s.window,
                           1.0f / std::sqrt(static_cast<float>(s.head_dim)), s.rows_per_position};
  backend_.attention(cache, index, q, rows, ap, o);
  backend_.linear(o, l.wo, bias(l.bo), x, /*accumulate=*/true);

  const Mat g = w.g.view(0, M), u = w.u.view(0, M);
  if (ffn_scale)
    backend_.rms_norm_scaled(x, l.ffn_norm, s.eps, h, ffn_scale->all(), scale_rows);  // delay conditioning
  else
    backend_.rms_norm(x, l.ffn_norm, s.eps, h);
  backend_.gated_linear(h, l.w1, l.w3, g, u);
  backend_.linear(g, l.w2, bias(l.b2), x, /*accumulate=*/true);
}

void VoxtralModel::encode(Mat x, std::span<const RowRef> rows, KvCache& cache) {
  for (size_t i = 0; i < w_.encoder.size(); ++i)
    layer(w_.encoder[i], enc_stack_, enc_scratch_, static_cast<int>(i), x, rows, cache, nullptr, {});
  backend_.rms_norm(x, w_.encoder_norm, static_cast<float>(cfg_.encoder.norm_eps), x);
}

void VoxtralModel::adapt(Mat x, Mat out) {
  const int dim = cfg_.decoder.dim;
  check(out.rows == x.rows && out.cols == dim, "adapter", "shape mismatch");
  const Mat h = ensure(adapter_hidden_, x.rows, dim).view(0, x.rows);
  backend_.linear(x, w_.adapter_w1, nullptr, h);
  backend_.gelu(h);
  backend_.linear(h, w_.adapter_w2, nullptr, out);
}

void VoxtralModel::encode_positions(Mat mel, Mat conv1_context, Mat frames, std::span<const RowRef> rows,
                                    KvCache& cache, Mat adapter) {
  const int factor = cfg_.downsample_factor;
  check(frames.rows == adapter.rows * factor, "encoder", "frames are not whole positions");
  conv_stem(mel, conv1_context, frames);
  encode(frames, rows, cache);
  adapt(Mat{frames.data, adapter.rows, frames.cols * factor}, adapter);
}

Mat VoxtralModel::decode(std::span<const int32_t> ids, Mat audio, std::span<const RowRef> rows,
                         std::span<const int> n_delay, KvCache& cache, std::span<const int> logit_rows) {
  const DecoderConfig& c = cfg_.decoder;
  const int M = audio.rows;
  for (int n : n_delay) check(n >= 0 && n <= kMaxDelayTokens, "decoder", "delay tokens out of range");
  const Mat x = ensure(dec_x_, M, c.dim).view(0, M);
  backend_.embed(w_.tok_embeddings, ids, x);
  backend_.add(x, audio);
  for (size_t i = 0; i < w_.decoder.size(); ++i)
    layer(w_.decoder[i], dec_stack_, dec_scratch_, static_cast<int>(i), x, rows, cache, &ada_scale_[i], n_delay);

  const int L = static_cast<int>(logit_rows.size());
  const Mat sel = ensure(dec_final_, L, c.dim).view(0, L);
  const Mat logits = ensure(dec_logits_, L, c.vocab_size).view(0, L);
  for (int i = 0; i < L; ++i) {
    check(logit_rows[i] >= 0 && logit_rows[i] < M, "decoder", "logit row out of range");
    backend_.copy(sel.data + static_cast<size_t>(i) * c.dim, x.data + static_cast<size_t>(logit_rows[i]) * c.dim, c.dim);
  }
  backend_.rms_norm(sel, w_.norm, static_cast<float>(c.norm_eps), sel);
  backend_.linear(sel, w_.lm_head, nullptr, logits);
  return logits;
}

}  // namespace voxrt
