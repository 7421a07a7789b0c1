#include "models/voxtral/protocol.h"

#include <string>

#include "common/error.h"

namespace voxrt {

int delay_tokens_from_ms(int delay_ms) {
  if (delay_ms == 2400) return 30;
  if (delay_ms >= 80 && delay_ms <= 1200 && delay_ms % 80 == 0) return delay_ms / 80;
  throw Error("--delay-ms " + std::to_string(delay_ms) +
              ": the model supports 80 to 1200 ms in steps of 80 ms, or 2400 ms");
}

std::vector<int32_t> Protocol::prompt(const ProtocolIds& ids) const {
  std::vector<int32_t> p(prompt_len(), ids.streaming_pad);
  p[0] = ids.bos;
  return p;
}

std::vector<float> Protocol::pad_offline(std::span<const float> audio) const {
  const size_t step = samples_per_position;
  const size_t left = static_cast<size_t>(n_left_pad_tokens) * step;
  const size_t body = (audio.size() + step - 1) / step * step;
  const size_t right = static_cast<size_t>(right_pad_positions()) * step;
  std::vector<float> out(left + body + right, 0.0f);
  std::copy(audio.begin(), audio.end(), out.begin() + static_cast<std::ptrdiff_t>(left));
  return out;
}

}  // namespace voxrt
