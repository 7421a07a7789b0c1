// The realtime dialects' turn_detection objects (docs/serve.md), read into the engine's
// TurnDetection (include/voxrt/session.h) and written back as each dialect echoes them.
//   OpenAI (and vLLM's dialect, as voxrt's extension): {type: "server_vad", threshold,
//     prefix_padding_ms, silence_duration_ms, create_response, interrupt_response (taken, unused: a
//     transcription session creates no responses), end_timeout_ms (voxrt's extension)}
//   Mistral: {min_silence_ms, end_timeout_ms, start_threshold, end_threshold, eager_end_threshold
//     (the last two taken and unused: they tune Mistral's own end-of-turn model, which voxrt has
//     not), prefix_padding_ms (voxrt's extension)}; {} takes the defaults.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>

#include "voxrt/session.h"

namespace voxrt::server {

// A turn_detection field at fault: `param` is its path as the client wrote it
// ("session.audio.input.turn_detection.silence_duration_ms"), what() says what is wrong.
class TurnDetectionError : public std::runtime_error {
 public:
  TurnDetectionError(std::string param, const std::string& message) : std::runtime_error(message), param_(std::move(param)) {}
  const std::string& param() const { return param_; }

 private:
  std::string param_;
};

// `value` is the object (not null); `path` its place in the event, for the errors.
TurnDetection openai_turn_detection(const nlohmann::json& value, const std::string& path);
nlohmann::json openai_turn_detection_json(const TurnDetection& turns);
TurnDetection mistral_turn_detection(const nlohmann::json& value, const std::string& path);
nlohmann::json mistral_turn_detection_json(const TurnDetection& turns);

// A session update's turn_detection: `current` when `holder` has no "turn_detection", none for
// null, else the object read by `read` (openai_turn_detection or mistral_turn_detection) with
// `path` naming it. Throws TurnDetectionError.
std::optional<TurnDetection> updated_turn_detection(const nlohmann::json& holder, const std::optional<TurnDetection>& current,
                                                    TurnDetection (*read)(const nlohmann::json&, const std::string&),
                                                    const std::string& path);

}  // namespace voxrt::server
