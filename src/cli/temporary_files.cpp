#include "cli/temporary_files.h"

#include <limits.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <mutex>

namespace voxrt::cli {
namespace {

// Fixed storage the handler can read without allocating: a slot's path is written before the slot
// is published (release) and the handler reads only published slots (acquire).
constexpr int kMaxTemporaries = 64;
struct Slot {
  std::atomic<bool> used{false};
  char path[PATH_MAX];
};
Slot g_slots[kMaxTemporaries];
std::mutex g_mutex;  // between threads registering; the handler takes no lock
std::once_flag g_installed;

extern "C" void remove_temporaries_and_die(int sig) {
  for (Slot& s : g_slots)
    if (s.used.load(std::memory_order_acquire)) unlink(s.path);  // async-signal-safe
  signal(sig, SIG_DFL);
  raise(sig);  // the default action: the exit status still says which signal stopped the run
}

void install_handlers() {
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) {
    struct sigaction current {};
    if (sigaction(sig, nullptr, &current) != 0 || current.sa_handler != SIG_DFL) continue;  // someone else's
    struct sigaction sa {};
    sa.sa_handler = remove_temporaries_and_die;
    sigemptyset(&sa.sa_mask);
    sigaction(sig, &sa, nullptr);
  }
}

}  // namespace

void track_temporary(const std::filesystem::path& path) {
  std::call_once(g_installed, install_handlers);
  const std::string p = path.string();
  if (p.size() >= PATH_MAX) return;
  std::lock_guard<std::mutex> lock(g_mutex);
  for (Slot& s : g_slots)
    if (!s.used.load(std::memory_order_relaxed)) {
      std::memcpy(s.path, p.c_str(), p.size() + 1);
      s.used.store(true, std::memory_order_release);
      return;
    }
}

void untrack_temporary(const std::filesystem::path& path) {
  const std::string p = path.string();
  std::lock_guard<std::mutex> lock(g_mutex);
  for (Slot& s : g_slots)
    if (s.used.load(std::memory_order_relaxed) && p == s.path) {
      s.used.store(false, std::memory_order_release);
      return;
    }
}

}  // namespace voxrt::cli
