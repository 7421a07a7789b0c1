#include "scheduler/scheduler.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <exception>
#include <optional>
#include <thread>

#include "common/error.h"
#include "scheduler/cache_budget.h"

namespace voxrt {

// A stream's state and its hand-over with the loop. While `wanted`, the loop owns `state`;
// otherwise the stream's owner may read it.
struct Scheduler::Entry {
  std::unique_ptr<ModelStream> state;
  int encoder_slot = -1, decoder_slot = -1;  // its slots in the pools' caches, freed when it closes
  bool live = false;  // opened as a live session: its paced hand-overs' waits tell the load (LoadMonitor)
  bool fill_drafts = false;  // what the loop last told its state (Scheduler::set_fill_drafts)
  // Owner-side (only the stream's owner touches them): the previous hand-over's start and audio.
  std::chrono::steady_clock::time_point last_run{};
  double last_audio_s = 0;
  // Under mu_:
  std::vector<float> inbox;  // frames handed over, not yet given to the state
  int64_t final_positions = -1;
  bool wanted = false;       // the owner waits for the loop to run everything handed over
  std::chrono::steady_clock::time_point wanted_at{};  // since when (EngineStats::stalled_seconds)
  std::vector<PositionOutput> outbox;
  std::string error;         // the model work failed: every later run() throws it
  std::condition_variable done;
};

// The encoder's and decoder's pool shapes: max_cache_bytes split so that both run out together
// for streams of stream_seconds, or max_streams such streams, or one to start with (growing).
Scheduler::PoolShapes Scheduler::pool_shapes(const StreamModel& model, const StreamOptions& default_stream,
                                             const SchedulerLimits& l) {
  const int slots = std::max(1, l.max_streams);
  PoolShapes p{model.encoder_cache_shape(slots), model.decoder_cache_shape(slots)};
  const int enc = KvPool::pages_for(p.encoder, model.encoder_frames_for(default_stream, l.stream_seconds));
  const int dec = KvPool::pages_for(p.decoder, model.decoder_positions_for(default_stream, l.stream_seconds));
  const size_t kv_bytes = model.backend().kv_element_bytes();
  CacheFigures f;
  f.encoder_pages = enc;
  f.decoder_pages = dec;
  f.encoder_page_bytes = static_cast<double>(KvPool::page_bytes(p.encoder, kv_bytes));
  f.decoder_page_bytes = static_cast<double>(KvPool::page_bytes(p.decoder, kv_bytes));
  f.free_bytes = static_cast<double>(model.backend().memory_available());
  f.working_bytes = static_cast<double>(model.backend().working_memory());
  f.seconds = l.stream_seconds > 0 ? std::to_string(static_cast<int>(std::ceil(l.stream_seconds))) + " s"
                                   : std::string("a whole window");
  const CacheBudget b = plan_cache_budget(f, l.max_cache_bytes, l.max_streams);
  p.encoder.pages = b.encoder_pages;
  p.decoder.pages = b.decoder_pages;
  p.grows = b.grows;
  return p;
}

Scheduler::Scheduler(StreamModel& model, std::mutex& model_mutex, const StreamOptions& default_stream,
                     const SchedulerLimits& limits)
    : Scheduler(model, model_mutex, default_stream, limits, pool_shapes(model, default_stream, limits)) {}

Scheduler::Scheduler(StreamModel& model, std::mutex& model_mutex, const StreamOptions& default_stream,
                     const SchedulerLimits& limits, const PoolShapes& shapes)
    : model_(model),
      frames_(model.frames()),
      model_mutex_(model_mutex),
      one_pass_(model.batch_invariant()),
      limits_(limits),
      default_stream_(default_stream),
      encoder_pool_(model.backend(), shapes.encoder, shapes.grows),
      decoder_pool_(model.backend(), shapes.decoder, shapes.grows),
      load_(limits.overload_wait_ms),
      cache_seen_(cache_use_locked()),
      thread_([this] { loop(); }) {}

Scheduler::~Scheduler() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  work_.notify_all();
  thread_.join();
}

