// Temporary output files (OutputSink's, renamed into place when complete) are removed when the
// process is stopped by a signal (Ctrl-C, SIGTERM, SIGHUP) before it could commit them, so that an
// interrupted run leaves nothing behind: neither a truncated output nor a hidden .part file.
#pragma once

#include <filesystem>

namespace voxrt::cli {

// Registers a temporary file; the first call installs the handlers (for the signals whose action is
// still the default). At most kMaxTemporaries at once: those beyond are not removed on a signal.
void track_temporary(const std::filesystem::path& path);
// Forgets it (committed or removed by its owner).
void untrack_temporary(const std::filesystem::path& path);

}  // namespace voxrt::cli
