// How many cache pages an engine's two pools start with, from the figures of one session and of the
// device's memory (Scheduler::pool_shapes reads them off the model and the backend). Plain
// arithmetic, so the rules are tested with any GPU's figures on any machine: a budget given
// (max_memory) or the caches of max_streams sessions must fit what the device has free after the
// weights less the passes' working memory; with neither, the pools start with one session's pages
// and grow within that room, and a load where not even one session fits fails naming both sizes.
#pragma once

#include <cstddef>
#include <string>

namespace voxrt {

struct CacheFigures {
  int encoder_pages = 0, decoder_pages = 0;  // one session's (of `seconds`)
  double encoder_page_bytes = 0, decoder_page_bytes = 0;
  double free_bytes = 0;     // the device's free memory now, weights loaded (0: unknown, not checked)
  double working_bytes = 0;  // what the passes need beside (Backend::working_memory)
  std::string seconds;       // the session length the pages are for, in words ("300 s", "a whole window")
  double session_bytes() const { return encoder_pages * encoder_page_bytes + decoder_pages * decoder_page_bytes; }
  double room_bytes() const { return free_bytes > working_bytes ? free_bytes - working_bytes : 0; }
};

struct CacheBudget {
  int encoder_pages = 0, decoder_pages = 0;  // allocated at load
  bool grows = false;                        // as sessions open, within the room
};

// max_cache_bytes > 0: that budget, split so that both pools run out together; else max_streams
// sessions' pages (max_streams > 0), or one session's to start with, growing. Throws voxrt::Error
// naming the option, what was asked and the room when it cannot fit.
CacheBudget plan_cache_budget(const CacheFigures& f, size_t max_cache_bytes, int max_streams);

// "1.23 GB"
std::string format_gb(double bytes);

}  // namespace voxrt
