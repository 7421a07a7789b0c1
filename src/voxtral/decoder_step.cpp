#include "voxtral/decoder_step.h"

#include <atomic>
#include <vector>

#include "common/error.h"

namespace voxrt {
namespace {

// The argmax, its margin and the logits view of every row of `logits`.
std::vector<DecoderStepResult> argmax_rows(Backend& be, Mat logits) {
  const int k = logits.rows;
  std::vector<int32_t> ids(k);
  std::vector<float> margins(k);
  be.argmax(logits, ids, margins);
  std::vector<DecoderStepResult> r(k);
  for (int i = 0; i < k; ++i)
    r[i] = {ids[i], margins[i], Mat{logits.data + static_cast<size_t>(i) * logits.cols, 1, logits.cols}};
  return r;
}

}  // namespace

std::string unique_step_key(const std::string& what) {
  static std::atomic<uint64_t> next{0};
  return what + " #" + std::to_string(next++);
}

DecoderStep::DecoderStep(VoxtralModel& model, std::string key) : model_(model), key_(std::move(key)) {}

DecoderStepResult DecoderStep::run(int32_t input, Mat audio, int64_t pos, int n_delay, KvCache& cache) {
  return run_rows(std::span<const int32_t>(&input, 1), audio, pos, n_delay, cache)[0];
}

std::vector<DecoderStepResult> DecoderStep::run_rows(std::span<const int32_t> inputs, Mat audio, int64_t pos,
                                                     int n_delay, KvCache& cache) {
  const int k = static_cast<int>(inputs.size());
  check(k >= 1 && audio.rows == k && audio.cols == model_.config().decoder.dim, "decoder step",
        "one adapter vector per input token expected");
  Backend& be = model_.backend();
  if (audio_.rows() < k) audio_ = Buffer(&be, k, audio.cols);
  std::vector<RowRef> rows(k);
  std::vector<int> logit_rows(k);
  for (int i = 0; i < k; ++i) {
    rows[i] = {0, pos + i};
    logit_rows[i] = i;
  }
  const std::vector<int> delays(k, n_delay);
  be.copy(audio_.data(), audio.data, static_cast<size_t>(k) * audio.cols);
  Mat logits{};
  // One recorded step per row count: a replay's launches have the shapes of its capture.
  be.run_step(k == 1 ? key_ : key_ + " x" + std::to_string(k), [&] {
    logits = model_.decode(inputs, audio_.view(0, k), rows, delays, cache, logit_rows);
  });
  return argmax_rows(be, logits);
}

DecoderStepResult decode_prompt(VoxtralModel& model, const Protocol& protocol, const ProtocolIds& ids, Mat audio,
                                KvCache& cache, int slot) {
  const int P = protocol.prompt_len();
  check(audio.rows == P, "prompt", "one adapter vector per prompt position expected");
  check(slot >= 0 && slot < cache.shape().slots, "prompt", "cache slot out of range");
  std::vector<RowRef> rows(P);
  for (int i = 0; i < P; ++i) rows[i] = {slot, i};
  const std::vector<int> delays(P, protocol.n_delay);
  const int last = P - 1;
  DecoderStepResult r;
  r.logits = model.decode(protocol.prompt(ids), audio, rows, delays, cache, std::span<const int>(&last, 1));
  model.backend().argmax(r.logits, std::span<int32_t>(&r.id, 1), std::span<float>(&r.margin, 1));
  return r;
}

std::vector<DecoderStepResult> decode_sessions(VoxtralModel& model, std::span<const SessionRow> rows, Mat audio,
                                               KvCache& cache) {
  const int k = static_cast<int>(rows.size());
  check(k >= 1 && audio.rows == k && audio.cols == model.config().decoder.dim, "decoder pass",
        "one adapter vector per row expected");
  std::vector<RowRef> refs(k);
  std::vector<int32_t> inputs(k);
  std::vector<int> delays(k), logit_rows(k);
  std::vector<bool> seen(static_cast<size_t>(cache.shape().slots), false);
  for (int i = 0; i < k; ++i) {
    const SessionRow& r = rows[i];
    check(r.slot >= 0 && r.slot < cache.shape().slots, "decoder pass", "row " + std::to_string(i) + ": cache slot out of range");
    check(!seen[r.slot], "decoder pass", "row " + std::to_string(i) + ": a second row of slot " + std::to_string(r.slot));
    check(r.n_delay >= 0 && r.n_delay <= VoxtralModel::kMaxDelayTokens, "decoder pass",
          "row " + std::to_string(i) + ": delay out of range");
    seen[r.slot] = true;
    refs[i] = {r.slot, r.pos};
    inputs[i] = r.input;
    delays[i] = r.n_delay;
    logit_rows[i] = i;
  }
  return argmax_rows(model.backend(), model.decode(inputs, audio, refs, delays, cache, logit_rows));
}

}  // namespace voxrt
