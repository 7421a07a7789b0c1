// The container `voxrt decode-audio IN OUT` writes, named by OUT's extension.
#pragma once

#include <filesystem>

namespace voxrt::cli {

// The libsndfile format for OUT's extension (any case): .wav (32-bit float, the exact samples; also
// for a name without an extension, such as /dev/null), .flac (24-bit), .ogg/.oga (Vorbis), .opus,
// .mp3, .aif/.aiff, .au, .caf, .w64, .rf64 (float where the container holds it). Throws UsageError
// naming the extension when it is none of these, or when the installed libsndfile cannot write it
// as 16 kHz mono.
int sndfile_format_for_output(const std::filesystem::path& out, int sample_rate);

}  // namespace voxrt::cli
