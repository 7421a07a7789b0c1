// Writing mono 32-bit float WAV block by block (what `voxrt decode-audio` produces: the exact
// samples the engine hears), so that the output of a file of hours never sits in memory whole; or,
// given a libsndfile format, another container (decode-audio heard.flac).
#pragma once

#include <sndfile.h>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>

namespace voxrt {

class WavFileWriter {
 public:
  // Creates (or truncates) the file. Throws voxrt::Error("<path>: cannot write audio: ...").
  WavFileWriter(const std::filesystem::path& path, int sample_rate, int sndfile_format = SF_FORMAT_WAV | SF_FORMAT_FLOAT);
  // Closes the file if close() was not called (an error path: nothing is checked or thrown then).
  ~WavFileWriter();
  WavFileWriter(const WavFileWriter&) = delete;
  WavFileWriter& operator=(const WavFileWriter&) = delete;

  // Appends samples. Throws voxrt::Error("<path>: write failed ...") when not all were written.
  void write(std::span<const float> mono);
  // Completes the header (the data size) and closes. Throws voxrt::Error naming the path when that
  // fails; a file not closed this way is incomplete.
  void close();
  int64_t samples_written() const { return written_; }

 private:
  struct Closer {
    void operator()(SNDFILE* f) const { sf_close(f); }
  };
  std::filesystem::path path_;
  std::unique_ptr<SNDFILE, Closer> file_;
  int64_t written_ = 0;
};

}  // namespace voxrt
