// Mistral's realtime transcription protocol (/v1/audio/transcriptions/realtime?model=..., docs/serve.md),
// as the official SDKs' RealtimeTranscription clients speak it (@mistralai/mistralai extra/realtime),
// so that they connect with only their server URL changed:
//   server: session.created {session: {request_id, model, audio_format, target_streaming_delay_ms}}
//   client: session.update {session: {audio_format: {encoding, sample_rate}, target_streaming_delay_ms,
//           context_bias (as Mistral's transcription requests name it), context_bias_strength
//           (voxrt's)}} (before the audio) -> session.updated
//   client: input_audio.append {audio: base64} (or a binary frame of the same bytes: voxrt's extension)
//   server: transcription.text.delta {text} as the model emits it; transcription.segment
//           {text, start, end, words (voxrt's extension)} as each word group ends
//   client: input_audio.flush (the audio is transcribed as it arrives: nothing is held back)
//   client: input_audio.end -> the last words, then transcription.done {model, text, usage,
//           language: null, segments}; the input is over (the client closes)
//   server: error {error: {message, code}} for anything wrong, and the connection goes on
// Turn detection (as Mistral's hosted realtime models offer it): session.update {session:
// {turn_detection: {} | {min_silence_ms, end_timeout_ms, start_threshold, ...} | null}} before the
// audio. Mistral's SDK defines no turn events; voxrt's (docs/serve.md), which the SDK hands over as
// unknown events with their raw JSON:
//   server: transcription.speech_started {start}; the turn's deltas and segments;
//           transcription.speech_stopped {start, end}; transcription.turn.done {text, start, end,
//           segments, words} once the turn's last words are decoded
// input_audio.end ends a turn in progress, then transcription.done has all the turns' text.
#pragma once

#include <optional>
#include <string>

#include "server/live_transcription.h"
#include "server/realtime_audio.h"

namespace voxrt::server {

class MistralRealtime final : public LiveTranscription {
 public:
  // `model`: the name the client asked for (the query's model=), echoed; one longer than
  // kMaxEchoedBytes is refused (an error, then the connection closes).
  MistralRealtime(Engine& engine, boost::asio::thread_pool& workers, std::string model, const RealtimeLimits& limits = {});
  void on_open(const WebSocketSender& out) override;
  void on_message(std::string message, bool binary) override;

 private:
  nlohmann::json session_json() const;
  void update(const nlohmann::json& session);
  void append(std::string_view bytes);
  void end();
  void send_error(const std::string& message, int code) const;
  void on_model_event(const StreamEvent& event) override;
  void on_utterance_done(const Transcript& transcript, const SessionStats& stats) override;
  void on_failure(Failure kind, const std::string& message) override;

  const std::string model_, request_id_;
  // On the I/O strand:
  std::string encoding_ = "pcm_s16le";
  RealtimeAudio audio_;
  int delay_ms_;
  bool audio_started_ = false, ended_ = false;
  std::optional<TurnDetection> turns_;
  BiasRequest bias_;
  bool refused_ = false;  // the model name was refused: the connection is closing, its messages unheard
  // On the worker strand: the words of the word group in progress (for its segment event), and of
  // the turn in progress.
  std::vector<Word> segment_words_;
  TurnWords turn_words_;
};

}  // namespace voxrt::server
