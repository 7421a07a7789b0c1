#include "bench/offline_batch_bench.h"

#include <chrono>
#include <cstdio>
#include <thread>
#include <vector>

#include "bench/bench_support.h"
#include "bench/benchmark.h"
#include "common/error.h"
#include "scheduler/scheduler.h"
#include "voxrt/session.h"

namespace voxrt {

using bench_support::Barrier;
using bench_support::Clock;
using bench_support::looped;
using bench_support::spread;

namespace {

// Where one device's rounds went: each part's spread over the rounds and its total.
struct RoundTotals {
  std::vector<double> ms, rows, encoded, encoder_ms, prompt_ms, decoder_ms;
  double total_s = 0, encoder_s = 0, prompt_s = 0, decoder_s = 0;
  int64_t rows_total = 0;
  void add(const Scheduler::Round& r) {
    ms.push_back(r.seconds * 1e3);
    rows.push_back(r.work.decoder_rows);
    encoded.push_back(r.work.encoded_positions);
    encoder_ms.push_back(r.work.encoder_seconds * 1e3);
    prompt_ms.push_back(r.work.prompt_seconds * 1e3);
    decoder_ms.push_back(r.work.decoder_seconds * 1e3);
    total_s += r.seconds;
    encoder_s += r.work.encoder_seconds;
    prompt_s += r.work.prompt_seconds;
    decoder_s += r.work.decoder_seconds;
    rows_total += r.work.decoder_rows;
  }
};

}  // namespace

nlohmann::json run_offline_batch_benchmark(BenchEngine& engine, std::span<const float> audio,
                                           const OfflineBatchOptions& o) {
  const std::vector<BenchDevice*>& devices = engine.devices;
  check(o.batch >= 1 && o.seconds > 0 && !audio.empty(), "bench --offline-batch", "a batch, a length and audio expected");
  check(!devices.empty(), "bench --offline-batch", "a device expected");
  VoxtralModel& model = devices.front()->model();
  Backend& be = model.backend();  // its ceilings stand for every device's (the same GPUs)
  const ModelConfig& c = model.config();
  const int rate = c.audio.sampling_rate;
  const size_t samples = static_cast<size_t>(o.seconds * rate);
  const size_t piece = 5 * static_cast<size_t>(rate);
  const Ceilings ceil = be.measure_ceilings();
  std::vector<std::vector<float>> inputs;
  for (int i = 0; i < o.batch; ++i) inputs.push_back(looped(audio, bench_support::start_of(i, audio.size()), samples));
  std::vector<int64_t> steps(o.batch, 0);
  std::vector<std::string> errors(o.batch);
  Barrier start(o.batch + 1);
  std::vector<uint64_t> opened_before;
  for (BenchDevice* d : devices) {
    d->scheduler().take_rounds();
    opened_before.push_back(d->scheduler().stats().sessions_opened);
  }
  std::vector<std::thread> threads;
  for (int i = 0; i < o.batch; ++i) {
    threads.emplace_back([&, i] {
      std::unique_ptr<Session> session;
      try {
        session = bench_support::open_session(*engine.engine, o.delay_ms);
      } catch (const std::exception& e) {
        errors[i] = e.what();
      }
      start.arrive_and_wait();
      if (!session) return;
      try {
        const std::vector<float>& a = inputs[i];
        for (size_t at = 0; at < a.size(); at += piece)
          session->feed(std::span<const float>(a).subspan(at, std::min(piece, a.size() - at)));
        session->flush();
        steps[i] = session->stats().positions;
      } catch (const std::exception& e) {
        errors[i] = e.what();
      }
    });
  }
  bench_support::profile_window(devices, true);
  const Clock::time_point t0 = start.arrive_and_wait();
  for (std::thread& t : threads) t.join();
  const double wall = std::chrono::duration<double>(Clock::now() - t0).count();
  bench_support::profile_window(devices, false);
  std::vector<std::vector<Scheduler::Round>> device_rounds;
  for (BenchDevice* d : devices) device_rounds.push_back(d->scheduler().take_rounds());
  for (int i = 0; i < o.batch; ++i)
    if (!errors[i].empty()) throw Error("bench --offline-batch: transcription " + std::to_string(i) + ": " + errors[i]);

  int64_t total_steps = 0;
  for (int64_t s : steps) total_steps += s;
  RoundTotals all;
  std::vector<RoundTotals> each(devices.size());
  for (size_t d = 0; d < devices.size(); ++d)
    for (const Scheduler::Round& r : device_rounds[d]) all.add(r), each[d].add(r);
  size_t memory = 0;
  for (BenchDevice* d : devices) memory += d->model().backend().memory_in_use();
  // Every position of every input through the encoder and the decoder at the matrix rate, the
  // devices sharing the work evenly.
  const PassCosts k = pass_costs(c, weight_element_bytes(model), be.kv_element_bytes());
  const double step_s = static_cast<double>(c.samples_per_position()) / rate;
  const double positions = o.batch * (o.seconds / step_s);
  const double floor_s = positions * (k.dec_flops_per_position + k.enc_flops_per_frame * c.downsample_factor) /
                         (static_cast<double>(devices.size()) * ceil.matmul_tflops * 1e12);
  const double audio_s = o.batch * o.seconds;
  nlohmann::json r;
  r["backend"] = be.name();
  r["ceilings"] = ceilings_json(ceil);
  r["batch"] = o.batch;
  r["seconds_each"] = o.seconds;
  r["device_count"] = devices.size();
  r["wall_s"] = wall;
  r["rtfx"] = audio_s / wall;
  r["steps"] = total_steps;
  r["floor_s"] = floor_s;
  r["rtfx_floor"] = audio_s / floor_s;
  r["rounds"] = {{"count", all.ms.size()},         {"ms", spread(all.ms)},
                 {"decoder_rows", spread(all.rows)}, {"encoded_positions", spread(all.encoded)},
                 {"encoder_ms", spread(all.encoder_ms)}, {"prompt_ms", spread(all.prompt_ms)},
                 {"decoder_ms", spread(all.decoder_ms)}};
  // Rows decoded against steps kept: drafted rows past a wrong guess are decoded and dropped.
  r["decoder_rows"] = all.rows_total;
  // Summed over the devices (which run their rounds side by side): with one, parts of the wall time.
  r["seconds_in"] = {{"rounds", all.total_s},
                     {"encoder", all.encoder_s},
                     {"prompts", all.prompt_s},
                     {"decoder", all.decoder_s},
                     {"between_parts", all.total_s - all.encoder_s - all.prompt_s - all.decoder_s},
                     {"outside_rounds", wall * static_cast<double>(devices.size()) - all.total_s}};
  r["memory_in_use_bytes"] = memory;
  if (devices.size() > 1) {
    r["devices"] = nlohmann::json::array();
    for (size_t d = 0; d < devices.size(); ++d)
      r["devices"].push_back({{"device", devices[d]->device_name()},
                              {"transcriptions", devices[d]->scheduler().stats().sessions_opened - opened_before[d]},
                              {"rounds", {{"count", each[d].ms.size()}, {"ms", spread(each[d].ms)}}},
                              {"decoder_rows", each[d].rows_total},
                              {"busy_s", each[d].total_s}});
  }
  return r;
}

std::string format_offline_batch_benchmark(const nlohmann::json& r) {
  const int devices = r.value("device_count", 1);
  const std::string where = devices > 1 ? " on " + std::to_string(devices) + " devices" : "";
  const std::string summed = devices > 1 ? " (summed over the devices)" : "";
  char buf[2048];
  std::snprintf(buf, sizeof buf,
                "%s: %d transcriptions of %.0f s at once%s: %.2f s wall, RTFx %.0f (compute floor %.3f s = RTFx %.0f); %lld steps "
                "in %d rounds (round p50 %.2f ms, decoder rows p50 %.0f max %.0f); memory in use %.2f GB\n"
                "  seconds%s in the encoder %.2f, prompts %.2f, decoder %.2f (%lld rows decoded, drafted rows included), between parts %.2f, "
                "outside rounds %.2f\n",
                r["backend"].get<std::string>().c_str(), r["batch"].get<int>(), r["seconds_each"].get<double>(), where.c_str(),
                r["wall_s"].get<double>(), r["rtfx"].get<double>(), r["floor_s"].get<double>(), r["rtfx_floor"].get<double>(),
                static_cast<long long>(r["steps"].get<int64_t>()), r["rounds"]["count"].get<int>(),
                r["rounds"]["ms"]["p50"].get<double>(), r["rounds"]["decoder_rows"]["p50"].get<double>(),
                r["rounds"]["decoder_rows"]["max"].get<double>(), r["memory_in_use_bytes"].get<double>() / 1e9, summed.c_str(),
                r["seconds_in"]["encoder"].get<double>(), r["seconds_in"]["prompts"].get<double>(),
                r["seconds_in"]["decoder"].get<double>(), static_cast<long long>(r["decoder_rows"].get<int64_t>()),
                r["seconds_in"]["between_parts"].get<double>(), r["seconds_in"]["outside_rounds"].get<double>());
  std::string text = buf;
  for (const auto& d : r.value("devices", nlohmann::json::array())) {
    std::snprintf(buf, sizeof buf, "  %s: %d transcriptions; %d rounds (p50 %.2f ms), busy %.2f s of the %.2f s\n",
                  d["device"].get<std::string>().c_str(), d["transcriptions"].get<int>(), d["rounds"]["count"].get<int>(),
                  d["rounds"]["ms"]["p50"].get<double>(), d["busy_s"].get<double>(), r["wall_s"].get<double>());
    text += buf;
  }
  return text;
}

}  // namespace voxrt
