#include "cli/audio_output_format.h"

#include <sndfile.h>

#include <algorithm>
#include <cctype>
#include <string>

#include "cli/usage.h"

namespace voxrt::cli {
namespace {

struct Container {
  const char* extension;
  int format;
};

constexpr Container kContainers[] = {
    {".wav", SF_FORMAT_WAV | SF_FORMAT_FLOAT},    {".flac", SF_FORMAT_FLAC | SF_FORMAT_PCM_24},
    {".ogg", SF_FORMAT_OGG | SF_FORMAT_VORBIS},   {".oga", SF_FORMAT_OGG | SF_FORMAT_VORBIS},
    {".opus", SF_FORMAT_OGG | SF_FORMAT_OPUS},    {".mp3", SF_FORMAT_MPEG | SF_FORMAT_MPEG_LAYER_III},
    {".aif", SF_FORMAT_AIFF | SF_FORMAT_FLOAT},   {".aiff", SF_FORMAT_AIFF | SF_FORMAT_FLOAT},
    {".au", SF_FORMAT_AU | SF_FORMAT_FLOAT},      {".caf", SF_FORMAT_CAF | SF_FORMAT_FLOAT},
    {".w64", SF_FORMAT_W64 | SF_FORMAT_FLOAT},    {".rf64", SF_FORMAT_RF64 | SF_FORMAT_FLOAT},
};

}  // namespace

int sndfile_format_for_output(const std::filesystem::path& out, int sample_rate) {
  std::string ext = out.extension().string();
  if (ext.empty()) return SF_FORMAT_WAV | SF_FORMAT_FLOAT;
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  std::string known;
  for (const Container& c : kContainers) {
    known += (known.empty() ? "" : ", ") + std::string(c.extension);
    if (ext != c.extension) continue;
    SF_INFO info{};
    info.samplerate = sample_rate;
    info.channels = 1;
    info.format = c.format;
    if (!sf_format_check(&info))
      throw UsageError(out.string() + ": this build of libsndfile cannot write " + ext + " files; use .wav or .flac");
    return c.format;
  }
  throw UsageError(out.string() + ": no audio format is named by the extension " + ext + " (one of " + known + ")");
}

}  // namespace voxrt::cli
