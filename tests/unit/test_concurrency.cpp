// Many threads through one Engine at once, through the public API only (issue 13, item 7): 50
// threads each run 100 jobs (offline transcriptions of samples and of files, and live sessions fed
// in random chunk sizes) on a handful of short clips and delays, and every result must equal the
// one the same job gives when nothing else runs. The engine's scheduler steps them all together
// (scheduler/scheduler.h); what this proves is that no state leaks between sessions, transcriptions or
// threads, and that sharing the scheduler's rounds changes no result.
//
// VOXRT_CONCURRENCY_THREADS and VOXRT_CONCURRENCY_JOBS scale it down (the ThreadSanitizer run in CI
// uses 8 x 4: under it every memory access is checked, tens of times slower).
// VOXRT_CONCURRENCY_DEVICE=cuda runs it on the GPU (scripts/gpu_check.sh), where the sessions' rows
// share decoder passes and drafted rows are on; on the CPU each stream gets passes of its own.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "audio/audio_file.h"
#include "test_paths.h"
#include "voxrt/session.h"
#include "voxrt/voxrt.h"

namespace voxrt::test {
namespace {

namespace fs = std::filesystem;

int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::atoi(v) : fallback;
}

// One unit of work and what it produced: the whole transcript, compared field by field.
struct Job {
  enum class Kind { Samples, File, Live } kind;
  size_t clip;
  int delay_ms;
};

struct Clip {
  fs::path path;
  std::vector<float> samples;
};

struct Result {
  std::vector<int32_t> tokens;
  std::string text;
  std::vector<std::pair<double, std::string>> words;  // start and text
  std::string events;                                 // live sessions: the Text events, joined
};

Result result_of(const Transcript& t) {
  Result r{t.tokens, t.text, {}, {}};
  for (const Word& w : t.words) r.words.emplace_back(w.start, w.text);
  return r;
}

Result run(Engine& engine, const std::vector<Clip>& clips, const Job& job, uint32_t chunk_seed) {
  const Clip& clip = clips[job.clip];
  switch (job.kind) {
    case Job::Kind::Samples: return result_of(engine.transcribe(clip.samples, {.delay_ms = job.delay_ms}));
    case Job::Kind::File: return result_of(engine.transcribe_file(clip.path, {.delay_ms = job.delay_ms}));
    case Job::Kind::Live: {
      std::string events;
      auto session = engine.open_session({.delay_ms = job.delay_ms, .on_event = [&](const StreamEvent& e) {
                                            if (e.kind == StreamEvent::Kind::Text) events += e.text;
                                          }});
      // Chunk sizes differ from run to run: the ids must not depend on them.
      std::mt19937 rng(chunk_seed);
      std::uniform_int_distribution<size_t> size(1, 4000);
      for (size_t at = 0; at < clip.samples.size();) {
        const size_t n = std::min(size(rng), clip.samples.size() - at);
        session->feed(std::span<const float>(clip.samples).subspan(at, n));
        at += n;
      }
      session->flush();
      Result r = result_of(session->transcript());
      r.events = std::move(events);
      return r;
    }
  }
  return {};
}

TEST(Concurrency, ManyThreadsThroughOneEngineGiveTheSerialResults) {
  const int threads = env_int("VOXRT_CONCURRENCY_THREADS", 50);
  const int jobs_per_thread = env_int("VOXRT_CONCURRENCY_JOBS", 100);
  const char* device = std::getenv("VOXRT_CONCURRENCY_DEVICE");
  // One compute thread: the test's concurrency is its own threads, not the backend's.
  auto engine = Engine::load(test_data() / "tiny" / "mistral",
                             {.device = parse_device(device != nullptr && *device != '\0' ? device : "cpu"), .threads = 1});

  // Short clips keep 5000 jobs to a couple of minutes: a file, and two pieces of speech as samples
  // (one shorter than the prompt window).
  std::vector<Clip> clips;
  const fs::path odd = test_data() / "audio" / "odd_length.wav", speech = test_data() / "audio" / "speech_short.wav";
  clips.push_back({odd, load_audio_mono(odd)});
  const std::vector<float> s = load_audio_mono(speech);
  clips.push_back({{}, std::vector<float>(s.begin() + 8000, s.begin() + 8000 + 12800)});
  clips.push_back({{}, std::vector<float>(s.begin(), s.begin() + 6000)});
  const int delays[] = {160, 480, 1200};

  // Every distinct job once, alone: the expected results.
  std::vector<Job> kinds;
  for (Job::Kind k : {Job::Kind::Samples, Job::Kind::File, Job::Kind::Live})
    for (size_t c = 0; c < clips.size(); ++c)
      for (int d : delays)
        if (k != Job::Kind::File || !clips[c].path.empty()) kinds.push_back({k, c, d});
  std::vector<Result> expected;
  for (const Job& j : kinds) expected.push_back(run(*engine, clips, j, 1));
  // Offline and live agree too (the README's promise): the same clip and delay give the same ids.
  for (size_t i = 0; i < kinds.size(); ++i)
    for (size_t k = 0; k < kinds.size(); ++k)
      if (kinds[i].clip == kinds[k].clip && kinds[i].delay_ms == kinds[k].delay_ms)
        ASSERT_EQ(expected[i].tokens, expected[k].tokens) << "clip " << kinds[i].clip << " at " << kinds[i].delay_ms;

  std::atomic<int> mismatches{0}, done{0};
  std::mutex report_mutex;
  std::string first_report;
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      for (int j = 0; j < jobs_per_thread; ++j) {
        const size_t which = static_cast<size_t>(t * 7 + j * 13) % kinds.size();
        Result got;
        try {
          got = run(*engine, clips, kinds[which], static_cast<uint32_t>(t * 1000 + j + 2));
        } catch (const std::exception& e) {
          got.text = std::string("exception: ") + e.what();
        }
        Result want = expected[which];
        if (kinds[which].kind != Job::Kind::Live) want.events.clear();
        if (got.tokens != want.tokens || got.text != want.text || got.words != want.words || got.events != want.events) {
          if (mismatches++ == 0) {
            std::lock_guard<std::mutex> lock(report_mutex);
            first_report = "thread " + std::to_string(t) + " job " + std::to_string(j) + " (kind " +
                           std::to_string(static_cast<int>(kinds[which].kind)) + ", clip " +
                           std::to_string(kinds[which].clip) + ", delay " + std::to_string(kinds[which].delay_ms) +
                           "): text '" + got.text + "', expected '" + want.text + "'";
          }
        }
        ++done;
      }
    });
  for (std::thread& th : pool) th.join();
  EXPECT_EQ(done.load(), threads * jobs_per_thread);
  EXPECT_EQ(mismatches.load(), 0) << "first: " << first_report;
}

}  // namespace
}  // namespace voxrt::test
