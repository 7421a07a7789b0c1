#include "server/live_transcription.h"

#include <boost/asio/post.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>

namespace voxrt::server {

std::vector<float> pcm16_to_float(std::string_view bytes) {
  std::vector<float> out(bytes.size() / 2);
  for (size_t i = 0; i < out.size(); ++i) {
    int16_t v;
    std::memcpy(&v, bytes.data() + 2 * i, 2);
    out[i] = static_cast<float>(v) / 32768.0f;
  }
  return out;
}

std::string random_id(std::string_view prefix) {
  static std::atomic<uint64_t> counter{0};
  thread_local std::mt19937_64 rng(std::random_device{}());
  char buf[40];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(rng() ^ ++counter));
  return std::string(prefix) + buf;
}

size_t model_samples(double seconds) { return static_cast<size_t>(std::max(0.0, seconds) * 16000); }

std::string seconds_text(double seconds) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", seconds);
  return buf;
}

std::string dump_event(const nlohmann::json& event) {
  return event.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::optional<int> model_delay_ms(const nlohmann::json& delay_ms, const DelayRange& delays) {
  if (!delay_ms.is_number_integer()) return std::nullopt;  // 480.0 too: a float, however whole
  // Range-checked as JSON typed it before it narrows: get<int>() wraps (2^32 + 480 was taken for 480).
  const bool fits = delay_ms.is_number_unsigned()
                        ? delay_ms.get<uint64_t>() <= static_cast<uint64_t>(std::numeric_limits<int>::max())
                        : delay_ms.get<int64_t>() >= std::numeric_limits<int>::min() &&
                              delay_ms.get<int64_t>() <= std::numeric_limits<int>::max();
  if (!fits) return std::nullopt;
  const int ms = delay_ms.get<int>();
  if (!delays.accepts(ms)) return std::nullopt;
  return ms;
}

std::string model_delays_text(const DelayRange& delays) { return "the model's delays are " + to_string(delays); }

nlohmann::json words_json(const std::vector<Word>& words) {
  nlohmann::json out = nlohmann::json::array();
  for (const Word& w : words) out.push_back({{"word", w.text}, {"start", w.start}, {"end", w.end}});
  return out;
}

void DeltaWords::attach(nlohmann::json& delta) {
  if (pending_.empty()) return;
  delta["words"] = words_json(pending_);
  pending_.clear();
}

nlohmann::json segments_json(const std::vector<Segment>& segments) {
  nlohmann::json out = nlohmann::json::array();
  for (const Segment& s : segments)
    out.push_back({{"text", s.text}, {"start", s.start}, {"end", s.end}, {"words", words_json(s.words)}});
  return out;
}

void TurnWords::add(const StreamEvent& e) {
  switch (e.kind) {
    case StreamEvent::Kind::SpeechStarted:
      segments_.clear();
      words_.clear();
      segment_words_.clear();
      return;
    case StreamEvent::Kind::Word:
      words_.push_back({e.start, e.end, e.text});
      segment_words_.push_back({e.start, e.end, e.text});
      return;
    case StreamEvent::Kind::SegmentEnd:
      segments_.push_back({e.start, e.end, e.text, std::move(segment_words_)});
      segment_words_.clear();
      return;
    default: return;
  }
}

namespace {
// A message waits for a worker and a round or two; past 80 ms the connection falls behind real time.
constexpr double kLagBoundsMs[] = {1, 2, 5, 10, 20, 40, 60, 80, 120, 160, 250, 500, 1000, 2500};

// Audio goes to a session in pieces of eight 80 ms steps (the GPU's default draft width, so that a
// connection catching up still verifies that many positions a pass): a connection that closes stops
// within a piece, not after a whole message (up to 8 minutes of audio) or the audio kept for a commit.
constexpr size_t kFeedPiece = 8 * 1280;
}  // namespace

LiveLag::LiveLag() : ms_(kLagBoundsMs) {}

void LiveLag::add(double ms) {
  const std::lock_guard<std::mutex> lock(mu_);
  ms_.add(ms);
}

Histogram LiveLag::histogram_ms() const {
  const std::lock_guard<std::mutex> lock(mu_);
  return ms_.histogram();
}

LiveTranscription::LiveTranscription(Engine& engine, boost::asio::thread_pool& workers, const RealtimeLimits& limits)
    : engine_(engine), limits_(limits), work_(boost::asio::make_strand(workers.get_executor())) {}

void LiveTranscription::send(const nlohmann::json& event) const { out_.send_text(dump_event(event)); }

void LiveTranscription::after_queued(std::function<void()> task) {
  queued_task();
  boost::asio::post(work_, [self = shared_from_this(), task = std::move(task)] {
    if (!self->closed_) task();
    self->dequeued(0);
  });
}

void LiveTranscription::begin_utterance(int delay_ms, const std::optional<TurnDetection>& turns, const BiasRequest& bias) {
  after_queued([this, delay_ms, turns, bias] { start_session(delay_ms, turns, bias); });
}

void LiveTranscription::feed(std::vector<float> samples) {
  if (finishing_) return;  // past the server's stop: its last utterance is being finished
  const auto arrived = std::chrono::steady_clock::now();
  queued_task();
  const size_t queued = queued_ += samples.size();
  if (queued > most_queued_) most_queued_ = queued;  // only the I/O strand adds audio: no lost update
  boost::asio::post(work_, [self = shared_from_this(), samples = std::move(samples), arrived] {
    if (self->closed_ || self->failed_) {
      // Nothing more for this audio (a closed connection's, a failed utterance's).
    } else if (!self->session_) {  // before the utterance began: kept for it
      self->waiting_.insert(self->waiting_.end(), samples.begin(), samples.end());
    } else {
      try {
        self->feed_session(samples);
        if (self->lag_)
          self->lag_->add(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - arrived).count());
      } catch (const std::exception& e) {
        self->failed_ = true;
        self->session_.reset();
        self->on_failure(Failure::Failed, std::string("transcription failed: ") + e.what());
      }
    }
    self->dequeued(samples.size());
  });
}

