// What runs one stream's model work, as the stream pipeline drives it: a scheduler's stream (its
// rounds batched with every other stream's), or a family's stream stepped alone.
#pragma once

#include <cstdint>
#include <vector>

namespace voxrt {

// A decided position: its output id and the compute time attributed to it (its share of its decoder
// pass, the prompt's for the first, and of the encoder passes that produced its positions).
// Summed over the positions, no more than the time spent in both.
struct PositionOutput {
  int32_t token = 0;
  double seconds = 0;
};

class StreamWork {
 public:
  // Takes mel frames (time-major, whole frames) and, once the input has ended, the offline position
  // count (final_positions >= 0); returns the output of every position they make possible, once run. Throws
  // voxrt::Error when the model work failed.
  virtual std::vector<PositionOutput> run(std::vector<float> frames, int64_t final_positions) = 0;
  virtual bool stopped() const = 0;  // EOS with stop_at_eos: nothing more is decoded

 protected:
  ~StreamWork() = default;
};

}  // namespace voxrt
