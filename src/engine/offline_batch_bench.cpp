#include "engine/offline_batch_bench.h"

#include <chrono>
#include <cstdio>
#include <thread>
#include <vector>

#include "common/error.h"
#include "engine/bench_support.h"
#include "voxrt/session.h"
#include "voxtral/benchmark.h"

namespace voxrt {

using bench_support::Barrier;
using bench_support::Clock;
using bench_support::looped;
using bench_support::spread;

nlohmann::json run_offline_batch_benchmark(Engine& engine, Scheduler& scheduler, VoxtralModel& model,
                                           std::span<const float> audio, const OfflineBatchOptions& o) {
  check(o.batch >= 1 && o.seconds > 0 && !audio.empty(), "bench --offline-batch", "a batch, a length and audio expected");
  Backend& be = model.backend();
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
  scheduler.take_rounds();
  std::vector<std::thread> threads;
  for (int i = 0; i < o.batch; ++i) {
    threads.emplace_back([&, i] {
      std::unique_ptr<Session> session;
      try {
        session = bench_support::open_session(engine, o.delay_ms);
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
        steps[i] = session->stats().steps;
      } catch (const std::exception& e) {
        errors[i] = e.what();
      }
    });
  }
  be.profile_window(true);
  const Clock::time_point t0 = start.arrive_and_wait();
  for (std::thread& t : threads) t.join();
  const double wall = std::chrono::duration<double>(Clock::now() - t0).count();
  be.profile_window(false);
  const std::vector<Scheduler::Round> rounds = scheduler.take_rounds();
  for (int i = 0; i < o.batch; ++i)
    if (!errors[i].empty()) throw Error("bench --offline-batch: transcription " + std::to_string(i) + ": " + errors[i]);

  int64_t total_steps = 0;
  for (int64_t s : steps) total_steps += s;
  // Where the rounds' time went: each part's spread over the rounds and its total.
  std::vector<double> round_ms, round_rows, encoded, encoder_ms, prompt_ms, decoder_ms;
  double total_s = 0, encoder_s = 0, prompt_s = 0, decoder_s = 0;
  int64_t rows = 0;
  for (const Scheduler::Round& r : rounds) {
    round_ms.push_back(r.seconds * 1e3);
    round_rows.push_back(r.work.decoder_rows);
    encoded.push_back(r.work.encoded_positions);
    encoder_ms.push_back(r.work.encoder_seconds * 1e3);
    prompt_ms.push_back(r.work.prompt_seconds * 1e3);
    decoder_ms.push_back(r.work.decoder_seconds * 1e3);
    total_s += r.seconds;
    encoder_s += r.work.encoder_seconds;
    prompt_s += r.work.prompt_seconds;
    decoder_s += r.work.decoder_seconds;
    rows += r.work.decoder_rows;
  }
  // Every position of every input through the encoder and the decoder at the matrix rate.
  const StepCosts k = step_costs(c, be.weight_element_bytes(), be.kv_element_bytes());
  const double step_s = static_cast<double>(c.samples_per_step()) / rate;
  const double positions = o.batch * (o.seconds / step_s);
  const double floor_s = positions * (k.dec_flops_per_position + k.enc_flops_per_frame * c.downsample_factor) /
                         (ceil.matmul_tflops * 1e12);
  const double audio_s = o.batch * o.seconds;
  nlohmann::json r;
  r["backend"] = be.name();
  r["ceilings"] = ceilings_json(ceil);
  r["batch"] = o.batch;
  r["seconds_each"] = o.seconds;
  r["wall_s"] = wall;
  r["rtfx"] = audio_s / wall;
  r["steps"] = total_steps;
  r["floor_s"] = floor_s;
  r["rtfx_floor"] = audio_s / floor_s;
  r["rounds"] = {{"count", rounds.size()},       {"ms", spread(round_ms)},
                 {"decoder_rows", spread(round_rows)}, {"encoded_positions", spread(encoded)},
                 {"encoder_ms", spread(encoder_ms)},   {"prompt_ms", spread(prompt_ms)},
                 {"decoder_ms", spread(decoder_ms)}};
  // Rows decoded against steps kept: drafted rows past a wrong guess are decoded and dropped.
  r["decoder_rows"] = rows;
  r["seconds_in"] = {{"rounds", total_s},
                     {"encoder", encoder_s},
                     {"prompts", prompt_s},
                     {"decoder", decoder_s},
                     {"between_parts", total_s - encoder_s - prompt_s - decoder_s},
                     {"outside_rounds", wall - total_s}};
  r["memory_in_use_bytes"] = be.memory_in_use();
  return r;
}

std::string format_offline_batch_benchmark(const nlohmann::json& r) {
  char buf[2048];
  std::snprintf(buf, sizeof buf,
                "%s: %d transcriptions of %.0f s at once: %.2f s wall, RTFx %.0f (compute floor %.3f s = RTFx %.0f); %lld steps "
                "in %d rounds (round p50 %.2f ms, decoder rows p50 %.0f max %.0f); memory in use %.2f GB\n"
                "  seconds in the encoder %.2f, prompts %.2f, decoder %.2f (%lld rows decoded, drafted rows included), between parts %.2f, "
                "outside rounds %.2f\n",
                r["backend"].get<std::string>().c_str(), r["batch"].get<int>(), r["seconds_each"].get<double>(),
                r["wall_s"].get<double>(), r["rtfx"].get<double>(), r["floor_s"].get<double>(), r["rtfx_floor"].get<double>(),
                static_cast<long long>(r["steps"].get<int64_t>()), r["rounds"]["count"].get<int>(),
                r["rounds"]["ms"]["p50"].get<double>(), r["rounds"]["decoder_rows"]["p50"].get<double>(),
                r["rounds"]["decoder_rows"]["max"].get<double>(), r["memory_in_use_bytes"].get<double>() / 1e9,
                r["seconds_in"]["encoder"].get<double>(), r["seconds_in"]["prompts"].get<double>(),
                r["seconds_in"]["decoder"].get<double>(), static_cast<long long>(r["decoder_rows"].get<int64_t>()),
                r["seconds_in"]["between_parts"].get<double>(), r["seconds_in"]["outside_rounds"].get<double>());
  return buf;
}

}  // namespace voxrt
