// MPEG audio (MP3, and layers I and II) decoded with libmpg123 directly rather than through
// libsndfile: libsndfile leaves libmpg123 printing its notes on damaged streams ("Note: Illegal
// Audio-MPEG-Header ...", "Trying to resync...") to standard error, past `-q` and into a server's
// log, gives up on a stream after 1 KiB of damage, and stops at the join of MP3 files joined end to
// end. Decoded as libsndfile decodes it (floats, gapless, no resampling), so a clean file gives the
// same samples; quiet, resyncing past damage, and whole when joined.
#pragma once

#include <filesystem>
#include <memory>

#include "audio/audio_source.h"

struct mpg123_handle_struct;

namespace voxrt {

class Mpg123Source final : public AudioSource {
 public:
  // Bytes of damage skipped to find the next frame, within a stream or before its first frame
  // (libmpg123's default: 1 KiB). A frame found is checked against the header of the next one, so
  // a wide search does not take noise for audio; a file with no frame at all is read to its end.
  static constexpr long kResyncLimitBytes = 1 << 20;
  // Why a file without one decodable frame is refused (after "<path>: cannot decode audio: ").
  static constexpr const char* kNoFrames = "not a readable MP3 file (no MPEG audio frames in it)";

  // Whether the file starts as MPEG audio: a valid layer I-III frame header at its first byte, or
  // right after its ID3v2 tags (which may also head a FLAC file: those go to libsndfile).
  static bool starts_as_mpeg_audio(const std::filesystem::path& path);

  // Throws voxrt::Error("<path>: cannot decode audio: not a readable MP3 file (no MPEG audio frames
  // in it)") when no frame decodes, and the range errors of AudioSource.
  explicit Mpg123Source(const std::filesystem::path& path);

 private:
  size_t decode(float* dst, size_t frames) override;

  struct Closer {
    void operator()(mpg123_handle_struct* handle) const;
  };
  std::unique_ptr<mpg123_handle_struct, Closer> handle_;
  bool ended_ = false;  // at a change of output format, which the constructor rules out
};

}  // namespace voxrt
