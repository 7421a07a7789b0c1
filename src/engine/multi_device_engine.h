// Several devices behind one Engine (EngineOptions::gpus): each device a whole engine of its own
// (a copy of the weights, its caches and its scheduler), each new session or file placed on the
// healthy device with the fewest sessions (open, or placed and still opening), then the most free
// cache memory. A device whose model work failed (EngineStats::devices[i].failed) gets nothing new;
// the others go on.
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>
#include <vector>

#include "voxrt/voxrt.h"

namespace voxrt {

class MultiDeviceEngine final : public Engine {
 public:
  // The devices' engines, each of one device (their stats() report one entry in `devices`).
  // files_in_flight: what transcribe_each runs at once when its caller does not say, the devices'
  // own defaults added up (0: one a device).
  explicit MultiDeviceEngine(std::vector<std::unique_ptr<Engine>> devices, int files_in_flight = 0);

  Transcript transcribe(std::span<const float> audio_16k, const TranscribeOptions& options) override;
  Transcript transcribe_file(const std::filesystem::path& audio, const TranscribeOptions& options) override;
  void transcribe_each(std::span<const std::filesystem::path> files, const TranscribeOptions& options,
                       const std::function<void(BatchItem&)>& on_result, int files_in_flight) override;
  // Tries the devices in placement order, each without waiting; when every one refuses, waits on
  // the best one if options.wait_for_room asks, else throws the first one's refusal.
  std::unique_ptr<Session> open_session(const SessionOptions& options) override;
  const ModelInfo& info() const override { return info_; }
  EngineStats stats() const override;

  // The healthy devices, best first (indices into the constructor's list). Throws when none is.
  std::vector<size_t> placement_order() const;

 private:
  // A placement in flight: counted on its device from the choice until the Claim ends (its session
  // open, or its transcription over), so that sessions placed at the same moment spread instead of
  // all seeing the same device as the emptiest.
  class Claim {
   public:
    Claim(MultiDeviceEngine& e, size_t device) : owner_(e), device_(device) {}  // `device` already counted
    ~Claim();
    Claim(const Claim&) = delete;
    Claim& operator=(const Claim&) = delete;
    Engine& engine() const { return *owner_.devices_[device_]; }

   private:
    MultiDeviceEngine& owner_;
    size_t device_;
  };
  std::vector<size_t> placement_order_locked() const;  // with mu_ held
  // The best device, counted as placing (a Claim on it ends that).
  size_t claim_best();
  template <typename Run>
  auto on_best_device(Run run);

  std::vector<std::unique_ptr<Engine>> devices_;
  int files_in_flight_;
  ModelInfo info_;
  mutable std::mutex mu_;    // guards placing_
  std::vector<int> placing_;  // placements in flight per device
};

// The sum of several devices' stats (histograms added bucket by bucket, the overload percentile
// the highest), their `devices` entries concatenated.
EngineStats combine_device_stats(const std::vector<EngineStats>& each);

}  // namespace voxrt
