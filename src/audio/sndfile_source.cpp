#include "audio/sndfile_source.h"

#include <fcntl.h>
#include <unistd.h>

#include <string>

#include "common/error.h"

namespace voxrt {
namespace {

// Why sf_open refused an existing regular file, in words that fit: libsndfile says "File does not
// exist or is not a regular file (possibly a pipe?)" of a file it cannot place, which is neither.
std::string open_failure() {
  const std::string said = sf_strerror(nullptr);
  if (sf_error(nullptr) == SF_ERR_UNRECOGNISED_FORMAT || said.starts_with("File does not exist"))
    return "not an audio file (none of the formats voxrt reads: WAV, FLAC, Ogg/Vorbis, Opus, MP3, AIFF, ...)";
  return said;
}

}  // namespace

SndfileSource::SndfileSource(const std::filesystem::path& path) : SndfileSource(path, -1) {}

SndfileSource::SndfileSource(const std::filesystem::path& path, int descriptor) : AudioSource(path) {
  descriptor_.fd = descriptor;
  const std::string where = path.string();
  file_.reset(descriptor >= 0 ? sf_open_fd(descriptor, SFM_READ, &info_, SF_FALSE) : sf_open(where.c_str(), SFM_READ, &info_));
  if (!file_) {
    if (descriptor >= 0) return;  // open_by_content answers nullptr
    throw Error(where + ": cannot decode audio: " + open_failure());
  }
  // frames: what the file holds; SF_COUNT_MAX (or less than 0) where unknown (a pipe, a stream).
  const bool known = info_.frames >= 0 && info_.frames != SF_COUNT_MAX;
  set_format(info_.samplerate, info_.channels, known ? std::optional<int64_t>(info_.frames) : std::nullopt);
}

std::unique_ptr<SndfileSource> SndfileSource::open_by_content(const std::filesystem::path& path) {
  const int descriptor = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (descriptor < 0) return nullptr;
  std::unique_ptr<SndfileSource> source(new SndfileSource(path, descriptor));
  if (!source->file_) return nullptr;
  return source;
}

SndfileSource::OwnedDescriptor::~OwnedDescriptor() {
  if (fd >= 0) ::close(fd);
}

size_t SndfileSource::decode(float* dst, size_t frames) {
  // A decoder error (a truncated or damaged tail) reads as the end: partial audio is more useful
  // than none.
  const sf_count_t got = sf_readf_float(file_.get(), dst, static_cast<sf_count_t>(frames));
  return got > 0 ? static_cast<size_t>(got) : 0;
}

}  // namespace voxrt
