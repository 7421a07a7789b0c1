// Admission of file transcriptions (POST /v1/audio/transcriptions): at most `running` do model work
// at once, on a pool of threads of their own, and at most `waiting` more queue for one of those
// threads; a request past both is refused at once. So no number of uploads can take the threads
// the live sessions need (they have their own pool), nor hold memory or a client without bound:
// what waits is counted, and how long it waited is handed to the work, which refuses itself when
// that is too long (ApiService: 503 with Retry-After).
#pragma once

#include <boost/asio/thread_pool.hpp>

#include <atomic>
#include <chrono>
#include <functional>

namespace voxrt::server {

class TranscriptionQueue {
 public:
  struct Limits {
    int running = 16;   // doing model work at once (the pool's threads)
    int waiting = 64;   // queued for a thread beyond those
  };
  using Clock = std::chrono::steady_clock;

  explicit TranscriptionQueue(Limits limits);
  ~TranscriptionQueue();  // joins the pool
  TranscriptionQueue(const TranscriptionQueue&) = delete;
  TranscriptionQueue& operator=(const TranscriptionQueue&) = delete;

  // Queues `work`, called on a pool thread with how long it waited for it; false (and nothing
  // queued) when `running + waiting` are in already.
  bool try_post(std::function<void(Clock::duration waited)> work);
  int running() const { return running_.load(); }
  int waiting() const { return admitted_.load() - running_.load(); }
  bool full() const { return admitted_.load() >= limits_.running + limits_.waiting; }
  const Limits& limits() const { return limits_; }
  // Lets what is queued run and ends the threads.
  void join() { pool_.join(); }

 private:
  const Limits limits_;
  std::atomic<int> admitted_{0};  // queued or running
  std::atomic<int> running_{0};
  boost::asio::thread_pool pool_;  // last: joined first
};

}  // namespace voxrt::server
