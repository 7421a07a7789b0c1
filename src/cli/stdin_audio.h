// `voxrt transcribe -`: the audio on standard input. It is copied to a temporary file first, so that
// every container libsndfile reads works from a pipe too (FLAC, MP3 and Ogg are read with seeks, a
// pipe has none); the file is removed when done, or when the run is stopped by a signal. Disk, not
// memory, holds it: hours of audio cost no more memory than a minute.
#pragma once

#include <filesystem>
#include <string>

namespace voxrt::cli {

// The input name that stands for standard input, and what messages call it.
inline constexpr const char* kStdinInput = "-";
inline constexpr const char* kStdinName = "standard input";

class StdinAudio {
 public:
  // Copies standard input to the end. Throws UsageError when it is a terminal (nothing is piped in),
  // Error when it cannot be read or the temporary cannot be written.
  StdinAudio();
  ~StdinAudio();
  StdinAudio(const StdinAudio&) = delete;
  StdinAudio& operator=(const StdinAudio&) = delete;

  const std::filesystem::path& path() const { return path_; }
  // A message about the temporary file, about standard input instead ("/tmp/voxrt-stdin-x1: cannot
  // decode audio" -> "standard input: cannot decode audio").
  std::string named(const std::string& message) const;

 private:
  void copy_stdin_to(int fd) const;
  void remove() const;

  std::filesystem::path path_;
};

}  // namespace voxrt::cli
