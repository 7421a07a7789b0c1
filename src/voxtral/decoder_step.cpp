#include "voxtral/decoder_step.h"

#include <atomic>
#include <vector>

#include "common/error.h"

namespace voxrt {

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
  std::vector<int32_t> ids(k);
  std::vector<float> margins(k);
  be.argmax(logits, ids, margins);
  std::vector<DecoderStepResult> r(k);
  for (int i = 0; i < k; ++i)
    r[i] = {ids[i], margins[i], Mat{logits.data + static_cast<size_t>(i) * logits.cols, 1, logits.cols}};
  return r;
}

DecoderStepResult decode_prompt(VoxtralModel& model, const Protocol& protocol, const ProtocolIds& ids, Mat audio,
                                KvCache& cache) {
  const int P = protocol.prompt_len();
  check(audio.rows == P, "prompt", "one adapter vector per prompt position expected");
  std::vector<RowRef> rows(P);
  for (int i = 0; i < P; ++i) rows[i] = {0, i};
  const std::vector<int> delays(P, protocol.n_delay);
  const int last = P - 1;
  DecoderStepResult r;
  r.logits = model.decode(protocol.prompt(ids), audio, rows, delays, cache, std::span<const int>(&last, 1));
  model.backend().argmax(r.logits, std::span<int32_t>(&r.id, 1), std::span<float>(&r.margin, 1));
  return r;
}

}  // namespace voxrt
