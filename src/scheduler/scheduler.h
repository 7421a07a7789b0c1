// The scheduler's loop of an engine (docs/scheduler.md): one thread runs the model for every live
// session and offline transcription of the engine. A stream's owner computes its mel frames on its
// own thread (MelFrontEnd), hands them over and waits for the outputs they make possible; meanwhile the
// loop runs rounds over every stream with work (StreamModel::run_round; Voxtral's is execute_round):
// one encoder pass over the waiting audio of all of them, then one decoder pass over their ready
// rows (on the CPU, whose rows are not batch-invariant, each stream's own passes). A stream alone
// runs exactly as StreamDecoder runs it; streams together share the decoder's weight reads, and on
// a batch-invariant backend each still gets, bit for bit, the ids it gets alone. The scheduler
// knows the model only through models/stream_model.h: any family's streams, not Voxtral's types.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "models/stream_model.h"
#include "models/stream_work.h"
#include "runtime/kv_pool.h"
#include "scheduler/engine_counters.h"
#include "scheduler/load_monitor.h"

namespace voxrt {

// How much a scheduler takes on.
struct SchedulerLimits {
  // 0: the caches grow as streams open (doubling, within what the device has free less the
  // passes' working memory, Backend::working_memory; a stream that would pass it is refused or
  // waits, as with max_cache_bytes). N: the caches of N streams are allocated up
  // front and a stream more is refused (or waits): memory is known at load and never grows with
  // the streams.
  int max_streams = 0;
  // Memory for the streams' caches (K and V, encoder and decoder pages), in bytes, allocated at
  // load; a stream that does not fit in what is left is refused (or waits). 0: the caches hold
  // max_streams streams of stream_seconds (or grow, with max_streams 0).
  size_t max_cache_bytes = 0;
  // How long a stream may run when its opener does not say (seconds of audio; 0: no limit, a whole
  // window): the pages it reserves, and how max_cache_bytes is split between the encoder's and the
  // decoder's pages (so that both run out together for streams of this length).
  double stream_seconds = 0;
  // Fairness under load: a new live stream is refused (or waits) while the paced streams'
  // hand-overs wait longer than a step's audio (LoadMonitor), so that those already open keep
  // real time. Off by default: an engine used as a library may well feed sessions faster or slower
  // than real time; a server turns it on.
  bool refuse_when_overloaded = false;
  double overload_wait_ms = 80;  // the hand-overs' 90th percentile past which it is overloaded
  // The most positions an encoder pass and rows a decoder pass take (RoundBudget); streams left
  // out of a round go first in the next.
  int max_encoder_positions = 512;
  int max_decoder_rows = 256;
};

class Scheduler {
  struct Entry;

 public:
  // model_mutex serialises every use of the model and its backend: the loop holds it for a round,
  // opening and closing a stream take it to allocate and free the stream's caches.
  // default_stream: the options of a stream its opener says nothing of (the model's default delay):
  // what limits.stream_seconds sizes.
  Scheduler(StreamModel& model, std::mutex& model_mutex, const StreamOptions& default_stream,
            const SchedulerLimits& limits = {});
  ~Scheduler();
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  // One stream, used by one thread at a time; closing it (destroying the handle) frees its caches.
  class Stream final : public StreamWork {
   public:
    ~Stream();
    Stream(const Stream&) = delete;
    Stream& operator=(const Stream&) = delete;

    // Hands over mel frames (time-major, whole frames) and, once the input has ended, the offline
    // position count (final_positions >= 0), then waits until every position they make possible has
    // run, and returns their outputs. Throws voxrt::Error when the model work failed (and from then
    // on). After EOS with stop_at_eos nothing more is decoded and the frames are dropped.
    std::vector<PositionOutput> run(std::vector<float> frames, int64_t final_positions) override;

    // Seconds of input audio its owner received (its pads left out): EngineStats::audio_seconds.
    void count_audio(double seconds);
    // Between run() calls:
    bool stopped() const override;

   private:
    friend class Scheduler;
    Stream(Scheduler& owner, Entry* entry) : owner_(owner), entry_(entry) {}
    Scheduler& owner_;
    Entry* entry_;
  };

  // A stream of `opts` that runs for at most max_seconds of audio (0: no limit; < 0:
  // limits.stream_seconds), whose cache pages it reserves. When they do not fit (or
  // limits.max_streams are open already) it waits for streams to close for up to wait_seconds
  // (< 0: as long as it takes; 0: not at all), then throws BusyError. One that could never fit is
  // an InputError at once. A stream that runs past max_seconds goes on while spare pages last, and
  // then fails alone. A live stream (fed at real time) is also refused, or waits, while the live
  // streams already open do not keep real time (limits.refuse_when_overloaded).
  std::unique_ptr<Stream> open(const StreamOptions& opts, double wait_seconds = 0, double max_seconds = -1,
                               bool live = false);
  static constexpr double kWaitForever = -1;

