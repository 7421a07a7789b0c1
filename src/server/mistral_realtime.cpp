#include "server/mistral_realtime.h"

#include <cmath>
#include <optional>

#include "common/base64.h"
#include "server/turn_detection_json.h"

namespace voxrt::server {
namespace {

using nlohmann::json;

// Mistral's AudioEncoding names and what they are.
std::optional<SampleType> encoding_type(const std::string& name) {
  if (name == "pcm_s16le") return SampleType::S16;
  if (name == "pcm_s32le") return SampleType::S32;
  if (name == "pcm_f16le") return SampleType::F16;
  if (name == "pcm_f32le") return SampleType::F32;
  if (name == "pcm_mulaw") return SampleType::MuLaw;
  if (name == "pcm_alaw") return SampleType::ALaw;
  return std::nullopt;
}

constexpr int kBadRequest = 400, kTooLarge = 413, kServerError = 500, kUnavailable = 503;

}  // namespace

MistralRealtime::MistralRealtime(Engine& engine, boost::asio::thread_pool& workers, std::string model,
                                 const RealtimeLimits& limits)
    : LiveTranscription(engine, workers, limits),
      model_(std::move(model)),
      request_id_(random_id("req_")),
      delay_ms_(engine.info().default_delay_ms) {}

json MistralRealtime::session_json() const {
  return {{"request_id", request_id_},
          {"model", model_},
          {"audio_format", {{"encoding", encoding_}, {"sample_rate", audio_.sample_rate()}}},
          {"target_streaming_delay_ms", delay_ms_},
          {"turn_detection", turns_ ? mistral_turn_detection_json(*turns_) : json(nullptr)},
          {"context_bias", bias_.phrases},
          {"context_bias_strength", bias_.strength}};
}

void MistralRealtime::on_open(const WebSocketSender& out) {
  set_sender(out);
  if (model_.size() > kMaxEchoedBytes) {  // echoed in every session event: a short name only
    refused_ = true;
    send_error("model: a name of at most " + std::to_string(kMaxEchoedBytes) + " bytes, not " +
                   std::to_string(model_.size()),
               kBadRequest);
    return out.close(1008, "model name too long");
  }
  send({{"type", "session.created"}, {"session", session_json()}});
}

void MistralRealtime::send_error(const std::string& message, int code) const {
  send({{"type", "error"}, {"error", {{"message", message}, {"code", code}}}});
}

void MistralRealtime::on_message(std::string message, bool binary) {
  if (refused_) return;
  if (binary) return append(message);  // voxrt's extension: the audio bytes without base64
  json event;
  try {
    event = parse_event(message, "input_audio.append", limits().json);
  } catch (const EventJsonError& e) {
    return send_error(e.what(), e.kind() == EventJsonError::Kind::TooLarge ? kTooLarge : kBadRequest);
  }
  const json& type = event.contains("type") ? event["type"] : json();
  if (!type.is_string()) return send_error("an event needs a string \"type\"", kBadRequest);
  const std::string& t = type.get_ref<const std::string&>();
  if (t == "session.update") {
    const json& session = event.contains("session") ? event["session"] : json();
    if (!session.is_object()) return send_error("session.update needs a \"session\" object", kBadRequest);
    return update(session);
  }
  if (t == "input_audio.append") {
    const json& audio = event.contains("audio") ? event["audio"] : json();
    if (!audio.is_string()) return send_error("input_audio.append needs an \"audio\" string (base64)", kBadRequest);
    const std::optional<std::string> bytes = base64_decode(audio.get_ref<const std::string&>());
    if (!bytes) return send_error("input_audio.append: \"audio\" is not base64", kBadRequest);
    return append(*bytes);
  }
  if (t == "input_audio.flush") return;  // the audio is transcribed as it arrives: nothing is held back
  if (t == "input_audio.end") return end();
  send_error("unknown event type \"" + t.substr(0, 100) + "\"", kBadRequest);
}

void MistralRealtime::update(const json& session) {
  if (audio_started_) return send_error("session.update after the audio started: update the session before sending audio", kBadRequest);
  std::string encoding = encoding_;
  int rate = audio_.sample_rate(), delay = delay_ms_;
  if (session.contains("audio_format") && !session["audio_format"].is_null()) {
    const json& f = session["audio_format"];
    if (!f.is_object()) return send_error("session.audio_format must be an object {encoding, sample_rate}", kBadRequest);
    if (f.contains("encoding")) {
      if (!f["encoding"].is_string() || !encoding_type(f["encoding"].get<std::string>()))
        return send_error("session.audio_format.encoding: expected pcm_s16le, pcm_s32le, pcm_f16le, pcm_f32le, pcm_mulaw or pcm_alaw",
                          kBadRequest);
      encoding = f["encoding"].get<std::string>();
    }
    if (f.contains("sample_rate")) {
      const json& r = f["sample_rate"];
      if (!r.is_number_integer() || r.get<long long>() < 8000 || r.get<long long>() > 192000)
        return send_error("session.audio_format.sample_rate: expected a whole number of Hz from 8000 to 192000", kBadRequest);
      rate = r.get<int>();
    }
  }
  if (session.contains("target_streaming_delay_ms") && !session["target_streaming_delay_ms"].is_null()) {
    const std::optional<int> d = model_delay_ms(session["target_streaming_delay_ms"], engine().info().delays);
    if (!d) return send_error("session.target_streaming_delay_ms: " + model_delays_text(engine().info().delays), kBadRequest);
    delay = *d;
  }
  std::optional<TurnDetection> turns;
  try {
    turns = updated_turn_detection(session, turns_, mistral_turn_detection, "session.turn_detection");
  } catch (const TurnDetectionError& e) {
    return send_error(e.what(), kBadRequest);
  }
  BiasRequest bias;
  try {
    bias = updated_bias(session, bias_, "session.");
  } catch (const BiasFieldError& e) {
    return send_error(e.what(), kBadRequest);
  }
  turns_ = turns;
  bias_ = bias;
  encoding_ = encoding;
  audio_ = RealtimeAudio(*encoding_type(encoding), rate);
  delay_ms_ = delay;
  send({{"type", "session.updated"}, {"session", session_json()}});
}

void MistralRealtime::append(std::string_view bytes) {
  if (ended_) return send_error("input_audio.append after input_audio.end: the input is over", kBadRequest);
  if (bytes.empty()) return;
  if (!audio_started_) {
    audio_started_ = true;
    begin_utterance(delay_ms_, turns_, bias_);
  }
  std::vector<float> samples = audio_.decode(bytes);
  if (!samples.empty()) feed(std::move(samples));
}

void MistralRealtime::end() {
  if (ended_) return;
  ended_ = true;
  if (!audio_started_) begin_utterance(delay_ms_, turns_, bias_);  // no audio: still a done event, with no text
  std::vector<float> tail = audio_.finish();
  if (!tail.empty()) feed(std::move(tail));
  end_utterance();
}

void MistralRealtime::on_model_event(const StreamEvent& e) {
  turn_words_.add(e);
  switch (e.kind) {
    case StreamEvent::Kind::SpeechStarted: send({{"type", "transcription.speech_started"}, {"start", e.start}}); return;
    case StreamEvent::Kind::SpeechStopped:
      send({{"type", "transcription.speech_stopped"}, {"start", e.start}, {"end", e.end}});
      return;
    case StreamEvent::Kind::TurnEnd:
      send({{"type", "transcription.turn.done"}, {"text", e.text}, {"start", e.start}, {"end", e.end},
            {"segments", turn_words_.segments()}, {"words", turn_words_.words()}});
      return;
    case StreamEvent::Kind::Text: {
      json delta = {{"type", "transcription.text.delta"}, {"text", e.text}};
      attach_delta_words(delta);
      send(delta);
      return;
    }
    case StreamEvent::Kind::Word:
      segment_words_.push_back({e.start, e.end, e.text});
      return;
    case StreamEvent::Kind::SegmentEnd: {
      json segment = {{"type", "transcription.segment"}, {"text", e.text}, {"start", e.start}, {"end", e.end},
                      {"words", words_json(segment_words_)}};
      segment_words_.clear();
      send(segment);
      return;
    }
    default: return;
  }
}

void MistralRealtime::on_utterance_done(const Transcript& t, const SessionStats& stats) {
  json segments = segments_json(t.segments);
  for (json& s : segments) s["type"] = "transcription_segment";  // the SDK's literal for a done event's segment
  send({{"type", "transcription.done"},
        {"model", model_},
        {"text", t.text},
        {"usage",
         {{"prompt_audio_seconds", static_cast<long long>(std::ceil(t.duration))},
          {"prompt_tokens", 0},
          {"completion_tokens", stats.positions},
          {"total_tokens", stats.positions}}},
        {"language", nullptr},
        {"segments", segments}});
}

void MistralRealtime::on_failure(Failure kind, const std::string& message) {
  send_error(message, kind == Failure::Refused ? kUnavailable : kServerError);
}

}  // namespace voxrt::server
