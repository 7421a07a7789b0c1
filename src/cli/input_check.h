// Inputs are checked before the model loads (seconds for the full model, and 9 GB of memory): a
// typo in a file name must cost nothing.
#pragma once

#include <string>
#include <vector>

namespace voxrt::cli {

// Throws voxrt::Error naming the input if it does not exist, is a directory, cannot be read, or (a
// regular file) does not open as audio.
// open_as_audio false: headerless PCM (stream --raw), which libsndfile cannot open.
void check_audio_input(const std::string& path, bool open_as_audio = true);
// Checks them all; reports each bad one as "voxrt: error: ..." on stderr and then throws one Error
// saying how many were bad, so that the user sees every typo at once.
void check_audio_inputs(const std::vector<std::string>& paths);

}  // namespace voxrt::cli
