// Recordings as CUDA graphs (Backend::run_recorded on the CUDA backend). The first run of a key is
// eager; the second is captured (cudaStreamBeginCapture) and launched as a graph; later runs replay
// it. While a run goes through a graph, the backend's ops do all their host-side work (checks,
// argument packing) but a replay launches nothing: each op mixes what it would launch (kernel,
// pointers, sizes, scalars) into a signature through recorded(), and the graph is replayed only if
// the signature equals the captured one, else recaptured. Host data the recording takes (uploads,
// positions, ids) goes into a pinned argument arena (arena_put) at offsets that are the same in
// every run; the arena is copied to the device in one transfer before the graph is launched, and
// the captured kernels read it. An op that would allocate device memory throws
// RecordingNeedsEager, and the recording runs eagerly instead (the next run captures); memory freed
// inside a recording is freed after it.
// CudaOptions::graphs (VOXRT_CUDA_GRAPHS=0) turns graphs off. One thread drives a recorder, as it drives the backend.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "runtime/backend.h"

namespace voxrt::cuda {

// Thrown inside a recording's graph run by an op that needs device memory the recording does not
// have yet.
struct RecordingNeedsEager {};

class Recorder {
 public:
  enum class Mode { Eager, Capture, Replay };

  // release frees device memory (the backend's), for memory released inside a recording. enabled:
  // false launches every recording eagerly (CudaOptions::graphs).
  Recorder(cudaStream_t stream, bool enabled, std::function<void(float*)> release);
  ~Recorder();
  Recorder(const Recorder&) = delete;
  Recorder& operator=(const Recorder&) = delete;

  void run(const std::string& key, const std::function<void()>& ops);
  RecordingStats stats() const { return stats_; }

  bool in_recording() const { return in_recording_; }  // inside run(), through a graph or eager
  bool through_graph() const { return mode_ != Mode::Eager; }  // captured or replayed, not eager

  // Eager: false (the op launches). Through a graph: mixes what the op launches into the
  // signature; true when replaying (the graph launches it, the op must not).
  template <typename... T>
  bool recorded(T... v) {
    if (mode_ == Mode::Eager) return false;
    sig_ = mix(sig_, words(v...));
    return mode_ == Mode::Replay;
  }
  // A signature word of several values (for ops that mix a loop's worth of launches).
  template <typename... T>
  static uint64_t words(T... v) {
    uint64_t h = 0xcbf29ce484222325ULL;
    ((h = mix(h, word(v))), ...);
    return h;
  }

  // Copies host data into the recording's arena and returns its device address. The same host
  // array passed again in the same run (a pass's positions go to every layer) is stored once.
  char* arena_put(const void* src, size_t bytes);
  void defer_release(float* p) { deferred_.push_back(p); }

 private:
  struct Graph {
    cudaGraphExec_t exec = nullptr;
    uint64_t signature = 0;
    size_t arena_bytes = 0;
    uint64_t last_use = 0;
    int runs = 0, mismatches = 0;
  };
  struct ArenaEntry {
    const void* src;
    size_t bytes, offset;
  };
  static constexpr size_t kArenaBytes = size_t{8} << 20;  // host data of one recording
  static constexpr size_t kMaxGraphs = 64;                 // recordings kept (least recently used go)

  template <typename T>
  static uint64_t word(T v) {
    if constexpr (std::is_pointer_v<T>) {
      return static_cast<uint64_t>(reinterpret_cast<uintptr_t>(v));
    } else if constexpr (std::is_same_v<T, float>) {
      uint32_t b;
      std::memcpy(&b, &v, 4);
      return b;
    } else {
      return static_cast<uint64_t>(v);
    }
  }
  static uint64_t mix(uint64_t h, uint64_t v) {
    h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
    return h * 0x100000001b3ULL;
  }

  void free_device() noexcept;
  bool replay(Graph& g, const std::function<void()>& ops);
  void capture(Graph& g, const std::function<void()>& ops);
  void eager(const std::function<void()>& ops);
  void begin_graph_run(Mode m);
  void end_graph_run();
  void abort_capture();
  void launch(const Graph& g);
  void evict();

  cudaStream_t stream_;
  std::function<void(float*)> release_;
  bool enabled_ = true;
  bool in_recording_ = false;
  Mode mode_ = Mode::Eager;
  uint64_t sig_ = 0;
  char* arena_host_ = nullptr;  // pinned
  char* arena_dev_ = nullptr;
  size_t arena_used_ = 0;
  std::vector<ArenaEntry> arena_index_;
  cudaEvent_t arena_copied_ = nullptr;
  std::vector<float*> deferred_;
  std::unordered_map<std::string, Graph> graphs_;
  uint64_t clock_ = 0;
  RecordingStats stats_;
};

}  // namespace voxrt::cuda
