// What the realtime dialects (vLLM's, Mistral's, OpenAI's) share: a WebSocket connection whose
// audio feeds live Sessions of the engine, one utterance at a time. The model work runs on a
// worker strand of the connection, never on the I/O threads, in the order the connection's
// messages came; the dialect parses its events on the I/O strand and renders the model's events
// (called on the worker strand) in its own words.
#pragma once

#include <boost/asio/strand.hpp>
#include <boost/asio/thread_pool.hpp>

#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>
#include <nlohmann/json.hpp>

#include "common/histogram_counter.h"
#include "server/context_bias_fields.h"
#include "server/event_json.h"
#include "server/text_deltas.h"
#include "server/websocket_connection.h"
#include "voxrt/session.h"
#include "voxrt/voxrt.h"

namespace voxrt::server {

// Words as the dialects' extension fields carry them: [{word, start, end}].
nlohmann::json words_json(const std::vector<Word>& words);
// Segments as the dialects' done events carry them: [{text, start, end, words}].
nlohmann::json segments_json(const std::vector<Segment>& segments);

// Word timestamps on the text deltas (voxrt's extension, "words": [{word, start, end}]). A word is
// known to be over at the step whose text begins the next one (its Word event comes just before
// that step's text), so a delta carries the words its own text ended, and those a segment's end
// closed since the delta before; the last word, ended by the end of input, is in the done event's
// words only.
class DeltaWords {
 public:
  void add(const StreamEvent& word) { pending_.push_back({word.start, word.end, word.text}); }
  void attach(nlohmann::json& delta);  // adds "words" when some are pending, and forgets them
  void clear() { pending_.clear(); }

 private:
  std::vector<Word> pending_;
};

// One turn's segments and words (turn detection), gathered from the model's events between the
// turn's SpeechStarted and its TurnEnd, for the dialects' per-turn events. Worker strand.
class TurnWords {
 public:
  void add(const StreamEvent& e);  // SpeechStarted starts afresh; Word and SegmentEnd are kept
  nlohmann::json segments() const { return segments_json(segments_); }
  nlohmann::json words() const { return words_json(words_); }

 private:
  std::vector<Segment> segments_;
  std::vector<Word> words_, segment_words_;
};

// The realtime connections' lag, for /metrics (voxrt_live_lag_seconds): each audio message of an
// open utterance, from its arrival to the model work it made possible done and its events sent.
// Unlike the engine's wait (voxrt_live_wait_seconds) it counts the time the message queued for a
// worker, so a server short of workers shows here. Any thread.
class LiveLag {
 public:
  LiveLag();
  void add(double ms);
  Histogram histogram_ms() const;

 private:
  mutable std::mutex mu_;
  HistogramCounter ms_;
};

// What one realtime connection may hold, whatever its client sends. A client that sends audio
// faster than the model hears it is slowed to the model's pace (its reads pause), never cut off:
// none of its audio is lost.
struct RealtimeLimits {
  // vLLM's dialect keeps the audio appended before the commit that opens an utterance, for it: at
  // most this much (seconds at 16 kHz); past it an error, and the rest is dropped.
  double max_waiting_seconds = 60;
  // Audio decoded but not yet fed to the model (seconds at 16 kHz): past pause_queued_seconds the
  // connection reads nothing more until the model has caught up to resume_queued_seconds. The
  // queue is at most that plus one message (a message's audio is taken whole).
  double pause_queued_seconds = 10;
  double resume_queued_seconds = 5;
  // The same for the tasks queued for the worker (each audio message, each commit's or end's
  // work): tiny utterances, each one a session to open and flush, are work without audio.
  size_t pause_queued_tasks = 256;
  size_t resume_queued_tasks = 128;
  EventJsonLimits json;  // each text message's size, depth and values
};

// A client's value echoed back in events (an event_id, a model name) is at most this long.
constexpr size_t kMaxEchoedBytes = 128;

class LiveTranscription : public WebSocketHandler, public std::enable_shared_from_this<LiveTranscription> {
 public:
  LiveTranscription(Engine& engine, boost::asio::thread_pool& workers, const RealtimeLimits& limits = {});
  // Counts this connection's lag into `lag` from now on (none: not counted). Before its first message.
  void count_lag_in(std::shared_ptr<LiveLag> lag) { lag_ = std::move(lag); }
  void on_close() override;
  // True while the worker is too far behind (RealtimeLimits' pause marks: audio or tasks queued);
  // it resumes the reads once it has caught up (the resume marks).
  bool pause_reading() override;
  // The server is stopping: ends the open utterance as its dialect's end of input does (its last
  // words decoded, its done event sent), then closes the connection (1001, going away). Any thread.
  void finish_and_close();
  // The server stops now: the connection is closed with `code` at once, and what its worker strand
  // still holds is dropped (its session freed after the step in progress). Any thread.
  void close_now(int code, const std::string& reason);
  bool closed() const { return closed_.load(); }
  // Samples (16 kHz) decoded and not yet fed to the model, and tasks queued for the worker: now,
  // and the most there have been (what the limits bound, for the tests).
  size_t queued_samples() const { return queued_.load(); }
  size_t most_queued_samples() const { return most_queued_.load(); }
  size_t queued_tasks() const { return queued_tasks_.load(); }
  size_t most_queued_tasks() const { return most_queued_tasks_.load(); }

