// Every audio format but MPEG read with libsndfile: WAV (and RF64, W64), FLAC, Ogg Vorbis, Opus,
// AIFF, CAF, ... (MPEG audio goes to Mpg123Source: open_audio_source picks.)
#pragma once

#include <sndfile.h>

#include <filesystem>
#include <memory>

#include "audio/audio_source.h"

namespace voxrt {

class SndfileSource final : public AudioSource {
 public:
  // Opens the file, its format guessed by libsndfile from its content and its name. Throws
  // voxrt::Error("<path>: cannot decode audio: ...") when libsndfile cannot read it, and the range
  // errors of AudioSource.
  explicit SndfileSource(const std::filesystem::path& path);
  // The same, the format guessed from the content alone (libsndfile takes any file named .mp3 for
  // MP3); nullptr where libsndfile does not recognise it.
  static std::unique_ptr<SndfileSource> open_by_content(const std::filesystem::path& path);

 private:
  // descriptor -1: opened by name, and a file libsndfile cannot read throws; else by content, and
  // such a file leaves file_ null.
  SndfileSource(const std::filesystem::path& path, int descriptor);
  size_t decode(float* dst, size_t frames) override;

  struct OwnedDescriptor {
    int fd = -1;
    ~OwnedDescriptor();
  };
  struct Closer {
    void operator()(SNDFILE* file) const { sf_close(file); }
  };
  OwnedDescriptor descriptor_;  // declared before file_, so closed after it
  SF_INFO info_{};
  std::unique_ptr<SNDFILE, Closer> file_;
};

}  // namespace voxrt
