#include "audio/sndfile_source.h"

#include <system_error>

#include "common/error.h"

namespace voxrt {

SndfileSource::SndfileSource(const std::filesystem::path& path) : path_(path) {
  const std::string where = path.string();
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) throw Error(where + ": no such file");
  if (std::filesystem::is_directory(path, ec)) throw Error(where + ": is a directory, not an audio file");
  file_.reset(sf_open(where.c_str(), SFM_READ, &info_));
  if (!file_) throw Error(where + ": cannot decode audio: " + sf_strerror(nullptr));
  check(info_.samplerate >= kMinSampleRate && info_.samplerate <= kMaxSampleRate, where,
        "sample rate " + std::to_string(info_.samplerate) + " Hz is outside the " + std::to_string(kMinSampleRate) +
            " to " + std::to_string(kMaxSampleRate) + " Hz this engine reads");
  check(info_.channels > 0, where, "invalid channel count " + std::to_string(info_.channels));
}

std::optional<int64_t> SndfileSource::announced_frames() const {
  if (info_.frames < 0 || info_.frames == SF_COUNT_MAX) return std::nullopt;  // a pipe, a stream
  return static_cast<int64_t>(info_.frames);
}

size_t SndfileSource::read(float* dst, size_t frames) {
  // A decoder error (a truncated or damaged tail) reads as the end: partial audio is more useful
  // than none.
  const sf_count_t got = sf_readf_float(file_.get(), dst, static_cast<sf_count_t>(frames));
  if (got <= 0) return 0;
  frames_read_ += got;
  return static_cast<size_t>(got);
}

void SndfileSource::check_not_truncated_to_nothing() const {
  const std::optional<int64_t> announced = announced_frames();
  check(frames_read_ > 0 || !announced || *announced == 0, path_.string(),
        "no audio samples decode, although the header announces " + std::to_string(announced.value_or(0)) +
            " frames (truncated or damaged file?)");
}

}  // namespace voxrt
