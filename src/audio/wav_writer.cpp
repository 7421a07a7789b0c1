#include "audio/wav_writer.h"

#include <algorithm>
#include <string>

#include "common/error.h"

namespace voxrt {

WavFileWriter::WavFileWriter(const std::filesystem::path& path, int sample_rate, int sndfile_format) : path_(path) {
  check(sample_rate > 0, path.string(), "invalid sample rate " + std::to_string(sample_rate));
  SF_INFO info{};
  info.samplerate = sample_rate;
  info.channels = 1;
  info.format = sndfile_format;
  file_.reset(sf_open(path.c_str(), SFM_WRITE, &info));
  if (!file_) throw Error(path.string() + ": cannot write audio: " + sf_strerror(nullptr));
}

WavFileWriter::~WavFileWriter() = default;

void WavFileWriter::write(std::span<const float> mono) {
  check(file_ != nullptr, path_.string(), "write after close");
  if (mono.empty()) return;
  const auto n = static_cast<sf_count_t>(mono.size());
  const sf_count_t written = sf_writef_float(file_.get(), mono.data(), n);
  if (written != n)
    throw Error(path_.string() + ": write failed after " + std::to_string(written_ + std::max<sf_count_t>(written, 0)) +
                " samples: " + sf_strerror(file_.get()));
  written_ += written;
}

void WavFileWriter::close() {
  if (!file_) return;
  // sf_close rewrites the header with the final sizes; its result is the last chance to see an error.
  const int error = sf_close(file_.release());
  if (error != 0) throw Error(path_.string() + ": write failed while closing: " + sf_error_number(error));
}

}  // namespace voxrt
