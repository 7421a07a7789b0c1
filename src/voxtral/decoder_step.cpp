#include "voxtral/decoder_step.h"

#include <atomic>
#include <vector>

#include "common/error.h"

namespace voxrt {

std::string unique_step_key(const std::string& what) {
  static std::atomic<uint64_t> next{0};
  return what + " #" + std::to_string(next++);
}

DecoderStep::DecoderStep(VoxtralModel& model, std::string key)
    : model_(model), key_(std::move(key)), audio_(&model.backend(), 1, model.config().decoder.dim) {}

DecoderStepResult DecoderStep::run(int32_t input, Mat audio, int64_t pos, int n_delay, KvCache& cache) {
  check(audio.rows == 1 && audio.cols == audio_.cols(), "decoder step", "audio vector size mismatch");
  Backend& be = model_.backend();
  const RowRef row{0, pos};
  const int zero = 0;
  DecoderStepResult r;
  be.copy(audio_.data(), audio.data, static_cast<size_t>(audio.cols));
  be.run_step(key_, [&] {
    r.logits = model_.decode(std::span<const int32_t>(&input, 1), audio_.all(), std::span<const RowRef>(&row, 1),
                             std::span<const int>(&n_delay, 1), cache, std::span<const int>(&zero, 1));
  });
  be.argmax(r.logits, std::span<int32_t>(&r.id, 1), std::span<float>(&r.margin, 1));
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
