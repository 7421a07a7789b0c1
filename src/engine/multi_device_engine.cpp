#include "engine/multi_device_engine.h"

#include <algorithm>
#include <string>
#include <tuple>

#include "common/error.h"
#include "engine/ordered_batch.h"
#include "voxrt/session.h"

namespace voxrt {
namespace {

void add_histogram(Histogram& into, const Histogram& h) {
  if (into.counts.empty()) {
    into = h;
    return;
  }
  // Every device's engine buckets with the same bounds (EngineCounters).
  check(into.upper_bounds == h.upper_bounds, "engine stats", "devices' histograms with different buckets");
  for (size_t i = 0; i < into.counts.size(); ++i) into.counts[i] += h.counts[i];
  into.sum += h.sum;
  into.count += h.count;
}

// Room a device has for one more session: its free cache bytes, or, while its caches grow on
// demand, its free memory.
size_t room_of(const DeviceStats& d) {
  return d.cache_bytes_total > 0 ? d.cache_bytes_total - std::min(d.cache_bytes_in_use, d.cache_bytes_total)
                                 : d.memory_available;
}

}  // namespace

EngineStats combine_device_stats(const std::vector<EngineStats>& each) {
  EngineStats s;
  s.has_room = false;  // until a device that has not failed has room
  for (const EngineStats& e : each) {
    const bool failed = std::any_of(e.devices.begin(), e.devices.end(), [](const DeviceStats& d) { return d.failed; });
    s.has_room = s.has_room || (e.has_room && !failed);
    s.stalled_seconds = std::max(s.stalled_seconds, e.stalled_seconds);
    s.sessions_open += e.sessions_open;
    s.sessions_opened += e.sessions_opened;
    s.refused_full += e.refused_full;
    s.refused_overloaded += e.refused_overloaded;
    s.refused_too_long += e.refused_too_long;
    s.rounds += e.rounds;
    s.steps += e.steps;
    s.decoder_rows += e.decoder_rows;
    add_histogram(s.round_ms, e.round_ms);
    add_histogram(s.step_ms, e.step_ms);
    add_histogram(s.live_wait_ms, e.live_wait_ms);
    s.live_wait_p90_ms = std::max(s.live_wait_p90_ms, e.live_wait_p90_ms);
    s.audio_seconds += e.audio_seconds;
    s.cache_bytes_in_use += e.cache_bytes_in_use;
    s.cache_bytes_total += e.cache_bytes_total;
    s.cache_pages_in_use += e.cache_pages_in_use;
    s.memory_in_use += e.memory_in_use;
    s.memory_available += e.memory_available;
    s.devices.insert(s.devices.end(), e.devices.begin(), e.devices.end());
  }
  return s;
}

MultiDeviceEngine::MultiDeviceEngine(std::vector<std::unique_ptr<Engine>> devices, int files_in_flight)
    : devices_(std::move(devices)),
      files_in_flight_(files_in_flight > 0 ? files_in_flight : static_cast<int>(devices_.size())),
      placing_(devices_.size(), 0) {
  check(!devices_.empty(), "engine", "a multi-device engine needs a device");
  info_ = devices_.front()->info();
  for (const auto& d : devices_) info_.load_seconds = std::max(info_.load_seconds, d->info().load_seconds);
}

MultiDeviceEngine::Claim::~Claim() {
  std::lock_guard<std::mutex> lock(owner_.mu_);
  --owner_.placing_[device_];
}

std::vector<size_t> MultiDeviceEngine::placement_order() const {
  std::lock_guard<std::mutex> lock(mu_);
  return placement_order_locked();
}

std::vector<size_t> MultiDeviceEngine::placement_order_locked() const {
  struct Candidate {
    size_t index;
    int sessions;
    size_t room;
  };
  std::vector<Candidate> healthy;
  std::string failures;
  for (size_t i = 0; i < devices_.size(); ++i) {
    const EngineStats s = devices_[i]->stats();
    check(s.devices.size() == 1, "engine", "a device's engine must report one device");
    const DeviceStats& d = s.devices.front();
    if (d.failed) {
      failures += (failures.empty() ? "" : "; ") + d.device + ": " + d.failure;
      continue;
    }
    healthy.push_back({i, d.sessions_open + placing_[i], room_of(d)});
  }
  if (healthy.empty()) throw Error("every device has failed (" + failures + "): restart the engine");
  std::stable_sort(healthy.begin(), healthy.end(), [](const Candidate& a, const Candidate& b) {
    return std::tie(a.sessions, b.room) < std::tie(b.sessions, a.room);  // fewest sessions, then most room
  });
  std::vector<size_t> order;
  for (const Candidate& c : healthy) order.push_back(c.index);
  return order;
}

size_t MultiDeviceEngine::claim_best() {
  std::lock_guard<std::mutex> lock(mu_);
  const size_t best = placement_order_locked().front();
  ++placing_[best];
  return best;
}

// Runs run(engine) on the best device, counted there while it runs (a transcription holds its
// session throughout).
template <typename Run>
auto MultiDeviceEngine::on_best_device(Run run) {
  Claim claim(*this, claim_best());
  return run(claim.engine());
}

Transcript MultiDeviceEngine::transcribe(std::span<const float> audio_16k, const TranscribeOptions& options) {
  return on_best_device([&](Engine& e) { return e.transcribe(audio_16k, options); });
}

Transcript MultiDeviceEngine::transcribe_file(const std::filesystem::path& audio, const TranscribeOptions& options) {
  return on_best_device([&](Engine& e) { return e.transcribe_file(audio, options); });
}

void MultiDeviceEngine::transcribe_each(std::span<const std::filesystem::path> files, const TranscribeOptions& o,
                                        const std::function<void(BatchItem&)>& on_result, int files_in_flight) {
  if (files_in_flight < 0) throw Error("files_in_flight " + std::to_string(files_in_flight) + ": expected 0 (automatic) or more");
  // As many files in flight as the devices take together: each file is placed as it starts.
  const int workers = files_in_flight > 0 ? files_in_flight : files_in_flight_;
  validate_context_bias(o.context_bias, o.context_bias_strength);  // refused before any file
  TranscribeOptions each = o;
  each.progress = nullptr;
  each.on_event = nullptr;
  transcribe_files_in_order(
      files, workers, [&](const std::filesystem::path& file) { return transcribe_file(file, each); }, on_result);
}

std::unique_ptr<Session> MultiDeviceEngine::open_session(const SessionOptions& options) {
  // Each device in placement order, without waiting; the first refusal is the answer when all refuse.
  std::vector<size_t> order;
  {
    std::lock_guard<std::mutex> lock(mu_);
    order = placement_order_locked();
    ++placing_[order.front()];
  }
  SessionOptions now = options;
  now.wait_for_room = false;
  std::string first_refusal;
  for (size_t k = 0; k < order.size(); ++k) {
    if (k > 0) {
      std::lock_guard<std::mutex> lock(mu_);
      ++placing_[order[k]];
    }
    const Claim claim(*this, order[k]);  // until the session is open (then its device counts it) or refused
    try {
      return devices_[order[k]]->open_session(now);
    } catch (const OptionError&) {  // the options, not the device: every device would refuse them
      throw;
    } catch (const Error& e) {
      if (first_refusal.empty()) first_refusal = e.what();
    }
  }
  if (options.wait_for_room) return on_best_device([&](Engine& e) { return e.open_session(options); });
  throw Error(first_refusal);
}

EngineStats MultiDeviceEngine::stats() const {
  std::vector<EngineStats> each;
  each.reserve(devices_.size());
  for (const auto& d : devices_) each.push_back(d->stats());
  return combine_device_stats(each);
}

}  // namespace voxrt
