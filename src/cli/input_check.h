// Inputs are checked before the model loads (seconds for the full model, and 9 GB of memory): a
// typo in a file name must cost nothing.
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace voxrt::cli {

// Throws voxrt::Error naming the input if it does not exist, is a directory, cannot be read, or (a
// regular file) does not open as audio.
// open_as_audio false: headerless PCM (stream --raw), which libsndfile cannot open.
void check_audio_input(const std::string& path, bool open_as_audio = true);
// Checks them all and returns those that open as audio, in their order. Of several inputs, each bad
// one is reported as "voxrt: error: ..." on stderr (the others still run: one corrupt file in a
// folder must not cost the rest); an Error is thrown only when none is readable, or, for a single
// input, with that input's own message.
// `check` checks one input (check_audio_input by default; transcribe's looks at standard input's
// copy for "-").
std::vector<std::string> readable_audio_inputs(
    const std::vector<std::string>& paths,
    const std::function<void(const std::string&)>& check = [](const std::string& p) { check_audio_input(p); });

}  // namespace voxrt::cli