int Scheduler::encoder_pages(const StreamOptions& o, double max_seconds) const {
  const double seconds = max_seconds < 0 ? limits_.stream_seconds : max_seconds;
  return encoder_pool_.pages_for(model_.encoder_frames_for(o, seconds));
}

int Scheduler::decoder_pages(const StreamOptions& o, double max_seconds) const {
  const double seconds = max_seconds < 0 ? limits_.stream_seconds : max_seconds;
  return decoder_pool_.pages_for(model_.decoder_positions_for(o, seconds));
}

// The least new storage the growing pools need to take a stream of these pages (0: it fits now);
// SIZE_MAX when they cannot grow to it within `room`. Both grow one after the other, each
// holding its old storage while it copies: counting both new storages whole covers that.
size_t Scheduler::growth_needed(int enc_pages, int dec_pages, size_t room) const {
  const size_t enc = encoder_pool_.least_growth_bytes(enc_pages), dec = decoder_pool_.least_growth_bytes(dec_pages);
  if (enc > room || dec > room - enc) return SIZE_MAX;
  return enc + dec;
}

bool Scheduler::room_for(int enc_pages, int dec_pages) const {
  if (limits_.max_streams > 0 && encoder_pool_.in_use() >= limits_.max_streams) return false;
  if (encoder_pool_.grows()) return growth_needed(enc_pages, dec_pages, model_.backend().memory_for_caches()) != SIZE_MAX;
  return encoder_pool_.fits(enc_pages) && decoder_pool_.fits(dec_pages);
}

bool Scheduler::wait_for_room(std::unique_lock<std::mutex>& model_lock, int enc_pages, int dec_pages,
                              std::optional<Clock::time_point> deadline) {
  const auto fits = [&] { return room_for(enc_pages, dec_pages); };
  if (!deadline) {
    room_.wait(model_lock, fits);
    return true;
  }
  return room_.wait_until(model_lock, *deadline, fits);
}

