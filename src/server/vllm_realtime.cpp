#include "server/vllm_realtime.h"

#include <chrono>

#include "common/base64.h"
#include "server/turn_detection_json.h"

namespace voxrt::server {

void VllmRealtime::on_open(const WebSocketSender& out) {
  set_sender(out);
  const long long now = std::chrono::duration_cast<std::chrono::seconds>(
                            std::chrono::system_clock::now().time_since_epoch()).count();
  send({{"type", "session.created"}, {"id", random_id("sess-")}, {"created", now}});
}

void VllmRealtime::send_error(const std::string& message, const std::string& code) const {
  send({{"type", "error"}, {"error", message}, {"code", code}});
}

void VllmRealtime::on_message(std::string message, bool binary) {
  if (binary) return append(message);  // voxrt's extension: raw PCM16 frames
  nlohmann::json event;
  try {
    event = parse_event(message, "input_audio_buffer.append", limits().json);
  } catch (const EventJsonError& e) {
    switch (e.kind()) {
      case EventJsonError::Kind::NotJson: return send_error("Invalid JSON", "invalid_json");  // vLLM's words
      case EventJsonError::Kind::TooNested: return send_error(e.what(), "invalid_json");
      case EventJsonError::Kind::TooLarge: return send_error(e.what(), "event_too_large");
    }
  }
  const nlohmann::json& type_field = event.contains("type") ? event["type"] : nlohmann::json();
  if (!type_field.is_string()) return send_error("An event needs a string \"type\"", "invalid_event");
  const std::string& type = type_field.get_ref<const std::string&>();
  if (type == "session.update") {
    if (utterance_open_) return send_error("session.update while an utterance is open: commit final first", "session_busy");
    if (event.contains("delay_ms")) {
      const std::optional<int> delay = model_delay_ms(event["delay_ms"], engine().info().delays);
      if (!delay) return send_error("delay_ms: " + model_delays_text(engine().info().delays), "invalid_delay");
      delay_ms_ = *delay;
    }
    try {
      turns_ = updated_turn_detection(event, turns_, openai_turn_detection, "turn_detection");
    } catch (const TurnDetectionError& e) {
      return send_error(e.what(), "invalid_turn_detection");
    }
    try {
      bias_ = updated_bias(event, bias_, "");
    } catch (const BiasFieldError& e) {
      return send_error(e.what(), "invalid_context_bias");
    }
    session_updated_ = true;  // one model is served: any name is taken
    return;
  }
  if (type == "input_audio_buffer.append") {
    const nlohmann::json& audio = event.contains("audio") ? event["audio"] : nlohmann::json();
    if (!audio.is_string()) return send_error("input_audio_buffer.append without an audio string", "invalid_audio");
    const std::optional<std::string> bytes = voxrt::base64_decode(audio.get_ref<const std::string&>());
    if (!bytes) return send_error("Invalid audio data: not base64", "invalid_audio");
    return append(*bytes);
  }
  if (type == "input_audio_buffer.commit") {
    if (!session_updated_)
      return send_error("Model not validated. Make sure to validate the model by sending a session.update event.",
                        "model_not_validated");
    const nlohmann::json& final = event.contains("final") ? event["final"] : nlohmann::json(false);
    if (!final.is_boolean()) return send_error("input_audio_buffer.commit: final must be true or false", "invalid_event");
    return commit(final.get<bool>());
  }
  send_error("Unknown event type: " + type.substr(0, 100), "unknown_event");
}

void VllmRealtime::append(std::string_view pcm16) {
  if (pcm16.empty() || pcm16.size() % 2 != 0)
    return send_error("Invalid audio data: PCM16 needs a whole, non-zero number of 2-byte samples", "invalid_audio");
  std::vector<float> samples = pcm16_to_float(pcm16);
  if (!utterance_open_) {  // kept for the utterance the next commit opens: within the limit
    const size_t room = model_samples(limits().max_waiting_seconds) - waiting_samples_;
    if (samples.size() > room) {
      samples.resize(room);
      if (!said_waiting_full_)
        send_error("Audio buffer full: " + seconds_text(limits().max_waiting_seconds) +
                       " s of audio appended before a commit are kept, and the rest is dropped until "
                       "input_audio_buffer.commit starts transcribing them",
                   "audio_buffer_full");
      said_waiting_full_ = true;
    }
    waiting_samples_ += samples.size();
    if (samples.empty()) return;
  }
  feed(std::move(samples));
}

void VllmRealtime::commit(bool final) {
  if (utterance_failed_.exchange(false)) utterance_open_ = false;  // its error event went out already
  if (!final) {
    if (utterance_open_) return;  // vLLM ignores a commit while generating
    utterance_open_ = true;
    waiting_samples_ = 0;  // the utterance takes them
    said_waiting_full_ = false;
    return begin_utterance(delay_ms_, turns_, bias_);
  }
  if (!utterance_open_) return send_error("input_audio_buffer.commit with final before any commit started one", "no_utterance");
  utterance_open_ = false;
  end_utterance();
}

void VllmRealtime::on_model_event(const StreamEvent& e) {
  const auto ms = [](double seconds) { return static_cast<long long>(seconds * 1000 + 0.5); };
  turn_words_.add(e);
  switch (e.kind) {
    case StreamEvent::Kind::SpeechStarted:
      return send({{"type", "input_audio_buffer.speech_started"}, {"audio_start_ms", ms(e.start)}});
    case StreamEvent::Kind::SpeechStopped:
      return send({{"type", "input_audio_buffer.speech_stopped"}, {"audio_end_ms", ms(e.end)}});
    case StreamEvent::Kind::TurnEnd:
      return send({{"type", "transcription.turn.done"}, {"text", e.text}, {"start", e.start}, {"end", e.end},
                   {"segments", turn_words_.segments()}, {"words", turn_words_.words()}});
    default: break;
  }
  if (e.kind != StreamEvent::Kind::Text) return;
  nlohmann::json delta = {{"type", "transcription.delta"}, {"delta", e.text}};
  attach_delta_words(delta);
  send(delta);
}

void VllmRealtime::on_utterance_done(const Transcript& t, const SessionStats& stats) {
  // segments and words: voxrt's extension (vLLM's done event has neither).
  send({{"type", "transcription.done"},
        {"text", t.text},
        {"usage", {{"prompt_tokens", 0}, {"completion_tokens", stats.positions}, {"total_tokens", stats.positions}}},
        {"segments", segments_json(t.segments)},
        {"words", words_json(t.words)}});
}

void VllmRealtime::on_failure(Failure kind, const std::string& message) {
  utterance_failed_ = true;
  send_error(message, kind == Failure::Refused ? "session_refused" : "processing_error");
}

}  // namespace voxrt::server
