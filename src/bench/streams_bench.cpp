#include "bench/streams_bench.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <thread>
#include <vector>

#include "bench/bench_support.h"
#include "bench/benchmark.h"
#include "bench/round_cost_fit.h"
#include "common/error.h"
#include "scheduler/scheduler.h"
#include "voxrt/session.h"

namespace voxrt {

using bench_support::Barrier;
using bench_support::Clock;
using bench_support::looped;
using bench_support::spread;

nlohmann::json run_streams_benchmark(BenchEngine& engine, std::span<const float> audio, const StreamsBenchOptions& o) {
  const std::vector<BenchDevice*>& devices = engine.devices;
  check(o.streams >= 1 && !audio.empty(), "bench --streams", "at least one stream and some audio expected");
  check(!devices.empty(), "bench --streams", "a device expected");
  VoxtralModel& model = devices.front()->model();
  const Scheduler& scheduler = devices.front()->scheduler();  // the caches' shape: every device's is the same
  auto each_backend = [&](auto f) {
    for (BenchDevice* d : devices) f(d->model().backend());
  };
  auto memory_in_use = [&] {
    size_t bytes = 0;
    each_backend([&](Backend& b) { bytes += b.memory_in_use(); });
    return bytes;
  };
  check(o.windows >= 1, "bench --streams", "--windows must be at least 1");
  check(o.measure_seconds > 0 && o.stream_seconds >= o.windows * o.measure_seconds, "bench --streams",
        "--stream-seconds must be at least --measure-seconds (times --windows)");
  Backend& be = model.backend();  // its ceilings stand for every device's (the same GPUs)
  const ModelConfig& c = model.config();
  const int rate = c.audio.sampling_rate;
  const size_t step = static_cast<size_t>(c.samples_per_position());
  const double step_s = static_cast<double>(step) / rate;
  const size_t paced_steps = static_cast<size_t>(o.measure_seconds / step_s + 0.5);  // a window's
  const size_t windows = static_cast<size_t>(o.windows), all_paced_steps = windows * paced_steps;
  const size_t fill_samples = static_cast<size_t>((o.stream_seconds - o.windows * o.measure_seconds) * rate);
  const size_t fill_chunk = 5 * static_cast<size_t>(rate);

  const Ceilings ceil = be.measure_ceilings();
  const size_t memory_before = memory_in_use();
  std::vector<std::vector<double>> lags(o.streams);  // ms, per stream
  std::vector<std::string> errors(o.streams);
  // Set by the first stream that cannot open or fill (e.g. no memory left for its caches): the run
  // will throw, so the others stop feeding instead of filling minutes of audio for nothing.
  std::atomic<bool> abandoned{false};
  // Once every stream has filled (no round runs then), the paced part decodes as always.
  Barrier filled(o.streams + 1, [&] {
    for (BenchDevice* d : devices) d->scheduler().set_fill_drafts(false);
  });
  std::mutex mu;  // guards finished and measured
  std::condition_variable cv;
  int finished = 0;  // streams done with the paced part
  bool measured = false;
  for (BenchDevice* d : devices) d->scheduler().set_fill_drafts(o.fill_drafts);
  Clock::time_point fill_start = Clock::now();
  std::vector<std::thread> threads;
  for (int i = 0; i < o.streams; ++i) {
    threads.emplace_back([&, i] {
      std::unique_ptr<Session> session;
      try {
        session = bench_support::open_session(*engine.engine, o.delay_ms, o.stream_seconds);
        const size_t start = bench_support::start_of(i, audio.size());
        for (size_t at = 0; at < fill_samples && !abandoned; at += fill_chunk)
          session->feed(looped(audio, start + at, std::min(fill_chunk, fill_samples - at)));
      } catch (const std::exception& e) {
        errors[i] = e.what();
        abandoned = true;
      }
      const Clock::time_point t0 = filled.arrive_and_wait();
      if (errors[i].empty() && !abandoned) {
        try {
          const double phase = o.aligned_arrivals ? 0.0 : step_s * i / o.streams;
          for (size_t k = 0; k < all_paced_steps; ++k) {
            const auto arrival =
                t0 + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(phase + (k + 1) * step_s));
            std::this_thread::sleep_until(arrival);
            session->feed(looped(audio, bench_support::start_of(i, audio.size()) + fill_samples + k * step, step));
            lags[i].push_back(std::chrono::duration<double, std::milli>(Clock::now() - arrival).count());
          }
        } catch (const std::exception& e) {
          errors[i] = e.what();
        }
      }
      // Closed only once every stream is measured: a stream closing early would lighten the others' rounds.
      std::unique_lock<std::mutex> lock(mu);
      ++finished;
      cv.notify_all();
      cv.wait(lock, [&] { return measured; });
      lock.unlock();
      session.reset();
    });
  }
  const Clock::time_point t0 = filled.arrive_and_wait();
  const double fill_s = std::chrono::duration<double>(t0 - fill_start).count();
  const size_t memory_filled = memory_in_use();
  Scheduler::CacheUse cache;
  std::vector<int> device_streams;
  for (BenchDevice* d : devices) {
    const Scheduler::CacheUse u = d->scheduler().cache_use();
    cache.mapped_bytes += u.mapped_bytes;
    cache.total_bytes += u.total_bytes;
    device_streams.push_back(d->scheduler().open_streams());
    d->scheduler().take_rounds();  // the fill's rounds are not measured
  }
  bench_support::profile_window(devices, true);
  // Each window's rounds, by device: taken when the window's last chunks have arrived (the last
  // window's once every stream is done), so a round running across the boundary counts in the next.
  std::vector<std::vector<std::vector<Scheduler::Round>>> window_rounds(windows);
  for (size_t w = 0; w + 1 < windows; ++w) {
    std::this_thread::sleep_until(t0 + std::chrono::duration_cast<Clock::duration>(
                                           std::chrono::duration<double>(((w + 1) * paced_steps + 1) * step_s)));
    for (BenchDevice* d : devices) window_rounds[w].push_back(d->scheduler().take_rounds());
  }
  {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return finished == o.streams; });
    for (BenchDevice* d : devices) window_rounds.back().push_back(d->scheduler().take_rounds());
    measured = true;
  }
  std::vector<std::vector<Scheduler::Round>> device_rounds(devices.size());  // every window's
  for (const auto& wr : window_rounds)
    for (size_t i = 0; i < wr.size(); ++i) device_rounds[i].insert(device_rounds[i].end(), wr[i].begin(), wr[i].end());
  bench_support::profile_window(devices, false);
  cv.notify_all();
  for (std::thread& t : threads) t.join();
  for (int i = 0; i < o.streams; ++i)
    if (!errors[i].empty()) throw Error("bench --streams: stream " + std::to_string(i) + ": " + errors[i]);

  std::vector<Scheduler::Round> rounds;  // every device's
  for (const auto& d : device_rounds) rounds.insert(rounds.end(), d.begin(), d.end());
  // The lags of paced steps [first, end) of every stream: their spread, the streams whose worst
  // passed one step (80 ms), and whether none did. The whole run's, and each window's.
  auto lag_summary = [&](size_t first, size_t end) {
    std::vector<double> all;
    int late = 0;
    double worst = 0;
    for (const auto& l : lags) {
      const auto b = l.begin() + static_cast<ptrdiff_t>(std::min(l.size(), first));
      const auto e = l.begin() + static_cast<ptrdiff_t>(std::min(l.size(), end));
      all.insert(all.end(), b, e);
      const double m = b < e ? *std::max_element(b, e) : 0;
      worst = std::max(worst, m);
      late += m > step_s * 1e3;
    }
    return nlohmann::json{{"lag_ms", spread(all)}, {"late_streams", late}, {"within_real_time", worst <= step_s * 1e3}};
  };
  std::vector<double> round_ms, round_rows, round_streams, encoder_ms, decoder_ms, other_ms;
  for (const Scheduler::Round& r : rounds) {
    round_ms.push_back(r.seconds * 1e3);
    round_rows.push_back(r.work.decoder_rows);
    round_streams.push_back(r.streams);
    encoder_ms.push_back(r.work.encoder_seconds * 1e3);
    decoder_ms.push_back(r.work.decoder_seconds * 1e3);
    other_ms.push_back((r.seconds - r.work.encoder_seconds - r.work.decoder_seconds) * 1e3);
  }
  // The floor of one step of n streams: every weight read once, and each stream's caches once at
  // this length (decoder keys up to its window, the encoder's full window), or its FLOPs at the
  // matrix rate, whichever takes longer.
  const PassCosts k = pass_costs(c, weight_element_bytes(model), be.kv_element_bytes());
  const double keys = std::min<double>(o.stream_seconds / step_s, c.decoder.sliding_window);
  auto step_bytes = [&](double n) {
    return k.dec_weight_bytes + k.enc_weight_bytes + n * (k.dec_kv_bytes_per_key * keys + k.enc_kv_bytes);
  };
  auto step_flops = [&](double n) { return n * (k.dec_flops_per_position + k.enc_flops_per_frame * c.downsample_factor); };
  auto floor_ms_of = [&](double n) {
    return std::max(step_bytes(n) / (ceil.copy_gbps * 1e9), step_flops(n) / (ceil.matmul_tflops * 1e12)) * 1e3;
  };
  const double bytes = step_bytes(o.streams), flops = step_flops(o.streams), floor_ms = floor_ms_of(o.streams);
  // Rounds take the streams whose audio has arrived, so a step of audio (80 ms) holds several
  // rounds, each reading every weight again; a round is set against the floor of its own streams.
  // The rounds' time for each step of audio says how busy the GPU is: with arrivals spread over the
  // step it nears the whole step as soon as rounds run back to back, whatever their cost, so it
  // shows saturation, not distance from the floor (the lags show whether the streams keep up).
  // With several devices, each runs its rounds side by side: the busiest one's.
  std::vector<double> round_floor_ms;
  for (const Scheduler::Round& r : rounds) round_floor_ms.push_back(floor_ms_of(r.streams));
  auto busy_of = [&](const std::vector<Scheduler::Round>& rs, size_t steps) {
    double ms = 0;
    for (const Scheduler::Round& r : rs) ms += r.seconds * 1e3;
    return steps ? ms / steps : 0.0;
  };
  double busy_ms_per_step = 0;
  for (const auto& d : device_rounds) busy_ms_per_step = std::max(busy_ms_per_step, busy_of(d, all_paced_steps));

  nlohmann::json r;
  r["backend"] = be.name();
  r["ceilings"] = ceilings_json(ceil);
  r["streams"] = o.streams;
  r["stream_seconds"] = o.stream_seconds;
  r["arrivals"] = o.aligned_arrivals ? "aligned" : "spread over a step";
  r["measure_seconds"] = o.measure_seconds;
  r["windows"] = o.windows;
  r["fill"] = {{"seconds", fill_s}, {"audio_seconds", o.streams * static_cast<double>(fill_samples) / rate},
               {"rtfx", fill_s > 0 ? o.streams * static_cast<double>(fill_samples) / rate / fill_s : 0.0},
               {"drafts_kept", o.fill_drafts}};
  r.update(lag_summary(0, all_paced_steps));  // lag_ms, late_streams, within_real_time
  r["recordings"] = bench_support::recordings_json(be);  // since load: the fill's and the measured part's
  r["rounds"] = {{"count", rounds.size()}, {"ms", spread(round_ms)}, {"decoder_rows", spread(round_rows)},
                 {"streams", spread(round_streams)}, {"encoder_ms", spread(encoder_ms)},
                 {"decoder_ms", spread(decoder_ms)}, {"other_ms", spread(other_ms)}, {"floor_ms", floor_ms}, {"floor_bytes", bytes},
                 {"floor_flops", flops}, {"round_floor_ms", spread(round_floor_ms)},
                 {"fit", round_cost_json(round_streams, round_ms, step_s * 1e3)}};
  // floor_ms: one step of every stream; busy_ms_per_step: the rounds' time for each step of audio.
  r["busy_ms_per_step"] = busy_ms_per_step;
  r["step_ms"] = step_s * 1e3;
  // What a stream's caches take: the pages it reserved for its length, and those its positions
  // hold once filled; and what the device holds in all.
  r["memory"] = {{"before_bytes", memory_before}, {"filled_bytes", memory_filled},
                 {"cache_bytes_per_stream", static_cast<double>(scheduler.cache_bytes_for(o.stream_seconds))},
                 {"cache_mapped_bytes_per_stream", static_cast<double>(cache.mapped_bytes) / o.streams},
                 {"cache_total_bytes", static_cast<double>(cache.total_bytes)},
                 {"growth_per_stream_bytes", (static_cast<double>(memory_filled) - memory_before) / o.streams}};
  if (windows > 1) {
    // Each window on its own: the same streams, filled once, paced on from window to window.
    r["by_window"] = nlohmann::json::array();
    for (size_t w = 0; w < windows; ++w) {
      nlohmann::json window = lag_summary(w * paced_steps, (w + 1) * paced_steps);
      std::vector<double> window_round_ms;
      double busy = 0;
      for (const auto& d : window_rounds[w]) {
        for (const Scheduler::Round& x : d) window_round_ms.push_back(x.seconds * 1e3);
        busy = std::max(busy, busy_of(d, paced_steps));
      }
      window["rounds"] = {{"count", window_round_ms.size()}, {"ms", spread(window_round_ms)}};
      window["busy_ms_per_step"] = busy;
      r["by_window"].push_back(std::move(window));
    }
  }
  if (devices.size() > 1) {
    r["devices"] = nlohmann::json::array();
    for (size_t i = 0; i < devices.size(); ++i) {
      std::vector<double> ms, streams;
      for (const Scheduler::Round& x : device_rounds[i]) ms.push_back(x.seconds * 1e3), streams.push_back(x.streams);
      r["devices"].push_back({{"device", devices[i]->device_name()}, {"streams", device_streams[i]},
                              {"rounds", {{"count", device_rounds[i].size()}, {"ms", spread(ms)}, {"streams", spread(streams)}}},
                              {"busy_ms_per_step", busy_of(device_rounds[i], all_paced_steps)}});
    }
  }
  return r;
}

