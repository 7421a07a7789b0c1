#include "audio/audio_source.h"

#include <algorithm>
#include <cctype>
#include <string>
#include <system_error>

#include "audio/mpg123_source.h"
#include "audio/sndfile_source.h"
#include "common/error.h"

namespace voxrt {
namespace {

bool named_as_mpeg_audio(const std::filesystem::path& path) {
  std::string ext = path.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return ext == ".mp3" || ext == ".mp2" || ext == ".mpga";
}

}  // namespace

size_t AudioSource::read(float* dst, size_t frames) {
  const size_t got = decode(dst, frames);
  frames_read_ += static_cast<int64_t>(got);
  return got;
}

void AudioSource::set_format(int64_t sample_rate, int channels, std::optional<int64_t> announced_frames) {
  check(sample_rate >= kMinSampleRate && sample_rate <= kMaxSampleRate, path_.string(),
        "sample rate " + std::to_string(sample_rate) + " Hz is outside the " + std::to_string(kMinSampleRate) +
            " to " + std::to_string(kMaxSampleRate) + " Hz this engine reads");
  check(channels > 0, path_.string(), "invalid channel count " + std::to_string(channels));
  sample_rate_ = static_cast<int>(sample_rate);
  channels_ = channels;
  announced_frames_ = announced_frames;
}

void AudioSource::check_not_truncated_to_nothing() const {
  check(frames_read_ > 0 || !announced_frames_ || *announced_frames_ == 0, path_.string(),
        "no audio samples decode, although the header announces " + std::to_string(announced_frames_.value_or(0)) +
            " frames (truncated or damaged file?)");
}

std::unique_ptr<AudioSource> open_audio_source(const std::filesystem::path& path) {
  const std::string where = path.string();
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) throw Error(where + ": no such file");
  if (std::filesystem::is_directory(path, ec)) throw Error(where + ": is a directory, not an audio file");
  if (Mpg123Source::starts_as_mpeg_audio(path)) return std::make_unique<Mpg123Source>(path);
  if (!named_as_mpeg_audio(path)) return std::make_unique<SndfileSource>(path);
  // Named .mp3 without starting as MPEG audio: another format misnamed (a WAV saved as .mp3), read
  // by its content alone, or MPEG audio behind some junk, found by libmpg123's search for a frame.
  if (auto other_format = SndfileSource::open_by_content(path)) return other_format;
  try {
    return std::make_unique<Mpg123Source>(path);
  } catch (const Error&) {
    throw Error(where + ": cannot decode audio: " + Mpg123Source::kNoFrames + ", nor another audio format");
  }
}

}  // namespace voxrt
