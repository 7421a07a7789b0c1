#include "audio/stream_resampler.h"

#include <soxr.h>

#include <algorithm>
#include <string>

#include "common/error.h"

namespace voxrt {

struct StreamResampler::Soxr {
  soxr_t handle = nullptr;
  ~Soxr() { soxr_delete(handle); }
};

StreamResampler::StreamResampler(int from_rate, int to_rate)
    : soxr_(std::make_unique<Soxr>()), from_rate_(from_rate), to_rate_(to_rate) {
  check(from_rate > 0, "resample", "invalid source rate " + std::to_string(from_rate));
  check(to_rate > 0, "resample", "invalid target rate " + std::to_string(to_rate));
  const soxr_io_spec_t io = soxr_io_spec(SOXR_FLOAT32_I, SOXR_FLOAT32_I);
  const soxr_quality_spec_t quality = soxr_quality_spec(SOXR_VHQ, 0);  // as resample() in audio_file.cpp
  soxr_error_t err = nullptr;
  soxr_->handle = soxr_create(from_rate, to_rate, 1, &err, &io, &quality, nullptr);
  if (err != nullptr) throw Error(std::string("resample: soxr failed: ") + err);
}

StreamResampler::~StreamResampler() = default;

// Runs soxr until it has taken all of `in`; in == nullptr drains the filter (soxr's flush).
void StreamResampler::run(const float* in, size_t n, std::vector<float>& out) {
  size_t consumed = 0;
  for (;;) {
    // Room for what the rest of the input makes, plus the filter tail a flush may release.
    const size_t room = static_cast<size_t>(static_cast<double>(n - consumed) * to_rate_ / from_rate_) + 1024;
    const size_t base = out.size();
    out.resize(base + room);
    size_t idone = 0, odone = 0;
    const soxr_error_t err = soxr_process(soxr_->handle, in ? in + consumed : nullptr, in ? n - consumed : 0,
                                          &idone, out.data() + base, room, &odone);
    out.resize(base + odone);
    if (err != nullptr) throw Error(std::string("resample: soxr failed: ") + err);
    out_total_ += odone;
    consumed += idone;
    if (in == nullptr ? odone == 0 : consumed >= n) return;
    if (idone == 0 && odone == 0) return;  // no progress: never spin
  }
}

void StreamResampler::process(std::span<const float> in, std::vector<float>& out) {
  check(!finished_, "resample", "input after the end of the stream");
  if (in.empty()) return;
  in_total_ += in.size();
  run(in.data(), in.size(), out);
}

void StreamResampler::finish(std::vector<float>& out) {
  if (finished_) return;
  finished_ = true;
  const size_t base = out.size();
  run(nullptr, 0, out);
  // resample() returns exactly round(n * to / from) samples; hold the stream to the same length.
  const uint64_t expected = (in_total_ * static_cast<uint64_t>(to_rate_) + static_cast<uint64_t>(from_rate_) / 2) /
                            static_cast<uint64_t>(from_rate_);
  if (out_total_ > expected) {
    const uint64_t extra = std::min<uint64_t>(out_total_ - expected, out.size() - base);
    out.resize(out.size() - extra);
    out_total_ -= extra;
  }
  if (out_total_ < expected) {
    out.resize(out.size() + (expected - out_total_), 0.0f);
    out_total_ = expected;
  }
}

}  // namespace voxrt

