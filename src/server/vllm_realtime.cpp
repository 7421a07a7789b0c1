#include "server/vllm_realtime.h"

#include <boost/asio/post.hpp>

#include <chrono>
#include <cstring>
#include <nlohmann/json.hpp>
#include <random>

#include "common/error.h"
#include "common/base64.h"
#include "voxtral/protocol.h"

namespace voxrt::server {
namespace {

using nlohmann::json;

std::string dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

std::string session_id() {
  static std::atomic<uint64_t> counter{0};
  std::random_device rd;
  char buf[48];
  std::snprintf(buf, sizeof buf, "sess-%08x%08llx", rd(), static_cast<unsigned long long>(++counter));
  return buf;
}

// PCM16 little-endian samples as floats in [-1, 1), as vLLM converts them (x / 32768).
std::vector<float> pcm16_to_float(std::string_view bytes) {
  std::vector<float> out(bytes.size() / 2);
  for (size_t i = 0; i < out.size(); ++i) {
    int16_t v;
    std::memcpy(&v, bytes.data() + 2 * i, 2);
    out[i] = static_cast<float>(v) / 32768.0f;
  }
  return out;
}

}  // namespace

VllmRealtime::VllmRealtime(Engine& engine, boost::asio::thread_pool& workers)
    : engine_(engine), work_(boost::asio::make_strand(workers.get_executor())) {}

void VllmRealtime::on_open(const WebSocketSender& out) {
  out_ = out;
  const long long now = std::chrono::duration_cast<std::chrono::seconds>(
                            std::chrono::system_clock::now().time_since_epoch()).count();
  out_.send_text(dump({{"type", "session.created"}, {"id", session_id()}, {"created", now}}));
}

void VllmRealtime::send_error(const std::string& message, const std::string& code) const {
  out_.send_text(dump({{"type", "error"}, {"error", message}, {"code", code}}));
}

void VllmRealtime::on_message(std::string message, bool binary) {
  if (binary) return append(message);  // voxrt's extension: raw PCM16 frames
  const json event = json::parse(message, nullptr, false);
  if (event.is_discarded() || !event.is_object()) return send_error("Invalid JSON", "invalid_json");
  const std::string type = event.value("type", std::string());
  if (type == "session.update") {
    if (utterance_open_) return send_error("session.update while an utterance is open: commit final first", "session_busy");
    if (event.contains("delay_ms")) {
      const json& d = event["delay_ms"];
      try {
        if (!d.is_number_integer()) throw Error("not an integer");
        delay_tokens_from_ms(d.get<int>());
        delay_ms_ = d.get<int>();
      } catch (const std::exception&) {
        return send_error("delay_ms: the model's delays are 80 to 1200 ms in steps of 80, and 2400", "invalid_delay");
      }
    }
    session_updated_ = true;  // one model is served: any name is taken
    return;
  }
  if (type == "input_audio_buffer.append") {
    const json& audio = event.contains("audio") ? event["audio"] : json();
    if (!audio.is_string()) return send_error("input_audio_buffer.append without an audio string", "invalid_audio");
    const std::optional<std::string> bytes = voxrt::base64_decode(audio.get_ref<const std::string&>());
    if (!bytes) return send_error("Invalid audio data: not base64", "invalid_audio");
    return append(*bytes);
  }
  if (type == "input_audio_buffer.commit") {
    if (!session_updated_)
      return send_error("Model not validated. Make sure to validate the model by sending a session.update event.",
                        "model_not_validated");
    const json& final = event.contains("final") ? event["final"] : json(false);
    if (!final.is_boolean()) return send_error("input_audio_buffer.commit: final must be true or false", "invalid_event");
    return commit(final.get<bool>());
  }
  send_error("Unknown event type: " + type.substr(0, 100), "unknown_event");
}

void VllmRealtime::append(std::string_view pcm16) {
  if (pcm16.empty() || pcm16.size() % 2 != 0)
    return send_error("Invalid audio data: PCM16 needs a whole, non-zero number of 2-byte samples", "invalid_audio");
  boost::asio::post(work_, [self = shared_from_this(), samples = pcm16_to_float(pcm16)]() mutable {
    if (self->closed_ || self->failed_) return;
    if (!self->session_) {  // before the commit that starts the utterance: kept for it
      self->waiting_.insert(self->waiting_.end(), samples.begin(), samples.end());
      return;
    }
    try {
      self->session_->feed(samples);
    } catch (const std::exception& e) {
      self->failed_ = true;
      self->send_error(std::string("transcription failed: ") + e.what(), "processing_error");
    }
  });
}

void VllmRealtime::commit(bool final) {
  if (!final) {
    if (utterance_open_) return;  // vLLM ignores a commit while generating
    utterance_open_ = true;
    boost::asio::post(work_, [self = shared_from_this()] { self->start_utterance(); });
    return;
  }
  if (!utterance_open_) return send_error("input_audio_buffer.commit with final before any commit started one", "no_utterance");
  utterance_open_ = false;
  boost::asio::post(work_, [self = shared_from_this()] { self->finish_utterance(); });
}

void VllmRealtime::start_utterance() {
  if (closed_) return;
  failed_ = false;
  SessionOptions so;
  so.delay_ms = delay_ms_;
  so.on_event = [this](const StreamEvent& e) {
    if (e.kind == StreamEvent::Kind::Text && !e.text.empty())
      out_.send_text(dump({{"type", "transcription.delta"}, {"delta", e.text}}));
  };
  try {
    session_ = engine_.open_session(so);
    std::vector<float> waiting = std::move(waiting_);
    waiting_.clear();
    if (!waiting.empty()) session_->feed(waiting);
  } catch (const std::exception& e) {
    failed_ = true;
    session_.reset();
    send_error(e.what(), "session_refused");
  }
}

void VllmRealtime::finish_utterance() {
  if (closed_ || !session_) return;
  try {
    session_->flush();
    const Transcript t = session_->transcript();
    const long long steps = session_->stats().steps;
    out_.send_text(dump({{"type", "transcription.done"},
                         {"text", t.text},
                         {"usage", {{"prompt_tokens", 0}, {"completion_tokens", steps}, {"total_tokens", steps}}}}));
  } catch (const std::exception& e) {
    send_error(std::string("transcription failed: ") + e.what(), "processing_error");
  }
  session_.reset();
  waiting_.clear();
}

void VllmRealtime::finish_and_close() {
  // After whatever the worker strand holds already (the audio received), in order.
  boost::asio::post(work_, [self = shared_from_this()] {
    self->finish_utterance();
    self->out_.close(1001, "the server is shutting down");
  });
}

void VllmRealtime::on_close() {
  closed_ = true;
  // The session is freed on the strand that uses it, after whatever step is running.
  boost::asio::post(work_, [self = shared_from_this()] {
    self->session_.reset();
    self->waiting_.clear();
  });
}

}  // namespace voxrt::server
