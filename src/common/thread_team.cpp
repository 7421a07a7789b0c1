#include "common/thread_team.h"

#include <algorithm>

#include "common/usable_cores.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace voxrt {
namespace {

// Spins before sleeping, each a pause instruction (tens of nanoseconds): some 20-40 us, about the
// gap between two ops of a step, so a team stays awake through a step and asleep between steps.
constexpr int kSpins = 1000;

// Pieces a loop is cut into, per member: a member that is descheduled holds up one piece, not a
// whole share of the loop, while the others take the rest.
constexpr size_t kPiecesPerMember = 4;

// next_ packs the loop's generation (high 32 bits), its number of pieces (16) and the next piece to
// take (16), so that one atomic read says whether a piece is left of the loop a member woke for.
constexpr uint64_t pack(uint32_t generation, uint32_t pieces, uint32_t next) {
  return uint64_t{generation} << 32 | uint64_t{pieces} << 16 | next;
}
constexpr size_t kMaxPieces = 0xffff;

inline void relax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

thread_local bool in_a_loop = false;  // a body's own parallel_for runs on its thread alone

}  // namespace

ThreadTeam::ThreadTeam(int threads) {
  for (int i = 1; i < threads; ++i) workers_.emplace_back([this] { work(); });
}

ThreadTeam::~ThreadTeam() {
  stop_.store(true);
  generation_.fetch_add(1, std::memory_order_release);
  generation_.notify_all();
  for (std::thread& t : workers_) t.join();
}

ThreadTeam& ThreadTeam::shared() {
  static ThreadTeam team(usable_cores());
  return team;
}

void ThreadTeam::work() {
  in_a_loop = true;
  uint32_t seen = 0;
  for (;;) {
    uint32_t g = generation_.load(std::memory_order_acquire);
    for (int i = 0; g == seen && i < kSpins; ++i) {
      relax();
      g = generation_.load(std::memory_order_acquire);
    }
    if (g == seen) {
      generation_.wait(seen, std::memory_order_acquire);
      continue;
    }
    seen = g;
    if (stop_.load()) return;
    run_pieces(g);
  }
}

void ThreadTeam::run_pieces(uint32_t generation) {
  uint64_t v = next_.load(std::memory_order_acquire);
  for (;;) {
    const auto g = static_cast<uint32_t>(v >> 32), pieces = static_cast<uint32_t>(v >> 16 & 0xffff),
               piece = static_cast<uint32_t>(v & 0xffff);
    if (g != generation || piece >= pieces) return;
    if (!next_.compare_exchange_weak(v, v + 1, std::memory_order_acq_rel, std::memory_order_acquire)) continue;
    // A piece of this loop is ours: the loop cannot end before it does, so its fields hold.
    const size_t begin = piece * piece_;
    (*body_)(begin, std::min(n_, begin + piece_));
    if (done_.fetch_add(1, std::memory_order_acq_rel) + 1 == pieces) done_.notify_one();
    v = next_.load(std::memory_order_acquire);
  }
}

void ThreadTeam::parallel_for(size_t n, size_t grain, const std::function<void(size_t, size_t)>& body) {
  if (n == 0) return;
  grain = std::max<size_t>(grain, 1);
  if (workers_.empty() || n <= grain || in_a_loop) return body(0, n);
  const std::lock_guard<std::mutex> lock(loop_);
  size_t pieces = std::min({(n + grain - 1) / grain, kPiecesPerMember * static_cast<size_t>(size()), kMaxPieces});
  piece_ = (n + pieces - 1) / pieces;
  pieces = (n + piece_ - 1) / piece_;
  body_ = &body;
  n_ = n;
  done_.store(0, std::memory_order_relaxed);
  const uint32_t g = generation_.load(std::memory_order_relaxed) + 1;
  next_.store(pack(g, static_cast<uint32_t>(pieces), 0), std::memory_order_release);
  generation_.store(g, std::memory_order_release);
  generation_.notify_all();
  in_a_loop = true;
  run_pieces(g);
  in_a_loop = false;
  uint32_t d = done_.load(std::memory_order_acquire);
  for (int i = 0; d != pieces && i < kSpins; ++i) {
    relax();
    d = done_.load(std::memory_order_acquire);
  }
  while (d != pieces) {
    done_.wait(d, std::memory_order_acquire);
    d = done_.load(std::memory_order_acquire);
  }
}

}  // namespace voxrt
