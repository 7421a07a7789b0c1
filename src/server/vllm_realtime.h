// vLLM's realtime transcription protocol (/v1/realtime, docs/serve.md), as vLLM's
// entrypoints/openai/realtime classes define it, so that clients written for vLLM work unchanged:
//   server: session.created {id, created}
//   client: session.update {model, delay_ms (voxrt's extension)}
//   client: input_audio_buffer.append {audio: base64 PCM16, 16 kHz mono} (or a binary frame of it)
//   client: input_audio_buffer.commit: starts transcribing (audio appended before is kept, up to
//           RealtimeLimits::max_waiting_seconds)
//   server: transcription.delta {delta} as the model emits text
//   client: input_audio_buffer.commit {final: true}: end of the utterance (the flush)
//   server: transcription.done {text, usage}; a later commit starts the next utterance
//   server: error {error, code} for anything wrong, and the connection goes on
// Each utterance is a live Session of the engine (LiveTranscription).
// Turn detection (voxrt's extension, docs/serve.md): session.update {turn_detection: {type:
// "server_vad", threshold, prefix_padding_ms, silence_duration_ms} | null}, then within an utterance
//   server: input_audio_buffer.speech_started {audio_start_ms}; the turn's deltas;
//           input_audio_buffer.speech_stopped {audio_end_ms}; transcription.turn.done {text, start,
//           end, segments, words} once the turn's last words are decoded
// and the final commit ends a turn in progress, then transcription.done has all the turns' text.
// Context biasing (voxrt's extension): session.update {context_bias: [...], context_bias_strength}.
#pragma once

#include <atomic>
#include <optional>

#include "server/live_transcription.h"

namespace voxrt::server {

class VllmRealtime final : public LiveTranscription {
 public:
  VllmRealtime(Engine& engine, boost::asio::thread_pool& workers, const RealtimeLimits& limits = {})
      : LiveTranscription(engine, workers, limits) {}
  void on_open(const WebSocketSender& out) override;
  void on_message(std::string message, bool binary) override;

 private:
  void append(std::string_view pcm16);
  void commit(bool final);
  void send_error(const std::string& message, const std::string& code) const;
  void on_model_event(const StreamEvent& event) override;
  void on_utterance_done(const Transcript& transcript, const SessionStats& stats) override;
  void on_failure(Failure kind, const std::string& message) override;

  // On the I/O strand (the connection's messages come one at a time):
  bool session_updated_ = false;
  bool utterance_open_ = false;
  // Set on the worker strand when the open utterance failed (refused or broken): the next commit
  // sees it closed, so a client can retry with a commit, and a final commit gets an error, not silence.
  std::atomic<bool> utterance_failed_{false};
  int delay_ms_ = 0;
  std::optional<TurnDetection> turns_;
  BiasRequest bias_;
  // On the worker strand: the turn in progress's words.
  TurnWords turn_words_;
  // The audio appended before the commit that opens the next utterance (kept for it, within
  // RealtimeLimits::max_waiting_seconds), and whether the client heard that the rest is dropped.
  size_t waiting_samples_ = 0;
  bool said_waiting_full_ = false;
};

}  // namespace voxrt::server
