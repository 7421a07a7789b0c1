#include "scheduler/cache_budget.h"

#include <algorithm>
#include <cstdio>

#include "common/error.h"

namespace voxrt {

std::string format_gb(double bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f GB", bytes / 1e9);
  return buf;
}

CacheBudget plan_cache_budget(const CacheFigures& f, size_t max_cache_bytes, int max_streams) {
  const double one = f.session_bytes();
  const double room_bytes = f.room_bytes();
  const bool known = f.free_bytes > 0;
  const std::string room = format_gb(room_bytes) + " the device has free after the weights (" + format_gb(f.free_bytes) +
                           " less the passes' working memory of " + format_gb(f.working_bytes) + ")";
  CacheBudget b;
  if (max_cache_bytes > 0) {
    const double budget = static_cast<double>(max_cache_bytes);
    check(!known || budget <= room_bytes, "engine",
          "a cache memory (max_memory) of " + format_gb(budget) + " is more than the " + room);
    const double sessions = budget / one;
    check(sessions >= 1, "engine",
          "a cache memory of " + format_gb(budget) + " holds no session: one of " + f.seconds + " needs " + format_gb(one));
    b.encoder_pages = std::max(f.encoder_pages, static_cast<int>(sessions * f.encoder_pages));
    b.decoder_pages = static_cast<int>((budget - b.encoder_pages * f.encoder_page_bytes) / f.decoder_page_bytes);
    return b;
  }
  const int slots = std::max(1, max_streams);
  check(max_streams == 0 || !known || slots * one <= room_bytes, "engine",
        "the caches of " + std::to_string(slots) + " sessions (max_sessions) of " + f.seconds + " need " +
            format_gb(slots * one) + ", more than the " + room + ": ask for fewer sessions, or set max_memory");
  check(max_streams > 0 || !known || one <= room_bytes, "engine",
        "one session of " + f.seconds + " needs " + format_gb(one) + " of cache, more than the " + room +
            ": a GPU with more memory, fp8 caches (--kv fp8) or shorter sessions (--max-session-seconds) may fit");
  b.encoder_pages = slots * f.encoder_pages;
  b.decoder_pages = slots * f.decoder_pages;
  b.grows = max_streams == 0;
  return b;
}

}  // namespace voxrt
