// Where the tests find their data (tests/data) and the voxrt executable, wherever the build tree or
// the test binary has been copied: nothing absolute is compiled in.
//
//   test data: $VOXRT_TEST_DATA if set; else the source tree's tests/data at the place the build
//              recorded relative to the test binary (VOXRT_TEST_DATA_FROM_BINARY, for out-of-tree
//              build directories); else tests/data in the test binary's directory or any parent.
//   voxrt:     $VOXRT_BINARY if set; else `voxrt` next to the test binary.
//
// A directory that cannot be found makes each test that needs it fail with a message saying where
// it looked and which variable to set (test_data() throws; GoogleTest reports the exception as that
// test's failure). Code that runs while tests are registered, before GoogleTest can catch anything,
// lists fixtures through fixture_names(), which never throws.
#pragma once

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <system_error>
#include <vector>

namespace voxrt::test {

struct TestDataSearch {
  std::optional<std::filesystem::path> found;
  std::string message;  // when not found: where it looked and what to set
};

// The search itself, apart from the process's environment and location so that tests can drive it.
inline TestDataSearch locate_test_data(const char* env_value, const std::filesystem::path& binary_dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (env_value != nullptr && *env_value != '\0') {
    if (fs::is_directory(env_value, ec)) return {fs::path(env_value), ""};
    return {std::nullopt, std::string("voxrt tests: the test data directory VOXRT_TEST_DATA=") + env_value +
                              " does not exist or is not a directory; point VOXRT_TEST_DATA at the source tree's "
                              "tests/data"};
  }
  std::vector<fs::path> candidates;
#ifdef VOXRT_TEST_DATA_FROM_BINARY
  candidates.push_back((binary_dir / VOXRT_TEST_DATA_FROM_BINARY).lexically_normal());
#endif
  for (fs::path dir = binary_dir; !dir.empty(); dir = dir.parent_path()) {
    candidates.push_back(dir / "tests" / "data");
    if (dir == dir.parent_path()) break;
  }
  std::string looked;
  for (const fs::path& c : candidates) {
    if (fs::is_directory(c, ec)) return {c, ""};
    looked += "\n  " + c.string();
  }
  return {std::nullopt, "voxrt tests: no test data directory found; looked in:" + looked +
                            "\nset VOXRT_TEST_DATA to the source tree's tests/data"};
}

// The directory of the running test binary (not of the current directory: ctest and people run the
// tests from anywhere).
inline std::filesystem::path test_binary_dir() {
  std::error_code ec;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::filesystem::current_path() : exe.parent_path();
}

inline const TestDataSearch& test_data_search() {
  static const TestDataSearch search = locate_test_data(std::getenv("VOXRT_TEST_DATA"), test_binary_dir());
  return search;
}

// tests/data; throws std::runtime_error with the search's message when there is none.
inline std::filesystem::path test_data() {
  const TestDataSearch& s = test_data_search();
  if (!s.found) throw std::runtime_error(s.message);
  return *s.found;
}

// The stems of the .safetensors fixtures under tests/data/SUBDIR, sorted; none when the data
// directory is missing (the TestPaths.DataDirectoryIsFound test then says why). For test
// registration, where an exception would abort the whole binary.
inline std::vector<std::string> fixture_names(const std::string& subdir) {
  std::vector<std::string> names;
  const TestDataSearch& s = test_data_search();
  std::error_code ec;
  if (!s.found || !std::filesystem::is_directory(*s.found / subdir, ec)) return names;
  for (const auto& e : std::filesystem::directory_iterator(*s.found / subdir, ec))
    if (e.path().extension() == ".safetensors") names.push_back(e.path().stem().string());
  std::sort(names.begin(), names.end());
  return names;
}

// The voxrt executable the command-line tests run.
inline std::filesystem::path voxrt_binary() {
  std::error_code ec;
  if (const char* env = std::getenv("VOXRT_BINARY"); env != nullptr && *env != '\0') {
    if (std::filesystem::is_regular_file(env, ec)) return env;
    throw std::runtime_error(std::string("voxrt tests: VOXRT_BINARY=") + env + " is not a file");
  }
  const std::filesystem::path next_to_tests = test_binary_dir() / "voxrt";
  if (std::filesystem::is_regular_file(next_to_tests, ec)) return next_to_tests;
  throw std::runtime_error("voxrt tests: no voxrt executable at " + next_to_tests.string() +
                           "; set VOXRT_BINARY to the voxrt executable to test");
}

}  // namespace voxrt::test
