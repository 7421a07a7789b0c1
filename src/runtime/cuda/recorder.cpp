#include "runtime/cuda/recorder.h"


#include "common/error.h"
#include "runtime/cuda/cuda_check.h"

namespace voxrt::cuda {

Recorder::Recorder(cudaStream_t stream, bool enabled, std::function<void(float*)> release)
    : stream_(stream), release_(std::move(release)), enabled_(enabled) {
  try {
    VOXRT_CUDA_CHECK(cudaMallocHost(reinterpret_cast<void**>(&arena_host_), kArenaBytes));
    VOXRT_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&arena_dev_), kArenaBytes));
    VOXRT_CUDA_CHECK(cudaEventCreateWithFlags(&arena_copied_, cudaEventDisableTiming));
    VOXRT_CUDA_CHECK(cudaEventRecord(arena_copied_, stream_));
  } catch (...) {
    free_device();
    throw;
  }
}

Recorder::~Recorder() { free_device(); }

void Recorder::free_device() noexcept {
  for (auto& [key, g] : graphs_)
    if (g.exec) cudaGraphExecDestroy(g.exec);
  graphs_.clear();
  if (arena_copied_) cudaEventSynchronize(arena_copied_);
  if (arena_host_) cudaFreeHost(arena_host_);
  if (arena_dev_) cudaFree(arena_dev_);
  if (arena_copied_) cudaEventDestroy(arena_copied_);
  arena_host_ = arena_dev_ = nullptr;
  arena_copied_ = nullptr;
}

void Recorder::run(const std::string& key, const std::function<void()>& ops) {
  if (in_recording_) {  // nested: part of the enclosing recording
    ops();
    return;
  }
  struct InRecording {
    bool& flag;
    explicit InRecording(bool& f) : flag(f) { flag = true; }
    ~InRecording() { flag = false; }
  } in_recording(in_recording_);
  if (!enabled_) {
    eager(ops);
    return;
  }
  Graph& g = graphs_[key];
  g.last_use = ++clock_;
  ++g.runs;
  evict();
  if (g.exec && replay(g, ops)) return;
  // Eager the first time (one-off shapes are not worth a capture) and for a key whose launches
  // keep changing.
  if (g.runs < 2 || g.mismatches > 3) {
    eager(ops);
    return;
  }
  capture(g, ops);
}

bool Recorder::replay(Graph& g, const std::function<void()>& ops) {
  begin_graph_run(Mode::Replay);
  bool same = false;
  try {
    ops();
    same = sig_ == g.signature && arena_used_ == g.arena_bytes;
  } catch (const RecordingNeedsEager&) {
  } catch (...) {
    end_graph_run();
    throw;
  }
  end_graph_run();
  if (same) {
    launch(g);
    g.mismatches = 0;
    ++stats_.replayed;
    return true;
  }
  VOXRT_CUDA_CHECK(cudaGraphExecDestroy(g.exec));
  g.exec = nullptr;
  ++g.mismatches;
  return false;
}

void Recorder::capture(Graph& g, const std::function<void()>& ops) {
  begin_graph_run(Mode::Capture);
  VOXRT_CUDA_CHECK(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal));
  try {
    ops();
  } catch (const RecordingNeedsEager&) {
    abort_capture();
    eager(ops);
    return;
  } catch (...) {
    abort_capture();
    throw;
  }
  cudaGraph_t graph = nullptr;
  const cudaError_t ended = cudaStreamEndCapture(stream_, &graph);
  end_graph_run();  // after the capture: memory freed inside the recording is freed outside the graph
  VOXRT_CUDA_CHECK(ended);
  const cudaError_t e = cudaGraphInstantiate(&g.exec, graph, 0);
  cudaGraphDestroy(graph);
  if (e != cudaSuccess) {
    g.exec = nullptr;
    VOXRT_CUDA_CHECK(e);
  }
  g.signature = sig_;
  g.arena_bytes = arena_used_;
  launch(g);
  ++stats_.captured;
}

void Recorder::eager(const std::function<void()>& ops) {
  ops();
  ++stats_.eager;
}

void Recorder::begin_graph_run(Mode m) {
  // The host arena is rewritten: the previous run's copy out of it must have completed.
  VOXRT_CUDA_CHECK(cudaEventSynchronize(arena_copied_));
  mode_ = m;
  sig_ = 0x84222325cbf29ce4ULL;
  arena_used_ = 0;
  arena_index_.clear();
}

void Recorder::end_graph_run() {
  mode_ = Mode::Eager;
  for (float* p : deferred_) release_(p);
  deferred_.clear();
}

void Recorder::abort_capture() {
  cudaGraph_t graph = nullptr;
  cudaStreamEndCapture(stream_, &graph);
  if (graph) cudaGraphDestroy(graph);
  cudaGetLastError();  // an invalidated capture leaves its error behind
  end_graph_run();
}

// The recording's host data to the device in one copy, then the graph, on the backend's stream.
void Recorder::launch(const Graph& g) {
  if (arena_used_ > 0)
    VOXRT_CUDA_CHECK(cudaMemcpyAsync(arena_dev_, arena_host_, arena_used_, cudaMemcpyHostToDevice, stream_));
  VOXRT_CUDA_CHECK(cudaEventRecord(arena_copied_, stream_));
  VOXRT_CUDA_CHECK(cudaGraphLaunch(g.exec, stream_));
}

char* Recorder::arena_put(const void* src, size_t bytes) {
  for (const ArenaEntry& e : arena_index_)
    if (e.src == src && e.bytes == bytes && std::memcmp(arena_host_ + e.offset, src, bytes) == 0)
      return arena_dev_ + e.offset;
  const size_t off = arena_used_;
  const size_t padded = (bytes + 255) / 256 * 256;
  check_with(off + padded <= kArenaBytes, "cuda recording",
             [] { return "more than " + std::to_string(kArenaBytes) + " bytes of host data in one recording"; });
  std::memcpy(arena_host_ + off, src, bytes);
  arena_used_ += padded;
  arena_index_.push_back({src, bytes, off});
  return arena_dev_ + off;
}

void Recorder::evict() {
  while (graphs_.size() > kMaxGraphs) {
    auto oldest = graphs_.begin();
    for (auto it = graphs_.begin(); it != graphs_.end(); ++it)
      if (it->second.last_use < oldest->second.last_use) oldest = it;
    if (oldest->second.exec) cudaGraphExecDestroy(oldest->second.exec);
    graphs_.erase(oldest);
  }
}

}  // namespace voxrt::cuda
