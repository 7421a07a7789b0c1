#include "engine/scheduler.h"

#include <algorithm>
#include <chrono>
#include <exception>

#include "common/error.h"

namespace voxrt {

// A stream's state and its hand-over with the loop. While `wanted`, the loop owns `state`;
// otherwise the stream's owner may read it.
struct Scheduler::Entry {
  std::unique_ptr<StreamState> state;
  // Under mu_:
  std::vector<float> inbox;  // frames handed over, not yet given to the state
  int64_t final_positions = -1;
  bool wanted = false;       // the owner waits for the loop to run everything handed over
  std::vector<StreamState::Step> outbox;
  std::string error;         // the model work failed: every later run() throws it
  std::condition_variable done;
};

Scheduler::Scheduler(VoxtralModel& model, std::mutex& model_mutex, const Protocol& protocol, int max_batch_positions,
                     const SchedulerLimits& limits)
    : model_(model),
      model_mutex_(model_mutex),
      one_pass_(model.backend().batch_invariant()),
      limits_(limits),
      encoder_slots_(model.backend(),
                     StreamState::encoder_cache_shape(model, max_batch_positions, std::max(1, limits.max_streams)),
                     limits.max_streams == 0),
      decoder_slots_(model.backend(), StreamState::decoder_cache_shape(model, protocol, std::max(1, limits.max_streams)),
                     limits.max_streams == 0),
      encoder_(model, unique_step_key("encoder pass")),
      decoder_(model, unique_step_key("decoder pass")),
      thread_([this] { loop(); }) {}

Scheduler::~Scheduler() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  work_.notify_all();
  thread_.join();
}

std::unique_ptr<Scheduler::Stream> Scheduler::open(const StreamState::Options& opts, bool wait_for_room) {
  std::unique_ptr<StreamState> state;
  {
    std::unique_lock<std::mutex> model_lock(model_mutex_);
    if (encoder_slots_.full() || decoder_slots_.full()) {
      if (!wait_for_room)
        throw Error("engine full: all " + std::to_string(limits_.max_streams) +
                    " sessions it was loaded for are in use (max_sessions); close one, or wait for room");
      room_.wait(model_lock, [&] { return !encoder_slots_.full() && !decoder_slots_.full(); });
    }
    const int enc = encoder_slots_.acquire();
    int dec = -1;
    try {
      dec = decoder_slots_.acquire();
      state = std::make_unique<StreamState>(model_, opts, StreamState::CacheSlot{encoder_slots_.cache(), enc},
                                            StreamState::CacheSlot{decoder_slots_.cache(), dec});
    } catch (...) {
      encoder_slots_.release(enc);
      if (dec >= 0) decoder_slots_.release(dec);
      throw;
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  Entry& e = entries_.emplace_back();
  e.state = std::move(state);
  return std::unique_ptr<Stream>(new Stream(*this, &e));
}

std::vector<Scheduler::Round> Scheduler::take_rounds() {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<Round> out;
  out.swap(rounds_);
  return out;
}

size_t Scheduler::cache_bytes_per_stream() const {
  auto slot_bytes = [](const KvSlotPool& p) { return 2 * p.cache().shape().per_slot() * p.cache().element_bytes(); };
  return slot_bytes(encoder_slots_) + slot_bytes(decoder_slots_);
}

int Scheduler::open_streams() const {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<int>(entries_.size());
}

void Scheduler::close(Entry* entry) {
  std::unique_ptr<StreamState> state;
  {
    std::lock_guard<std::mutex> lock(mu_);
    // Not wanted (its owner is not waiting in run()), so the loop does not hold it.
    auto it = std::find_if(entries_.begin(), entries_.end(), [&](const Entry& e) { return &e == entry; });
    state = std::move(it->state);
    entries_.erase(it);
  }
  {
    // Another stream's round may be running on the backend right now.
    std::lock_guard<std::mutex> model_lock(model_mutex_);
    const int enc = state->encoder_slot(), dec = state->decoder_slot();
    state.reset();
    encoder_slots_.release(enc);
    decoder_slots_.release(dec);
  }
  room_.notify_one();
}

void Scheduler::loop() {
  std::unique_lock<std::mutex> lock(mu_);
  std::vector<Entry*> active;
  std::vector<StreamState*> states;
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
      if (e.final_positions >= 0) e.state->set_final_positions(e.final_positions);
      active.push_back(&e);
      states.push_back(e.state.get());
    }
    // Streams left out of a full pass go first next time: rotate the order they are served in.
    if (!states.empty()) {
      const size_t shift = static_cast<size_t>(rounds_run_++ % states.size());
      std::rotate(states.begin(), states.begin() + static_cast<std::ptrdiff_t>(shift), states.end());
    }
    lock.unlock();
    std::string failure;
    Round round;
    round.streams = static_cast<int>(states.size());
    {
      std::lock_guard<std::mutex> model_lock(model_mutex_);
      const auto t0 = std::chrono::steady_clock::now();
      try {
        round.work = step_streams(states, {encoder_, encoder_slots_.cache(), decoder_, decoder_slots_.cache(), one_pass_,
                                           limits_.max_encoder_positions, limits_.max_decoder_rows});
      } catch (const std::exception& ex) {
        failure = ex.what();
      }
      round.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    }
    lock.lock();
    if (rounds_.size() == kRoundHistory) rounds_.erase(rounds_.begin(), rounds_.begin() + kRoundHistory / 2);
    rounds_.push_back(round);
    for (Entry* e : active) {
      for (const StreamState::Step& s : e->state->take_steps()) e->outbox.push_back(s);
      if (!failure.empty()) e->error = failure;
      if (!failure.empty() || !e->state->has_work()) {
        e->wanted = false;
        e->done.notify_one();
      }
    }
  }
}

std::vector<StreamState::Step> Scheduler::Stream::run(std::vector<float> frames, int64_t final_positions) {
  Entry& e = *entry_;
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
  owner_.work_.notify_one();
  e.done.wait(lock, [&] { return !e.wanted; });
  std::vector<StreamState::Step> steps;
  steps.swap(e.outbox);
  if (!e.error.empty()) throw Error(e.error);
  return steps;
}

bool Scheduler::Stream::stopped() const { return entry_->state->stopped(); }
int64_t Scheduler::Stream::decoder_passes() const { return entry_->state->decoder_passes(); }
double Scheduler::Stream::encoder_seconds() const { return entry_->state->encoder_seconds(); }

Scheduler::Stream::~Stream() { owner_.close(entry_); }

}  // namespace voxrt
