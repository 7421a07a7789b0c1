// Inputs are checked before the model loads (seconds for the full model, and 9 GB of memory): a
// typo in a file name must cost nothing.
#pragma once

#include <string>
#include <vector>

namespace voxrt::cli {

// Throws voxrt::Error naming the input if it does not exist, is a directory or cannot be read.
void check_audio_input(const std::string& path);
// Checks them all; reports each bad one as "voxrt: error: ..." on stderr and then throws one Error
// saying how many were bad, so that the user sees every typo at once.
void check_audio_inputs(const std::vector<std::string>& paths);

}  // namespace voxrt::cli
