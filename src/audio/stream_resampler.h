// Resampling a stream of mono samples piece by piece (soxr's streaming API), for input that is too
// long to hold (a file of hours) or that has not arrived yet (a pipe).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

namespace voxrt {

// VHQ like the one-shot resample() in audio_file.h. Over a whole stream the output matches
// resample() on the concatenated input (same filter, same length: round(n * ratio)).
class StreamResampler {
 public:
  StreamResampler(int from_rate, int to_rate);
  ~StreamResampler();
  StreamResampler(const StreamResampler&) = delete;
  StreamResampler& operator=(const StreamResampler&) = delete;
  // Appends the output the input completes (the filter holds back a few milliseconds).
  void process(std::span<const float> in, std::vector<float>& out);
  // End of input: drains the filter and trims or zero-pads the total to round(n * ratio).
  void finish(std::vector<float>& out);

 private:
  void run(const float* in, size_t n, std::vector<float>& out);
  struct Soxr;
  std::unique_ptr<Soxr> soxr_;
  int from_rate_, to_rate_;
  uint64_t in_total_ = 0, out_total_ = 0;
  bool finished_ = false;
};

}  // namespace voxrt
