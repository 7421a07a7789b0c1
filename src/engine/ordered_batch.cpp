#include "engine/ordered_batch.h"

#include <algorithm>
#include <condition_variable>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

namespace voxrt {

void run_ordered_batch(size_t n, int workers, size_t window, const std::function<BatchItem(size_t)>& work,
                       const std::function<void(BatchItem&)>& deliver) {
  if (n == 0) return;
  window = std::max<size_t>(window, 1);
  std::mutex mu;
  std::condition_variable cv;
  size_t next_start = 0, next_deliver = 0;
  bool stop = false;
  std::map<size_t, BatchItem> finished;  // done, waiting for their turn
  auto worker = [&] {
    for (;;) {
      size_t i;
      {
        std::unique_lock<std::mutex> lock(mu);
        cv.wait(lock, [&] { return stop || next_start >= n || next_start < next_deliver + window; });
        if (stop || next_start >= n) return;
        i = next_start++;
      }
      BatchItem item = work(i);
      {
        std::lock_guard<std::mutex> lock(mu);
        finished.emplace(i, std::move(item));
      }
      cv.notify_all();
    }
  };
  std::vector<std::thread> threads;
  const size_t count = std::min<size_t>(n, static_cast<size_t>(std::max(workers, 1)));
  for (size_t t = 0; t < count; ++t) threads.emplace_back(worker);
  auto finish = [&] {
    {
      std::lock_guard<std::mutex> lock(mu);
      stop = true;
    }
    cv.notify_all();
    for (std::thread& t : threads) t.join();
  };
  try {
    while (next_deliver < n) {
      BatchItem item;
      {
        std::unique_lock<std::mutex> lock(mu);
        cv.wait(lock, [&] { return finished.count(next_deliver) > 0; });
        auto it = finished.find(next_deliver);
        item = std::move(it->second);
        finished.erase(it);
      }
      deliver(item);
      {
        std::lock_guard<std::mutex> lock(mu);
        ++next_deliver;
      }
      cv.notify_all();
    }
  } catch (...) {
    finish();
    throw;
  }
  finish();
}

void transcribe_files_in_order(std::span<const std::filesystem::path> files, int workers,
                               const std::function<Transcript(const std::filesystem::path&)>& transcribe_one,
                               const std::function<void(BatchItem&)>& on_result) {
  run_ordered_batch(
      files.size(), workers, std::max<size_t>(64, 8 * static_cast<size_t>(std::max(workers, 1))),
      [&](size_t i) {
        BatchItem item;
        item.index = i;
        item.file = files[i];
        try {
          item.transcript = transcribe_one(files[i]);
        } catch (const std::exception& e) {
          item.error = e.what();
        }
        return item;
      },
      on_result);
}

}  // namespace voxrt
