// `voxrt bench --streams N`: N live streams through one engine at once, as a server runs them
// (issue 13, item 8). Each stream is a Session on a thread of its own. Its caches are first filled
// to --stream-seconds less the measured part by feeding audio as fast as the engine takes it (so
// the figure is the steady state of streams that long, without waiting for them in real time), then
// every stream is paced at real time, 80 ms of audio every 80 ms, for --measure-seconds. The
// streams' arrivals are spread evenly over the 80 ms (stream i's chunks come i/N of a step after
// stream 0's), as clients that connected at different moments send them to a server; with
// aligned_arrivals every chunk of every stream arrives at the same instant, the worst case.
// Reported: each chunk's lag (its arrival to the return of feed(), which is when its steps have run
// and their events were delivered) as p50/p99/max over all streams, the streams that fell more than
// one step behind, the scheduler's rounds (time, streams and decoder rows per round) against the
// round's floor, the rounds' time fitted as a fixed part and a part a stream (round_cost_fit.h),
// and memory per stream.
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <span>
#include <string>

#include "engine/bench_access.h"

namespace voxrt {

struct StreamsBenchOptions {
  int streams = 1;              // with find_capacity: the first count tried
  bool find_capacity = false;   // search the most streams that all keep within one step of real time
  double stream_seconds = 300;  // the length the streams reach (their caches' fill)
  double measure_seconds = 10;  // the paced part at the end, measured
  // Measured windows of measure_seconds, one after the other, after one fill: the streams are
  // filled to stream_seconds less all of them and paced through all, each window reported on its
  // own beside the whole (at five minutes the fill takes minutes; a figure's repeats then take
  // seconds each).
  int windows = 1;
  int delay_ms = 0;             // 0: the model's default
  bool aligned_arrivals = false;  // every stream's chunks at the same instant (else spread over a step)
  // The fill's decoder passes keep their drafted rows (Scheduler::set_fill_drafts): a stream fills
  // up to an encoder batch of positions a pass, its keys read once for every 8 of them, where the
  // fill decodes one position a stream a round otherwise; the fill's ids are not the model's, its
  // caches' lengths and the measured part are as always. Off by default until a GPU has measured
  // what it saves (the five-minute fill of 200 streams took 210 s on the H200).
  bool fill_drafts = false;
  // With find_capacity: called with each trial's result (or {streams, error}) as the trial ends, so a
  // search of several minutes shows its progress (and what it found if it is stopped).
  std::function<void(const nlohmann::json& trial)> on_trial;
};

// `audio` (16 kHz) is looped; stream i starts at a different place in it. The streams are opened
// through `engine.engine`, which places them on its devices; with several devices the result has
// each one's share and rounds in "devices", and the rounds' figures cover every device's rounds.
nlohmann::json run_streams_benchmark(BenchEngine& engine, std::span<const float> audio, const StreamsBenchOptions& options);

// --find-capacity: doubles the stream count from options.streams until a run falls behind real time
// (or cannot open its streams), then bisects between the last count that kept up and the first
// that did not, down to 5 % or one stream. Returns {"capacity", "trials": [each run's result, or
// its error]}.
nlohmann::json find_streams_capacity(BenchEngine& engine, std::span<const float> audio, const StreamsBenchOptions& options);

// A run's report; for a capacity search, each trial's (unless `trials` is false: they were printed
// as they ended) and the capacity found.
std::string format_streams_benchmark(const nlohmann::json& result, bool trials = true);

}  // namespace voxrt
