#include "offline_reference.h"

#include <algorithm>
#include <numeric>

#include "common/error.h"
#include "models/voxtral/decoder_pass.h"

namespace voxrt {
namespace {

std::vector<float> to_host(Backend& b, Mat m) {
  std::vector<float> v(static_cast<size_t>(m.rows) * m.cols);
  b.download(v.data(), m.data, v.size());
  return v;
}

std::vector<RowRef> positions(int64_t first, int count) {
  std::vector<RowRef> r(count);
  for (int i = 0; i < count; ++i) r[i] = {0, first + i};
  return r;
}

// Log-mel -> conv stem -> encoder -> adapter for the whole padded recording, in chunks of
// opts.encoder_chunk frames (the conv stem carries its causal context across chunks exactly as a
// live session does). Returns the adapter vectors, [positions, dim].
Buffer encode_audio(VoxtralModel& model, const LogMel& logmel, const std::vector<float>& padded,
                    const OfflineOptions& opts) {
  Backend& be = model.backend();
  const ModelConfig& cfg = model.config();
  const std::vector<float> mel = logmel.compute(padded.data(), padded.size());
  const int n_mels = logmel.params().n_mels;
  const int T = static_cast<int>(mel.size() / n_mels);
  const int factor = cfg.downsample_factor;
  check(T % cfg.mel_frames_per_position() == 0, "offline", "mel frames not a whole number of steps");
  if (opts.trace) opts.trace->mel = mel;

  // The mel rows after 2 rows of zero causal context; chunk f0 reads rows [2 f0, 2 (f0 + count) + 2).
  Buffer mel_ctx(&be, T + 2, n_mels);
  be.fill(mel_ctx.data(), 0.0f, mel_ctx.size());
  be.upload(mel_ctx.row(2), mel.data(), mel.size());
  Buffer conv1_context(&be, 1, cfg.encoder.dim);
  be.fill(conv1_context.data(), 0.0f, conv1_context.size());

  const int n_frames = T / 2;
  Buffer frames(&be, n_frames, cfg.encoder.dim);
  const int chunk = std::max(1, opts.encoder_chunk);
  const int ring = std::min(n_frames, cfg.encoder.sliding_window + chunk);
  KvCache cache(&be, model.encoder_cache_shape(1, ring));
  if (opts.trace) opts.trace->conv.clear();
  for (int first = 0; first < n_frames; first += chunk) {
    const int count = std::min(chunk, n_frames - first);
    const Mat x = frames.view(first, count);
    model.conv_stem(Mat{mel_ctx.row(2 * first), 2 * count + 2, n_mels}, conv1_context.all(), x);
    if (opts.trace) {
      const auto host = to_host(be, x);
      opts.trace->conv.insert(opts.trace->conv.end(), host.begin(), host.end());
    }
    model.encode(x, positions(first, count), cache);
  }
  if (opts.trace) opts.trace->encoder = to_host(be, frames.all());

  // Adapter: 4 consecutive frames side by side are one row of the same memory.
  const int n_pos = n_frames / factor;
  Buffer adapter(&be, n_pos, cfg.decoder.dim);
  model.adapt(Mat{frames.data(), n_pos, cfg.encoder.dim * factor}, adapter.all());
  if (opts.trace) opts.trace->adapter = to_host(be, adapter.all());
  return adapter;
}

}  // namespace

OfflineResult run_offline(VoxtralModel& model, const LogMel& logmel, std::span<const float> audio16k,
                          const OfflineOptions& opts) {
  Backend& be = model.backend();
  const ModelConfig& cfg = model.config();
  const Protocol& proto = opts.protocol;
  const std::vector<float> padded = proto.pad_offline(audio16k);
  const Buffer adapter = encode_audio(model, logmel, padded, opts);

  OfflineResult result;
  const int N = adapter.rows();
  const int P = proto.prompt_len();
  result.positions = N;
  check(N > P, "offline", "padded audio shorter than the prompt");
  int total_steps = N - P;
  if (opts.teacher_tokens) total_steps = std::min<int>(total_steps, static_cast<int>(opts.teacher_tokens->size()));
  const int ring = std::min(N, cfg.decoder.sliding_window + P);
  KvCache cache(&be, model.decoder_cache_shape(1, ring));
  if (opts.trace) {
    opts.trace->logit_steps = 0;
    opts.trace->logits.clear();
  }

  auto take = [&](const DecoderOutput& r, int step) -> int32_t {
    if (opts.trace && step < opts.trace_logit_steps) {
      const auto host = to_host(be, r.logits);
      opts.trace->logits.insert(opts.trace->logits.end(), host.begin(), host.end());
      opts.trace->logit_steps = step + 1;
    }
    result.tokens.push_back(r.id);
    result.margins.push_back(r.margin);
    return r.id;
  };
  auto next_input = [&](int step, int32_t own) {
    if (opts.teacher_tokens && step < static_cast<int>(opts.teacher_tokens->size())) return (*opts.teacher_tokens)[step];
    return own;
  };

  // Prefill the prompt in one pass; its last position gives the first token.
  int32_t tok = take(decode_prompt(model, proto, opts.ids, adapter.view(0, P), cache), 0);

  SessionDecoder decoder(model, unique_recording_key("offline decoder"));
  for (int step = 1; step < total_steps; ++step) {
    if (opts.stop_at_eos && tok == opts.ids.eos && !opts.teacher_tokens) {
      result.eos_stopped = true;
      break;
    }
    const int pos = P + step - 1;
    tok = take(decoder.run(next_input(step - 1, tok), adapter.view(pos, 1), pos, proto.n_delay, cache), step);
  }
  if (opts.stop_at_eos && !opts.teacher_tokens && !result.tokens.empty() && result.tokens.back() == opts.ids.eos)
    result.eos_stopped = true;
  return result;
}

}  // namespace voxrt
