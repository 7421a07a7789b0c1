// A fixed team of threads for the CPU backend's parallel loops, in place of OpenMP.
//
// Why not OpenMP: libgomp's idle threads spin at each of a step's many small parallel regions, and
// its static schedule makes every region wait for its slowest thread. On a machine another process
// also uses (a shared host, a container's CPU quota, CI) a spinning or descheduled team member holds
// everyone up: `transcribe` of an 11 s file took 5.1 s instead of 0.2 s on a busy 2-core machine.
// Here a loop is cut into more chunks than there are threads and each thread, the caller too, takes
// the next chunk until none is left: a descheduled member delays only the chunk it holds. Idle
// members spin for a few microseconds (the gap between two ops of a step), then sleep in the
// kernel (a futex, through std::atomic::wait) until the next loop.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace voxrt {

class ThreadTeam {
 public:
  // threads: the team's size, the calling thread included (1: every loop runs on the caller).
  explicit ThreadTeam(int threads);
  ~ThreadTeam();
  ThreadTeam(const ThreadTeam&) = delete;
  ThreadTeam& operator=(const ThreadTeam&) = delete;

  int size() const { return static_cast<int>(workers_.size()) + 1; }

  // Runs body(begin, end) over [0, n) cut into pieces of at least `grain` indices, on the team and
  // the calling thread, and returns when every piece is done. Loops from several threads at once
  // take turns. A body must not throw (the pieces of a failed loop would be lost).
  void parallel_for(size_t n, size_t grain, const std::function<void(size_t, size_t)>& body);

  // The team of the process's loops outside a backend (converting weights at load): one thread a
  // usable core (common/usable_cores.h).
  static ThreadTeam& shared();

 private:
  void work();
  void run_pieces(uint32_t generation);

  // A loop in progress: its pieces are claimed through `next_`, which packs the loop's generation
  // with its count of pieces and the next one, so that a member that wakes late cannot claim a
  // piece of the next loop with this one's body.
  const std::function<void(size_t, size_t)>* body_ = nullptr;
  size_t n_ = 0, piece_ = 0;
  std::atomic<uint64_t> next_{0};       // generation << 32 | pieces << 16 | next piece
  std::atomic<uint32_t> generation_{0};  // what sleeping members wait on
  std::atomic<uint32_t> done_{0};        // pieces finished in this generation
  std::atomic<bool> stop_{false};
  std::mutex loop_;  // one loop at a time
  std::vector<std::thread> workers_;
};

}  // namespace voxrt
