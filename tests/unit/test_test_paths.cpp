// The tests find tests/data wherever the tree was copied (tests/test_paths.h), and a data directory
// that is not there fails the tests that need it with a message, instead of aborting the whole test
// binary while GoogleTest registers the fixture-driven tests.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "temp_dir.h"
#include "test_paths.h"

namespace voxrt::test {
namespace {

namespace fs = std::filesystem;

TEST(TestPaths, DataDirectoryIsFound) {
  const TestDataSearch& s = test_data_search();
  ASSERT_TRUE(s.found.has_value()) << s.message;
  EXPECT_TRUE(fs::is_directory(*s.found / "tiny" / "mistral")) << *s.found;
}

TEST(TestPaths, FoundInAParentOfTheBinaryDirectory) {
  testutil::TempDir tmp;
  fs::create_directories(tmp / "tests" / "data");
  fs::create_directories(tmp / "build" / "copy");
  const TestDataSearch s = locate_test_data(nullptr, tmp / "build" / "copy");
  ASSERT_TRUE(s.found.has_value()) << s.message;
  EXPECT_TRUE(fs::equivalent(*s.found, tmp / "tests" / "data"));
}

TEST(TestPaths, TheVariableWins) {
  testutil::TempDir tmp;
  const TestDataSearch s = locate_test_data(tmp.path().c_str(), test_binary_dir());
  ASSERT_TRUE(s.found.has_value()) << s.message;
  EXPECT_EQ(*s.found, tmp.path());
}

TEST(TestPaths, NotFoundSaysWhereItLookedAndWhatToSet) {
  testutil::TempDir tmp;
  const TestDataSearch s = locate_test_data(nullptr, tmp / "nowhere");
  ASSERT_FALSE(s.found.has_value());
  EXPECT_NE(s.message.find((tmp / "nowhere" / "tests" / "data").string()), std::string::npos) << s.message;
  EXPECT_NE(s.message.find("VOXRT_TEST_DATA"), std::string::npos) << s.message;

  const TestDataSearch bad = locate_test_data((tmp / "missing").c_str(), test_binary_dir());
  ASSERT_FALSE(bad.found.has_value());
  EXPECT_NE(bad.message.find("VOXRT_TEST_DATA=" + (tmp / "missing").string()), std::string::npos) << bad.message;
}

// The whole binary run without its data: every test is registered (the fixture lists are read
// then), and the one run fails with the message and an ordinary exit status, not a signal. The child
// runs only DataDirectoryIsFound, which starts no process, so this cannot recurse.
TEST(TestPaths, TheBinaryWithoutItsDataFailsCleanly) {
  testutil::TempDir tmp;
  const fs::path self = fs::read_symlink("/proc/self/exe");
#ifdef VOXRT_TEST_EMULATOR
  const std::string emulator = VOXRT_TEST_EMULATOR " ";  // a cross build's tests run emulated
#else
  const std::string emulator;
#endif
  const std::string run = "VOXRT_TEST_DATA='" + (tmp / "missing").string() + "' " + emulator + "'" + self.string() +
                          "' --gtest_filter=TestPaths.DataDirectoryIsFound >'" + (tmp / "out").string() + "' 2>&1";
  const int raw = std::system(run.c_str());
  std::ifstream f(tmp / "out");
  std::stringstream out;
  out << f.rdbuf();
  ASSERT_TRUE(WIFEXITED(raw)) << "killed by signal " << WTERMSIG(raw) << ":\n" << out.str();
  EXPECT_EQ(WEXITSTATUS(raw), 1) << out.str();
  EXPECT_NE(out.str().find("VOXRT_TEST_DATA=" + (tmp / "missing").string() + " does not exist"), std::string::npos)
      << out.str();
}

}  // namespace
}  // namespace voxrt::test
