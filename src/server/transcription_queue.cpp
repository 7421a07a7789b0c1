#include "server/transcription_queue.h"

#include <boost/asio/post.hpp>

#include <algorithm>

#include "common/error.h"

namespace voxrt::server {

TranscriptionQueue::TranscriptionQueue(Limits limits)
    : limits_(limits), pool_(static_cast<size_t>(std::max(1, limits.running))) {
  check(limits.running >= 1 && limits.waiting >= 0, "serve",
        "transcriptions: at least 1 running and 0 or more waiting");
}

TranscriptionQueue::~TranscriptionQueue() { pool_.join(); }

bool TranscriptionQueue::try_post(std::function<void(Clock::duration)> work) {
  // Counted before it is queued, so that a burst of requests on several I/O threads cannot all pass.
  if (admitted_.fetch_add(1) >= limits_.running + limits_.waiting) {
    --admitted_;
    return false;
  }
  boost::asio::post(pool_, [this, work = std::move(work), queued = Clock::now()] {
    ++running_;
    try {
      work(Clock::now() - queued);
    } catch (...) {
      // The work answers its own failures; nothing may escape onto the pool's thread.
    }
    --running_;
    --admitted_;
  });
  return true;
}

}  // namespace voxrt::server
