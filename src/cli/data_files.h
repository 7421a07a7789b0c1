// Files voxrt's commands find next to the program rather than in the current directory, so that
// they work from anywhere: in an installed tree (PREFIX/bin/voxrt, PREFIX/share/voxrt/...) and in a
// build tree inside the source checkout (build/cpu/voxrt, tests/data/...).
#pragma once

#include <filesystem>
#include <optional>

namespace voxrt::cli {

// Records argv[0] (main calls it first): the program's own path where /proc/self/exe names a
// loader that started it (`ld-linux.so --library-path ... voxrt`, as the GPU machine's wrapper does).
void set_program_path(const char* argv0);
// The directory of the running voxrt executable.
std::filesystem::path program_dir();

// `share_relative` under PREFIX/share/voxrt, else `source_relative` in the source tree the program
// was built in (found by walking up from the program's directory); nullopt if neither exists.
std::optional<std::filesystem::path> find_data_file(const std::filesystem::path& share_relative,
                                                    const std::filesystem::path& source_relative);

}  // namespace voxrt::cli