std::unique_ptr<Scheduler::Stream> Scheduler::open(const StreamOptions& opts, double wait_seconds,
                                                   double max_seconds, bool live) {
  // When the wait for room ends (none: it does not).
  std::optional<Clock::time_point> deadline;
  if (wait_seconds >= 0)
    deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(wait_seconds));
  if (live && limits_.refuse_when_overloaded) {
    std::unique_lock<std::mutex> lock(mu_);
    while (load_.overloaded(LoadMonitor::Clock::now())) {
      if (deadline && Clock::now() >= *deadline) {
        char buf[200];
        std::snprintf(buf, sizeof buf,
                      "engine overloaded: the live sessions' steps wait %.0f ms (90th percentile), more than the "
                      "%.0f ms of audio a step brings; a new session would make them fall behind. Try again later",
                      load_.p90_ms(LoadMonitor::Clock::now()), load_.budget_ms());
        counters_.refused(EngineCounters::Refusal::Overloaded);
        throw BusyError(buf);
      }
      lock.unlock();
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      lock.lock();
    }
  }
  std::unique_ptr<ModelStream> state;
  int enc = -1, dec = -1;
  {
    // The pools' shapes change when they grow (another stream opening): read them under the lock.
    std::unique_lock<std::mutex> model_lock(model_mutex_);
    const int enc_pages = encoder_pages(opts, max_seconds), dec_pages = decoder_pages(opts, max_seconds);
    const size_t bytes = bytes_of(enc_pages, dec_pages);
    // One that could never fit is refused even when the caller would wait.
    if (!encoder_pool_.grows() && (enc_pages > encoder_pool_.pages() || dec_pages > decoder_pool_.pages())) {
      counters_.refused(EngineCounters::Refusal::TooLong);
      throw InputError("engine: a session of this length needs " + format_gb(static_cast<double>(bytes)) +
                  " of cache, more than the engine's " +
                  format_gb(static_cast<double>(bytes_of(encoder_pool_.pages(), decoder_pool_.pages()))));
    }
    if (!wait_for_room(model_lock, enc_pages, dec_pages, deadline)) {
      counters_.refused(EngineCounters::Refusal::Full);
      const std::string waited =
          wait_seconds > 0 ? " (after waiting " + std::to_string(static_cast<int>(std::lround(wait_seconds))) + " s)" : "";
      if (limits_.max_streams > 0 && encoder_pool_.in_use() >= limits_.max_streams)
        throw BusyError("engine full: all " + std::to_string(limits_.max_streams) +
                        " sessions it was loaded for are in use (max_sessions)" + waited + "; close one, or wait for room");
      const CacheUse use = cache_use_locked();
      if (encoder_pool_.grows())
        throw BusyError("engine full: the session caches (" + format_gb(static_cast<double>(use.total_bytes)) + ", " +
                        format_gb(static_cast<double>(use.used_bytes)) + " in use or kept for open sessions) cannot grow by " +
                        format_gb(static_cast<double>(bytes)) + ": the device has " + format_gb(static_cast<double>(model_.backend().memory_for_caches())) +
                        " free beyond the passes' working memory" + waited +
                        "; close one, wait for room, or open it for fewer seconds (max_memory allocates the caches at load, "
                        "where caches grown by copying reach about four fifths of the memory)");
      throw BusyError("engine full: the session caches (" + format_gb(static_cast<double>(use.total_bytes)) + ", " +
                      format_gb(static_cast<double>(use.used_bytes)) + " in use or kept for open sessions) have no room for one of " +
                      format_gb(static_cast<double>(bytes)) + " more (max_memory)" + waited +
                      "; close one, wait for room, or open it for fewer seconds");
    }
    // Growing pools: the encoder's may take its share of the room (as a default stream's pages
    // are split between the two, so that both grow toward it together; at least its own least
    // growth, at most what the decoder's least leaves), the decoder's what is free once the
    // encoder's has grown.
    size_t enc_room = SIZE_MAX;
    if (encoder_pool_.grows()) {
      const size_t room = model_.backend().memory_for_caches(), dec_least = decoder_pool_.least_growth_bytes(dec_pages);
      const double share = static_cast<double>(bytes_of(encoder_pages(default_stream_, -1), 0)) /
                           static_cast<double>(std::max<size_t>(1, cache_bytes_locked(-1)));
      enc_room = std::max(encoder_pool_.least_growth_bytes(enc_pages), static_cast<size_t>(share * static_cast<double>(room)));
      enc_room = std::min(enc_room, room > dec_least ? room - dec_least : 0);
    }
    enc = encoder_pool_.acquire(enc_pages, enc_room);
    try {
      dec = decoder_pool_.acquire(dec_pages, decoder_pool_.grows() ? model_.backend().memory_for_caches() : SIZE_MAX);
      state = model_.open_stream(opts, CacheSlot{encoder_pool_.cache(), enc}, CacheSlot{decoder_pool_.cache(), dec});
      note_cache_use();
    } catch (...) {
      encoder_pool_.release(enc);
      if (dec >= 0) decoder_pool_.release(dec);
      throw;
    }
  }
  counters_.opened();
  std::lock_guard<std::mutex> lock(mu_);
  Entry& e = entries_.emplace_back();
  e.state = std::move(state);
  e.encoder_slot = enc;
  e.decoder_slot = dec;
  e.live = live;
  return std::unique_ptr<Stream>(new Stream(*this, &e));
}

std::vector<Scheduler::Round> Scheduler::take_rounds() {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<Round> out;
  out.swap(rounds_);
  return out;
}

size_t Scheduler::bytes_of(int enc_pages, int dec_pages) const {
  return static_cast<size_t>(enc_pages) * encoder_pool_.page_bytes() +
         static_cast<size_t>(dec_pages) * decoder_pool_.page_bytes();
}

size_t Scheduler::cache_bytes_for(double max_seconds) const {
  std::lock_guard<std::mutex> model_lock(model_mutex_);  // the pools' shapes change as they grow
  return cache_bytes_locked(max_seconds);
}

size_t Scheduler::cache_bytes_locked(double max_seconds) const {
  return bytes_of(encoder_pages(default_stream_, max_seconds), decoder_pages(default_stream_, max_seconds));
}

