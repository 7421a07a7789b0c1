// The delays the model accepts (include/voxrt/delays.h), read off its protocol rather than written
// again: every delay of up to VoxtralModel::kMaxDelayTokens positions that delay_tokens_from_ms
// takes, as a range and the ones beyond it.
#include "voxrt/delays.h"

#include <string>
#include <vector>

#include "models/voxtral/config.h"
#include "voxrt/error.h"
#include "models/voxtral/model.h"
#include "models/voxtral/protocol.h"

namespace voxrt {
namespace {

DelayRange read_model_delays() {
  const ModelConfig config;
  const int position_ms = config.samples_per_position() * 1000 / config.audio.sampling_rate;  // 80
  std::vector<int> accepted;
  for (int n = 1; n <= VoxtralModel::kMaxDelayTokens; ++n) {
    try {
      delay_tokens_from_ms(n * position_ms);
      accepted.push_back(n * position_ms);
    } catch (const Error&) {
    }
  }
  DelayRange d;
  if (accepted.empty()) return d;
  d.min_ms = d.max_ms = accepted[0];
  d.step_ms = accepted.size() > 1 ? accepted[1] - accepted[0] : position_ms;
  size_t i = 1;
  while (i < accepted.size() && accepted[i] - d.max_ms == d.step_ms) d.max_ms = accepted[i++];
  d.beyond_ms.assign(accepted.begin() + static_cast<std::ptrdiff_t>(i), accepted.end());
  return d;
}

}  // namespace

// Built by appending: GCC 12 warns (-Wrestrict, wrongly) on a literal + std::to_string() here.
std::string to_string(const DelayRange& d) {
  std::string out = std::to_string(d.min_ms);
  out.append(" to ").append(std::to_string(d.max_ms)).append(" ms in steps of ").append(std::to_string(d.step_ms)).append(" ms");
  for (int ms : d.beyond_ms) out.append(", or ").append(std::to_string(ms)).append(" ms");
  return out;
}

DelayRange model_delays() {
  static const DelayRange delays = read_model_delays();
  return delays;
}

void validate_delay_ms(int delay_ms) {
  const DelayRange delays = model_delays();
  if (!delays.accepts(delay_ms))
    throw OptionError("delay_ms", std::string(" ").append(std::to_string(delay_ms)).append(": the model supports ").append(to_string(delays)));
}

}  // namespace voxrt