nlohmann::json find_streams_capacity(BenchEngine& engine, std::span<const float> audio,
                                     const StreamsBenchOptions& options) {
  nlohmann::json trials = nlohmann::json::array();
  auto keeps_up = [&](int n) {
    StreamsBenchOptions o = options;
    o.streams = n;
    try {
      trials.push_back(run_streams_benchmark(engine, audio, o));
    } catch (const Error& e) {  // e.g. the device's memory cannot hold n streams
      trials.push_back({{"streams", n}, {"error", e.what()}});
    }
    if (options.on_trial) options.on_trial(trials.back());
    return trials.back().value("within_real_time", false);
  };
  int good = 0, bad = 0;
  for (int n = std::max(1, options.streams);; n *= 2) {
    if (!keeps_up(n)) {
      bad = n;
      break;
    }
    good = n;
    if (n > (1 << 20)) break;
  }
  while (bad - good > std::max(1, good / 20)) {
    const int mid = good + (bad - good) / 2;
    if (keeps_up(mid))
      good = mid;
    else
      bad = mid;
  }
  return {{"backend", engine.devices.front()->model().backend().name()}, {"capacity", good}, {"first_failing", bad}, {"trials", trials}};
}

std::string format_streams_benchmark(const nlohmann::json& r, bool trials) {
  if (r.contains("capacity")) {
    std::string out;
    if (trials)
      for (const nlohmann::json& t : r["trials"]) out += format_streams_benchmark(t);
    return out + "capacity: " + std::to_string(r["capacity"].get<int>()) + " streams keep within one step (80 ms) of real time; " +
           std::to_string(r["first_failing"].get<int>()) + " do not\n";
  }
  if (r.contains("error"))  // a capacity trial that could not run
    return "--- " + std::to_string(r["streams"].get<int>()) + " streams: " + r["error"].get<std::string>() + "\n";
  char buf[1024];
  std::string out;
  const int windows = r.value("windows", 1);
  const double measured = r["measure_seconds"].get<double>();
  const std::string over = windows > 1 ? std::to_string(static_cast<int>(windows * measured + 0.5)) + " s in " +
                                             std::to_string(windows) + " windows of " +
                                             std::to_string(static_cast<int>(measured + 0.5)) + " s"
                                       : std::to_string(static_cast<int>(measured + 0.5)) + " s";
  std::snprintf(buf, sizeof buf, "%s: %d live streams of %.0f s (measured over the last %s, paced at real time, arrivals %s)\n",
                r["backend"].get<std::string>().c_str(), r["streams"].get<int>(), r["stream_seconds"].get<double>(),
                over.c_str(), r.value("arrivals", std::string("aligned")).c_str());
  out += buf;
  auto lag_line = [&](const char* what, const nlohmann::json& x) {
    const auto& lag = x["lag_ms"];
    std::snprintf(buf, sizeof buf, "%s: p50 %.1f ms, p99 %.1f ms, max %.1f ms; %d streams passed 80 ms (%s)", what,
                  lag["p50"].get<double>(), lag["p99"].get<double>(), lag["max"].get<double>(), x["late_streams"].get<int>(),
                  x["within_real_time"].get<bool>() ? "all within real time" : "NOT all within real time");
    out += buf;
  };
  lag_line("lag, audio arrival to its steps done", r);
  out += "\n";
  int w = 0;
  for (const auto& x : r.value("by_window", nlohmann::json::array())) {
    lag_line(("  window " + std::to_string(++w) + ", lag").c_str(), x);
    std::snprintf(buf, sizeof buf, "; %d rounds, p50 %.2f ms, p99 %.2f ms\n", x["rounds"]["count"].get<int>(),
                  x["rounds"]["ms"]["p50"].get<double>(), x["rounds"]["ms"]["p99"].get<double>());
    out += buf;
  }
  const auto& rd = r["rounds"];
  const double round_floor = rd["round_floor_ms"]["p50"].get<double>();
  std::snprintf(buf, sizeof buf, "rounds: %d, p50 %.2f ms, p99 %.2f ms against a floor of %.2f ms for a round's streams (%.1fx); streams a round p50 %.0f, decoder rows p50 %.0f max %.0f\n",
                rd["count"].get<int>(), rd["ms"]["p50"].get<double>(), rd["ms"]["p99"].get<double>(), round_floor,
                rd["ms"]["p50"].get<double>() / std::max(1e-9, round_floor), rd["streams"]["p50"].get<double>(),
                rd["decoder_rows"]["p50"].get<double>(), rd["decoder_rows"]["max"].get<double>());
  out += buf;
  const double busy = r["busy_ms_per_step"].get<double>(), step_ms = r["step_ms"].get<double>();
  std::snprintf(buf, sizeof buf,
                "busy: %.1f ms of rounds for each %.0f ms of audio (%.0f %%); a step of every stream at once would take at least %.2f ms\n",
                busy, step_ms, 100 * busy / step_ms, rd["floor_ms"].get<double>());
  out += buf;
  std::snprintf(buf, sizeof buf, "round parts p50: encoder pass %.2f ms, decoder pass %.2f ms, the rest (prompts, hand-over) %.2f ms\n",
                rd["encoder_ms"]["p50"].get<double>(), rd["decoder_ms"]["p50"].get<double>(), rd["other_ms"]["p50"].get<double>());
  out += buf;
  if (const auto fit = rd.find("fit"); fit != rd.end() && !fit->is_null()) {
    const double per_stream = (*fit)["ms_per_stream"].get<double>();
    std::snprintf(buf, sizeof buf,
                  "a round costs %.2f ms + %.3f ms a stream (least squares over %d rounds, R^2 %.2f): the %d streams' own "
                  "work takes %.1f of each %.0f ms step\n",
                  (*fit)["fixed_ms"].get<double>(), per_stream, (*fit)["rounds"].get<int>(), (*fit)["r2"].get<double>(),
                  r["streams"].get<int>(), per_stream * r["streams"].get<int>(), step_ms);
    out += buf;
    if (fit->contains("streams_within_a_step")) {
      std::snprintf(buf, sizeof buf,
                    "  by that fit, rounds back to back keep at most %.0f streams within a step (a chunk waits at most two "
                    "rounds; rounds that vary keep fewer)\n",
                    std::floor((*fit)["streams_within_a_step"].get<double>()));
      out += buf;
    }
  }
  const auto& mem = r["memory"];
  std::snprintf(buf, sizeof buf,
                "fill: %.0f s of audio in %.1f s (RTFx %.0f%s); caches %.3f GB per stream reserved, %.3f GB held once "
                "filled (pools %.1f GB); %.2f GB of device memory in use\n",
                r["fill"]["audio_seconds"].get<double>(), r["fill"]["seconds"].get<double>(), r["fill"]["rtfx"].get<double>(),
                r["fill"].value("drafts_kept", false) ? ", drafts kept: its ids are not the model's" : "",
                mem["cache_bytes_per_stream"].get<double>() / 1e9, mem.value("cache_mapped_bytes_per_stream", 0.0) / 1e9,
                mem.value("cache_total_bytes", 0.0) / 1e9, mem["filled_bytes"].get<double>() / 1e9);
  out += buf;
  for (const auto& d : r.value("devices", nlohmann::json::array())) {
    std::snprintf(buf, sizeof buf, "  %s: %d streams; %d rounds, p50 %.2f ms, p99 %.2f ms, streams a round p50 %.0f; busy %.1f ms of each %.0f ms\n",
                  d["device"].get<std::string>().c_str(), d["streams"].get<int>(), d["rounds"]["count"].get<int>(),
                  d["rounds"]["ms"]["p50"].get<double>(), d["rounds"]["ms"]["p99"].get<double>(),
                  d["rounds"]["streams"]["p50"].get<double>(), d["busy_ms_per_step"].get<double>(), step_ms);
    out += buf;
  }
  return out;
}

}  // namespace voxrt
