#include "server/openai_realtime.h"

#include <map>

#include "common/base64.h"
#include "server/turn_detection_json.h"

namespace voxrt::server {
namespace {

using nlohmann::json;

constexpr int kOpenAiRate = 24000, kG711Rate = 8000;
// The transcription prompt, echoed in every session.updated (and unused: the model takes none).
constexpr size_t kMaxPromptBytes = 4096;

// OpenAI's delay names for a transcription session, as the model's delays (docs/serve.md).
const std::map<std::string, int>& named_delays() {
  static const std::map<std::string, int> delays = {
      {"minimal", 80}, {"low", 240}, {"medium", 480}, {"high", 960}, {"xhigh", 2400}};
  return delays;
}

json user_item(const std::string& id) {
  return {{"id", id},
          {"object", "realtime.item"},
          {"type", "message"},
          {"role", "user"},
          {"status", "completed"},
          {"content", json::array({{{"type", "input_audio"}, {"transcript", nullptr}}})}};
}

}  // namespace

OpenAiRealtime::OpenAiRealtime(Engine& engine, boost::asio::thread_pool& workers, const RealtimeLimits& limits)
    : LiveTranscription(engine, workers, limits),
      session_id_(random_id("sess_")),
      audio_(SampleType::S16, kOpenAiRate),
      delay_ms_(engine.info().default_delay_ms),
      transcription_(json::object()) {}

json OpenAiRealtime::session_json() const {
  json format = {{"type", format_}};
  if (format_ == "audio/pcm") format["rate"] = kOpenAiRate;
  json transcription = transcription_;
  transcription["delay_ms"] = delay_ms_;
  return {{"type", "transcription"},
          {"object", "realtime.transcription_session"},
          {"id", session_id_},
          {"expires_at", 0},
          {"include", nullptr},
          {"audio",
           {{"input",
             {{"format", format},
              {"transcription", transcription},
              {"noise_reduction", nullptr},
              {"turn_detection", turns_ ? openai_turn_detection_json(*turns_) : json(nullptr)}}}}}};
}

void OpenAiRealtime::send_event(json event) const {
  event["event_id"] = random_id("event_");
  send(event);
}

void OpenAiRealtime::send_error(const json& cause, const std::string& code, const std::string& message,
                                const std::string& param) const {
  // A longer id is not echoed at all: cut, it could be another of the client's ids.
  const auto id = cause.find("event_id");  // end() when the cause is no object
  const bool echoed = id != cause.end() && id->is_string() && id->get_ref<const std::string&>().size() <= kMaxEchoedBytes;
  const json client_event_id = echoed ? *id : json(nullptr);
  send_event({{"type", "error"},
              {"error",
               {{"type", "invalid_request_error"},
                {"code", code},
                {"message", message},
                {"param", param.empty() ? json(nullptr) : json(param)},
                {"event_id", client_event_id}}}});
}

void OpenAiRealtime::on_open(const WebSocketSender& out) {
  set_sender(out);
  send_event({{"type", "session.created"}, {"session", session_json()}});
}

void OpenAiRealtime::on_message(std::string message, bool binary) {
  if (binary) return append(message);  // voxrt's extension: the audio bytes without base64
  json event;
  try {
    event = parse_event(message, "input_audio_buffer.append", limits().json);
  } catch (const EventJsonError& e) {
    switch (e.kind()) {
      case EventJsonError::Kind::NotJson:
        return send_error(nullptr, "invalid_json", "The message could not be parsed as a JSON object.");
      case EventJsonError::Kind::TooNested: return send_error(nullptr, "invalid_json", e.what());
      case EventJsonError::Kind::TooLarge: return send_error(nullptr, "event_too_large", e.what());
    }
  }
  const json& type = event.contains("type") ? event["type"] : json();
  if (!type.is_string()) return send_error(event, "invalid_event", "An event needs a string 'type'.", "type");
  const std::string& t = type.get_ref<const std::string&>();
  if (t == "session.update") return update(event);
  if (t == "input_audio_buffer.append") {
    const json& audio = event.contains("audio") ? event["audio"] : json();
    if (!audio.is_string()) return send_error(event, "missing_required_parameter", "Missing required parameter: 'audio'.", "audio");
    const std::optional<std::string> bytes = base64_decode(audio.get_ref<const std::string&>());
    if (!bytes) return send_error(event, "invalid_value", "Invalid 'audio': not base64.", "audio");
    return append(*bytes);
  }
  if (t == "input_audio_buffer.commit") return commit(event);
  if (t == "input_audio_buffer.clear") return clear();
  send_error(event, "invalid_event",
             "Unsupported event type '" + t.substr(0, 100) + "': this server transcribes (session.update, "
             "input_audio_buffer.append, input_audio_buffer.commit, input_audio_buffer.clear).",
             "type");
}

void OpenAiRealtime::update(const json& event) {
  const json& session = event.contains("session") ? event["session"] : json();
  if (!session.is_object()) return send_error(event, "missing_required_parameter", "Missing required parameter: 'session'.", "session");
  if (session.contains("type") && session["type"] != "transcription")
    return send_error(event, "invalid_value", "Invalid 'session.type': this server runs transcription sessions only.",
                      "session.type");
  std::string format = format_;
  int delay = delay_ms_;
  BiasRequest bias = bias_;
  json transcription = transcription_;
  const json input = session.contains("audio") && session["audio"].is_object() && session["audio"].contains("input")
                         ? session["audio"]["input"]
                         : json::object();
  if (!input.is_object()) return send_error(event, "invalid_type", "'session.audio.input' must be an object.", "session.audio.input");
  if (input.contains("format") && !input["format"].is_null()) {
    const json& f = input["format"];
    if (!f.is_object() || !f.contains("type") || !f["type"].is_string())
      return send_error(event, "invalid_value", "'session.audio.input.format' needs a 'type'.", "session.audio.input.format.type");
    format = f["type"].get<std::string>();
    if (format != "audio/pcm" && format != "audio/pcmu" && format != "audio/pcma")
      return send_error(event, "invalid_value", "Invalid 'session.audio.input.format.type': expected audio/pcm, audio/pcmu or audio/pcma.",
                        "session.audio.input.format.type");
    if (format == "audio/pcm" && f.contains("rate") && f["rate"] != kOpenAiRate)
      return send_error(event, "invalid_value", "Invalid 'session.audio.input.format.rate': audio/pcm is 24000 Hz.",
                        "session.audio.input.format.rate");
  }
  if (input.contains("transcription") && !input["transcription"].is_null()) {
    const json& tr = input["transcription"];
    if (!tr.is_object()) return send_error(event, "invalid_type", "'session.audio.input.transcription' must be an object.",
                                           "session.audio.input.transcription");
    // Echoed in every session.updated: strings (or null) of a bounded length.
    for (const auto& [key, most] : {std::pair{"model", kMaxEchoedBytes}, std::pair{"language", kMaxEchoedBytes},
                                    std::pair{"prompt", kMaxPromptBytes}}) {
      if (!tr.contains(key)) continue;
      const json& v = tr[key];
      const std::string param = std::string("session.audio.input.transcription.") + key;
      if (!v.is_string() && !v.is_null())
        return send_error(event, "invalid_type", "Invalid type for '" + param + "': expected a string.", param);
      if (v.is_string() && v.get_ref<const std::string&>().size() > most)
        return send_error(event, "string_above_max_length",
                          "Invalid '" + param + "': string too long. Expected a string with maximum length " +
                              std::to_string(most) + ", but got a string with length " +
                              std::to_string(v.get_ref<const std::string&>().size()) + " instead.",
                          param);
      transcription[key] = v;
    }
    if (tr.contains("prompt")) {
      const json& prompt = tr["prompt"];
      bias.phrases = prompt.is_string() ? prompt_phrases(prompt.get_ref<const std::string&>()) : std::vector<std::string>();
      try {
        check_bias(bias, "session.audio.input.transcription.prompt", "session.audio.input.transcription.prompt");
      } catch (const BiasFieldError& e) {
        return send_error(event, "invalid_value", e.what(), e.param());
      }
    }
    if (tr.contains("delay") && !tr["delay"].is_null()) {
      const auto named = tr["delay"].is_string() ? named_delays().find(tr["delay"].get<std::string>()) : named_delays().end();
      if (named == named_delays().end())
        return send_error(event, "invalid_value", "Invalid 'delay': expected minimal, low, medium, high or xhigh.",
                          "session.audio.input.transcription.delay");
      delay = named->second;
      transcription["delay"] = tr["delay"];
    }
    if (tr.contains("delay_ms") && !tr["delay_ms"].is_null()) {
      const std::optional<int> ms = model_delay_ms(tr["delay_ms"], engine().info().delays);
      if (!ms)
        return send_error(event, "invalid_value", "Invalid 'delay_ms': " + model_delays_text(engine().info().delays) + ".",
                          "session.audio.input.transcription.delay_ms");
      delay = *ms;
    }
  }
  std::optional<TurnDetection> turns;
  try {
    turns = updated_turn_detection(input, turns_, openai_turn_detection, "session.audio.input.turn_detection");
  } catch (const TurnDetectionError& e) {
    return send_error(event, "invalid_value", e.what(), e.param());
  }
  const auto as_json = [](const std::optional<TurnDetection>& t) { return t ? openai_turn_detection_json(*t) : json(nullptr); };
  if ((!item_id_.empty() || vad_open_) &&
      (format != format_ || delay != delay_ms_ || as_json(turns) != as_json(turns_) || bias.phrases != bias_.phrases))
    return send_error(event, "session_busy",
                      "The audio format, delay and turn detection change between items: commit or clear first.",
                      "session.audio.input");
  if (format != format_) {
    format_ = format;
    audio_ = format == "audio/pcm"    ? RealtimeAudio(SampleType::S16, kOpenAiRate)
             : format == "audio/pcmu" ? RealtimeAudio(SampleType::MuLaw, kG711Rate)
                                      : RealtimeAudio(SampleType::ALaw, kG711Rate);
  }
  delay_ms_ = delay;
  turns_ = turns;
  bias_ = bias;
  transcription_ = transcription;
  send_event({{"type", "session.updated"}, {"session", session_json()}});
}

void OpenAiRealtime::append(std::string_view bytes) {
  if (bytes.empty()) return;
  if (turns_ && !vad_open_) {  // the server finds the items: each turn is one
    vad_open_ = true;
    begin_utterance(delay_ms_, turns_, bias_);
    after_queued([this] {
      worker_vad_ = true;
      in_turn_ = false;
    });
  } else if (!turns_ && item_id_.empty()) {
    item_id_ = random_id("item_");
    begin_utterance(delay_ms_, std::nullopt, bias_);
    after_queued([this, item = item_id_] {
      working_item_ = item;
      worker_vad_ = false;
    });
  }
  std::vector<float> samples = audio_.decode(bytes);
  if (!samples.empty()) feed(std::move(samples));
}

void OpenAiRealtime::commit(const json& event) {
  if (vad_open_) {
    // The turn in progress ends now: its speech_stopped, committed and completed events follow as
    // for a turn the server ended. Audio after it opens a new utterance.
    std::vector<float> tail = audio_.finish();
    if (!tail.empty()) feed(std::move(tail));
    after_queued([this, cause = event] {
      if (!in_turn_)
        send_error(cause, "input_audio_buffer_commit_empty",
                   "Error committing input audio buffer: no speech since the last turn ended.");
    });
    end_utterance();
    vad_open_ = false;
    return;
  }
  if (turns_ || item_id_.empty())
    return send_error(event, "input_audio_buffer_commit_empty", "Error committing input audio buffer: the buffer is empty.");
  send_event({{"type", "input_audio_buffer.committed"},
              {"item_id", item_id_},
              {"previous_item_id", previous_item_id_.empty() ? json(nullptr) : json(previous_item_id_)}});
  json added = {{"type", "conversation.item.added"},
                {"item", user_item(item_id_)},
                {"previous_item_id", previous_item_id_.empty() ? json(nullptr) : json(previous_item_id_)}};
  send_event(added);
  added["type"] = "conversation.item.done";
  send_event(added);
  std::vector<float> tail = audio_.finish();
  if (!tail.empty()) feed(std::move(tail));
  end_utterance();
  previous_item_id_ = item_id_;
  item_id_.clear();
}

void OpenAiRealtime::clear() {
  if (!item_id_.empty() || vad_open_) {
    audio_.finish();
    cancel_utterance();
    item_id_.clear();
    vad_open_ = false;
  }
  // From the worker strand, after the cancel: no event of the dropped item comes after it.
  after_queued([this] {
    in_turn_ = false;
    send_event({{"type", "input_audio_buffer.cleared"}});
  });
}

void OpenAiRealtime::on_turn_event(const StreamEvent& e) {
  const auto ms = [](double seconds) { return static_cast<long long>(seconds * 1000 + 0.5); };
  turn_words_.add(e);
  switch (e.kind) {
    case StreamEvent::Kind::SpeechStarted:
      working_item_ = random_id("item_");
      in_turn_ = true;
      send_event({{"type", "input_audio_buffer.speech_started"}, {"audio_start_ms", ms(e.start)}, {"item_id", working_item_}});
      return;
    case StreamEvent::Kind::SpeechStopped: {
      const json previous = previous_turn_item_.empty() ? json(nullptr) : json(previous_turn_item_);
      send_event({{"type", "input_audio_buffer.speech_stopped"}, {"audio_end_ms", ms(e.end)}, {"item_id", working_item_}});
      send_event({{"type", "input_audio_buffer.committed"}, {"item_id", working_item_}, {"previous_item_id", previous}});
      json added = {{"type", "conversation.item.added"}, {"item", user_item(working_item_)}, {"previous_item_id", previous}};
      send_event(added);
      added["type"] = "conversation.item.done";
      send_event(added);
      return;
    }
    case StreamEvent::Kind::TurnEnd:
      send_event({{"type", "conversation.item.input_audio_transcription.completed"},
                  {"item_id", working_item_},
                  {"content_index", 0},
                  {"transcript", e.text},
                  {"usage", {{"type", "duration"}, {"seconds", e.end - e.start}}},
                  {"segments", turn_words_.segments()},
                  {"words", turn_words_.words()}});
      previous_turn_item_ = working_item_;
      in_turn_ = false;
      return;
    default: return;
  }
}

void OpenAiRealtime::on_model_event(const StreamEvent& e) {
  if (worker_vad_ && e.kind != StreamEvent::Kind::Text) return on_turn_event(e);
  if (e.kind != StreamEvent::Kind::Text) return;
  json delta = {{"type", "conversation.item.input_audio_transcription.delta"},
                {"item_id", working_item_},
                {"content_index", 0},
                {"delta", e.text}};
  attach_delta_words(delta);
  send_event(delta);
}

void OpenAiRealtime::on_utterance_done(const Transcript& t, const SessionStats&) {
  if (worker_vad_) return;  // each turn had its completed event
  send_event({{"type", "conversation.item.input_audio_transcription.completed"},
              {"item_id", working_item_},
              {"content_index", 0},
              {"transcript", t.text},
              {"usage", {{"type", "duration"}, {"seconds", t.duration}}},
              {"segments", segments_json(t.segments)},
              {"words", words_json(t.words)}});
}

void OpenAiRealtime::on_failure(Failure kind, const std::string& message) {
  send_event({{"type", "conversation.item.input_audio_transcription.failed"},
              {"item_id", working_item_},
              {"content_index", 0},
              {"error",
               {{"type", "server_error"},
                {"code", kind == Failure::Refused ? "session_refused" : "transcription_failed"},
                {"message", message},
                {"param", nullptr}}}});
}

}  // namespace voxrt::server