Scheduler::CacheUse Scheduler::cache_use_locked() const {
  CacheUse u;
  u.encoder_pages = encoder_pool_.pages_in_use();
  u.decoder_pages = decoder_pool_.pages_in_use();
  // In use, or kept for the open streams' later positions.
  u.used_bytes = bytes_of(encoder_pool_.pages() - std::max(0, encoder_pool_.cache().unreserved_pages()),
                          decoder_pool_.pages() - std::max(0, decoder_pool_.cache().unreserved_pages()));
  u.total_bytes = bytes_of(encoder_pool_.pages(), decoder_pool_.pages());
  u.mapped_bytes = bytes_of(u.encoder_pages, u.decoder_pages);
  return u;
}

Scheduler::CacheUse Scheduler::cache_use() const {
  std::lock_guard<std::mutex> model_lock(model_mutex_);
  return cache_use_locked();
}

std::string Scheduler::failure() const {
  std::lock_guard<std::mutex> lock(mu_);
  return failure_;
}

EngineStats Scheduler::stats() const {
  EngineStats s;
  counters_.fill(s);
  {
    std::lock_guard<std::mutex> lock(mu_);
    s.sessions_open = static_cast<int>(entries_.size());
    s.live_wait_p90_ms = load_.p90_ms(LoadMonitor::Clock::now());
    s.cache_bytes_in_use = cache_seen_.used_bytes;
    s.cache_bytes_total = encoder_pool_.grows() ? 0 : cache_seen_.total_bytes;
    s.cache_pages_in_use = cache_seen_.encoder_pages + cache_seen_.decoder_pages;
    // The oldest hand-over still waiting, against the loop's last sign of life.
    std::optional<Clock::time_point> oldest;
    for (const Entry& e : entries_)
      if (e.wanted && (!oldest || e.wanted_at < *oldest)) oldest = e.wanted_at;
    if (oldest) s.stalled_seconds = std::chrono::duration<double>(Clock::now() - std::max(*oldest, progress_at_)).count();
    s.has_room = room_seen_ && !(limits_.refuse_when_overloaded && load_.overloaded(LoadMonitor::Clock::now()));
  }
  return s;
}

void Scheduler::note_cache_use() {
  const CacheUse use = cache_use_locked();
  const bool room = room_for(encoder_pages(default_stream_, -1), decoder_pages(default_stream_, -1));
  std::lock_guard<std::mutex> lock(mu_);
  cache_seen_ = use;
  room_seen_ = room;
}

int Scheduler::open_streams() const {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<int>(entries_.size());
}

void Scheduler::close(Entry* entry) {
  std::unique_ptr<ModelStream> state;
  int enc = -1, dec = -1;
  {
    std::lock_guard<std::mutex> lock(mu_);
    // Not wanted (its owner is not waiting in run()), so the loop does not hold it.
    auto it = std::find_if(entries_.begin(), entries_.end(), [&](const Entry& e) { return &e == entry; });
    state = std::move(it->state);
    enc = it->encoder_slot;
    dec = it->decoder_slot;
    entries_.erase(it);
  }
  {
    // Another stream's round may be running on the backend right now.
    std::lock_guard<std::mutex> model_lock(model_mutex_);
    state.reset();
    encoder_pool_.release(enc);
    decoder_pool_.release(dec);
    note_cache_use();
  }
  room_.notify_all();  // the pages freed may let several waiting streams in
}

void Scheduler::set_fill_drafts(bool on) {
  std::lock_guard<std::mutex> lock(mu_);
  fill_drafts_ = on;
}

