// vLLM's realtime transcription protocol (/v1/realtime, docs/serve.md), as vLLM's
// entrypoints/openai/realtime classes define it, so that clients written for vLLM work unchanged:
//   server: session.created {id, created}
//   client: session.update {model, delay_ms (voxrt's extension)}
//   client: input_audio_buffer.append {audio: base64 PCM16, 16 kHz mono} (or a binary frame of it)
//   client: input_audio_buffer.commit: starts transcribing (audio appended before is kept)
//   server: transcription.delta {delta} as the model emits text
//   client: input_audio_buffer.commit {final: true}: end of the utterance (the flush)
//   server: transcription.done {text, usage}; a later commit starts the next utterance
//   server: error {error, code} for anything wrong, and the connection goes on
// Each utterance is a live Session of the engine; its model work runs on a worker strand, never on
// the I/O threads, one step at a time per connection and in order.
#pragma once

#include <boost/asio/strand.hpp>
#include <boost/asio/thread_pool.hpp>

#include <atomic>
#include <memory>

#include "server/websocket_connection.h"
#include "voxrt/session.h"
#include "voxrt/voxrt.h"

namespace voxrt::server {

class VllmRealtime : public WebSocketHandler, public std::enable_shared_from_this<VllmRealtime> {
 public:
  VllmRealtime(Engine& engine, boost::asio::thread_pool& workers);
  void on_open(const WebSocketSender& out) override;
  void on_message(std::string message, bool binary) override;
  void on_close() override;
  // The server is stopping: ends the open utterance as a final commit does (done event sent), then
  // closes the connection (1001, going away). From any thread.
  void finish_and_close();
  bool closed() const { return closed_.load(); }

 private:
  void append(std::string_view pcm16);
  void commit(bool final);
  void send_error(const std::string& message, const std::string& code) const;
  // On the worker strand:
  void start_utterance();
  void finish_utterance();

  Engine& engine_;
  boost::asio::strand<boost::asio::thread_pool::executor_type> work_;
  WebSocketSender out_{std::weak_ptr<WebSocketConnection>()};
  std::atomic<bool> closed_{false};
  // On the I/O strand (the connection's messages come one at a time):
  bool session_updated_ = false;
  bool utterance_open_ = false;
  int delay_ms_ = 0;
  // On the worker strand:
  std::unique_ptr<Session> session_;
  std::vector<float> waiting_;  // audio appended before the commit that starts an utterance
  bool failed_ = false;
};

}  // namespace voxrt::server