  int open_streams() const;
  // The cache bytes a stream of max_seconds reserves (K and V, encoder and decoder pages).
  size_t cache_bytes_for(double max_seconds = -1) const;
  // The caches' pages: in use by the open streams, and in all (bytes, K and V).
  struct CacheUse {
    size_t mapped_bytes = 0;  // pages holding the open streams' positions
    size_t used_bytes = 0;    // those and the pages kept for the open streams' later positions
    size_t total_bytes = 0;
    int encoder_pages = 0, decoder_pages = 0;  // in use
  };
  CacheUse cache_use() const;

  // A round of the loop: its wall time (with the model lock held), the streams in it and the work
  // it ran. For benchmarks and metrics.
  struct Round {
    double seconds = 0;
    int streams = 0;
    RoundStats work;
  };
  // The rounds run since the last call (at most the most recent kRoundHistory).
  std::vector<Round> take_rounds();
  static constexpr size_t kRoundHistory = 1 << 17;

  // The counters since the scheduler started, with the caches' use, the overload window's
  // percentile, whether a stream of the default length would be admitted now, and how long handed
  // work has waited for a round (the engine adds the backend's memory).
  EngineStats stats() const;
  // The first round whose model work failed, or empty: the device is suspect from then on (a
  // multi-device engine places no new session here).
  std::string failure() const;
  // For benchmarks only (ModelStream::set_fill_drafts, `voxrt bench --streams`'s fill): from the
  // next round on, every stream's decoder passes take its widest drafts and keep them all (their
  // ids then not the model's), or again verify them.
  void set_fill_drafts(bool on);

 private:
  void loop();
  void close(Entry* entry);
  // The pages of a stream of these options and max_seconds (< 0: limits_.stream_seconds).
  int encoder_pages(const StreamOptions& o, double max_seconds) const;
  int decoder_pages(const StreamOptions& o, double max_seconds) const;
  bool room_for(int enc_pages, int dec_pages) const;
  size_t growth_needed(int enc_pages, int dec_pages, size_t room) const;
  // Waits (model_lock held) until room_for, at most until `deadline` (none: for ever); false when
  // the time ran out.
  using Clock = std::chrono::steady_clock;
  bool wait_for_room(std::unique_lock<std::mutex>& model_lock, int enc_pages, int dec_pages,
                     std::optional<Clock::time_point> deadline);
  CacheUse cache_use_locked() const;  // with model_mutex_ held
  void note_cache_use();              // with model_mutex_ held (not mu_): updates cache_seen_
  size_t bytes_of(int enc_pages, int dec_pages) const;  // K and V (and scales) of that many pages
  size_t cache_bytes_locked(double max_seconds) const;  // cache_bytes_for, with model_mutex_ held
  struct PoolShapes {
    KvCacheShape encoder, decoder;
    bool grows = false;
  };
  static PoolShapes pool_shapes(const StreamModel& model, const StreamOptions& default_stream,
                                const SchedulerLimits& limits);
  Scheduler(StreamModel& model, std::mutex& model_mutex, const StreamOptions& default_stream,
            const SchedulerLimits& limits, const PoolShapes& shapes);

  StreamModel& model_;
  const StreamModel::Frames frames_;  // what a hand-over's frames are, for its pacing
  std::mutex& model_mutex_;
  const bool one_pass_;
  const SchedulerLimits limits_;
  std::condition_variable_any room_;  // a stream closed (waited on with model_mutex_)
  uint64_t rounds_run_ = 0;            // by the loop: moves the stream a round serves first
  // Used by the loop only, or under model_mutex_ when streams open and close.
  const StreamOptions default_stream_;
  KvPool encoder_pool_, decoder_pool_;

  mutable std::mutex mu_;  // guards entries_, every entry's hand-over fields, load_ and stop_
  LoadMonitor load_;
  EngineCounters counters_;  // has a mutex of its own
  CacheUse cache_seen_;      // the caches' use after the last open, close or round: stats() reads it
                             // without waiting for a round's model lock
  bool room_seen_ = true;    // likewise, whether a stream of the default length fitted then
  std::condition_variable work_;
  std::list<Entry> entries_;
  std::vector<Round> rounds_;
  bool stop_ = false;
  bool fill_drafts_ = false;  // set_fill_drafts (under mu_): the loop passes it on to each stream
  std::string failure_;  // the first failed round's error (under mu_)
  // When the loop last started or finished a round (under mu_): with work waiting, the time since
  // is how long the loop has not moved (EngineStats::stalled_seconds).
  Clock::time_point progress_at_ = Clock::now();
  std::thread thread_;  // last: started once everything above exists
};

}  // namespace voxrt
