#include "audio/sndfile_source.h"

#include <algorithm>
#include <cctype>
#include <system_error>

#include "common/error.h"

namespace voxrt {
namespace {

// Why sf_open refused an existing regular file, in words that fit. libsndfile takes a file named
// .mp3 (or one it cannot place that starts like MPEG audio) for MP3, and when that fails it says
// "File does not exist or is not a regular file (possibly a pipe?)", which is true of neither.
std::string open_failure(const std::filesystem::path& path) {
  std::string ext = path.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  const std::string said = sf_strerror(nullptr);
  if (ext == ".mp3") return "not a readable MP3 file (no MPEG audio frames in it), nor another audio format";
  if (sf_error(nullptr) == SF_ERR_UNRECOGNISED_FORMAT || said.starts_with("File does not exist"))
    return "not an audio file (none of the formats libsndfile reads: WAV, FLAC, Ogg/Vorbis, Opus, MP3, AIFF, ...)";
  return said;
}

}  // namespace

SndfileSource::SndfileSource(const std::filesystem::path& path) : path_(path) {
  const std::string where = path.string();
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) throw Error(where + ": no such file");
  if (std::filesystem::is_directory(path, ec)) throw Error(where + ": is a directory, not an audio file");
  file_.reset(sf_open(where.c_str(), SFM_READ, &info_));
  if (!file_) throw Error(where + ": cannot decode audio: " + open_failure(path));
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
