// The CPU backend's thread team (common/thread_team.h) and the cores it is sized by
// (common/usable_cores.h).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "common/thread_team.h"
#include "common/usable_cores.h"

namespace voxrt {
namespace {

// Every index of [0, n) visited exactly once, whatever the team's size (more threads than cores
// too), the loop's length and its grain.
TEST(ThreadTeam, EveryIndexRunsExactlyOnce) {
  for (const int threads : {1, 2, 3, 8}) {
    ThreadTeam team(threads);
    EXPECT_EQ(team.size(), threads);
    for (const size_t n : {size_t{0}, size_t{1}, size_t{7}, size_t{64}, size_t{1000}, size_t{100003}}) {
      for (const size_t grain : {size_t{1}, size_t{5}, size_t{4096}}) {
        std::vector<std::atomic<int>> seen(n);
        team.parallel_for(n, grain, [&](size_t a, size_t b) {
          ASSERT_LE(a, b);
          ASSERT_LE(b, n);
          for (size_t i = a; i < b; ++i) seen[i].fetch_add(1);
        });
        for (size_t i = 0; i < n; ++i) ASSERT_EQ(seen[i].load(), 1) << threads << " threads, n " << n << ", index " << i;
      }
    }
  }
}

// Thousands of short loops back to back (a step's ops), the team's members between sleeping and
// spinning: none lost, none run twice.
TEST(ThreadTeam, ManyShortLoopsInARow) {
  ThreadTeam team(4);
  std::atomic<long> sum{0};
  for (int loop = 0; loop < 5000; ++loop) {
    if (loop % 500 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(2));  // let them sleep
    team.parallel_for(16, 1, [&](size_t a, size_t b) {
      for (size_t i = a; i < b; ++i) sum.fetch_add(static_cast<long>(i) + 1);
    });
  }
  EXPECT_EQ(sum.load(), 5000L * 136);
}

// A member that stalls (descheduled by another process, in real life) holds up only the piece it
// took: the others take every other piece. With OpenMP's static schedule a member's whole share
// waited for it, which is why a busy machine made each step 15-25x slower; here the stalled piece
// waits for the other pieces, and so would deadlock under a static split.
TEST(ThreadTeam, AStalledMemberHoldsUpOnlyItsOwnPiece) {
  ThreadTeam team(2);
  const size_t pieces = 8;
  std::mutex mu;
  std::condition_variable cv;
  size_t others_done = 0;
  std::atomic<bool> stalled{false}, timed_out{false};
  team.parallel_for(pieces, 1, [&](size_t a, size_t b) {
    for (size_t i = a; i < b; ++i) {
      if (!stalled.exchange(true)) {
        std::unique_lock<std::mutex> lock(mu);
        if (!cv.wait_for(lock, std::chrono::seconds(20), [&] { return others_done == pieces - 1; })) timed_out = true;
      } else {
        const std::lock_guard<std::mutex> lock(mu);
        ++others_done;
        cv.notify_all();
      }
    }
  });
  EXPECT_FALSE(timed_out) << others_done << " of the other " << pieces - 1 << " pieces ran while one member stalled";
}

// Loops from several threads at once take turns; a body's own loop runs on its thread.
TEST(ThreadTeam, LoopsFromSeveralThreadsAndNestedLoops) {
  ThreadTeam team(3);
  std::atomic<long> total{0};
  std::vector<std::thread> callers;
  for (int t = 0; t < 4; ++t)
    callers.emplace_back([&] {
      for (int loop = 0; loop < 200; ++loop)
        team.parallel_for(10, 1, [&](size_t a, size_t b) {
          for (size_t i = a; i < b; ++i)
            team.parallel_for(3, 1, [&](size_t c, size_t d) { total.fetch_add(static_cast<long>(d - c)); });
        });
    });
  for (std::thread& c : callers) c.join();
  EXPECT_EQ(total.load(), 4L * 200 * 10 * 3);
}

TEST(UsableCores, CgroupQuotasRoundUpToWholeCores) {
  EXPECT_EQ(cores_of_cgroup_quota("max 100000\n"), std::nullopt);
  EXPECT_EQ(cores_of_cgroup_quota("200000 100000\n"), 2);
  EXPECT_EQ(cores_of_cgroup_quota("150000 100000"), 2);
  EXPECT_EQ(cores_of_cgroup_quota("50000 100000"), 1);
  EXPECT_EQ(cores_of_cgroup_quota(""), std::nullopt);
  EXPECT_EQ(cores_of_cgroup_quota("12x 100000"), std::nullopt);
  EXPECT_EQ(cores_of_cgroup_quota("-1\n", "100000\n"), std::nullopt);  // cgroup v1: no quota
  EXPECT_EQ(cores_of_cgroup_quota("300000\n", "100000\n"), 3);
  EXPECT_EQ(cores_of_cgroup_quota("", ""), std::nullopt);
}

TEST(UsableCores, AtLeastOneAndNoMoreThanTheMachineHas) {
  const int cores = usable_cores();
  EXPECT_GE(cores, 1);
  EXPECT_LE(static_cast<unsigned>(cores), std::max(1u, std::thread::hardware_concurrency()));
}

}  // namespace
}  // namespace voxrt
