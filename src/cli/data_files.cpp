#include "cli/data_files.h"

#include <string>

namespace voxrt::cli {
namespace {

std::filesystem::path g_program;

// Build trees sit a few levels under the checkout (build/cpu/voxrt, build/asan/voxrt, .carry/bin/voxrt).
constexpr int kSourceTreeLevels = 4;

}  // namespace

void set_program_path(const char* argv0) {
  std::error_code ec;
  if (argv0 != nullptr && std::string(argv0).find('/') != std::string::npos) {
    g_program = std::filesystem::canonical(argv0, ec);
    if (!ec) return;
  }
  g_program = std::filesystem::canonical("/proc/self/exe", ec);
  if (ec) g_program.clear();
}

std::filesystem::path program_dir() {
  if (g_program.empty()) set_program_path(nullptr);
  return g_program.parent_path();
}

std::optional<std::filesystem::path> find_data_file(const std::filesystem::path& share_relative,
                                                    const std::filesystem::path& source_relative) {
  std::error_code ec;
  const std::filesystem::path dir = program_dir();
  if (dir.empty()) return std::nullopt;
  const std::filesystem::path installed = dir.parent_path() / "share" / "voxrt" / share_relative;
  if (std::filesystem::is_regular_file(installed, ec)) return installed;
  std::filesystem::path up = dir;
  for (int level = 0; level <= kSourceTreeLevels && !up.empty(); ++level, up = up.parent_path()) {
    const std::filesystem::path candidate = up / source_relative;
    if (std::filesystem::is_regular_file(candidate, ec)) return candidate;
    if (up == up.root_path()) break;
  }
  return std::nullopt;
}

}  // namespace voxrt::cli