void LiveTranscription::feed_session(std::span<const float> samples) {
  for (size_t at = 0; at < samples.size() && !closed_; at += kFeedPiece) {
    const size_t n = std::min(kFeedPiece, samples.size() - at);
    session_->feed(samples.subspan(at, n));
    fed_ += static_cast<int64_t>(n);
  }
}

bool LiveTranscription::behind() const {
  return queued_ > model_samples(limits_.pause_queued_seconds) || queued_tasks_ > limits_.pause_queued_tasks;
}

bool LiveTranscription::caught_up() const {
  return queued_ <= model_samples(limits_.resume_queued_seconds) && queued_tasks_ <= limits_.resume_queued_tasks;
}

bool LiveTranscription::pause_reading() {
  if (!behind()) return false;
  // The flag goes up before the queue is looked at again, so that the worker, draining it, either
  // sees the flag (and resumes the reads) or had caught up already (seen here).
  pause_requested_ = true;
  if (!caught_up()) return true;
  // The worker caught up meanwhile: no pause, unless it took the flag already (its resume is then
  // on its way to this strand, behind the pause).
  return !pause_requested_.exchange(false);
}

void LiveTranscription::queued_task() {
  // The peak may miss a task finish_and_close adds from another thread at the same moment: a
  // figure for the tests, which add none.
  const size_t tasks = ++queued_tasks_;
  if (tasks > most_queued_tasks_) most_queued_tasks_ = tasks;
}

void LiveTranscription::dequeued(size_t samples) {
  queued_ -= samples;
  --queued_tasks_;
  if (caught_up() && pause_requested_.exchange(false)) out_.resume_reading();
}

void LiveTranscription::end_utterance() {
  after_queued([this] { finish_session(); });
}

void LiveTranscription::cancel_utterance() {
  after_queued([this] {
    session_.reset();
    waiting_.clear();
    failed_ = false;
  });
}

void LiveTranscription::start_session(int delay_ms, const std::optional<TurnDetection>& turns, const BiasRequest& bias) {
  failed_ = false;
  SessionOptions so;
  so.delay_ms = delay_ms;
  so.turns = turns;
  so.context_bias = bias.phrases;
  so.context_bias_strength = bias.strength;
  delta_words_.clear();
  text_deltas_.reset();
  utterance_begin_ = fed_;
  // With turns, times count from the connection's first audio (an utterance ended by a commit and
  // the next one are one timeline of turns); without, from the utterance's start, as before.
  const double offset = turns ? utterance_offset_seconds() : 0.0;
  so.on_event = [this, offset](const StreamEvent& event) {
    StreamEvent e = event;
    e.start += offset;
    e.end += offset;
    if (e.kind == StreamEvent::Kind::SpeechStarted) {  // a turn's deltas add up to its own text
      delta_words_.clear();
      text_deltas_.reset();
    }
    if (e.kind == StreamEvent::Kind::Word) delta_words_.add(e);
    if (e.kind != StreamEvent::Kind::Text) return on_model_event(e);
    StreamEvent delta = e;
    delta.text = text_deltas_.next(e.text);
    if (!delta.text.empty()) on_model_event(delta);
  };
  try {
    session_ = engine_.open_session(so);
    std::vector<float> waiting = std::move(waiting_);
    waiting_.clear();
    feed_session(waiting);
  } catch (const std::exception& e) {
    const bool opened = session_ != nullptr;
    failed_ = true;
    session_.reset();
    waiting_.clear();
    on_failure(opened ? Failure::Failed : Failure::Refused, e.what());
  }
}

void LiveTranscription::finish_session() {
  if (!session_) {
    waiting_.clear();
    return;
  }
  try {
    session_->flush();
    const Transcript t = session_->transcript();
    const SessionStats stats = session_->stats();
    session_.reset();  // its caches back to the engine before the client hears it is done
    on_utterance_done(t, stats);
  } catch (const std::exception& e) {
    session_.reset();
    on_failure(Failure::Failed, std::string("transcription failed: ") + e.what());
  }
  waiting_.clear();
}

void LiveTranscription::finish_and_close() {
  finishing_ = true;
  // After whatever the worker strand holds already (the audio received), in order.
  after_queued([this] {
    finish_session();
    out_.close(1001, "the server is shutting down");
  });
}

void LiveTranscription::close_now(int code, const std::string& reason) {
  closed_ = true;  // the tasks queued on the strand do nothing from here on
  out_.close(code, reason);
}

void LiveTranscription::on_close() {
  closed_ = true;
  // The session is freed on the strand that uses it, after whatever step is running.
  boost::asio::post(work_, [self = shared_from_this()] {
    self->session_.reset();
    self->waiting_.clear();
  });
}

}  // namespace voxrt::server
