#include "cli/input_check.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <iostream>

#include "audio/audio_reader.h"
#include "common/error.h"

namespace voxrt::cli {

void check_audio_input(const std::string& path, bool open_as_audio) {
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  if (!std::filesystem::exists(status)) throw Error(path + ": no such file");
  if (std::filesystem::is_directory(status)) throw Error(path + ": is a directory, not an audio file");
  if (access(path.c_str(), R_OK) != 0) throw Error(path + ": cannot read: " + std::strerror(errno));
  // A regular file is opened as audio too (its header only: milliseconds), so that a text file or a
  // broken header is reported now. A pipe or device is not: opening it would consume its data.
  if (open_as_audio && std::filesystem::is_regular_file(status)) AudioFileReader probe(path);
}

std::vector<std::string> readable_audio_inputs(const std::vector<std::string>& paths,
                                               const std::function<void(const std::string&)>& check) {
  if (paths.size() == 1) {
    check(paths[0]);
    return paths;
  }
  std::vector<std::string> readable;
  for (const std::string& p : paths) {
    try {
      check(p);
      readable.push_back(p);
    } catch (const Error& e) {
      std::cerr << "voxrt: error: " << e.what() << "\n";
    }
  }
  if (readable.empty()) throw Error("none of the " + std::to_string(paths.size()) + " inputs can be read");
  return readable;
}

}  // namespace voxrt::cli