 protected:
  // Why the model work of an utterance stopped short.
  enum class Failure {
    Refused,  // the engine had no room for the session (full, overloaded): nothing was decoded
    Failed,   // the model work failed midway
  };
  // On the I/O strand (from on_message), queued to the worker strand in order:
  // Opens a session of the engine at this delay (0: the model's default); audio fed before it was
  // kept for it. With `turns`, a session with turn detection (SessionOptions::turns): its turns'
  // events (SpeechStarted, SpeechStopped, TurnEnd) come through on_model_event, each turn's text
  // deltas start afresh (they add up to the TurnEnd's text), and times count from the connection's
  // first audio.
  // `bias`: its context biasing (SessionOptions::context_bias), checked by the dialect.
  void begin_utterance(int delay_ms, const std::optional<TurnDetection>& turns = std::nullopt, const BiasRequest& bias = {});
  void feed(std::vector<float> samples);  // 16 kHz mono
  // The end of the utterance's input: its last words decoded, then on_utterance_done.
  void end_utterance();
  // Drops the open utterance unheard: no done event (the client cleared its audio).
  void cancel_utterance();
  // Runs `task` on the worker strand after what was queued before (the dialect's own ordering).
  void after_queued(std::function<void()> task);

  void send(const nlohmann::json& event) const;  // a text frame, from any thread
  const RealtimeLimits& limits() const { return limits_; }
  // Adds the words ended since the last text delta to this one (worker strand; DeltaWords above).
  void attach_delta_words(nlohmann::json& delta) { delta_words_.attach(delta); }
  const WebSocketSender& sender() const { return out_; }
  void set_sender(const WebSocketSender& out) { out_ = out; }
  Engine& engine() const { return engine_; }

  // On the worker strand. A Text event's text is the delta to send (TextDeltas: the deltas add up
  // to the done event's text exactly); Text events with nothing to send are not passed on.
  virtual void on_model_event(const StreamEvent& event) = 0;
  virtual void on_utterance_done(const Transcript& transcript, const SessionStats& stats) = 0;
  virtual void on_failure(Failure kind, const std::string& message) = 0;
  bool utterance_running() const { return session_ != nullptr; }  // worker strand only
  // Worker strand: seconds of this connection's audio given to its utterances before the open one
  // began. An utterance with turns has its events' times moved by it (they count from the
  // connection's first audio); one without keeps its own.
  double utterance_offset_seconds() const { return static_cast<double>(utterance_begin_) / 16000; }

 private:
  void start_session(int delay_ms, const std::optional<TurnDetection>& turns, const BiasRequest& bias);
  void feed_session(std::span<const float> samples);
  void finish_session();
  // Backpressure (pause_reading): whether the worker is too far behind to read on, and whether it
  // has caught up enough to resume.
  bool behind() const;
  bool caught_up() const;
  void queued_task();             // a task for the worker strand (any thread)
  void dequeued(size_t samples);  // worker strand: a task (with this audio) left the queue

  Engine& engine_;
  const RealtimeLimits limits_;
  boost::asio::strand<boost::asio::thread_pool::executor_type> work_;
  std::shared_ptr<LiveLag> lag_;
  WebSocketSender out_{std::weak_ptr<WebSocketConnection>()};
  std::atomic<bool> closed_{false};
  std::atomic<bool> finishing_{false};  // finish_and_close was called: audio that comes after is dropped
  // Backpressure: the I/O strand adds to the queue and sets pause_requested_ when it pauses the
  // reads; the worker takes from it, and resumes the reads if it takes pause_requested_ back.
  std::atomic<size_t> queued_{0}, most_queued_{0};  // samples
  std::atomic<size_t> queued_tasks_{0}, most_queued_tasks_{0};
  std::atomic<bool> pause_requested_{false};
  // On the worker strand:
  std::unique_ptr<Session> session_;
  std::vector<float> waiting_;  // audio fed before the utterance began: kept for it
  bool failed_ = false;         // the utterance failed: its audio is dropped until the next begins
  DeltaWords delta_words_;      // the utterance's words not yet on a delta
  TextDeltas text_deltas_;      // the utterance's text as deltas
  int64_t fed_ = 0;             // samples given to this connection's sessions
  int64_t utterance_begin_ = 0;  // fed_ when the open utterance began
};

// PCM16 little-endian samples as floats in [-1, 1) (x / 32768, as vLLM and libsndfile convert them).
std::vector<float> pcm16_to_float(std::string_view bytes);
// A session id: prefix + 16 random hex digits.
std::string random_id(std::string_view prefix);
// The model's samples in `seconds` of audio (16 kHz), and seconds as a message says them ("60", "0.5").
size_t model_samples(double seconds);
std::string seconds_text(double seconds);
// A JSON event as text (invalid UTF-8 in strings replaced, never thrown on).
std::string dump_event(const nlohmann::json& event);
// A client's delay, if it is one the model was trained for (`delays`, the loaded model's
// ModelInfo::delays): a JSON integer (480.0 is not), whatever its size (2^32 + 480 is not 480).
std::optional<int> model_delay_ms(const nlohmann::json& delay_ms, const DelayRange& delays);
// What an error about a delay says of the model's: "the model's delays are 80 to 1200 ms in ...".
std::string model_delays_text(const DelayRange& delays);
}  // namespace voxrt::server
