// OpenAI's realtime transcription sessions (/v1/realtime?intent=transcription, docs/serve.md), as
// the official `openai` package's realtime WebSocket client speaks them (GA shape), so that code
// written for OpenAI's transcription sessions can point at voxrt:
//   server: session.created {event_id, session: {type: "transcription", id, audio: {input: {...}}}}
//   client: session.update {session: {type: "transcription", audio: {input: {format, transcription:
//           {model, language, prompt, delay, delay_ms (voxrt's extension)}, turn_detection}}}}; the
//           prompt's text is a context-bias list (split at commas, semicolons and line breaks)
//           -> session.updated (the whole session). format: audio/pcm at 24 kHz (resampled to the
//           model's 16 kHz), audio/pcmu or audio/pcma (G.711, 8 kHz).
//   client: input_audio_buffer.append {audio: base64}: the first audio after a commit opens an item
//   server: conversation.item.input_audio_transcription.delta {item_id, content_index, delta} as
//           the model emits text (before the commit: the model transcribes as audio arrives)
//   client: input_audio_buffer.commit -> input_audio_buffer.committed {item_id, previous_item_id},
//           conversation.item.added and .done, then the last words and
//           conversation.item.input_audio_transcription.completed {item_id, transcript, usage,
//           segments and words (voxrt's extension)}
//   client: input_audio_buffer.clear -> input_audio_buffer.cleared (the open item is dropped)
//   server: error {event_id, error: {type, code, message, param, event_id}} for a bad client event;
//           conversation.item.input_audio_transcription.failed for an item the model could not finish
// Without turn_detection (null, the default) the model transcribes continuously and the client's
// commit ends an item. With turn_detection {type: "server_vad", threshold, prefix_padding_ms,
// silence_duration_ms} the server finds the turns (SessionOptions::turns) and each is an item:
//   server: input_audio_buffer.speech_started {audio_start_ms, item_id}, the item's deltas,
//           input_audio_buffer.speech_stopped {audio_end_ms, item_id}, input_audio_buffer.committed,
//           conversation.item.added and .done, then the turn's last words and
//           conversation.item.input_audio_transcription.completed
//   client: input_audio_buffer.commit ends the turn in progress now (an error when none is);
//           input_audio_buffer.clear drops it unheard
// Times (audio_start_ms, audio_end_ms) count from the first audio of the connection.
#pragma once

#include <optional>
#include <string>

#include "server/live_transcription.h"
#include "server/realtime_audio.h"

namespace voxrt::server {

class OpenAiRealtime final : public LiveTranscription {
 public:
  OpenAiRealtime(Engine& engine, boost::asio::thread_pool& workers, const RealtimeLimits& limits = {});
  void on_open(const WebSocketSender& out) override;
  void on_message(std::string message, bool binary) override;

 private:
  nlohmann::json session_json() const;
  void update(const nlohmann::json& event);
  void append(std::string_view bytes);
  void commit(const nlohmann::json& event);
  void clear();
  void on_turn_event(const StreamEvent& event);  // worker strand, with turn detection
  // An error event answering the client event `cause` (its event_id echoed when it is a string of
  // at most kMaxEchoedBytes; else null).
  void send_error(const nlohmann::json& cause, const std::string& code, const std::string& message,
                  const std::string& param = "") const;
  void send_event(nlohmann::json event) const;  // with a fresh event_id
  void on_model_event(const StreamEvent& event) override;
  void on_utterance_done(const Transcript& transcript, const SessionStats& stats) override;
  void on_failure(Failure kind, const std::string& message) override;

  const std::string session_id_;
  // On the I/O strand:
  std::string format_ = "audio/pcm";
  RealtimeAudio audio_;
  int delay_ms_;
  nlohmann::json transcription_;  // what the client set (model, language, prompt, delay), echoed
  std::string item_id_;           // the item open (audio appended since the last commit), or empty
  std::string previous_item_id_;  // the last item committed
  std::optional<TurnDetection> turns_;  // turn detection asked for (session.update)
  BiasRequest bias_;                    // the prompt's phrases (context biasing)
  bool vad_open_ = false;               // an utterance with turn detection is open
  // On the worker strand: the item whose words the model is deciding.
  std::string working_item_;
  // With turn detection: whether the open utterance detects turns, the turn in progress, the last
  // turn's item, and the turn's segments and words for its completed event.
  bool worker_vad_ = false;
  bool in_turn_ = false;
  std::string previous_turn_item_;
  TurnWords turn_words_;
};

}  // namespace voxrt::server