void Scheduler::loop() {
  std::unique_lock<std::mutex> lock(mu_);
  std::vector<Entry*> active;
  std::vector<ModelStream*> states;
  for (;;) {
    work_.wait(lock, [&] {
      return stop_ || std::any_of(entries_.begin(), entries_.end(), [](const Entry& e) { return e.wanted; });
    });
    if (stop_) return;  // the engine is going away; its sessions must be closed before it
    active.clear();
    states.clear();
    for (Entry& e : entries_) {
      if (!e.wanted) continue;
      e.state->add_frames(e.inbox);
      e.inbox.clear();
      if (e.fill_drafts != fill_drafts_) e.state->set_fill_drafts(e.fill_drafts = fill_drafts_);
      if (e.final_positions >= 0) e.state->set_final_positions(e.final_positions);
      active.push_back(&e);
      states.push_back(e.state.get());
    }
    // Streams left out of a full pass go first next time: the round's plan serves them from a
    // stream that moves on each round.
    const size_t first_served = states.empty() ? 0 : static_cast<size_t>(rounds_run_++ % states.size());
    progress_at_ = Clock::now();
    lock.unlock();
    std::string failure;
    Round round;
    round.streams = static_cast<int>(states.size());
    {
      std::lock_guard<std::mutex> model_lock(model_mutex_);
      const auto t0 = std::chrono::steady_clock::now();
      try {
        round.work = model_.run_round(states, {encoder_pool_.cache(), decoder_pool_.cache()},
                                      {limits_.max_encoder_positions, limits_.max_decoder_rows, one_pass_}, first_served);
      } catch (const std::exception& ex) {
        failure = ex.what();
      }
      round.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      note_cache_use();  // the pages the round mapped (still under the model lock)
    }
    counters_.round(round.seconds, round.work.decoder_rows);
    lock.lock();
    progress_at_ = Clock::now();
    if (rounds_.size() == kRoundHistory) rounds_.erase(rounds_.begin(), rounds_.begin() + kRoundHistory / 2);
    rounds_.push_back(round);
    if (!failure.empty() && failure_.empty()) failure_ = failure;
    for (Entry* e : active) {
      for (const PositionOutput& s : e->state->take_outputs()) e->outbox.push_back(s);
      if (!failure.empty()) e->error = failure;
      else if (!e->state->failure().empty()) e->error = e->state->failure();  // this stream alone failed
      if (!e->error.empty() || !e->state->has_work()) {
        e->wanted = false;
        e->done.notify_one();
      }
    }
  }
}

std::vector<PositionOutput> Scheduler::Stream::run(std::vector<float> frames, int64_t final_positions) {
  Entry& e = *entry_;
  const auto t0 = LoadMonitor::Clock::now();
  // Paced: at most two positions' audio, handed over no sooner than half the previous hand-over's audio
  // after it (a client feeding at real time; one reading a file ahead hands over back to back).
  // Such a hand-over's wait is what the load does to a live session.
  const double mel_per_s = owner_.frames_.per_second;
  const size_t n_mels = owner_.frames_.values;
  const size_t per_position = owner_.frames_.per_position;
  const bool paced = frames.size() <= 2 * per_position * n_mels &&
                     std::chrono::duration<double>(t0 - e.last_run).count() >= 0.5 * e.last_audio_s;
  e.last_run = t0;
  e.last_audio_s = static_cast<double>(frames.size() / n_mels) / mel_per_s;
  std::unique_lock<std::mutex> lock(owner_.mu_);
  if (!e.error.empty()) throw Error(e.error);
  if (e.state->stopped()) return {};
  const bool news = !frames.empty() || (final_positions >= 0 && e.final_positions < 0);
  if (!news) return {};  // everything handed over before has run
  if (e.inbox.empty())
    e.inbox = std::move(frames);
  else
    e.inbox.insert(e.inbox.end(), frames.begin(), frames.end());
  if (final_positions >= 0) e.final_positions = final_positions;
  e.wanted = true;
  e.wanted_at = t0;
  owner_.work_.notify_one();
  const bool measured = e.live && paced && final_positions < 0;
  // Under way, the wait counts for the load already (a stalled loop reads as overloaded).
  const LoadMonitor::Ticket ticket = measured ? owner_.load_.begin(t0) : LoadMonitor::Ticket{};
  e.done.wait(lock, [&] { return !e.wanted; });
  if (measured) {
    const auto now = LoadMonitor::Clock::now();
    owner_.load_.finish(ticket, now);
    owner_.counters_.live_wait(std::chrono::duration<double, std::milli>(now - t0).count());
  }
  std::vector<PositionOutput> steps;
  steps.swap(e.outbox);
  if (!e.error.empty()) throw Error(e.error);
  return steps;
}

void Scheduler::Stream::count_audio(double seconds) { owner_.counters_.audio(seconds); }

bool Scheduler::Stream::stopped() const { return entry_->state->stopped(); }

Scheduler::Stream::~Stream() { owner_.close(entry_); }

}  // namespace voxrt
